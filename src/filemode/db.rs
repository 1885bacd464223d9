//! CANN's SQLite database, `msprof_<stamp>.db`, written by the export beside the text files
//! from the same data: the tables and columns of CANN's newest published schema (1.2.0; see
//! docs/compatibility.md, "The database"). Every text column is an id into STRING_IDS (ids
//! 0, 1, 2, ... in order of first use, as CANN's id pool gives them); enumerations are ids
//! into the ENUM_* tables, written as data. Times are epoch nanoseconds.
//!
//! One transaction, statements prepared once and cached. The TASK index grows with the rows
//! (they arrive in start order within a device, so each entry is appended; sorting it at the
//! end kept one core busy alone); the communication index is built after the rows are in.

use crate::error::{err, Error, Result, ACL_ERROR_INVALID_FILE};
use rusqlite::{params, Connection};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::formats::db_schema::*;
pub use crate::formats::db_schema::{
    MSTX_MARKER, MSTX_MARKER_EX, MSTX_PUSH_POP, MSTX_RANGE, SCHEMA_VERSION,
};

mod rows;
use rows::*;

/// SQLite's global mutexes, held across `fork()` like the library's own locks: an export
/// running in another thread at a fork holds them (its allocator's above all), and a child
/// that then wrote a database of its own would wait for them for ever. They are taken in
/// the order SQLite nests them: a shared cache's open list before the main mutex (btree
/// open), the random number generator's before the main mutex (seeding it finds the VFS),
/// and the allocator's inside all the others, last.
struct SqliteMutexes;

impl crate::fork::Global for SqliteMutexes {
    fn rank(&self) -> crate::fork::Rank {
        crate::fork::Rank::Sqlite
    }

    fn hold(&'static self) -> crate::fork::Release {
        use rusqlite::ffi;
        const IDS: [i32; 12] = [
            ffi::SQLITE_MUTEX_STATIC_OPEN,
            ffi::SQLITE_MUTEX_STATIC_PRNG,
            ffi::SQLITE_MUTEX_STATIC_MAIN,
            ffi::SQLITE_MUTEX_STATIC_LRU,
            ffi::SQLITE_MUTEX_STATIC_PMEM,
            ffi::SQLITE_MUTEX_STATIC_APP1,
            ffi::SQLITE_MUTEX_STATIC_APP2,
            ffi::SQLITE_MUTEX_STATIC_APP3,
            ffi::SQLITE_MUTEX_STATIC_VFS1,
            ffi::SQLITE_MUTEX_STATIC_VFS2,
            ffi::SQLITE_MUTEX_STATIC_VFS3,
            ffi::SQLITE_MUTEX_STATIC_MEM,
        ];
        let held: Vec<usize> = IDS
            .iter()
            .map(|&id| {
                // SAFETY: a static mutex is never freed; SQLite returns NULL when it was
                // built without mutexes, and entering or leaving NULL does nothing.
                let m = unsafe { ffi::sqlite3_mutex_alloc(id) };
                // SAFETY: as above; this thread holds none of SQLite's mutexes (it is
                // forking, not inside SQLite).
                unsafe { ffi::sqlite3_mutex_enter(m) };
                m as usize
            })
            .collect();
        Box::new(move |_child| {
            for m in held.into_iter().rev() {
                // SAFETY: entered above by this thread, the only one in a child.
                unsafe { ffi::sqlite3_mutex_leave(m as *mut ffi::sqlite3_mutex) };
            }
        })
    }
}

crate::fork::global! {
    static SQLITE: SqliteMutexes = SqliteMutexes;
}

/// One op (one task) as the database has it.
pub struct DbOp<'a> {
    pub dev: u32,
    pub model: u32,
    pub stream: u32,
    pub task: u64,
    pub pid: u64,
    /// Epoch ns.
    pub start: u64,
    pub end: u64,
    pub name: &'a str,
    pub op_type: &'a str,
    pub task_type: &'a str,
    pub block_dim: u32,
    pub mix_block_dim: u32,
    pub comm: bool,
    /// Known PMU values: (column name, value as written).
    pub pmu: &'a [(&'a str, &'a str)],
    /// Its tensors' shapes, types and formats, if known.
    pub meta: Option<&'a crate::opmeta::OpMeta>,
}

