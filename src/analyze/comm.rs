//! A run's communication, read from CANN's tables (docs/design.md, "Communication"), so a
//! real run's database and an aclprof result directory are read alike: COMMUNICATION_OP for
//! the ops, and their tasks from COMMUNICATION_TASK_INFO joined to TASK. As CANN's own
//! analysis counts them, a task that moves data (Memcpy, Reduce_Inline, RDMA sends) is
//! transfer and Notify_Wait is waiting; the rest of an op is neither. A link is the transfer
//! tasks of one (group, sender, receiver, transport): bytes over time, in GB/s (bytes per
//! ns), as msprof-analyze's communication_matrix computes it. `aclprof analyze
//! --communication`, the report's communication view and torch_npu's communication files
//! are all made from this one reading.

use crate::error::{err, Error, Result, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM};
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
    pub fn add(&mut self, o: &Times) {
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
    /// Every op, in its database's order.
    pub each: Vec<OpComm>,
}

/// One communication op: its times and, per link it sent on, what it moved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpComm {
    pub rank: i64,
    pub group: String,
    pub name: String,
    /// Epoch ns.
    pub start_ns: i64,
    pub times: Times,
    /// Its transfer tasks by (sender, receiver, transport): `count`, `bytes` and `ns` are
    /// this op's only.
    pub links: Vec<Link>,
}

impl Comm {
    /// The link with the lowest bandwidth among those that moved bytes, and its bandwidth
    /// against the median link's; None with fewer than two such links.
    pub fn slowest_link(&self) -> Option<(&Link, f64)> {
        let links: Vec<(u64, u64)> = self.links.iter().map(|l| (l.bytes, l.ns)).collect();
        super::verdict::slowest_link(&links).map(|(i, of)| (&self.links[i], of))
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

/// Reads the communication of one database or more into one [`Comm`].
#[derive(Default)]
pub struct Reader {
    comm: Comm,
    links: BTreeMap<(String, i64, i64, String), Link>,
}

/// An op's transfer and wait tasks as intervals (its planes run side by side, so their
/// times are united, not summed), and its links.
#[derive(Default)]
struct Tasks {
    transit: Spans,
    wait: Spans,
    links: BTreeMap<(i64, i64, String), Link>,
}

fn sql_err(db: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::new(ACL_ERROR_INVALID_FILE, format!("{}: {e}", db.display()))
}

impl Reader {
    /// The run's communication so far; an error naming `what` when it has none.
    pub fn finish(mut self, what: &Path) -> Result<Comm> {
        if self.comm.ops.is_empty() {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "{}: no communication ops in it (COMMUNICATION_OP is empty or missing)",
                    what.display()
                ),
            );
        }
        self.comm.links = self.links.into_values().collect();
        Ok(self.comm)
    }

