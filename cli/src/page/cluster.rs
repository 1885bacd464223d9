//! The run page's cluster and communication views, for runs of several ranks and runs with
//! communication: per step each rank's computing, communication not overlapped and free time
//! (step_trace_time.csv's figures, which msprof-analyze's cluster step trace gathers), the
//! slow rank and why, a rank × step heat map; and the communication analysis of
//! `aclprof analyze --communication` with its rank × rank link matrix (docs/design.md,
//! "The report's cluster and communication views").

use super::{esc, us};
use crate::comm::{Comm, Times};
use aclprof::runstats::RunStats;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Ranks and steps drawn in the cluster view's bars and heat map; past them, the table.
const MAX_RANKS: usize = 64;
const MAX_STEPS: usize = 50;
const HEAT_RANKS: usize = 256;
const HEAT_STEPS: usize = 200;

/// The height of a rank's bar in the cluster view's bars.
const BAR_H: f64 = 16.0;

/// (computing, communication not overlapped, free), ns.
type Split = [u64; 3];

const COLORS: [(&str, &str); 3] = [
    ("#4e79a7", "computing"),
    ("#f28e2b", "communication not overlapped"),
    ("#bab0ac", "free"),
];

/// The slow rank and why, if one stands out: (rank, reason). Which rank is the library's
/// rule ([`RunStats::slow_rank`]); the words are the view's.
pub fn slow_rank(r: &RunStats) -> Option<(u32, String)> {
    use aclprof::analyze::verdict::Why;
    let s = r.slow_rank()?;
    let why = match s.why {
        Why::Computes => format!(
            "its computing is the longest: {} us, {:.2}× the median rank's; the others \
             wait for it in communication (rank {} longest, {} us not overlapped)",
            us(s.ns),
            s.of_median,
            s.waiter,
            us(s.waiter_ns)
        ),
        Why::Waits => format!(
            "it waits in communication for another rank: {} us not overlapped with \
             computing, {:.2}× the median rank's, while its computing is no longer than the \
             others'",
            us(s.ns),
            s.of_median
        ),
    };
    Some((s.rank, why))
}

