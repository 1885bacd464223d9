//! `aclprof report`: static HTML over what aclprof recorded, in the manner of MindInsight's
//! profiler pages. One run's page: the overall split of device time beside the assistant's
//! suggestions, op-type shares (bar or pie) with drill-down from a type to its ops, the step
//! trace with a step selector and per-step curves, busy and free time per device, stream
//! and rank, a per-op table that sorts and fuzzy-searches, and links to the timelines.
//! Given a folder of runs and a directory to write, a small site ([`site`]): an index of the
//! runs, a page per run, and a page comparing any two. Charts are inline SVG drawn here;
//! the tables are small scripts over data embedded as JSON. Nothing is fetched when the
//! pages are viewed (docs/design.md, "The report").

mod charts;
mod cluster;
mod memory;
mod site;
mod timeline;
use charts::*;

use crate::advisor::{Advice, Target};
use crate::interrupt::Outputs;
use aclprof::analyze::{self, Query, Report};
use aclprof::error::*;
use aclprof::runstats::{RunStats, StepTime};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The per-op table holds at most this many ops: the longest, when a run has more.
pub const MAX_OPS: usize = 100_000;

/// Types drawn in the share charts; the rest are one "other".
const CHART_TYPES: usize = 20;

/// Steps drawn in the step charts.
const CHART_STEPS: usize = 200;

/// A cluster of up to this many ranks gets a page per rank beside its own.
const RANK_PAGES: usize = 64;

/// What [`write`] wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Pages written (1 for a single page).
    pub pages: usize,
    pub runs: usize,
    pub ops: u64,
    pub table_ops: usize,
    pub types: usize,
    pub steps: usize,
    pub bytes: usize,
    /// The assistant's suggestions (summed over the runs of a site).
    pub advice: usize,
    /// Slices and tracks of the timeline (summed over the runs of a site).
    pub timeline_slices: usize,
    pub timeline_tracks: usize,
    /// Pages of single ranks of a cluster, beside their cluster's.
    pub rank_pages: usize,
}

/// True when `out` names a directory to write a site into rather than one page: it is a
/// directory, ends in `/`, or does not exist and has no `.html` or `.htm` extension (an
/// existing file, such as /dev/null, is a page).
pub fn is_site(out: &Path) -> bool {
    out.is_dir()
        || out.as_os_str().to_string_lossy().ends_with('/')
        || !out.exists()
            && !out
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

/// Writes the report for `path` to `out`: one page (`out` ends in `.html`), or a site in the
/// directory `out` with a page per run under `path` (see [`site::runs_in`]).
pub fn write(path: &Path, out: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Written> {
    let out = &writable(path, out)?;
    if is_site(out) {
        return site::write(path, out, progress);
    }
    let stats = RunStats::with_progress(path, progress)?;
    let page_dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = out
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    let mut outs = Outputs::default();
    let (html, mut w) = run_page(&stats, page_dir, &stem, &Nav::default(), &mut outs)?;
    let fail = |e: std::io::Error| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", out.display()));
    outs.write(out, html.as_bytes()).or_else(fail)?;
    // The page appears with its timeline and rank pages, after them; what an earlier report
    // to the same page left (its timeline, more ranks' pages) goes.
    let stale = page_files(page_dir, &stem)
        .into_iter()
        .filter(|p| !outs.has(p))
        .collect::<Vec<_>>();
    outs.commit(&stale).or_else(fail)?;
    w.pages = 1 + w.rank_pages;
    w.runs = 1;
    w.bytes = html.len();
    Ok(w)
}

/// Where the report for `path` goes when asked to go to `out`: through a symbolic link to
/// where it points. Refused: a special file (a pipe, a device), the input itself, a site
/// inside the input, and a site in a folder that holds other files and no earlier site.
fn writable(path: &Path, out: &Path) -> Result<PathBuf> {
    let refuse = |why: &str| err(ACL_ERROR_INVALID_PARAM, format!("{}: {why}", out.display()));
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let target = match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => match real(out) {
            Some(t) => t,
            // A link to what does not exist yet: where it points.
            None => match std::fs::read_link(out) {
                Ok(t) => out.parent().unwrap_or(Path::new(".")).join(t),
                Err(e) => return refuse(&e.to_string()),
            },
        },
        _ => out.to_path_buf(),
    };
    // Where it would be, resolved, whether or not it exists yet.
    let resolved = real(&target).or_else(|| {
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
        Some(real(parent.unwrap_or(Path::new(".")))?.join(target.file_name()?))
    });
    if let (Some(i), Some(o)) = (real(path), resolved) {
        if i == o {
            return refuse("is the report's input; give the report another name");
        }
        if is_site(&target) && o.starts_with(&i) {
            return refuse("is inside the report's input; nothing is written into an input");
        }
    }
    let Ok(m) = std::fs::metadata(&target) else {
        return Ok(target);
    };
    if !m.is_file() && !m.is_dir() {
        return refuse("not a regular file or a folder; the report is written as files");
    }
    if m.is_dir() && !target.join(site::MANIFEST).exists() {
        let mut entries = std::fs::read_dir(&target)
            .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", out.display())))?;
        if entries.next().is_some() {
            return refuse(
                "a folder that holds other files; a report site goes into a new or empty \
                 folder, or one an earlier report made (give a .html name for one page)",
            );
        }
    }
    Ok(target)
}

/// What a page named `stem` in `dir` owns besides itself: its timeline and its ranks' pages
/// with theirs (`<stem>.timeline`, `<stem>-rank-<N>.html`, `<stem>-rank-<N>.timeline`).
fn page_files(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let rank_page = |n: &str| {
        n.strip_prefix(stem)
            .and_then(|r| r.strip_prefix("-rank-"))
            .and_then(|r| {
                r.strip_suffix(".html")
                    .or_else(|| r.strip_suffix(".timeline"))
            })
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    };
    entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n == format!("{stem}.timeline") || rank_page(&n)
        })
        .map(|e| e.path())
        .collect()
}

