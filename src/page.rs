//! `aclprof report`: one self-contained HTML page over what aclprof recorded, in the manner
//! of MindInsight's overview — op-type shares, per-type statistics, a per-op table that sorts
//! and searches, the step trace, busy and free time per device and stream, and links to the
//! timeline files. Charts are inline SVG drawn here; the table is a small script over the
//! ops embedded as JSON. Nothing is fetched when the page is viewed (docs/design.md,
//! "The report page").

use crate::analyze::{self, Key, Query, Report};
use crate::error::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The per-op table holds at most this many ops: the longest, when a run has more.
pub const MAX_OPS: usize = 100_000;

/// Types drawn in the share chart; the rest are one "other" bar.
const CHART_TYPES: usize = 20;

/// What [`write`] put on the page.
#[derive(Debug, Default)]
pub struct Written {
    pub ops: u64,
    pub table_ops: usize,
    pub types: usize,
    pub steps: usize,
    pub bytes: usize,
}

/// One stream's busy time: the union of its ops' intervals (ops of a stream are reported in
/// start order, so the union is a running merge).
#[derive(Default)]
struct Stream {
    ops: u64,
    first: u64,
    last: u64,
    busy: u64,
    cur: Option<(u64, u64)>,
}

impl Stream {
    fn add(&mut self, s: u64, e: u64) {
        self.first = if self.ops == 0 { s } else { self.first.min(s) };
        self.ops += 1;
        self.last = self.last.max(e);
        match &mut self.cur {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            _ => {
                if let Some((cs, ce)) = self.cur.replace((s, e)) {
                    self.busy += ce - cs;
                }
            }
        }
    }
    fn busy(&self) -> u64 {
        self.busy + self.cur.map_or(0, |(s, e)| e - s)
    }
}

/// One row of a result directory's step_trace_<stamp>.csv, in µs.
struct StepRow {
    device: String,
    id: String,
    total: f64,
    /// (gap before FP, FP to BP, BP end to iteration end) when FP/BP points were set.
    phases: Option<(f64, f64, f64)>,
}