    /// Adds the communication of database `db` (nothing if it has no communication tables).
    pub fn add(&mut self, db: &Path) -> Result<()> {
        let e = sql_err(db);
        let conn = crate::sim::import::open_read_only(db).map_err(&e)?;
        let has = |t: &str| crate::sim::import::has_table(&conn, t);
        if !has("COMMUNICATION_OP") || !has("STRING_IDS") {
            return Ok(());
        }
        let mut per_op = BTreeMap::new();
        if has("COMMUNICATION_TASK_INFO") && has("TASK") {
            let transport = if has("ENUM_HCCL_TRANSPORT_TYPE") {
                "LEFT JOIN ENUM_HCCL_TRANSPORT_TYPE e ON e.id = c.transportType"
            } else {
                "LEFT JOIN (SELECT NULL AS id, NULL AS name) e ON 0"
            };
            per_op = self.tasks(&conn, transport).map_err(&e)?;
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
        self.ops(&conn, rank, per_op).map_err(&e)
    }

    /// Each op's tasks, by op id; the links are counted as they are read.
    fn tasks(
        &mut self,
        conn: &rusqlite::Connection,
        transport: &str,
    ) -> rusqlite::Result<BTreeMap<i64, Tasks>> {
        let sql = format!(
            "SELECT c.opId, s.value, t.startNs, t.endNs, c.srcRank, c.dstRank, \
             coalesce(e.name, ''), c.size, coalesce(g.value, '') \
             FROM COMMUNICATION_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId \
             LEFT JOIN STRING_IDS s ON s.id = c.taskType LEFT JOIN STRING_IDS g ON \
             g.id = c.groupName {transport}"
        );
        let mut per_op: BTreeMap<i64, Tasks> = BTreeMap::new();
        let mut st = conn.prepare(&sql)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let op: i64 = r.get(0)?;
            let kind: String = r.get::<_, Option<String>>(1)?.unwrap_or_default();
            let start = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
            let end = r.get::<_, Option<i64>>(3)?.unwrap_or(start).max(start);
            let entry = per_op.entry(op).or_default();
            if kind == "Notify_Wait" {
                entry.wait.push((start, end));
            }
            if !is_transit(&kind) {
                continue;
            }
            entry.transit.push((start, end));
            let src = r.get::<_, Option<i64>>(4)?.unwrap_or(NONE_U32);
            let dst = r.get::<_, Option<i64>>(5)?.unwrap_or(NONE_U32);
            if src == NONE_U32 || dst == NONE_U32 {
                continue;
            }
            let transport: String = r.get(6)?;
            let group: String = r.get(8)?;
            let bytes = r.get::<_, Option<f64>>(7)?.unwrap_or(0.0).max(0.0) as u64;
            let ns = (end - start) as u64;
            let link = |group: String| Link {
                group,
                src,
                dst,
                transport: transport.clone(),
                ..Default::default()
            };
            for l in [
                self.links
                    .entry((group.clone(), src, dst, transport.clone()))
                    .or_insert_with(|| link(group.clone())),
                entry
                    .links
                    .entry((src, dst, transport.clone()))
                    .or_insert_with(|| link(group.clone())),
            ] {
                l.count += 1;
                l.bytes += bytes;
                l.ns += ns;
            }
        }
        Ok(per_op)
    }

    /// The ops, with their tasks' times.
    fn ops(
        &mut self,
        conn: &rusqlite::Connection,
        rank: &str,
        mut per_op: BTreeMap<i64, Tasks>,
    ) -> rusqlite::Result<()> {
        let sql = format!(
            "SELECT p.opId, {rank}, coalesce(g.value, ''), coalesce(ty.value, n.value, ''), \
             p.endNs - p.startNs, coalesce(n.value, ''), p.startNs FROM COMMUNICATION_OP p \
             LEFT JOIN STRING_IDS n ON n.id = p.opName LEFT JOIN STRING_IDS g ON \
             g.id = p.groupName LEFT JOIN STRING_IDS ty ON ty.id = p.opType"
        );
        let c = &mut self.comm;
        let mut st = conn.prepare(&sql)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let op: i64 = r.get(0)?;
            let rank: i64 = r.get::<_, Option<i64>>(1)?.unwrap_or(-1);
            let group: String = r.get(2)?;
            let ty: String = r.get(3)?;
            let total = r.get::<_, Option<i64>>(4)?.unwrap_or(0).max(0) as u64;
            let tasks = per_op.remove(&op).unwrap_or_default();
            // Waiting while data moves on another plane is transfer time.
            let transit = united(tasks.transit.clone());
            let mut waits = tasks.wait;
            waits.extend(tasks.transit);
            let t = Times {
                count: 1,
                total_ns: total,
                transit_ns: transit,
                wait_ns: united(waits) - transit,
            };
            c.ops
                .entry((group.clone(), ty.clone()))
                .or_default()
                .add(&t);
            c.rank_types.entry((rank, ty)).or_default().add(&t);
            c.each.push(OpComm {
                rank,
                group,
                name: r.get(5)?,
                start_ns: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                times: t,
                links: tasks.links.into_values().collect(),
            });
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_tasks_and_united_spans() {
        assert!(is_transit("Memcpy") && is_transit("RDMASend") && !is_transit("Notify_Wait"));
        assert_eq!(
            united(vec![(5, 9), (0, 3), (2, 4), (8, 10), (20, 20)]),
            4 + 5
        );
    }
}
