//! `aclprof analyze --communication`, and the report's communication view: per
//! communication group and op type, the time split into transfer and wait; per link (sender
//! and receiver rank, transport) the bytes, time and bandwidth; the slowest link and the rank
//! that waits most (docs/design.md, "Communication"). The reading of CANN's tables is the
//! library's (`aclprof::analyze::comm`); this module finds the databases and renders.

use crate::databases::databases;
pub use aclprof::analyze::comm::{Comm, Link, Times};
use aclprof::analyze::Format;
use aclprof::error::*;
use std::path::Path;

/// Reads the communication of every database under `path`.
pub fn analyze(path: &Path) -> Result<Comm> {
    let mut r = aclprof::analyze::comm::Reader::default();
    for (db, _) in databases(path)? {
        r.add(&db)?;
    }
    r.finish(path)
}

use aclprof::formats::text::us3 as us;

/// The columns of the CSV form: one row per section's line, blank where a column is not the
/// section's.
const CSV_COLUMNS: [&str; 15] = [
    "Section",
    "Group",
    "Op Type",
    "Rank",
    "Src Rank",
    "Dst Rank",
    "Transport Type",
    "Count",
    "Total Time(us)",
    "Transit Time(us)",
    "Wait Time(us)",
    "Wait Ratio",
    "Transit Size(MB)",
    "Link Transit Time(ms)",
    "Bandwidth(GB/s)",
];

/// The findings in words: the slowest link and the rank that waits most.
pub fn findings(c: &Comm) -> Vec<String> {
    let mut v = Vec::new();
    if let Some((l, ratio)) = c.slowest_link() {
        v.push(format!(
            "slowest link: rank {} -> {} ({}, {}) at {:.3} GB/s, {:.2} x the median link",
            l.src,
            l.dst,
            l.transport,
            l.group,
            l.bandwidth(),
            ratio
        ));
    }
    if let Some((r, t)) = c.waits_most() {
        v.push(format!(
            "rank {r} waits most: {} us of {} us in communication ({:.1} % of wait and transfer)",
            us(t.wait_ns),
            us(t.total_ns),
            100.0 * t.wait_ratio()
        ));
    }
    v
}

fn times_cells(t: &Times) -> [String; 5] {
    [
        t.count.to_string(),
        us(t.total_ns),
        us(t.transit_ns),
        us(t.wait_ns),
        format!("{:.4}", t.wait_ratio()),
    ]
}

fn link_cells(l: &Link) -> [String; 3] {
    [
        format!("{:.6}", l.bytes as f64 / 1e6),
        format!("{:.6}", l.ns as f64 / 1e6),
        format!("{:.4}", l.bandwidth()),
    ]
}

/// `aclprof analyze --communication` in `format`.
pub fn render(c: &Comm, format: Format) -> String {
    match format {
        Format::Json => render_json(c),
        Format::Csv => render_csv(c),
        Format::Table | Format::Markdown => render_tables(c, format == Format::Markdown),
    }
}