/// One row of step_trace_time.csv, summed per device.
#[derive(Default)]
struct DeviceTime {
    computing: f64,
    comm_not_overlapped: f64,
    free: f64,
    stage: f64,
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

fn us(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

/// `to` relative to directory `from` (both made absolute), for links that survive moving
/// the page and the result directories together.
fn relative(from: &Path, to: &Path) -> String {
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (abs(from), abs(to));
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut p = PathBuf::new();
    for _ in common..f.len() {
        p.push("..");
    }
    for c in &t[common..] {
        p.push(c);
    }
    p.to_string_lossy().into_owned()
}

fn num(row: &BTreeMap<String, String>, k: &str) -> Option<f64> {
    row.get(k).and_then(|v| v.trim().parse::<f64>().ok())
}

/// The exported files of result directory `dir`, exporting it first if it never was (a
/// killed process's directory): steps and device times come from them.
fn exported(dir: &Path) -> Result<PathBuf> {
    let out = dir.join("mindstudio_profiler_output");
    let has = |prefix: &str| analyze::entries_named(&out, prefix).is_ok_and(|v| !v.is_empty());
    if !has("op_summary_") || !has("msprof_") {
        crate::filemode::export_quietly(dir)?;
    }
    Ok(out)
}

/// Writes the report page for `path` (a result directory, a folder of them, or a record
/// file) to `out`.
pub fn write(path: &Path, out: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Written> {
    let dirs = if path.is_dir() {
        analyze::result_dirs(path)?
    } else {
        Vec::new()
    };
    let mut steps = Vec::new();
    let mut devices: BTreeMap<String, DeviceTime> = BTreeMap::new();
    let mut links = Vec::new();
    let page_dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for d in &dirs {
        let o = exported(d)?;
        for f in analyze::entries_named(&o, "msprof_").unwrap_or_default() {
            if f.extension().is_some_and(|e| e == "json" || e == "pftrace") {
                links.push((relative(page_dir, &f), f));
            }
        }
        for f in analyze::entries_named(&o, "step_trace_").unwrap_or_default() {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == "step_trace_time.csv" {
                for r in crate::runstats::csv_rows(&f) {
                    let t = devices.entry(r["Device_id"].clone()).or_default();
                    t.computing += num(&r, "Computing").unwrap_or(0.0);
                    t.comm_not_overlapped +=
                        num(&r, "Communication(Not Overlapped)").unwrap_or(0.0);
                    t.free += num(&r, "Free").unwrap_or(0.0);
                    t.stage += num(&r, "Stage").unwrap_or(0.0);
                }
            } else {
                for r in crate::runstats::csv_rows(&f) {
                    let (Some(total), Some(end)) =
                        (num(&r, "Iteration Time(us)"), num(&r, "Iteration End(us)"))
                    else {
                        continue;
                    };
                    let phases = match (num(&r, "FP Start(us)"), num(&r, "BP End(us)")) {
                        (Some(fp), Some(bp)) => {
                            let start = end - total;
                            Some((
                                (fp - start).max(0.0),
                                (bp - fp).max(0.0),
                                (end - bp).max(0.0),
                            ))
                        }
                        _ => None,
                    };
                    steps.push(StepRow {
                        device: r.get("Device_id").cloned().unwrap_or_default(),
                        id: r.get("Iteration ID").cloned().unwrap_or_default(),
                        total,
                        phases,
                    });
                }
            }
        }
    }

    let types = analyze::analyze(
        path,
        &Query {
            top: 0,
            by: Some(Key::Type),
            ..Default::default()
        },
    )?;
    let ops = analyze::analyze_with_progress(
        path,
        &Query {
            top: MAX_OPS,
            ..Default::default()
        },
        progress,
    )?;
    let mut streams: BTreeMap<(u32, u32), Stream> = BTreeMap::new();
    let mut first = u64::MAX;
    analyze::each_op(path, &mut |_, _| {}, &mut |_, v| {
        first = first.min(v.start());
        streams
            .entry((v.dev_id(), v.stream_id()))
            .or_default()
            .add(v.start(), v.end());
    })?;

    // The run's own name (PROF_..., or the folder's), not where this machine keeps it: a
    // report is shared with people whose paths differ.
    let name = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| path.display().to_string());
    let html = render(&Inputs {
        source: &name,
        types: &types,
        ops: &ops,
        first: if first == u64::MAX { 0 } else { first },
        streams: &streams,
        devices: &devices,
        steps: &steps,
        links: &links,
    });
    std::fs::write(out, &html)
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", out.display())))?;
    Ok(Written {
        ops: types.ops,
        table_ops: ops.rows.len(),
        types: types.rows.len(),
        steps: steps.len(),
        bytes: html.len(),
    })
}

struct Inputs<'a> {
    source: &'a str,
    types: &'a Report,
    ops: &'a Report,
    first: u64,
    streams: &'a BTreeMap<(u32, u32), Stream>,
    devices: &'a BTreeMap<String, DeviceTime>,
    steps: &'a [StepRow],
    links: &'a [(String, PathBuf)],
}

const COLORS: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Horizontal bars of the top types' share of device time.
fn type_chart(r: &Report) -> String {
    let mut bars: Vec<(String, f64, u64)> = r
        .rows
        .iter()
        .take(CHART_TYPES)
        .map(|x| (x.key.clone(), x.share, x.total_ns))
        .collect();
    if r.rows.len() > CHART_TYPES {
        let rest = &r.rows[CHART_TYPES..];
        bars.push((
            format!("other ({} types)", rest.len()),
            rest.iter().map(|x| x.share).sum(),
            rest.iter().map(|x| x.total_ns).sum(),
        ));
    }
    let (row, label, width) = (22.0, 220.0, 460.0);
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9);
    let mut s = format!(
        r#"<svg id="type-chart" role="img" aria-label="op type shares" width="{}" height="{}">"#,
        label + width + 90.0,
        row * bars.len() as f64 + 4.0
    );
    for (i, (name, share, total)) in bars.iter().enumerate() {
        let y = i as f64 * row;
        let w = (width * share / max).max(1.0);
        let _ = write!(
            s,
            r#"<text x="{x}" y="{ty}" text-anchor="end">{n}</text><rect class="bar" x="{bx}" y="{y}" width="{w:.1}" height="{h}" fill="{c}"><title>{n}: {share:.2}% ({t} us)</title></rect><text x="{lx:.1}" y="{ty}">{share:.1}%</text>"#,
            x = label - 6.0,
            ty = y + 15.0,
            n = esc(name),
            bx = label,
            h = row - 4.0,
            c = COLORS[i % COLORS.len()],
            t = us(*total),
            lx = label + w + 4.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// One stacked bar per step: gap before FP, FP to BP, tail; or the whole iteration.
fn step_chart(steps: &[StepRow]) -> String {
    if steps.is_empty() {
        return r#"<p class="note">No step trace: the run was profiled without ACL_PROF_TRAINING_TRACE (or the result directory has no steps).</p>"#.into();
    }
    let shown = &steps[..steps.len().min(200)];
    let max = shown.iter().map(|s| s.total).fold(0.0, f64::max).max(1e-9);
    let (bar, gap, height, left) = (18.0, 4.0, 200.0, 90.0);
    let devices: std::collections::BTreeSet<&str> =
        shown.iter().map(|s| s.device.as_str()).collect();
    let width = left + shown.len() as f64 * (bar + gap) + 20.0;
    let mut s = format!(
        r##"<svg id="step-chart" role="img" aria-label="step trace" width="{width:.0}" height="{h:.0}"><text x="4" y="12">{max:.1} us</text><line x1="{left}" y1="{height}" x2="{width:.0}" y2="{height}" stroke="#888"/>"##,
        h = height + 40.0,
    );
    for (i, st) in shown.iter().enumerate() {
        let x = left + i as f64 * (bar + gap);
        let mut y = height;
        let parts: Vec<(f64, &str, &str)> = match st.phases {
            Some((g, fb, tail)) => vec![
                (g, "#bab0ac", "iteration gap"),
                (fb, "#4e79a7", "FP to BP"),
                (tail, "#f28e2b", "tail (BP end to iteration end)"),
            ],
            None => vec![(st.total, "#76b7b2", "iteration (no FP/BP points)")],
        };
        for (v, c, what) in parts {
            let h = height * v / max;
            y -= h;
            let _ = write!(
                s,
                r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{bar}" height="{h:.1}" fill="{c}"><title>device {d}, step {id}: {what} {v:.3} us</title></rect>"#,
                d = esc(&st.device),
                id = esc(&st.id),
            );
        }
        // With several devices, each step's label says whose it is.
        let label = if devices.len() > 1 {
            format!("{}:{}", st.device, st.id)
        } else {
            st.id.clone()
        };
        let _ = write!(
            s,
            r#"<text x="{tx:.1}" y="{ty:.0}" text-anchor="middle">{id}</text>"#,
            tx = x + bar / 2.0,
            ty = height + 14.0,
            id = esc(&label)
        );
    }
    s.push_str("</svg>");
    let mut legend = String::from(r#"<p class="legend">"#);
    for (c, what) in [
        ("#bab0ac", "iteration gap"),
        ("#4e79a7", "FP to BP"),
        ("#f28e2b", "tail"),
        ("#76b7b2", "whole iteration (no FP/BP points)"),
    ] {
        let _ = write!(
            legend,
            r#"<span><i style="background:{c}"></i>{what}</span> "#
        );
    }
    legend.push_str("</p>");
    if steps.len() > shown.len() {
        let _ = write!(
            legend,
            r#"<p class="note">The first {} of {} steps.</p>"#,
            shown.len(),
            steps.len()
        );
    }
    s + &legend
}

fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.1}", 100.0 * part / whole)
    } else {
        "-".into()
    }
}

/// A small bar showing a percentage inside a table cell.
fn meter(part: f64, whole: f64) -> String {
    let p = if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    };
    format!(
        r#"<span class="meter"><i style="width:{p:.1}%"></i></span> {}%"#,
        pct(part, whole)
    )
}

