//! The run page's Memory and Host sections, in the manner of MindInsight's and MindStudio
//! Insight's memory views: curves of the operator memory allocated and reserved and of the
//! application's memory over time with the peak marked, memory per op (sort and search),
//! the static plan, allocations never released; and the host process's CPU and memory
//! beside it.

use super::{esc, us};
use aclprof::analyze::memory::Event;
use aclprof::formats::host_sys::Sample;
use aclprof::formats::memory::{kb, Pool};
use aclprof::runstats::RunStats;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const W: f64 = 900.0;
const H: f64 = 220.0;
/// Points a curve keeps at most: the most of each slice of time (a peak is never lost).
const POINTS: usize = 1200;

/// A series: (name, CSS class, points (ns, value)).
type Series<'a> = (&'a str, &'a str, Vec<(u64, f64)>);

/// Keeps at most [`POINTS`] points of a step curve: per slice of time, its largest value.
fn thin(points: Vec<(u64, f64)>, t0: u64, t1: u64) -> Vec<(u64, f64)> {
    if points.len() <= POINTS {
        return points;
    }
    let span = (t1 - t0).max(1);
    let mut out: Vec<(u64, f64)> = Vec::with_capacity(POINTS + 1);
    let mut slot = u64::MAX;
    for (t, v) in points {
        let s = (t - t0) * POINTS as u64 / span;
        match out.last_mut() {
            Some(last) if s == slot => last.1 = last.1.max(v),
            _ => {
                out.push((t, v));
                slot = s;
            }
        }
    }
    out
}