/// The analysis as pretty-printed JSON.
fn render_json(c: &Comm) -> String {
    let times = |t: &Times| {
        serde_json::json!({"count": t.count, "total_us": t.total_ns as f64 / 1e3,
            "transit_us": t.transit_ns as f64 / 1e3, "wait_us": t.wait_ns as f64 / 1e3,
            "wait_ratio": t.wait_ratio()})
    };
    let link = |l: &Link| {
        serde_json::json!({"group": l.group, "src_rank": l.src, "dst_rank": l.dst,
            "transport_type": l.transport, "count": l.count,
            "transit_size_mb": l.bytes as f64 / 1e6, "transit_time_ms": l.ns as f64 / 1e6,
            "bandwidth_gb_s": l.bandwidth()})
    };
    let mut ops = Vec::new();
    for ((g, ty), t) in &c.ops {
        let mut o = times(t);
        o["group"] = g.as_str().into();
        o["op_type"] = ty.as_str().into();
        ops.push(o);
    }
    let mut ranks = Vec::new();
    for (r, t) in &c.ranks() {
        let mut o = times(t);
        o["rank"] = (*r).into();
        ranks.push(o);
    }
    let mut rank_ops = Vec::new();
    for ((r, ty), t) in &c.rank_types {
        let mut o = times(t);
        o["rank"] = (*r).into();
        o["op_type"] = ty.as_str().into();
        rank_ops.push(o);
    }
    let v = serde_json::json!({
        "ops": ops,
        "ranks": ranks,
        "rank_ops": rank_ops,
        "links": c.links.iter().map(link).collect::<Vec<_>>(),
        "slowest_link": c.slowest_link().map(|(l, ratio)| {
            let mut o = link(l);
            o["of_median"] = ratio.into();
            o
        }),
        "waits_most": c.waits_most().map(|(r, t)| {
            let mut o = times(&t);
            o["rank"] = r.into();
            o
        }),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// The analysis as CSV: one row per op, rank and link.
fn render_csv(c: &Comm) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(CSV_COLUMNS);
    let blank = String::new;
    for ((g, ty), t) in &c.ops {
        let mut row = vec!["op".into(), g.clone(), ty.clone()];
        row.extend(std::iter::repeat_with(blank).take(4));
        row.extend(times_cells(t));
        row.extend(std::iter::repeat_with(blank).take(3));
        let _ = w.write_record(&row);
    }
    for (r, t) in &c.ranks() {
        let mut row = vec!["rank".into(), blank(), blank(), r.to_string()];
        row.extend(std::iter::repeat_with(blank).take(3));
        row.extend(times_cells(t));
        row.extend(std::iter::repeat_with(blank).take(3));
        let _ = w.write_record(&row);
    }
    for l in &c.links {
        let mut row = vec![
            "link".into(),
            l.group.clone(),
            blank(),
            blank(),
            l.src.to_string(),
            l.dst.to_string(),
            l.transport.clone(),
            l.count.to_string(),
        ];
        row.extend(std::iter::repeat_with(blank).take(4));
        row.extend(link_cells(l));
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The analysis as tables of text, or of Markdown when `md`, and the findings.
fn render_tables(c: &Comm, md: bool) -> String {
    use aclprof::analyze::{markdown_table, text_table};
    let table = |head: &[&str], rows: &[Vec<String>], left: usize| {
        let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
        if md {
            markdown_table(&head, rows)
        } else {
            text_table(&head, rows, |k| k < left)
        }
    };
    let mut o = String::new();
    let times_head = [
        "Count",
        "Total (us)",
        "Transfer (us)",
        "Wait (us)",
        "Wait ratio",
    ];
    let rows: Vec<Vec<String>> = c
        .ops
        .iter()
        .map(|((g, ty), t)| {
            [g.clone(), ty.clone()]
                .into_iter()
                .chain(times_cells(t))
                .collect()
        })
        .collect();
    let head: Vec<&str> = ["Group", "Op type"].into_iter().chain(times_head).collect();
    o.push_str(&table(&head, &rows, 2));
    o.push('\n');
    let rows: Vec<Vec<String>> = c
        .ranks()
        .iter()
        .map(|(r, t)| {
            std::iter::once(r.to_string())
                .chain(times_cells(t))
                .collect()
        })
        .collect();
    let head: Vec<&str> = std::iter::once("Rank").chain(times_head).collect();
    o.push_str(&table(&head, &rows, 0));
    o.push('\n');
    if c.links.is_empty() {
        o.push_str("No links: the tasks carry no sender and receiver ranks.\n");
    } else {
        let rows: Vec<Vec<String>> = c
            .links
            .iter()
            .map(|l| {
                [
                    l.group.clone(),
                    l.src.to_string(),
                    l.dst.to_string(),
                    l.transport.clone(),
                    l.count.to_string(),
                ]
                .into_iter()
                .chain(link_cells(l))
                .collect()
            })
            .collect();
        o.push_str(&table(
            &[
                "Group",
                "Src rank",
                "Dst rank",
                "Transport",
                "Tasks",
                "Size (MB)",
                "Time (ms)",
                "Bandwidth (GB/s)",
            ],
            &rows,
            1,
        ));
    }
    for f in findings(c) {
        o.push('\n');
        o.push_str(&f);
    }
    o.push('\n');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(src: i64, dst: i64, bytes: u64, ns: u64) -> Link {
        Link {
            group: "g".into(),
            src,
            dst,
            transport: "SDMA".into(),
            count: 1,
            bytes,
            ns,
        }
    }

    #[test]
    fn the_slowest_link_is_named_against_the_median_and_the_rank_that_waits_most() {
        let mut c = Comm {
            links: vec![
                link(0, 1, 1000, 50),
                link(1, 2, 1000, 50),
                link(2, 0, 1000, 250),
                link(3, 3, 0, 0),
            ],
            ..Default::default()
        };
        let (l, ratio) = c.slowest_link().unwrap();
        assert_eq!((l.src, l.dst), (2, 0));
        assert!((ratio - 0.2).abs() < 1e-12);
        assert_eq!(c.waits_most(), None);
        for (r, w) in [(0, 10), (1, 30), (2, 30)] {
            c.rank_types.insert(
                (r, "hcom_allReduce_".into()),
                Times {
                    count: 1,
                    total_ns: 100,
                    transit_ns: 50,
                    wait_ns: w,
                },
            );
        }
        // Equal waits: the lower rank.
        assert_eq!(c.waits_most().unwrap().0, 1);
        assert!(findings(&c)[0]
            .starts_with("slowest link: rank 2 -> 0 (SDMA, g) at 4.000 GB/s, 0.20 x"));
        assert_eq!(
            Times {
                wait_ns: 1,
                transit_ns: 3,
                ..Default::default()
            }
            .wait_ratio(),
            0.25
        );
    }
}