fn render(x: &Inputs) -> String {
    let mut h = String::with_capacity(1 << 20);
    let title = format!("aclprof report: {}", x.source);
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{t}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{css}</style></head><body>
<h1>{t}</h1>
<p class="summary"><b id="total-ops">{ops}</b> ops, <b>{time}</b> us of device time in <b>{ntypes}</b> op types{corrupt}. Made by aclprof {ver}.</p>
"#,
        t = esc(&title),
        css = CSS,
        ops = x.types.ops,
        time = us(x.types.total_ns),
        ntypes = x.types.rows.len(),
        corrupt = if x.types.corrupt > 0 {
            format!(", {}", analyze::corrupt_skipped(x.types.corrupt))
        } else {
            String::new()
        },
        ver = env!("CARGO_PKG_VERSION"),
    );

    // Op types: chart and statistics.
    h.push_str(r#"<section id="types"><h2>Op types by device time</h2>"#);
    h.push_str(&type_chart(x.types));
    h.push_str(r#"<table id="type-table"><thead><tr><th>Type</th><th>Count</th><th>Total (us)</th><th>Share (%)</th><th>Mean (us)</th><th>Min (us)</th><th>Max (us)</th></tr></thead><tbody>"#);
    for r in &x.types.rows {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.3}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.key),
            r.count,
            us(r.total_ns),
            r.share,
            r.mean_ns() / 1000.0,
            us(r.min_ns),
            us(r.max_ns)
        );
    }
    h.push_str("</tbody></table></section>\n");

    // Step trace.
    h.push_str(r#"<section id="steps"><h2>Step trace</h2>"#);
    h.push_str(&step_chart(x.steps));
    h.push_str("</section>\n");

    // Busy and free time.
    h.push_str(r#"<section id="busy"><h2>Busy and free time</h2>"#);
    if !x.devices.is_empty() {
        h.push_str(r#"<p class="note">Devices: summed over their steps (step_trace_time.csv). Streams: the whole run, from each stream's first op to its last.</p>"#);
        h.push_str(r#"<table id="device-table"><thead><tr><th>Device</th><th>Computing (us)</th><th>Communication, not overlapped (us)</th><th>Free (us)</th><th>Stage (us)</th><th>Busy</th></tr></thead><tbody>"#);
        for (d, t) in x.devices {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td></tr>",
                esc(d),
                t.computing,
                t.comm_not_overlapped,
                t.free,
                t.stage,
                meter(t.computing + t.comm_not_overlapped, t.stage)
            );
        }
        h.push_str("</tbody></table>");
    }
    h.push_str(r#"<table id="stream-table"><thead><tr><th>Device</th><th>Stream</th><th>Ops</th><th>Busy (us)</th><th>Free (us)</th><th>Span (us)</th><th>Busy</th></tr></thead><tbody>"#);
    for ((d, s), st) in x.streams {
        let span = st.last - st.first;
        let busy = st.busy();
        let _ = write!(
            h,
            "<tr><td>{d}</td><td>{s}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            st.ops,
            us(busy),
            us(span.saturating_sub(busy)),
            us(span),
            meter(busy as f64, span as f64)
        );
    }
    h.push_str("</tbody></table></section>\n");

    // Every op (or the longest MAX_OPS).
    let _ = write!(
        h,
        r#"<section id="ops"><h2>Ops</h2>{note}
<p><input id="search" type="search" placeholder="Search name or type" aria-label="search ops"> <span id="count"></span></p>
<table id="op-table"><thead><tr><th data-k="0">Name</th><th data-k="1">Type</th><th data-k="2">Device</th><th data-k="3">Stream</th><th data-k="4">Model</th><th data-k="5">Start (us)</th><th data-k="6" class="sorted desc">Duration (us)</th></tr></thead><tbody></tbody></table>
<p id="pager"><button id="prev">&larr; previous</button> <span id="page"></span> <button id="next">next &rarr;</button></p></section>
"#,
        note = if (x.ops.rows.len() as u64) < x.types.ops {
            format!(
                r#"<p class="note">The {} longest of {} ops.</p>"#,
                x.ops.rows.len(),
                x.types.ops
            )
        } else {
            String::new()
        }
    );
    let data: Vec<serde_json::Value> = x
        .ops
        .rows
        .iter()
        .map(|r| {
            let (ty, dev, stream, model, start) = r.op.clone().unwrap_or_default();
            serde_json::json!([
                r.key,
                ty,
                dev,
                stream,
                model,
                (start.saturating_sub(x.first)) as f64 / 1000.0,
                r.total_ns as f64 / 1000.0
            ])
        })
        .collect();
    // Inside a script element only "</" can end it early.
    let json = serde_json::Value::from(data)
        .to_string()
        .replace("</", "<\\/");
    let _ = writeln!(
        h,
        r#"<script type="application/json" id="op-data">{json}</script>"#
    );

    // Timeline files.
    h.push_str(r#"<section id="timelines"><h2>Timelines</h2><ul>"#);
    if x.links.is_empty() {
        h.push_str("<li>No result directory: a file of records has no timeline.</li>");
    }
    for (rel, abs) in x.links {
        let what = if rel.ends_with(".pftrace") {
            "open in ui.perfetto.dev (nanosecond timestamps)"
        } else {
            "msprof JSON: MindStudio Insight, msprof-analyze, chrome://tracing"
        };
        let _ = write!(
            h,
            r#"<li><a href="{}">{}</a> — {what}</li>"#,
            esc(rel),
            esc(&abs.display().to_string())
        );
    }
    h.push_str("</ul></section>\n");
    let _ = write!(h, "<script>{JS}</script>\n</body></html>\n");
    h
}

const CSS: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;word-break:break-all}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left}#op-table td:nth-child(2),#op-table th:nth-child(2){text-align:left}
th{background:#f6f6f6;position:sticky;top:0}#op-table th{cursor:pointer}
th.sorted.desc::after{content:" \25BE"}th.sorted.asc::after{content:" \25B4"}
svg text{font-size:12px;fill:#333}.note{color:#666}
.meter{display:inline-block;width:80px;height:8px;background:#eee;vertical-align:middle}.meter i{display:block;height:8px;background:#59a14f}
.legend span{margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
#search{width:320px;padding:4px}
"#;

/// The op table: sort on header click, filter on search (also `#q=` in the address),
/// 100 rows a page.
const JS: &str = r#"
(function () {
  'use strict';
  var all = JSON.parse(document.getElementById('op-data').textContent);
  var body = document.querySelector('#op-table tbody');
  var search = document.getElementById('search');
  var PAGE = 100, key = 6, desc = true, page = 0, rows = all;
  function fmt(v, k) { return k >= 5 ? v.toFixed(3) : String(v); }
  function apply() {
    var q = search.value.trim().toLowerCase();
    rows = q ? all.filter(function (r) {
      return r[0].toLowerCase().indexOf(q) >= 0 || r[1].toLowerCase().indexOf(q) >= 0;
    }) : all.slice();
    rows.sort(function (a, b) {
      var x = a[key], y = b[key], c = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -c : c;
    });
    page = 0;
    draw();
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var frag = document.createDocumentFragment();
    rows.slice(page * PAGE, (page + 1) * PAGE).forEach(function (r) {
      var tr = document.createElement('tr');
      for (var k = 0; k < 7; k++) {
        var td = document.createElement('td');
        td.textContent = fmt(r[k], k);
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    document.getElementById('count').textContent =
      rows.length + ' of ' + all.length + ' ops match';
    document.getElementById('page').textContent = 'page ' + (page + 1) + ' of ' + pages;
    document.getElementById('prev').disabled = page === 0;
    document.getElementById('next').disabled = page >= pages - 1;
  }
  document.querySelectorAll('#op-table th').forEach(function (th) {
    th.addEventListener('click', function () {
      var k = Number(th.dataset.k);
      desc = k === key ? !desc : k >= 2;
      key = k;
      document.querySelectorAll('#op-table th').forEach(function (o) { o.className = ''; });
      th.className = 'sorted ' + (desc ? 'desc' : 'asc');
      apply();
    });
  });
  search.addEventListener('input', apply);
  document.getElementById('prev').addEventListener('click', function () { page--; draw(); });
  document.getElementById('next').addEventListener('click', function () { page++; draw(); });
  var m = /[#&]q=([^&]*)/.exec(location.hash);
  if (m) search.value = decodeURIComponent(m[1]);
  apply();
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_busy_is_the_union_of_its_ops() {
        let mut s = Stream::default();
        for (a, b) in [(0, 10), (5, 12), (12, 15), (20, 30), (25, 26)] {
            s.add(a, b);
        }
        assert_eq!((s.ops, s.first, s.last, s.busy()), (5, 0, 30, 25));
    }

    #[test]
    fn names_are_escaped_and_scripts_cannot_be_closed() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let types = Report::default();
        let mut ops = Report::default();
        ops.rows.push(analyze::Row {
            key: "</script><script>alert(1)</script>".into(),
            op: Some(("T".into(), 0, 1, 1, 5)),
            total_ns: 1000,
            ..Default::default()
        });
        let html = render(&Inputs {
            source: "<dir>",
            types: &types,
            ops: &ops,
            first: 0,
            streams: &BTreeMap::new(),
            devices: &BTreeMap::new(),
            steps: &[],
            links: &[],
        });
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "only the page's own two"
        );
        assert!(html.contains("aclprof report: &lt;dir&gt;"));
    }

    #[test]
    fn relative_links() {
        assert_eq!(
            relative(Path::new("/a/b"), Path::new("/a/c/d.json")),
            "../c/d.json"
        );
        assert_eq!(relative(Path::new("/a"), Path::new("/a/x")), "x");
    }
}