/// A line chart of step curves, with the peak of the first series marked; `unit` labels
/// the y axis.
fn chart(id: &str, series: &[Series], unit: &str, t0: u64, t1: u64) -> String {
    let span = (t1.saturating_sub(t0)).max(1) as f64;
    let top = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        .max(1e-9);
    let x = |t: u64| 40.0 + (t.saturating_sub(t0)) as f64 / span * (W - 50.0);
    let prec = if top < 10.0 { 2 } else { 1 };
    let y = |v: f64| H - 20.0 - v / top * (H - 40.0);
    let mut h = format!(
        r#"<svg id="{id}" class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{id}">"#
    );
    let _ = write!(
        h,
        r#"<text x="2" y="14" class="axis">{top:.prec$} {unit}</text><text x="2" y="{}" class="axis">0</text><text x="{}" y="{}" class="axis" text-anchor="end">{} us</text>"#,
        H - 22.0,
        W - 10.0,
        H - 4.0,
        us(t1.saturating_sub(t0))
    );
    for (name, class, pts) in series {
        if pts.is_empty() {
            continue;
        }
        let mut d = String::new();
        let mut last = 0.0;
        for (i, &(t, v)) in pts.iter().enumerate() {
            // A step curve: hold the last value until the next point.
            if i == 0 {
                let _ = write!(d, "M{:.1},{:.1}", x(t), y(v));
            } else {
                let _ = write!(d, " H{:.1} V{:.1}", x(t), y(v));
            }
            last = v;
        }
        let _ = write!(d, " H{:.1}", x(t1));
        let _ = write!(
            h,
            r#"<path class="{class}" d="{d}" data-series="{}" data-last="{last:.3}"><title>{}</title></path>"#,
            esc(name),
            esc(name)
        );
    }
    if let Some((name, _, pts)) = series.first() {
        if let Some(&(t, v)) = pts
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        {
            let _ = write!(
                h,
                r#"<circle class="peak" cx="{:.1}" cy="{:.1}" r="4" data-value="{v:.3}"><title>peak {} {v:.3} {unit}</title></circle>"#,
                x(t),
                y(v),
                esc(name)
            );
        }
    }
    h.push_str("</svg>");
    let mut legend = String::from(r#"<p class="legend">"#);
    for (name, class, _) in series {
        let _ = write!(
            legend,
            r#"<span class="{class}-key">&#9632; {}</span> "#,
            esc(name)
        );
    }
    legend.push_str("</p>");
    h + &legend
}

/// Per device: the operator pool's allocated and reserved, and everything else the process
/// held (application, models), as curves in KB.
fn curves(events: &[Event], device: u32) -> [Vec<(u64, f64)>; 3] {
    let mut held: BTreeMap<Pool, u64> = BTreeMap::new();
    let (mut alloc, mut reserved, mut app) = (Vec::new(), Vec::new(), Vec::new());
    for e in events.iter().filter(|e| e.device == device) {
        let k = |b: u64| b as f64 / 1024.0;
        match e.pool {
            Pool::Op => {
                alloc.push((e.start, k(e.allocated)));
                reserved.push((e.start, k(e.reserved)));
            }
            p => {
                held.insert(p, e.allocated);
                app.push((e.start, k(held.values().sum())));
            }
        }
    }
    [alloc, reserved, app]
}

pub(super) fn memory_section(r: &RunStats) -> String {
    let Some(a) = &r.memory_analysis else {
        return String::new();
    };
    let events = &r.memory.events;
    let (t0, t1) = (
        events.first().map_or(0, |e| e.start),
        events.last().map_or(0, |e| e.start),
    );
    let mut h = String::from(r#"<section id="memory"><h2>Memory</h2>"#);
    for d in &a.devices {
        let _ = write!(
            h,
            r#"<p class="summary" id="memory-peak-{dev}">Device {dev}: peak memory usage: operator allocated <b class="peak-allocated">{}</b> KB (at <b>{}</b>), operator reserved <b class="peak-reserved">{}</b> KB; the process held at most <b>{}</b> KB and <b class="held-at-end">{}</b> KB at the end.</p>"#,
            kb(d.peak_allocated),
            esc(if d.peak_op.is_empty() {
                "-"
            } else {
                &d.peak_op
            }),
            kb(d.peak_reserved),
            kb(d.peak_held),
            kb(d.held_at_end),
            dev = d.device,
        );
        let [alloc, reserved, app] = curves(events, d.device);
        let series: Vec<Series> = vec![
            ("Operator allocated", "mem-alloc", thin(alloc, t0, t1)),
            ("Operator reserved", "mem-reserved", thin(reserved, t0, t1)),
            ("Application and models", "mem-app", thin(app, t0, t1)),
        ];
        h.push_str(&chart(
            &format!("memory-chart-{}", d.device),
            &series,
            "KB",
            t0,
            t1.max(t0 + 1),
        ));
    }
    for (rule, evidence) in &a.findings {
        let _ = write!(
            h,
            r#"<p class="finding" data-rule="{}"><code>{}</code>: {}.</p>"#,
            esc(rule),
            esc(rule),
            esc(evidence)
        );
    }
    // Memory per op: sort by a column, search by name.
    h.push_str(r#"<h3>Memory per op</h3><p><input id="memory-search" type="search" placeholder="Search ops" aria-label="search memory per op"></p><table id="memory-ops" class="sortable"><thead><tr><th data-k="0">Device</th><th data-k="1">Op</th><th data-k="2">Allocations</th><th data-k="3">Total (KB)</th><th data-k="4" class="sorted desc">Max (KB)</th><th data-k="5">Avg lifetime (us)</th></tr></thead><tbody>"#);
    for d in &a.devices {
        for o in d.ops.iter().take(2000) {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td></tr>",
                d.device,
                esc(&o.name),
                o.allocations,
                kb(o.bytes),
                kb(o.max_bytes),
                o.held_ns as f64 / o.released.max(1) as f64 / 1e3
            );
        }
    }
    h.push_str("</tbody></table>");
    let unreleased: Vec<_> = a
        .devices
        .iter()
        .flat_map(|d| d.unreleased.iter().map(move |u| (d.device, u)))
        .collect();
    if !unreleased.is_empty() {
        let _ = write!(
            h,
            r#"<h3>Never released</h3><table id="memory-unreleased"><thead><tr><th>Device</th><th>Pool</th><th>Owner</th><th>Size (KB)</th><th>Allocated at (us)</th></tr></thead><tbody>"#
        );
        for (dev, u) in unreleased.iter().take(500) {
            let pool = match u.pool {
                Pool::Op => "operator",
                Pool::App => "application",
                Pool::Model => "model",
            };
            let _ = write!(
                h,
                "<tr><td>{dev}</td><td>{pool}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&u.name),
                kb(u.bytes),
                us(u.at_ns.saturating_sub(t0))
            );
        }
        h.push_str("</tbody></table>");
    }
    if !r.memory.plan.is_empty() {
        h.push_str(r#"<h3>Static plan</h3><table id="memory-plan"><thead><tr><th>Model</th><th>Graph</th><th>Op</th><th>Node start</th><th>Node end</th><th>Size (KB)</th></tr></thead><tbody>"#);
        for p in r.memory.plan.iter().take(2000) {
            let last = if p.last == aclprof::formats::memory::UNTIL_GRAPH_END {
                "end of graph".to_string()
            } else {
                p.last.to_string()
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{last}</td><td>{}</td></tr>",
                esc(&p.model),
                p.graph,
                esc(&p.name),
                p.first,
                kb(p.size)
            );
        }
        h.push_str("</tbody></table>");
    }
    h.push_str("</section>\n");
    h
}

/// The host process's CPU (all of its threads, in CPUs) and memory (% of the machine's),
/// over the same time as the device's ops.
pub(super) fn host_section(r: &RunStats) -> String {
    let (mut cpu, mut mem) = (Vec::new(), Vec::new());
    for s in &r.memory.samples {
        match s {
            Sample::Cpu { start, cpus } => cpu.push((*start, cpus.iter().sum::<f64>())),
            Sample::Mem { start, used, total } => {
                mem.push((*start, 100.0 * *used as f64 / (*total).max(1) as f64))
            }
            _ => {}
        }
    }
    if cpu.is_empty() && mem.is_empty() {
        return String::new();
    }
    let t0 = cpu.iter().chain(&mem).map(|p| p.0).min().unwrap_or(0);
    let t1 = cpu.iter().chain(&mem).map(|p| p.0).max().unwrap_or(0);
    let mut h = String::from(
        r#"<section id="host"><h2>Host</h2><p class="note">The profiled process, sampled from /proc (ACL_PROF_HOST_SYS): its CPU use (100 % is one whole CPU) and its resident memory.</p>"#,
    );
    if !cpu.is_empty() {
        let mean = cpu.iter().map(|p| p.1).sum::<f64>() / cpu.len() as f64;
        let _ = write!(
            h,
            r#"<p class="summary">CPU: <b id="host-cpu-mean">{mean:.1}</b> % on average over {} samples.</p>"#,
            cpu.len()
        );
    }
    for (id, name, class, pts) in [
        ("host-cpu", "CPU", "host-cpu", cpu),
        ("host-memory", "Memory", "host-mem", mem),
    ] {
        if !pts.is_empty() {
            let series = [(name, class, thin(pts, t0, t1))];
            h.push_str(&chart(id, &series, "%", t0, t1.max(t0 + 1)));
        }
    }
    h.push_str("</section>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thinned_curve_keeps_its_peak() {
        let pts: Vec<(u64, f64)> = (0..10_000u64)
            .map(|i| (i, if i == 7_777 { 99.0 } else { (i % 7) as f64 }))
            .collect();
        let t = thin(pts, 0, 9_999);
        assert!(t.len() <= POINTS + 1, "{}", t.len());
        assert!(t.iter().any(|p| p.1 == 99.0));
    }
}