/// Links a run page shows when it is part of a site.
#[derive(Default)]
struct Nav {
    /// The index page, relative to the run's page.
    index: Option<String>,
    /// The compare page with this run as the base.
    compare: Option<String>,
    /// A rank's page: its cluster's.
    cluster: Option<String>,
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

use aclprof::formats::text::us3 as us;

/// `to` relative to directory `from` (both made absolute), for links that survive moving
/// the pages and the result directories together.
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

/// The exported files of result directory `dir`, exporting it first if it never was (a
/// killed process's directory), so the page can link its timelines.
fn exported(dir: &Path) -> Result<PathBuf> {
    let out = dir.join("mindstudio_profiler_output");
    let has = |prefix: &str| {
        aclprof::formats::layout::entries_named(&out, prefix).is_ok_and(|v| !v.is_empty())
    };
    if !has("op_summary_") || !has("msprof_") {
        aclprof::filemode::export_quietly(dir)?;
    }
    Ok(out)
}

/// The timeline files of the run at `path` (exporting result directories that never were),
/// each as (link relative to `page_dir`, path).
fn timelines(path: &Path, page_dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut links = Vec::new();
    if !path.is_dir() {
        return Ok(links);
    }
    for d in analyze::result_dirs(path)? {
        let o = exported(&d)?;
        for f in aclprof::formats::layout::entries_named(&o, "msprof_").unwrap_or_default() {
            if f.extension().is_some_and(|e| e == "json" || e == "pftrace") {
                links.push((relative(page_dir, &f), f));
            }
        }
    }
    Ok(links)
}

/// The page of one run, and what it holds. Its file is `<stem>.html` in `page_dir` (the
/// caller writes it); its timeline goes into `<stem>.timeline/` and, for a cluster of up to
/// [`RANK_PAGES`] ranks, each rank's own page into `<stem>-rank-<N>.html` beside it.
/// The page of one run, and (staged in `outs`) its timeline and its ranks' pages.
fn run_page(
    stats: &RunStats,
    page_dir: &Path,
    stem: &str,
    nav: &Nav,
    outs: &mut Outputs,
) -> Result<(String, Written)> {
    let timeline_dir = &format!("{stem}.timeline");
    let links = timelines(&stats.path, page_dir)?;
    let traces: Vec<(String, PathBuf)> = {
        let t: Vec<&PathBuf> = links
            .iter()
            .map(|l| &l.1)
            .filter(|p| p.extension().is_some_and(|e| e == "pftrace"))
            .collect();
        t.iter()
            .map(|p| {
                // Several result directories (ranks): each one's processes carry its rank.
                let label = if t.len() > 1 {
                    let dir = p.parent().and_then(Path::parent).unwrap_or(p);
                    match aclprof::formats::layout::ranks_of(dir).first() {
                        Some(r) => format!("rank {r}"),
                        None => dir
                            .file_name()
                            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                    }
                } else {
                    String::new()
                };
                (label, (*p).clone())
            })
            .collect()
    };
    // One canvas holds a few thousand rows: a larger cluster's timelines are its ranks' own.
    let laid = if traces.is_empty() || traces.len() > RANK_PAGES {
        None
    } else {
        // A trace that cannot be read costs the page its timeline, not the page.
        match timeline::write(&traces, &page_dir.join(timeline_dir), outs) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!("aclprof: the page has no timeline: {}", e.msg);
                None
            }
        }
    };
    let ops = analyze::analyze(
        &stats.path,
        &Query {
            top: MAX_OPS,
            ..Default::default()
        },
    )?;
    let advice = crate::advisor::advise(stats);
    let comm = crate::comm::analyze(&stats.path).ok();
    let rank_pages = rank_pages(stats, page_dir, stem, outs)?;
    // Each step as its slowest device saw it.
    let steps: Vec<&StepTime> = stats.slowest_steps().into_iter().map(|(s, _)| s).collect();
    let html = render(&Inputs {
        stats,
        ops: &ops,
        steps: &steps,
        links: &links,
        advice: &advice,
        nav,
        timeline: laid.as_ref().map(|_| timeline_dir.as_str()),
        comm: comm.as_ref(),
        rank_pages: &rank_pages,
    });
    let w = Written {
        ops: stats.ops(),
        table_ops: ops.rows.len(),
        types: stats.types.rows.len(),
        steps: steps.len(),
        bytes: html.len(),
        advice: advice.len(),
        timeline_slices: laid.as_ref().map_or(0, |l| l.slices),
        timeline_tracks: laid.as_ref().map_or(0, |l| l.tracks),
        rank_pages: rank_pages.len(),
        ..Default::default()
    };
    Ok((html, w))
}