/// What the session knows about itself, written at the end.
pub struct DbInfo<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub host_uid: &'a str,
    pub host_name: &'a str,
    /// (device, rank); rank None: -1, as CANN writes for msprof's own runs.
    pub devices: &'a [(u32, Option<u32>)],
    pub chip: &'a str,
    /// Where CANN's communication analysis goes (`analyze/communication_analyzer.db`),
    /// written only if the run has communication ops.
    pub analyzer: &'a Path,
}

/// The database being written.
pub struct Db {
    conn: Connection,
    path: PathBuf,
    strings: HashMap<String, i64>,
    next_task: i64,
    next_comm_op: i64,
    next_api: i64,
    next_overlap: i64,
    /// Communication links written: [op id, wait ns, transit ns, receiver, transport, bytes].
    links: Vec<[i64; 6]>,
    na: i64,
    /// The latest end of anything written (epoch ns): the session's end if nothing says.
    latest: u64,
    /// The tables of [`DATA_TABLES`] made so far.
    made: std::collections::HashSet<&'static str>,
}

fn db_err(p: &Path, e: rusqlite::Error) -> Error {
    crate::error::file_error("", p, e)
}

impl Db {
    /// Creates `path` (replacing a file there) and its tables, and opens the transaction.
    pub fn create(path: &Path) -> Result<Db> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())),
        }
        let e = |x| db_err(path, x);
        let conn = Connection::open(path).map_err(e)?;
        // The file is written once, by one process, and rewritten whole by a re-export: no
        // journal, no fsync; 64 KiB pages (fewer, shallower b-tree pages per row) and an
        // 8 MiB cache, which bounds the memory (a larger one, or an exclusive lock, made
        // the process grow with the rows). (The header stays a rollback-journal file, as
        // CANN's are.)
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 65536; \
             PRAGMA cache_size = -8192;",
        )
        .map_err(e)?;
        let mut ddl = String::from("BEGIN;");
        for (name, cols) in TABLES {
            ddl += &format!("CREATE TABLE {name} ({cols});");
        }
        for (name, _) in ENUMS {
            ddl += &format!("CREATE TABLE {name} (id INTEGER PRIMARY KEY, name TEXT);");
        }
        ddl += "CREATE INDEX TaskIndex ON TASK (startNs,globalTaskId);";
        conn.execute_batch(&ddl).map_err(e)?;
        let mut db = Db {
            conn,
            path: path.to_path_buf(),
            strings: HashMap::new(),
            next_task: 0,
            next_comm_op: 0,
            next_api: 0,
            next_overlap: 0,
            links: Vec::new(),
            na: 0,
            latest: 0,
            made: Default::default(),
        };
        db.na = db.sid("N/A");
        Ok(db)
    }

    fn e(&self, x: rusqlite::Error) -> Error {
        db_err(&self.path, x)
    }

    /// The STRING_IDS id of `s`.
    fn sid(&mut self, s: &str) -> i64 {
        sid(&mut self.strings, s)
    }

    /// Writes a batch of ops (and Overlap Analysis pieces): per op its TASK row and its
    /// COMPUTE_TASK_INFO row, or for communication its COMMUNICATION_OP and
    /// COMMUNICATION_TASK_INFO rows, and its PMU values. The statements are looked up once
    /// per batch and the rows bound in place.
    pub fn write(&mut self, b: &DbBatch) -> Result<()> {
        let r = self.write_rows(b);
        r.map_err(|x| self.e(x))
    }

    fn write_rows(&mut self, b: &DbBatch) -> rusqlite::Result<()> {
        let na = self.na;
        let group = self.sid("group_0");
        let mut st = Statements::prepare(&self.conn)?;
        let mut pmu_at = b.pmu.iter().peekable();
        let mut from = 0;
        for (k, o) in b.rows.iter().enumerate() {
            let ids = OpIds::of(&mut self.strings, na, &b.text[from..o.text_end], &o.lens);
            from = o.text_end;
            let id = self.next_task;
            self.next_task += 1;
            self.latest = self.latest.max(o.end);
            let conn_id = TASK_CONNECTION_BASE + id;
            let link = o.link.filter(|_| o.comm);
            let tasks = match link {
                Some(l) => {
                    let sent = self.next_task;
                    self.next_task += 1;
                    Tasks::two(o, l, id, sent, &mut self.strings)
                }
                None => Tasks::one(o, id, &ids),
            };
            for t in tasks.all() {
                st.task.push(&TaskRow::of(o, t, conn_id).values())?;
            }
            if o.comm {
                let op_id = self.next_comm_op;
                self.next_comm_op += 1;
                let op = CommOp {
                    o,
                    ids: &ids,
                    conn_id,
                    group,
                    op_id,
                    na,
                };
                op.write(&mut st, tasks.all(), link, &mut self.links)?;
            } else {
                st.compute.push(&ComputeRow::of(o, id, &ids, na).values())?;
            }
            while let Some((_, col, v)) = pmu_at.next_if(|p| p.0 == k) {
                write_pmu(&mut st.pmu, &mut self.strings, id, col, v)?;
            }
        }
        for &(dev, kind, start, end) in &b.pieces {
            let id = self.next_overlap;
            self.next_overlap += 1;
            st.piece
                .push(&[id, dev as i64, start as i64, end as i64, kind])?;
        }
        st.task.finish()?;
        st.compute.finish()?;
        st.piece.finish()
    }

    /// The STRING_IDS id of `s`, for a [`Db::row`].
    pub fn string_id(&mut self, s: &str) -> i64 {
        self.sid(s)
    }

    /// One row of a table of [`DATA_TABLES`], creating the table with its first row.
    pub fn row(&mut self, table: &str, values: &[rusqlite::types::Value]) -> Result<()> {
        let Some(&(name, cols)) = DATA_TABLES.iter().find(|(n, _)| *n == table) else {
            return err(
                crate::error::ACL_ERROR_INTERNAL_ERROR,
                format!("internal: {table} is not a table of CANN's database"),
            );
        };
        if self.made.insert(name) {
            let r = self
                .conn
                .execute_batch(&format!("CREATE TABLE {name} ({cols})"));
            r.map_err(|x| self.e(x))?;
        }
        let marks: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
        let sql = format!("INSERT INTO {table} VALUES ({})", marks.join(","));
        self.insert(&sql, rusqlite::params_from_iter(values.iter()))
    }

    /// An API call on the host (epoch ns) at `level` (ENUM_API_TYPE).
    #[allow(clippy::too_many_arguments)]
    pub fn api(
        &mut self,
        level: i64,
        pid: u64,
        tid: u64,
        name: &str,
        start: u64,
        end: u64,
    ) -> Result<()> {
        self.latest = self.latest.max(end);
        let id = self.next_api;
        self.next_api += 1;
        let name = self.sid(name);
        self.insert(
            "INSERT INTO CANN_API VALUES (?1,?2,?3,?4,?5,?6)",
            params![
                start as i64,
                end as i64,
                level,
                global_tid(pid, tid),
                id,
                name
            ],
        )
    }

    /// One row, through a cached statement.
    fn insert(&mut self, sql: &str, values: impl rusqlite::Params) -> Result<()> {
        let r = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(values));
        r.map_err(|x| self.e(x)).map(|_| ())
    }

    /// An msproftx marker or range (epoch ns); `n` numbers the run's events from 0.
    #[allow(clippy::too_many_arguments)]
    pub fn mstx(
        &mut self,
        n: u64,
        kind: i64,
        pid: u64,
        tid: u64,
        message: &str,
        start: u64,
        end: u64,
    ) -> Result<()> {
        self.latest = self.latest.max(end);
        let message = self.sid(message);
        let gtid = global_tid(pid, tid);
        let range = if kind == MSTX_RANGE {
            n as i64
        } else {
            NONE_U32
        };
        // No device task follows an msproftx event here: CANN's "host only" connection
        // (msprof-analyze's mstx_sum skips it rather than look for a task).
        self.insert(
            "INSERT INTO MSTX_EVENTS VALUES (?1,?2,?3,?4,?5,?6,?7,?7,?8,?9)",
            params![
                start as i64,
                end as i64,
                kind,
                range,
                NONE_U32,
                message,
                gtid,
                NONE_U32,
                NONE_U32
            ],
        )
    }

    /// Writes the session's own tables, STRING_IDS and the enumerations, builds the
    /// communication index and commits.
    pub fn finish(mut self, info: &DbInfo) -> Result<()> {
        let (major, minor, micro) = SCHEMA_VERSION;
        let mut rows: Vec<(String, Vec<rusqlite::types::Value>)> = Vec::new();
        use rusqlite::types::Value as V;
        let text = |s: &str| V::Text(s.to_string());
        for (k, v) in [
            ("SCHEMA_VERSION", format!("{major}.{minor}.{micro}")),
            ("SCHEMA_VERSION_MAJOR", major.to_string()),
            ("SCHEMA_VERSION_MINOR", minor.to_string()),
            ("SCHEMA_VERSION_MICRO", micro.to_string()),
        ] {
            rows.push(("META_DATA".into(), vec![text(k), V::Text(v)]));
        }
        rows.push((
            "SESSION_TIME_INFO".into(),
            vec![
                V::Integer(info.start_ns as i64),
                V::Integer(info.end_ns.max(self.latest).max(info.start_ns) as i64),
            ],
        ));
        rows.push((
            "HOST_INFO".into(),
            vec![text(info.host_uid), text(info.host_name)],
        ));
        for &(dev, rank) in info.devices {
            rows.push((
                "NPU_INFO".into(),
                vec![V::Integer(dev as i64), text(info.chip)],
            ));
            rows.push((
                "RANK_DEVICE_MAP".into(),
                vec![
                    V::Integer(rank.map_or(-1, i64::from)),
                    V::Integer(dev as i64),
                ],
            ));
        }
        for (table, values) in ENUMS {
            for (id, name) in values.iter() {
                rows.push((table.to_string(), vec![V::Integer(*id), text(name)]));
            }
        }
        let mut strings: Vec<(&String, &i64)> = self.strings.iter().collect();
        strings.sort_by_key(|(_, &id)| id);
        for (s, &id) in strings {
            rows.push(("STRING_IDS".into(), vec![V::Integer(id), text(s)]));
        }
        for (table, values) in rows {
            let marks = vec!["?"; values.len()].join(",");
            self.insert(
                &format!("INSERT INTO {table} VALUES ({marks})"),
                rusqlite::params_from_iter(values),
            )?;
        }
        self.strings.clear();
        // A link's sender is its device's rank (its id without one).
        let r = self.conn.execute_batch(
            "CREATE INDEX CommunicationTaskIndex ON COMMUNICATION_TASK_INFO (globalTaskId);\
             UPDATE COMMUNICATION_TASK_INFO SET srcRank = coalesce((SELECT max(rankId) FROM \
               RANK_DEVICE_MAP WHERE deviceId = srcRank AND rankId >= 0), srcRank) \
             WHERE dstRank != 4294967295;\
             COMMIT;",
        );
        r.map_err(|x| self.e(x))?;
        if self.next_comm_op > 0 {
            self.write_analyzer(info.analyzer)?;
        } else {
            // (An earlier export's, if the run was exported before.)
            let _ = std::fs::remove_file(info.analyzer);
        }
        let path = self.path.clone();
        self.conn.close().map_err(|(_, x)| db_err(&path, x))
    }

    /// CANN's communication analysis of the run's communication ops, in
    /// `analyze/communication_analyzer.db` (msprof-analyze's cluster analysis reads it):
    /// per op its time (elapse = duration, in ms, as CANN's; all of it idle, since no
    /// transfer or wait task of it is known) and one matrix row of the rank with itself
    /// (msprof-analyze needs at least one matrix row per op; docs/compatibility.md).
    fn write_analyzer(&mut self, path: &Path) -> Result<()> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())),
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", dir.display())))?;
        }
        let Some(p) = path.to_str() else {
            return err(
                ACL_ERROR_INVALID_FILE,
                format!("{}: not UTF-8", path.display()),
            );
        };
        let e = |x| db_err(path, x);
        self.conn
            .execute("ATTACH DATABASE ?1 AS ca", [p])
            .map_err(e)?;
        // The links written, by op: [op, wait ns, transit ns, receiver, transport, bytes].
        self.conn
            .execute_batch(
                "CREATE TEMP TABLE op_links(op INTEGER PRIMARY KEY, wait INTEGER, \
                 transit INTEGER, dst INTEGER, transport INTEGER, size INTEGER)",
            )
            .map_err(e)?;
        {
            let mut ins = self
                .conn
                .prepare("INSERT INTO op_links VALUES (?1,?2,?3,?4,?5,?6)")
                .map_err(e)?;
            for l in &self.links {
                ins.execute(rusqlite::params_from_iter(l)).map_err(e)?;
            }
        }
        let r = self.conn.execute_batch(
            "BEGIN;\
             CREATE TABLE ca.CommAnalyzerTime(hccl_op_name TEXT, group_name TEXT, \
               start_timestamp NUMERIC, elapse_time NUMERIC, transit_time NUMERIC, \
               wait_time NUMERIC, synchronization_time NUMERIC, idle_time NUMERIC);\
             CREATE TABLE ca.CommAnalyzerBandwidth(hccl_op_name TEXT, group_name TEXT, \
               transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, \
               bandwidth NUMERIC, large_packet_ratio NUMERIC, package_size NUMERIC, \
               count NUMERIC, total_duration NUMERIC);\
             CREATE TABLE ca.CommAnalyzerMatrix(hccl_op_name TEXT, group_name TEXT, \
               src_rank TEXT, dst_rank TEXT, transport_type TEXT, transit_size NUMERIC, \
               transit_time NUMERIC, bandwidth NUMERIC);\
             INSERT INTO ca.CommAnalyzerTime SELECT n.value, g.value, p.startNs / 1000.0, \
               (p.endNs - p.startNs) / 1e6, coalesce(k.transit / 1e6, 0), \
               coalesce(k.wait / 1e6, 0), coalesce(k.wait / 1e6, 0), \
               (p.endNs - p.startNs - coalesce(k.transit + k.wait, 0)) / 1e6 \
               FROM COMMUNICATION_OP p JOIN STRING_IDS n ON n.id = p.opName \
               JOIN STRING_IDS g ON g.id = p.groupName LEFT JOIN op_links k ON k.op = p.opId \
               ORDER BY p.opId;\
             INSERT INTO ca.CommAnalyzerMatrix SELECT n.value, g.value, \
               CAST(coalesce(m.rankId, p.deviceId) AS TEXT), CAST(k.dst AS TEXT), e.name, \
               k.size / 1e6, k.transit / 1e6, \
               CASE WHEN k.transit > 0 THEN CAST(k.size AS REAL) / k.transit ELSE 0 END \
               FROM op_links k JOIN COMMUNICATION_OP p ON p.opId = k.op \
               JOIN STRING_IDS n ON n.id = p.opName JOIN STRING_IDS g ON g.id = p.groupName \
               LEFT JOIN RANK_DEVICE_MAP m ON m.deviceId = p.deviceId AND m.rankId >= 0 \
               JOIN ENUM_HCCL_TRANSPORT_TYPE e ON e.id = k.transport ORDER BY k.op;\
             INSERT INTO ca.CommAnalyzerMatrix SELECT n.value, g.value, \
               CAST(coalesce(m.rankId, p.deviceId) AS TEXT), \
               CAST(coalesce(m.rankId, p.deviceId) AS TEXT), 'LOCAL', 0, 0, 0 \
               FROM COMMUNICATION_OP p JOIN STRING_IDS n ON n.id = p.opName \
               JOIN STRING_IDS g ON g.id = p.groupName \
               LEFT JOIN RANK_DEVICE_MAP m ON m.deviceId = p.deviceId AND m.rankId >= 0 \
               ORDER BY p.opId;\
             COMMIT;\
             DROP TABLE op_links;",
        );
        let detached = self.conn.execute("DETACH DATABASE ca", []);
        r.map_err(e)?;
        detached.map(|_| ()).map_err(e)
    }
}

