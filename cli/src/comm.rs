//! `aclprof analyze --communication`, and the report's communication view: per
//! communication group and op type, the time split into transfer and wait; per link (sender
//! and receiver rank, transport) the bytes, time and bandwidth; the slowest link and the rank
//! that waits most (docs/design.md, "Communication").
//!
//! It reads CANN's tables, so a real run's database and an aclprof result directory are read
//! alike: COMMUNICATION_OP for the ops, and their tasks from COMMUNICATION_TASK_INFO joined
//! to TASK. As CANN's own analysis counts them, a task that moves data (Memcpy,
//! Reduce_Inline, RDMA sends) is transfer and Notify_Wait is waiting; the rest of an op is
//! neither. A link is the transfer tasks of one (group, sender, receiver, transport): bytes
//! over time, in GB/s (bytes per ns), as msprof-analyze's communication_matrix computes it.

use crate::databases::{databases, sql_err};
use aclprof::analyze::Format;
use aclprof::error::*;
use std::collections::BTreeMap;
use std::path::Path;

/// A link's or a rank's "none" in CANN's tables.
const NONE_U32: i64 = 4_294_967_295;

/// Times of a group of communication ops, ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Times {
    pub count: u64,
    pub total_ns: u64,
    pub transit_ns: u64,
    pub wait_ns: u64,
}

impl Times {
    fn add(&mut self, o: &Times) {
        self.count += o.count;
        self.total_ns += o.total_ns;
        self.transit_ns += o.transit_ns;
        self.wait_ns += o.wait_ns;
    }
    /// Wait over wait and transfer, CANN's wait ratio.
    pub fn wait_ratio(&self) -> f64 {
        let d = self.wait_ns + self.transit_ns;
        if d == 0 {
            0.0
        } else {
            self.wait_ns as f64 / d as f64
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Link {
    pub group: String,
    pub src: i64,
    pub dst: i64,
    pub transport: String,
    pub count: u64,
    pub bytes: u64,
    pub ns: u64,
}

impl Link {
    /// GB/s (bytes per ns); 0 when it took no time.
    pub fn bandwidth(&self) -> f64 {
        if self.ns == 0 {
            0.0
        } else {
            self.bytes as f64 / self.ns as f64
        }
    }
}

/// The analysis of a run's communication.
#[derive(Debug, Default)]
pub struct Comm {
    /// (group, op type) -> its ops' times over every rank.
    pub ops: BTreeMap<(String, String), Times>,
    /// (rank, op type) -> times: hccl_sum's per-rank statistics.
    pub rank_types: BTreeMap<(i64, String), Times>,
    pub links: Vec<Link>,
}

impl Comm {
    /// The link with the lowest bandwidth among those that moved bytes, and its bandwidth
    /// against the median link's; None with fewer than two such links.
    pub fn slowest_link(&self) -> Option<(&Link, f64)> {
        let links: Vec<(u64, u64)> = self.links.iter().map(|l| (l.bytes, l.ns)).collect();
        aclprof::analyze::verdict::slowest_link(&links).map(|(i, of)| (&self.links[i], of))
    }

    /// rank -> its communication ops' times, over their types.
    pub fn ranks(&self) -> BTreeMap<i64, Times> {
        let mut m: BTreeMap<i64, Times> = BTreeMap::new();
        for ((r, _), t) in &self.rank_types {
            m.entry(*r).or_default().add(t);
        }
        m
    }

    /// The rank with the most time waiting, with it; None when no rank waited.
    pub fn waits_most(&self) -> Option<(i64, Times)> {
        self.ranks()
            .into_iter()
            .filter(|(_, t)| t.wait_ns > 0)
            .max_by_key(|(r, t)| (t.wait_ns, std::cmp::Reverse(*r)))
    }
}

/// Intervals of time, ns.
type Spans = Vec<(i64, i64)>;

/// Whether a task of this type moves data (CANN's transit tasks).
fn is_transit(kind: &str) -> bool {
    matches!(kind, "Memcpy" | "Reduce_Inline") || kind.starts_with("RDMA")
}

/// Reads the communication of every database under `path`.
pub fn analyze(path: &Path) -> Result<Comm> {
    let mut c = Comm::default();
    let mut links: BTreeMap<(String, i64, i64, String), Link> = BTreeMap::new();
    for (db, _) in databases(path)? {
        read(&db, &mut c, &mut links)?;
    }
    if c.ops.is_empty() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: no communication ops in it (COMMUNICATION_OP is empty or missing)",
                path.display()
            ),
        );
    }
    c.links = links.into_values().collect();
    Ok(c)
}