/// Each rank's own page, for a cluster of 2 to [`RANK_PAGES`] ranks, written beside the
/// cluster's page as `<stem>-rank-<N>.html` (a rank whose one result directory holds only
/// it); by rank, each page's file name.
fn rank_pages(
    stats: &RunStats,
    page_dir: &Path,
    stem: &str,
    outs: &mut Outputs,
) -> Result<BTreeMap<u32, String>> {
    let mut pages = BTreeMap::new();
    if !(2..=RANK_PAGES).contains(&stats.ranks()) || !stats.path.is_dir() {
        return Ok(pages);
    }
    // rank -> its result directories, each with whether it holds that rank alone.
    let mut by_rank: BTreeMap<u32, Vec<(PathBuf, bool)>> = BTreeMap::new();
    for d in analyze::result_dirs(&stats.path)? {
        let ranks = aclprof::formats::layout::ranks_of(&d);
        for &r in &ranks {
            by_rank
                .entry(r)
                .or_default()
                .push((d.clone(), ranks.len() == 1));
        }
    }
    let nav = Nav {
        cluster: Some(format!("{stem}.html")),
        ..Default::default()
    };
    for (rank, dirs) in by_rank {
        let [(dir, true)] = dirs.as_slice() else {
            continue;
        };
        let rs = RunStats::with_progress(dir, &mut |_, _| {})?;
        let rstem = format!("{stem}-rank-{rank}");
        let (html, _) = run_page(&rs, page_dir, &rstem, &nav, outs)?;
        let file = page_dir.join(format!("{rstem}.html"));
        outs.write(&file, html.as_bytes())
            .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", file.display())))?;
        pages.insert(rank, format!("{rstem}.html"));
    }
    Ok(pages)
}