/// Ops on their way to the database, and the Overlap Analysis pieces between them; the
/// export's merge fills a batch while the database thread writes the previous one.
#[derive(Default)]
pub struct DbBatch {
    rows: Vec<DbRow>,
    /// Each op's name, op type and task type, back to back.
    text: String,
    /// (row, column, value) of known PMU values, in row order.
    pmu: Vec<(usize, String, String)>,
    /// (device, ENUM_OVERLAP_ANALYSIS_TYPE, start, end), epoch ns.
    pieces: Vec<(u32, i64, u64, u64)>,
}

/// A communication op's link (see [`crate::opmeta::OpMeta::peer`]).
#[derive(Clone, Copy)]
struct Link {
    peer: u32,
    /// ENUM_HCCL_TRANSPORT_TYPE's id.
    transport: i64,
    bytes: u64,
    transit_ns: u64,
}

struct DbRow {
    dev: u32,
    model: u32,
    stream: u32,
    task: u64,
    pid: u64,
    start: u64,
    end: u64,
    block_dim: u32,
    mix_block_dim: u32,
    comm: bool,
    link: Option<Link>,
    /// Lengths of its name, op type, task type and six tensor fields (input shapes, types,
    /// formats, output's), back to back in [`DbBatch::text`], ending at `text_end`.
    lens: [u32; 9],
    text_end: usize,
}