fn read(
    db: &Path,
    c: &mut Comm,
    links: &mut BTreeMap<(String, i64, i64, String), Link>,
) -> Result<()> {
    let e = sql_err(db);
    let conn = aclprof::sim::open_read_only(db).map_err(&e)?;
    let has = |t: &str| -> bool {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n > 0)
    };
    if !has("COMMUNICATION_OP") || !has("STRING_IDS") {
        return Ok(());
    }
    // An op's rank: its device's (CANN 8 writes COMMUNICATION_OP.deviceId), else the
    // database's one rank, else -1.
    let per_device = conn
        .prepare("SELECT deviceId FROM COMMUNICATION_OP LIMIT 0")
        .is_ok();
    let rank = match (has("RANK_DEVICE_MAP"), per_device) {
        (true, true) => {
            "coalesce((SELECT max(rankId) FROM RANK_DEVICE_MAP m \
                         WHERE m.deviceId = p.deviceId AND m.rankId >= 0), p.deviceId)"
        }
        (true, false) => {
            "coalesce((SELECT max(rankId) FROM RANK_DEVICE_MAP WHERE rankId >= 0), -1)"
        }
        (false, true) => "p.deviceId",
        (false, false) => "-1",
    };
    // Each op's transfer and wait tasks as intervals (its planes run side by side, so their
    // times are united, not summed).
    let mut per_op: BTreeMap<i64, (Spans, Spans)> = BTreeMap::new();
    if has("COMMUNICATION_TASK_INFO") && has("TASK") {
        let transport = if has("ENUM_HCCL_TRANSPORT_TYPE") {
            "LEFT JOIN ENUM_HCCL_TRANSPORT_TYPE e ON e.id = c.transportType"
        } else {
            "LEFT JOIN (SELECT NULL AS id, NULL AS name) e ON 0"
        };
        let sql = format!(
            "SELECT c.opId, s.value, t.startNs, t.endNs, c.srcRank, c.dstRank, \
             coalesce(e.name, ''), c.size, coalesce(g.value, '') \
             FROM COMMUNICATION_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId \
             LEFT JOIN STRING_IDS s ON s.id = c.taskType LEFT JOIN STRING_IDS g ON \
             g.id = c.groupName {transport}"
        );
        let mut st = conn.prepare(&sql).map_err(&e)?;
        let mut rows = st.query([]).map_err(&e)?;
        while let Some(r) = rows.next().map_err(&e)? {
            let op: i64 = r.get(0).map_err(&e)?;
            let kind: String = r
                .get::<_, Option<String>>(1)
                .map_err(&e)?
                .unwrap_or_default();
            let start = r.get::<_, Option<i64>>(2).map_err(&e)?.unwrap_or(0);
            let end = r
                .get::<_, Option<i64>>(3)
                .map_err(&e)?
                .unwrap_or(start)
                .max(start);
            let ns = (end - start) as u64;
            let entry = per_op.entry(op).or_default();
            if is_transit(&kind) {
                entry.0.push((start, end));
                let (src, dst) = (
                    r.get::<_, Option<i64>>(4).map_err(&e)?.unwrap_or(NONE_U32),
                    r.get::<_, Option<i64>>(5).map_err(&e)?.unwrap_or(NONE_U32),
                );
                if src != NONE_U32 && dst != NONE_U32 {
                    let transport: String = r.get(6).map_err(&e)?;
                    let group: String = r.get(8).map_err(&e)?;
                    let bytes = r
                        .get::<_, Option<f64>>(7)
                        .map_err(&e)?
                        .unwrap_or(0.0)
                        .max(0.0);
                    let l = links
                        .entry((group.clone(), src, dst, transport.clone()))
                        .or_insert_with(|| Link {
                            group,
                            src,
                            dst,
                            transport,
                            ..Default::default()
                        });
                    l.count += 1;
                    l.bytes += bytes as u64;
                    l.ns += ns;
                }
            } else if kind == "Notify_Wait" {
                entry.1.push((start, end));
            }
        }
    }
    let sql = format!(
        "SELECT p.opId, {rank}, coalesce(g.value, ''), coalesce(ty.value, n.value, ''), \
         p.endNs - p.startNs FROM COMMUNICATION_OP p LEFT JOIN STRING_IDS n ON n.id = p.opName \
         LEFT JOIN STRING_IDS g ON g.id = p.groupName LEFT JOIN STRING_IDS ty ON ty.id = p.opType"
    );
    let mut st = conn.prepare(&sql).map_err(&e)?;
    let mut rows = st.query([]).map_err(&e)?;
    while let Some(r) = rows.next().map_err(&e)? {
        let op: i64 = r.get(0).map_err(&e)?;
        let rank: i64 = r.get::<_, Option<i64>>(1).map_err(&e)?.unwrap_or(-1);
        let group: String = r.get(2).map_err(&e)?;
        let ty: String = r.get(3).map_err(&e)?;
        let total = r.get::<_, Option<i64>>(4).map_err(&e)?.unwrap_or(0).max(0) as u64;
        // Waiting while data moves on another plane is transfer time.
        let (transit, wait) = per_op.remove(&op).map_or((0, 0), |(t, mut w)| {
            let transit = united(t.clone());
            w.extend(t);
            (transit, united(w) - transit)
        });
        let t = Times {
            count: 1,
            total_ns: total,
            transit_ns: transit,
            wait_ns: wait,
        };
        c.ops.entry((group, ty.clone())).or_default().add(&t);
        c.rank_types.entry((rank, ty)).or_default().add(&t);
    }
    Ok(())
}

/// The time `spans` cover together, ns.
fn united(mut spans: Spans) -> u64 {
    spans.sort_unstable();
    let (mut total, mut at) = (0u64, i64::MIN);
    for (s, e) in spans {
        let s = s.max(at);
        if e > s {
            total += (e - s) as u64;
            at = e;
        }
    }
    total
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
        assert!(is_transit("Memcpy") && is_transit("RDMASend") && !is_transit("Notify_Wait"));
        assert_eq!(
            united(vec![(5, 9), (0, 3), (2, 4), (8, 10), (20, 20)]),
            4 + 5
        );
    }
}