struct Inputs<'a> {
    stats: &'a RunStats,
    ops: &'a Report,
    steps: &'a [&'a StepTime],
    links: &'a [(String, PathBuf)],
    advice: &'a [Advice],
    nav: &'a Nav,
    /// Where the page's timeline is, relative to the page (None: the run has no trace).
    timeline: Option<&'a str>,
    /// Its communication, if it has any.
    comm: Option<&'a crate::comm::Comm>,
    /// Each rank's own page, for a cluster.
    rank_pages: &'a BTreeMap<u32, String>,
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

/// A link to what a suggestion is about.
fn target_link(t: &Target) -> String {
    match t {
        Target::Type(ty) => format!(
            r##"<a class="target" href="#type={}">{} ops</a>"##,
            esc(&urlencode(ty)),
            esc(ty)
        ),
        Target::Step(id) => format!(r##"<a class="target" href="#step={id}">step {id}</a>"##),
        Target::Rank(r) => format!(r##"<a class="target" href="#rank-{r}">rank {r}</a>"##),
    }
}

/// Percent-encodes what is not a URL's unreserved character.
fn urlencode(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

fn assistant(advice: &[Advice]) -> String {
    let mut h = String::from(r#"<section id="assistant"><h2>Assistant</h2>"#);
    if advice.is_empty() {
        h.push_str(r#"<p class="note" id="no-advice">No suggestions: none of the rules fired (docs/design.md, "The assistant", lists them with their thresholds).</p>"#);
    }
    for a in advice {
        let links: Vec<String> = a.targets.iter().take(20).map(target_link).collect();
        let _ = write!(
            h,
            r#"<div class="advice" data-rule="{rule}"><h3>{title}</h3><p class="evidence">{ev}</p><p>{todo}</p><p class="targets">{links}</p></div>"#,
            rule = a.rule,
            title = esc(&a.title),
            ev = esc(&a.evidence),
            todo = esc(a.what_to_do),
            links = links.join(" "),
        );
    }
    h.push_str("</section>");
    h
}

/// Embeds `v` as JSON in a script element (only "</" could end it early).
fn json_script(id: &str, v: &serde_json::Value) -> String {
    format!(
        r#"<script type="application/json" id="{id}">{}</script>"#,
        v.to_string().replace("</", "<\\/")
    )
}

fn render(x: &Inputs) -> String {
    let r = x.stats;
    let mut h = String::with_capacity(1 << 20);
    page_head(&mut h, x);
    overview(&mut h, r, x.advice);
    if let Some(dir) = x.timeline {
        timeline_section(&mut h, dir);
    }
    types_section(&mut h, r);

    // Step trace.
    h.push_str(r#"<section id="steps"><h2>Step trace</h2>"#);
    h.push_str(&step_charts(x.steps));
    h.push_str("</section>\n");

    h.push_str(&cluster::cluster_section(r, x.rank_pages));
    if let Some(c) = x.comm {
        h.push_str(&cluster::communication_section(c));
    }
    h.push_str(&pipeline_section(r, x.steps));
    h.push_str(&memory::memory_section(r));
    h.push_str(&memory::host_section(r));
    busy_section(&mut h, r);
    ops_section(&mut h, x);
    timeline_files(&mut h, x.links);
    let _ = write!(h, "<script>{JS}</script>\n</body></html>\n");
    h
}

/// Writes the page's head, its navigation links, title and one-line summary.
fn page_head(h: &mut String, x: &Inputs) {
    let r = x.stats;
    let title = format!("aclprof report: {}", r.name);
    let mut nav = String::new();
    if let Some(i) = &x.nav.index {
        let _ = write!(nav, r#"<a href="{}">&larr; all runs</a>"#, esc(i));
    }
    if let Some(c) = &x.nav.cluster {
        let _ = write!(nav, r#"<a href="{}">&larr; the cluster</a>"#, esc(c));
    }
    if let Some(c) = &x.nav.compare {
        let _ = write!(
            nav,
            r#" · <a href="{}">compare with another run</a>"#,
            esc(c)
        );
    }
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{t}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{css}</style></head><body>
<nav>{nav}</nav>
<h1>{t}</h1>
<p class="summary"><b id="total-ops">{ops}</b> ops, <b>{time}</b> us of op time in <b>{ntypes}</b> op types{corrupt}; recorded {when}. Made by aclprof {ver}.</p>
"#,
        t = esc(&title),
        css = CSS,
        ops = r.types.ops,
        time = us(r.types.total_ns),
        ntypes = r.types.rows.len(),
        corrupt = if r.types.corrupt > 0 {
            format!(", {}", analyze::corrupt_skipped(r.types.corrupt))
        } else {
            String::new()
        },
        when = esc(&r.when),
        ver = env!("CARGO_PKG_VERSION"),
    );
}

/// Writes the overview (the overall split) beside the assistant.
fn overview(h: &mut String, r: &RunStats, advice: &[Advice]) {
    h.push_str(r#"<div class="overview"><section id="overall"><h2>Where the device time went</h2><table id="overall-table"><thead><tr><th>Time</th><th>Ops</th><th>us</th><th>of E2E</th></tr></thead><tbody>"#);
    let overall = r.overall();
    let e2e = overall.first().map_or(0, |o| o.2) as f64;
    for (k, n, t) in &overall {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            n.map_or("-".into(), |n| n.to_string()),
            us(*t),
            meter(*t as f64, e2e)
        );
    }
    h.push_str(r#"</tbody></table><p class="note">Summed over devices; each device from its first op to its last. Computing classes sum their ops' durations, so they exceed Computing where streams overlap.</p></section>"#);
    h.push_str(&assistant(advice));
    h.push_str("</div>\n");
}

/// Writes the timeline, the view opened first, loaded from directory `dir`.
fn timeline_section(h: &mut String, dir: &str) {
    let _ = write!(
        h,
        r#"<section id="timeline"><h2>Timeline</h2>
<p class="tl-bar"><input id="tl-search" type="search" placeholder="Find slices by name" aria-label="find slices"> <button id="tl-prev" title="previous (Shift+Enter)">&larr;</button><button id="tl-next" title="next (Enter)">&rarr;</button> <span id="tl-found"></span> <button id="tl-reset">whole run</button> <span class="note">Click the timeline, then W/S zoom and A/D pan (also Ctrl+wheel, Shift+wheel, drag); click a slice for its details.</span> <span id="tl-status"></span></p>
<div id="tl" data-src="{src}"><canvas id="tl-canvas" tabindex="0"></canvas></div>
<div id="tl-details"></div></section>
<script>{js}</script>
"#,
        src = esc(dir),
        js = TIMELINE_JS
    );
}

/// Writes the op types: charts and statistics.
fn types_section(h: &mut String, r: &RunStats) {
    h.push_str(r#"<section id="types"><h2>Op types by device time</h2><p class="toggle"><button id="show-bar" class="on">bars</button><button id="show-pie">pie</button> <span class="note">Click a type to list its ops.</span></p>"#);
    h.push_str(&type_bars(&r.types));
    h.push_str(&type_pie(&r.types));
    h.push_str(r#"<table id="type-table"><thead><tr><th>Type</th><th>Count</th><th>Total (us)</th><th>Share (%)</th><th>Mean (us)</th><th>Min (us)</th><th>Max (us)</th><th>Core</th></tr></thead><tbody>"#);
    for t in &r.types.rows {
        let _ = write!(
            h,
            r##"<tr data-type="{k}"><td><a href="#type={u}">{k}</a></td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>"##,
            t.count,
            us(t.total_ns),
            t.share,
            t.mean_ns() / 1000.0,
            us(t.min_ns),
            us(t.max_ns),
            esc(r.core.get(&t.key).map_or("", String::as_str)),
            k = esc(&t.key),
            u = esc(&urlencode(&t.key)),
        );
    }
    h.push_str("</tbody></table></section>\n");
}

/// Writes the busy and free time: per device, per rank (several ranks) and per stream.
fn busy_section(h: &mut String, r: &RunStats) {
    h.push_str(r#"<section id="busy"><h2>Busy and free time</h2><p class="note">The whole run, from each device's or stream's first op to its last.</p>"#);
    h.push_str(r#"<table id="device-table"><thead><tr><th>Device</th><th>Rank</th><th>Ops</th><th>E2E (us)</th><th>Computing (us)</th><th>Communication, not overlapped (us)</th><th>Free (us)</th><th>Busy</th></tr></thead><tbody>"#);
    for d in &r.devices {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            d.dev,
            d.rank.map_or("-".into(), |r| r.to_string()),
            d.ops,
            us(d.e2e),
            us(d.computing),
            us(d.not_overlapped),
            us(d.free),
            meter((d.computing + d.not_overlapped) as f64, d.e2e as f64)
        );
    }
    h.push_str("</tbody></table>");
    if r.ranks() > 1 {
        rank_table(h, r);
    }
    h.push_str(r#"<table id="stream-table"><thead><tr><th>Device</th><th>Stream</th><th>Ops</th><th>Busy (us)</th><th>Free (us)</th><th>Span (us)</th><th>Busy</th></tr></thead><tbody>"#);
    for ((d, s), st) in &r.streams {
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
}

/// Writes the table of ranks, each summed over its devices.
fn rank_table(h: &mut String, r: &RunStats) {
    let mut ranks: BTreeMap<u32, (u64, u64, u64, u64, u64)> = BTreeMap::new();
    for d in &r.devices {
        if let Some(k) = d.rank {
            let e = ranks.entry(k).or_default();
            e.0 += d.ops;
            e.1 += d.op_time;
            e.2 += d.e2e;
            e.3 += d.computing;
            e.4 += d.free;
        }
    }
    h.push_str(r#"<table id="rank-table"><thead><tr><th>Rank</th><th>Ops</th><th>Op time (us)</th><th>E2E (us)</th><th>Computing (us)</th><th>Free (us)</th></tr></thead><tbody>"#);
    for (k, (n, ot, e, c, f)) in ranks {
        let _ = write!(
            h,
            r#"<tr id="rank-{k}"><td>{k}</td><td>{n}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            us(ot),
            us(e),
            us(c),
            us(f)
        );
    }
    h.push_str("</tbody></table>");
}

/// Writes every op (or the longest [`MAX_OPS`]): the table's frame, and the ops and steps
/// as JSON for its script.
fn ops_section(h: &mut String, x: &Inputs) {
    let r = x.stats;
    let _ = write!(
        h,
        r#"<section id="ops"><h2>Ops</h2>{note}
<p><input id="search" type="search" placeholder="Search names and types (l1b2conv finds layer1/block2/conv)" aria-label="search ops"> <span id="filters"></span> <span id="count"></span></p>
<table id="op-table"><thead><tr><th data-k="0">Name</th><th data-k="1">Type</th><th data-k="2">Device</th><th data-k="3">Stream</th><th data-k="4">Model</th><th data-k="5">Start (us)</th><th data-k="6" class="sorted desc">Duration (us)</th>{meta_heads}</tr></thead><tbody></tbody></table>
<p id="pager"><button id="prev">&larr; previous</button> <span id="page"></span> <button id="next">next &rarr;</button></p></section>
"#,
        meta_heads = if x.ops.meta {
            r#"<th data-k="7">Input shapes</th><th data-k="8">Output shapes</th><th data-k="9">FLOPs</th><th data-k="10">Memory (bytes)</th>"#
        } else {
            ""
        },
        note = if (x.ops.rows.len() as u64) < r.types.ops {
            format!(
                r#"<p class="note">The {} longest of {} ops.</p>"#,
                x.ops.rows.len(),
                r.types.ops
            )
        } else {
            String::new()
        }
    );
    h.push_str(&json_script("op-data", &op_data(x).into()));
    h.push_str(&json_script("step-data", &step_data(x).into()));
    h.push('\n');
}

/// The op table's rows: name, type, device, stream, model, start and duration (us), and
/// the shapes and cost when the ops carried them.
fn op_data(x: &Inputs) -> Vec<serde_json::Value> {
    let r = x.stats;
    x.ops
        .rows
        .iter()
        .map(|o| {
            let (ty, dev, stream, model, start) = o.op.clone().unwrap_or_default();
            let mut row = serde_json::json!([
                o.key,
                ty,
                dev,
                stream,
                model,
                (start.saturating_sub(r.first)) as f64 / 1000.0,
                o.total_ns as f64 / 1000.0
            ]);
            // The ops' shapes and cost, when they carried them (blank where unknown).
            if x.ops.meta {
                let a = row.as_array_mut().expect("an array");
                a.push(o.in_shapes.clone().unwrap_or_default().into());
                a.push(o.out_shapes.clone().unwrap_or_default().into());
                a.push(o.flops.map_or(serde_json::Value::Null, Into::into));
                a.push(o.bytes.map_or(serde_json::Value::Null, Into::into));
            }
            row
        })
        .collect()
}

/// The steps for the op table's step filter: id, start, end and phases (us).
fn step_data(x: &Inputs) -> Vec<serde_json::Value> {
    let r = x.stats;
    x.steps
        .iter()
        .map(|s| {
            let f = |n: u64| n as f64 / 1000.0;
            // Starts relative to the run's first op, as the op table's.
            serde_json::json!([
                s.id,
                f(s.start.saturating_sub(r.first)),
                f(s.end.saturating_sub(r.first)),
                f(s.gap),
                f(s.fp_bp),
                f(s.tail),
                f(s.computing),
                f(s.free)
            ])
        })
        .collect()
}

/// Writes the links to the run's timeline files (`links`: (relative, absolute) paths).
fn timeline_files(h: &mut String, links: &[(String, PathBuf)]) {
    h.push_str(r#"<section id="timelines"><h2>Timeline files</h2><ul>"#);
    if links.is_empty() {
        h.push_str(
            "<li>No result directory: a file of records or a database has no timeline here.</li>",
        );
    }
    for (rel, abs) in links {
        let what = if rel.ends_with(".pftrace") {
            "open in ui.perfetto.dev (nanosecond timestamps)"
        } else {
            "msprof JSON: MindStudio Insight, msprof-analyze, chrome://tracing"
        };
        // The file's name: the path on the machine that wrote the page means nothing to
        // those it is shared with.
        let name = abs.file_name().map_or_else(
            || abs.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let _ = write!(
            h,
            r#"<li><a href="{}">{}</a> — {what}</li>"#,
            esc(rel),
            esc(&name)
        );
    }
    h.push_str("</ul></section>\n");
}

const CSS: &str = include_str!("style.css");

/// The run page's script: op table (sort, fuzzy search, type and step filters, pages),
/// chart toggle, step selector, and `#type=`, `#step=`, `#q=` in the address.
const JS: &str = include_str!("report.js");

/// The timeline's canvas: loads the run's timeline directory, draws and navigates it.
const TIMELINE_JS: &str = include_str!("timeline.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_and_scripts_cannot_be_closed() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let stats = RunStats {
            name: "<dir>".into(),
            ..Default::default()
        };
        let mut ops = Report::default();
        ops.rows.push(analyze::Row {
            key: "</script><script>alert(1)</script>".into(),
            op: Some(("T".into(), 0, 1, 1, 5)),
            total_ns: 1000,
            ..Default::default()
        });
        let html = render(&Inputs {
            stats: &stats,
            ops: &ops,
            steps: &[],
            links: &[],
            advice: &[],
            nav: &Nav::default(),
            timeline: None,
            comm: None,
            rank_pages: &BTreeMap::new(),
        });
        assert_eq!(
            html.matches("</script>").count(),
            3,
            "only the page's own three"
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

    #[test]
    fn site_or_page() {
        assert!(!is_site(Path::new("report.html")));
        assert!(!is_site(Path::new("x/Report.HTM")));
        assert!(!is_site(Path::new("/dev/null")));
        assert!(is_site(Path::new("site")));
        assert!(is_site(Path::new("site.html/")));
        assert_eq!(urlencode("a b/C_1"), "a%20b%2FC_1");
    }
}