impl DbBatch {
    /// Queues one op.
    pub fn op(&mut self, o: &DbOp) {
        let none = ["", "", "", "", "", ""];
        let meta = o.meta.map_or(none, |m| m.fields());
        let mut lens = [0u32; 9];
        for (k, t) in [o.name, o.op_type, o.task_type]
            .into_iter()
            .chain(meta)
            .enumerate()
        {
            self.text.push_str(t);
            lens[k] = t.len() as u32;
        }
        for (col, v) in o.pmu {
            self.pmu
                .push((self.rows.len(), col.to_string(), v.to_string()));
        }
        self.rows.push(DbRow {
            dev: o.dev,
            model: o.model,
            stream: o.stream,
            task: o.task,
            pid: o.pid,
            start: o.start,
            end: o.end,
            block_dim: o.block_dim,
            mix_block_dim: o.mix_block_dim,
            comm: o.comm,
            link: o.meta.and_then(|m| {
                Some(Link {
                    peer: m.peer?,
                    transport: crate::formats::db_schema::transport_id(&m.transport)?,
                    bytes: m.bytes?,
                    transit_ns: m.transit_ns?,
                })
            }),
            lens,
            text_end: self.text.len(),
        });
    }

    /// Queues a piece of Overlap Analysis: `kind` 0 computing, 1 communication, 2
    /// communication not overlapped, 3 free (ENUM_OVERLAP_ANALYSIS_TYPE); epoch ns.
    pub fn piece(&mut self, dev: u32, kind: i64, start: u64, end: u64) {
        self.pieces.push((dev, kind, start, end));
    }