/// The cluster section of a run with several ranks (empty otherwise). `rank_pages`: each
/// rank's own page, where there is one.
pub fn cluster_section(r: &RunStats, rank_pages: &BTreeMap<u32, String>) -> String {
    let cells = step_cells(r);
    let ranks: BTreeMap<u32, Split> = r.rank_splits();
    if ranks.len() < 2 {
        return String::new();
    }
    let steps: Vec<u64> = {
        let mut v: Vec<u64> = cells.keys().map(|k| k.1).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let from_steps = !cells.is_empty();
    let slow = slow_rank(r);
    let mut h = String::from(r#"<section id="cluster"><h2>Cluster</h2>"#);
    let _ = write!(
        h,
        r#"<p class="note">{} ranks{}. Each rank's computing, communication not overlapped with computing, and free time, as its step_trace_time.csv has them (msprof-analyze's cluster step trace gathers the same).</p>"#,
        ranks.len(),
        if from_steps {
            format!(", {} steps", steps.len())
        } else {
            ", the whole run (no steps)".into()
        }
    );
    match &slow {
        Some((rank, why)) => {
            let _ = write!(
                h,
                r#"<div class="advice" id="slow-rank" data-rank="{rank}"><h3>Slow rank: rank {rank}</h3><p>{}</p></div>"#,
                esc(why)
            );
        }
        None => h.push_str(
            r#"<p class="note" id="slow-rank">No rank stands out: every rank's computing and communication are within 1.2× the median rank's.</p>"#,
        ),
    }
    let slow = slow.map(|s| s.0);
    if ranks.len() <= MAX_RANKS {
        let shown_steps = &steps[..steps.len().min(MAX_STEPS)];
        cluster_bars(&mut h, &ranks, &cells, shown_steps, slow);
    }
    if from_steps && ranks.len() <= HEAT_RANKS {
        cluster_heat(
            &mut h,
            &ranks,
            &cells,
            &steps[..steps.len().min(HEAT_STEPS)],
        );
    }
    cluster_table(&mut h, r, &ranks, slow, rank_pages);
    h.push_str("</section>\n");
    h
}

/// Each (rank, step)'s split, over the rank's devices.
fn step_cells(r: &RunStats) -> BTreeMap<(u32, u64), Split> {
    let mut cells: BTreeMap<(u32, u64), Split> = BTreeMap::new();
    for s in &r.steps {
        let Some(rank) = s.rank else { continue };
        let c = cells.entry((rank, s.id)).or_default();
        c[0] += s.computing;
        c[1] += s.not_overlapped;
        c[2] += s.free;
    }
    cells
}

/// Writes the bars of each rank's split: the whole run, then each of `shown_steps`, with a
/// selector between them. `slow`: the slow rank.
fn cluster_bars(
    h: &mut String,
    ranks: &BTreeMap<u32, Split>,
    cells: &BTreeMap<(u32, u64), Split>,
    shown_steps: &[u64],
    slow: Option<u32>,
) {
    h.push_str(r#"<p><label>Show <select id="cluster-step"><option value="all">every step together</option>"#);
    for s in shown_steps {
        let _ = write!(h, r#"<option value="{s}">step {s}</option>"#);
    }
    h.push_str("</select></label> <span class=\"legend\">");
    for (c, n) in COLORS {
        let _ = write!(h, r#"<span><i style="background:{c}"></i>{n}</span>"#);
    }
    h.push_str("</span></p>");
    let height = ranks.len() as f64 * (BAR_H + 4.0) + 10.0;
    let _ = write!(
        h,
        r#"<svg id="cluster-bars" width="900" height="{height:.0}" role="img" aria-label="each rank's time">"#
    );
    let groups =
        std::iter::once(("all".to_string(), ranks.clone())).chain(shown_steps.iter().map(|&s| {
            let m: BTreeMap<u32, Split> = ranks
                .keys()
                .map(|&rk| (rk, cells.get(&(rk, s)).copied().unwrap_or_default()))
                .collect();
            (s.to_string(), m)
        }));
    for (key, m) in groups {
        bar_group(h, &key, &m, slow);
    }
    h.push_str("</svg>");
}

/// Writes the group of bars of step `key` ("all": the whole run), a split per rank in `m`.
fn bar_group(h: &mut String, key: &str, m: &BTreeMap<u32, Split>, slow: Option<u32>) {
    let max = m
        .values()
        .map(|s| s.iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let _ = write!(
        h,
        r#"<g data-step="{key}"{}>"#,
        if key == "all" {
            ""
        } else {
            r#" style="display:none""#
        }
    );
    for (i, (rank, s)) in m.iter().enumerate() {
        let y = 4.0 + i as f64 * (BAR_H + 4.0);
        let mark = slow == Some(*rank);
        let _ = write!(
            h,
            r#"<text x="0" y="{:.0}"{}>rank {rank}{}</text>"#,
            y + 12.0,
            if mark { r#" class="slow-label""# } else { "" },
            if mark { " (slow)" } else { "" }
        );
        let mut x = 110.0;
        for (k, (c, n)) in COLORS.iter().enumerate() {
            let w = s[k] as f64 / max * 680.0;
            let _ = write!(
                h,
                r#"<rect class="seg" data-rank="{rank}" data-kind="{k}" data-ns="{}" x="{x:.2}" y="{y:.0}" width="{w:.2}" height="{BAR_H}" fill="{c}"><title>rank {rank}: {n} {} us</title></rect>"#,
                s[k],
                us(s[k])
            );
            x += w;
        }
        let _ = write!(
            h,
            r#"<text x="{:.0}" y="{:.0}">{} us</text>"#,
            x + 6.0,
            y + 12.0,
            us(s.iter().sum())
        );
    }
    h.push_str("</g>");
}

/// Writes the heat map: each rank's step time, step by step, over steps `hs`.
fn cluster_heat(
    h: &mut String,
    ranks: &BTreeMap<u32, Split>,
    cells: &BTreeMap<(u32, u64), Split>,
    hs: &[u64],
) {
    let cell = (720.0 / hs.len() as f64).clamp(4.0, 24.0);
    let row = if ranks.len() > 64 { 3.0 } else { 12.0 };
    let (lo, hi) = cells
        .values()
        .map(|c| c.iter().sum::<u64>())
        .fold((u64::MAX, 0), |(a, b), t| (a.min(t), b.max(t)));
    let _ = write!(
        h,
        r#"<h3>Step time, rank by rank</h3><p class="note">Darker is longer ({} to {} us). Click a step to show it above.</p><svg id="cluster-heat" width="{:.0}" height="{:.0}" role="img" aria-label="step time per rank and step">"#,
        us(if lo == u64::MAX { 0 } else { lo }),
        us(hi),
        110.0 + cell * hs.len() as f64,
        row * ranks.len() as f64 + 4.0
    );
    for (i, rank) in ranks.keys().enumerate() {
        let y = i as f64 * row;
        if row >= 10.0 {
            let _ = write!(
                h,
                r#"<text x="0" y="{:.0}" font-size="10">rank {rank}</text>"#,
                y + 10.0
            );
        }
        for (j, s) in hs.iter().enumerate() {
            let t: u64 = cells.get(&(*rank, *s)).map_or(0, |c| c.iter().sum());
            let f = if hi > lo {
                (t - lo.min(t)) as f64 / (hi - lo) as f64
            } else {
                0.5
            };
            let l = 92.0 - 62.0 * f;
            let _ = write!(
                h,
                r#"<rect data-rank="{rank}" data-step="{s}" x="{:.1}" y="{y:.0}" width="{:.1}" height="{:.0}" fill="hsl(212,55%,{l:.0}%)"><title>rank {rank}, step {s}: {} us</title></rect>"#,
                110.0 + j as f64 * cell,
                cell - 0.5,
                row - 0.5,
                us(t)
            );
        }
    }
    h.push_str("</svg>");
}

/// Writes the table of every rank, with its ops and their time
/// (`analyze --aggregate-by rank`), linked to its page in `rank_pages`.
fn cluster_table(
    h: &mut String,
    r: &RunStats,
    ranks: &BTreeMap<u32, Split>,
    slow: Option<u32>,
    rank_pages: &BTreeMap<u32, String>,
) {
    let link = |rank: u32| match rank_pages.get(&rank) {
        Some(p) => format!(r#"<a href="{}">rank {rank}</a>"#, esc(p)),
        None => format!("rank {rank}"),
    };
    let mut ops: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for d in &r.devices {
        if let Some(rank) = d.rank {
            let e = ops.entry(rank).or_default();
            e.0 += d.ops;
            e.1 += d.op_time;
        }
    }
    h.push_str(r#"<table id="cluster-table"><thead><tr><th>Rank</th><th>Computing (us)</th><th>Communication, not overlapped (us)</th><th>Free (us)</th><th>Ops</th><th>Op time (us)</th><th>Busy</th></tr></thead><tbody>"#);
    for (rank, s) in ranks {
        let total: u64 = s.iter().sum();
        let (n, t) = ops.get(rank).copied().unwrap_or_default();
        let _ = write!(
            h,
            r#"<tr data-rank="{rank}"{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{n}</td><td>{}</td><td>{}</td></tr>"#,
            if slow == Some(*rank) {
                r#" class="hl""#
            } else {
                ""
            },
            link(*rank),
            us(s[0]),
            us(s[1]),
            us(s[2]),
            us(t),
            super::meter((s[0] + s[1]) as f64, total as f64)
        );
    }
    h.push_str("</tbody></table>");
}

fn times_cells(t: &Times) -> String {
    let d = (t.transit_ns + t.wait_ns).max(1) as f64;
    format!(
        r#"<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.4}</td><td><span class="split"><i class="transit" style="width:{:.1}%"></i><i class="wait" style="width:{:.1}%"></i></span></td>"#,
        t.count,
        us(t.total_ns),
        us(t.transit_ns),
        us(t.wait_ns),
        t.wait_ratio(),
        100.0 * t.transit_ns as f64 / d,
        100.0 * t.wait_ns as f64 / d
    )
}

/// The communication section: ops, ranks, links and their matrix.
pub fn communication_section(c: &Comm) -> String {
    let mut h = String::from(
        r#"<section id="communication"><h2>Communication</h2><p class="note">Each collective's time as CANN's tasks split it: transfer (tasks that move data) and wait (Notify_Wait), the same as <code>aclprof analyze --communication</code>. <span class="legend"><span><i style="background:#59a14f"></i>transfer</span><span><i style="background:#e15759"></i>wait</span></span></p>"#,
    );
    comm_tables(&mut h, c);
    for f in crate::comm::findings(c) {
        let _ = write!(h, r#"<p class="finding">{}</p>"#, esc(&f));
    }
    if c.links.is_empty() {
        h.push_str(r#"<p class="note">No links: the run's communication tasks carry no sender and receiver ranks.</p></section>"#);
        return h;
    }
    let slowest = c
        .slowest_link()
        .map(|(l, ratio)| (l.group.clone(), l.src, l.dst, ratio));
    // A matrix per group (ranks as the tasks name them).
    let mut groups: BTreeMap<&str, Vec<&crate::comm::Link>> = BTreeMap::new();
    for l in &c.links {
        groups.entry(&l.group).or_default().push(l);
    }
    for (gi, (g, links)) in groups.iter().enumerate() {
        link_matrix(&mut h, gi, g, links, slowest.as_ref());
    }
    if let Some((g, s, d, ratio)) = &slowest {
        let _ = write!(
            h,
            r#"<p id="slow-link" data-src="{s}" data-dst="{d}" data-group="{}" class="{}">Slowest link: rank {s} to rank {d} ({}), {:.2}× the median link's bandwidth{}.</p>"#,
            esc(g),
            if *ratio < 0.5 { "slow" } else { "" },
            esc(g),
            ratio,
            if *ratio < 0.5 {
                ": marked in the matrix"
            } else {
                ", within 2× of the others"
            }
        );
    }
    links_table(&mut h, c);
    h.push_str("</section>\n");
    h
}

/// Writes the tables of the communication's ops and ranks, the rank that waits most
/// marked.
fn comm_tables(h: &mut String, c: &Comm) {
    let head = "<th>Count</th><th>Total (us)</th><th>Transfer (us)</th><th>Wait (us)</th><th>Wait ratio</th><th></th>";
    let _ = write!(
        h,
        r#"<table id="comm-ops"><thead><tr><th>Group</th><th>Op type</th>{head}</tr></thead><tbody>"#
    );
    for ((g, ty), t) in &c.ops {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td>{}</tr>",
            esc(g),
            esc(ty),
            times_cells(t)
        );
    }
    h.push_str("</tbody></table>");
    let waits = c.waits_most().map(|w| w.0);
    let _ = write!(
        h,
        r#"<table id="comm-ranks"><thead><tr><th>Rank</th>{head}</tr></thead><tbody>"#
    );
    for (r, t) in &c.ranks() {
        let _ = write!(
            h,
            r#"<tr data-rank="{r}"{}><td>{r}{}</td>{}</tr>"#,
            if waits == Some(*r) {
                r#" class="hl""#
            } else {
                ""
            },
            if waits == Some(*r) {
                " (waits most)"
            } else {
                ""
            },
            times_cells(t)
        );
    }
    h.push_str("</tbody></table>");
}

/// Writes the matrix of group `g` (number `gi`): the bandwidth of each of its `links`,
/// sender by receiver, `slowest` (group, sender, receiver, ratio to the median) marked
/// when under half the median's.
fn link_matrix(
    h: &mut String,
    gi: usize,
    g: &str,
    links: &[&crate::comm::Link],
    slowest: Option<&(String, i64, i64, f64)>,
) {
    let mut ranks: Vec<i64> = links.iter().flat_map(|l| [l.src, l.dst]).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() > MAX_RANKS {
        return;
    }
    let max_bw = links.iter().map(|l| l.bandwidth()).fold(0.0, f64::max);
    let cell = 44.0;
    let _ = write!(
        h,
        r#"<h3>Links of {}: sender (rows) to receiver (columns), GB/s</h3><svg class="comm-matrix" id="comm-matrix-{gi}" width="{:.0}" height="{:.0}" role="img" aria-label="bandwidth per link">"#,
        esc(g),
        60.0 + cell * ranks.len() as f64,
        24.0 + cell * ranks.len() as f64
    );
    for (i, r) in ranks.iter().enumerate() {
        let _ = write!(
            h,
            r#"<text x="{:.0}" y="16" text-anchor="middle">{r}</text><text x="0" y="{:.0}">rank {r}</text>"#,
            60.0 + cell * (i as f64 + 0.5),
            24.0 + cell * (i as f64 + 0.6)
        );
    }
    for l in links {
        let (Some(i), Some(j)) = (
            ranks.iter().position(|r| *r == l.src),
            ranks.iter().position(|r| *r == l.dst),
        ) else {
            continue;
        };
        let bw = l.bandwidth();
        let is_slow =
            slowest.is_some_and(|s| s.0 == l.group && s.1 == l.src && s.2 == l.dst && s.3 < 0.5);
        // Slower is redder.
        let f = if max_bw > 0.0 { bw / max_bw } else { 1.0 };
        let _ = write!(
            h,
            r#"<g class="link{}" data-src="{}" data-dst="{}" data-bw="{bw:.4}"><rect x="{:.0}" y="{:.0}" width="{:.0}" height="{:.0}" fill="hsl({:.0},60%,{:.0}%)"{}/><text x="{:.0}" y="{:.0}" text-anchor="middle" font-size="10">{bw:.1}</text><title>rank {} to {} over {}: {:.3} MB in {:.3} ms, {bw:.3} GB/s ({} tasks)</title></g>"#,
            if is_slow { " slow" } else { "" },
            l.src,
            l.dst,
            60.0 + cell * j as f64,
            24.0 + cell * i as f64,
            cell - 2.0,
            cell - 2.0,
            120.0 * f,
            45.0 + 30.0 * f,
            if is_slow {
                r##" stroke="#000" stroke-width="3""##
            } else {
                ""
            },
            60.0 + cell * (j as f64 + 0.5) - 1.0,
            24.0 + cell * (i as f64 + 0.5) + 3.0,
            l.src,
            l.dst,
            esc(&l.transport),
            l.bytes as f64 / 1e6,
            l.ns as f64 / 1e6,
            l.count
        );
    }
    h.push_str("</svg>");
}

/// Writes the table of every link.
fn links_table(h: &mut String, c: &Comm) {
    h.push_str(r#"<table id="comm-links"><thead><tr><th>Group</th><th>Src rank</th><th>Dst rank</th><th>Transport</th><th>Tasks</th><th>Size (MB)</th><th>Time (ms)</th><th>Bandwidth (GB/s)</th></tr></thead><tbody>"#);
    for l in &c.links {
        let _ = write!(
            h,
            r#"<tr data-src="{}" data-dst="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.6}</td><td>{:.6}</td><td>{:.4}</td></tr>"#,
            l.src,
            l.dst,
            esc(&l.group),
            l.src,
            l.dst,
            esc(&l.transport),
            l.count,
            l.bytes as f64 / 1e6,
            l.ns as f64 / 1e6,
            l.bandwidth()
        );
    }
    h.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slow_rank_is_the_one_computing_longest_else_the_one_waiting_longest() {
        // Ranks without a step trace: each device's whole run.
        let m = |v: &[Split]| RunStats {
            devices: v
                .iter()
                .enumerate()
                .map(|(i, s)| aclprof::runstats::DeviceTime {
                    rank: Some(i as u32),
                    computing: s[0],
                    not_overlapped: s[1],
                    free: s[2],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let (r, why) = slow_rank(&m(&[[100, 50, 0], [300, 0, 0], [100, 60, 0]])).unwrap();
        assert_eq!(r, 1);
        assert!(
            why.starts_with("its computing is the longest: 0.300 us, 3.00×"),
            "{why}"
        );
        assert!(why.contains("rank 2 longest"), "{why}");
        let (r, why) = slow_rank(&m(&[[100, 50, 0], [100, 50, 0], [100, 200, 0]])).unwrap();
        assert_eq!(r, 2);
        assert!(
            why.starts_with("it waits in communication for another rank"),
            "{why}"
        );
        assert_eq!(slow_rank(&m(&[[100, 50, 9], [110, 55, 0]])), None);
        assert_eq!(slow_rank(&m(&[[100, 50, 9]])), None);
    }
}