    /// Ops queued.
    pub fn len(&self) -> usize {
        self.rows.len() + self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&mut self) {
        self.rows.clear();
        self.text.clear();
        self.pmu.clear();
        self.pieces.clear();
    }
}

/// CANN's global thread id: the process id in the high 32 bits, the thread id in the low.
pub fn global_tid(pid: u64, tid: u64) -> i64 {
    ((pid << 32) | (tid & 0xffff_ffff)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ops written as the export writes them: one TASK row each, in start order, every
    /// text column an id into STRING_IDS, the metadata and the schema version CANN's readers
    /// check, and every table created even when empty.
    #[test]
    fn ops_become_task_rows_with_their_strings() {
        let dir = std::env::temp_dir().join(format!("aclprof-db-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("msprof_test.db");
        let mut db = Db::create(&path).unwrap();
        let mut b = DbBatch::default();
        for (i, (name, ty)) in [("conv1", "Conv2D"), ("relu1", "Relu")].iter().enumerate() {
            b.op(&DbOp {
                dev: 0,
                model: 1,
                stream: 3,
                task: i as u64 + 1,
                pid: 42,
                start: 1_000 + 100 * i as u64,
                end: 1_050 + 100 * i as u64,
                name,
                op_type: ty,
                task_type: "AI_CORE",
                block_dim: 8,
                mix_block_dim: 0,
                comm: false,
                pmu: &[],
                meta: None,
            });
        }
        db.write(&b).unwrap();
        db.finish(&DbInfo {
            start_ns: 1_000,
            end_ns: 1_150,
            host_uid: "0",
            host_name: "host",
            devices: &[(0, None)],
            chip: "Ascend910B",
            analyzer: &dir.join("analyze/communication_analyzer.db"),
        })
        .unwrap();
        let c = Connection::open(&path).unwrap();
        let tasks: Vec<(i64, i64, i64)> = c
            .prepare("SELECT startNs, endNs, streamId FROM TASK ORDER BY startNs")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(tasks, [(1_000, 1_050, 3), (1_100, 1_150, 3)]);
        let names: Vec<String> = c
            .prepare(
                "SELECT s.value FROM COMPUTE_TASK_INFO t JOIN STRING_IDS s ON s.id = t.name \
                 ORDER BY t.globalTaskId",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(names, ["conv1", "relu1"]);
        for (table, _) in TABLES {
            let n: i64 = c
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [table],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n, 1, "table {table}");
        }
        let version: String = c
            .query_row(
                "SELECT value FROM META_DATA WHERE name = 'SCHEMA_VERSION'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let (a, b_, d) = SCHEMA_VERSION;
        assert_eq!(version, format!("{a}.{b_}.{d}"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
