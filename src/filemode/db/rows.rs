//! The rows a batch of ops becomes: the statements they are written with, each table's row
//! as a named struct (TASK, COMPUTE_TASK_INFO, the communication tables, TASK_PMU_INFO), and
//! the multi-row INSERTs that write them.

use super::{DbRow, Link, INVALID_ENUM, NONE_U32};
use rusqlite::{params, Connection};
use std::collections::HashMap;

/// Rows per multi-row INSERT: SQLite's per-statement work (step, reset, unbinding) is paid
/// once for this many rows.
pub(super) const MULTI: usize = 32;

/// The statements a batch writes with, looked up once per batch.
pub(super) struct Statements<'c> {
    pub(super) task: Multi<'c>,
    pub(super) compute: Multi<'c>,
    pub(super) piece: Multi<'c>,
    pub(super) comm_op: rusqlite::CachedStatement<'c>,
    pub(super) comm_task: rusqlite::CachedStatement<'c>,
    pub(super) pmu: rusqlite::CachedStatement<'c>,
}

impl<'c> Statements<'c> {
    pub(super) fn prepare(conn: &'c rusqlite::Connection) -> rusqlite::Result<Self> {
        Ok(Statements {
            task: Multi::new(conn, "TASK", &TASK_SLOTS),
            compute: Multi::new(conn, "COMPUTE_TASK_INFO", &COMPUTE_SLOTS),
            piece: Multi::new(conn, "OVERLAP_ANALYSIS", &OVERLAP_SLOTS),
            comm_op: conn.prepare_cached(
                "INSERT INTO COMMUNICATION_OP VALUES (:opName, :startNs, :endNs, \
                 :connectionId, :groupName, :opId, 0, 0, :dataType, :algType, 0, :opType, \
                 :deviceId, :rankSize)",
            )?,
            // A link's sender is its device until the end, then the device's rank: srcRank
            // and dstRank hold ranks, and no task here is a master's.
            comm_task: conn.prepare_cached(
                "INSERT INTO COMMUNICATION_TASK_INFO VALUES (:name, :globalTaskId, :taskType, \
                 0, :groupName, :notifyId, :rdmaType, :srcRank, :dstRank, :transportType, \
                 :size, :rdmaType, :rdmaType, :opId, 1, :bandwidth)",
            )?,
            pmu: conn.prepare_cached("INSERT INTO TASK_PMU_INFO VALUES (?1,?2,?3)")?,
        })
    }
}

/// An op's strings as STRING_IDS ids: N/A's id for an unknown tensor field.
pub(super) struct OpIds {
    name: i64,
    op_type: i64,
    task_type: i64,
    input_shapes: i64,
    input_types: i64,
    input_formats: i64,
    output_shapes: i64,
    output_types: i64,
    output_formats: i64,
}

impl OpIds {
    /// The ids of the strings back to back in `text`, of the lengths `lens` (name, op type,
    /// task type, then [`crate::opmeta::OpMeta::fields`]'s six, in their order).
    pub(super) fn of(
        strings: &mut HashMap<String, i64>,
        na: i64,
        text: &str,
        lens: &[u32; 9],
    ) -> OpIds {
        let mut ids = [0i64; 9];
        let mut from = 0;
        for (k, &len) in lens.iter().enumerate() {
            let t = &text[from..from + len as usize];
            from += len as usize;
            ids[k] = if k >= 3 && (t.is_empty() || t == "N/A") {
                na
            } else {
                sid(strings, t)
            };
        }
        debug_assert_eq!(from, text.len());
        let [name, op_type, task_type, input_shapes, input_types, input_formats, output_shapes, output_types, output_formats] =
            ids;
        OpIds {
            name,
            op_type,
            task_type,
            input_shapes,
            input_types,
            input_formats,
            output_shapes,
            output_types,
            output_formats,
        }
    }
}

/// One task of an op: its span, global task id, name and task type (STRING_IDS ids).
#[derive(Clone, Copy)]
pub(super) struct Task {
    start: u64,
    end: u64,
    global_id: i64,
    name: i64,
    task_type: i64,
}

/// An op's tasks: a communication op whose link is known is CANN's two (it waits for its
/// peer, Notify_Wait, then sends, Memcpy); any other op is one.
pub(super) struct Tasks {
    tasks: [Task; 2],
    n: usize,
}

impl Tasks {
    pub(super) fn one(o: &DbRow, id: i64, ids: &OpIds) -> Tasks {
        let t = Task {
            start: o.start,
            end: o.end,
            global_id: id,
            name: ids.name,
            task_type: ids.task_type,
        };
        Tasks {
            tasks: [t; 2],
            n: 1,
        }
    }

    pub(super) fn two(
        o: &DbRow,
        l: Link,
        id: i64,
        sent: i64,
        strings: &mut HashMap<String, i64>,
    ) -> Tasks {
        let at = o.end - l.transit_ns.min(o.end - o.start);
        let wait = sid(strings, "Notify_Wait");
        let send = sid(strings, "Memcpy");
        let task = |start, end, global_id, ty| Task {
            start,
            end,
            global_id,
            name: ty,
            task_type: ty,
        };
        Tasks {
            tasks: [task(o.start, at, id, wait), task(at, o.end, sent, send)],
            n: 2,
        }
    }

    pub(super) fn all(&self) -> &[Task] {
        &self.tasks[..self.n]
    }
}

/// One row of TASK.
pub(super) struct TaskRow {
    start: u64,
    end: u64,
    device: u32,
    connection: i64,
    global_task: i64,
    pid: u64,
    task_type: i64,
    stream: u32,
    task: u64,
    /// NONE_U32 for an op of no model.
    model: i64,
}

impl TaskRow {
    pub(super) fn of(o: &DbRow, t: &Task, connection: i64) -> TaskRow {
        TaskRow {
            start: t.start,
            end: t.end,
            device: o.dev,
            connection,
            global_task: t.global_id,
            pid: o.pid,
            task_type: t.task_type,
            stream: o.stream,
            task: o.task,
            model: if o.model == u32::MAX {
                NONE_U32
            } else {
                o.model as i64
            },
        }
    }

    /// The columns, in TASK's order (contextId is never known).
    pub(super) fn values(&self) -> [i64; 11] {
        [
            self.start as i64,
            self.end as i64,
            self.device as i64,
            self.connection,
            self.global_task,
            self.pid as i64,
            self.task_type,
            NONE_U32,
            self.stream as i64,
            self.task as i64,
            self.model,
        ]
    }
}

/// One row of COMPUTE_TASK_INFO (the columns after these are N/A's id).
pub(super) struct ComputeRow<'a> {
    ids: &'a OpIds,
    global_task: i64,
    block_num: u32,
    mix_block_num: u32,
    na: i64,
}

impl<'a> ComputeRow<'a> {
    pub(super) fn of(o: &DbRow, global_task: i64, ids: &'a OpIds, na: i64) -> Self {
        ComputeRow {
            ids,
            global_task,
            block_num: o.block_dim,
            mix_block_num: o.mix_block_dim,
            na,
        }
    }

    /// The columns [`COMPUTE_SLOTS`] binds, in COMPUTE_TASK_INFO's order.
    pub(super) fn values(&self) -> [i64; 13] {
        let i = self.ids;
        [
            i.name,
            self.global_task,
            self.block_num as i64,
            self.mix_block_num as i64,
            i.task_type,
            i.op_type,
            i.input_formats,
            i.input_types,
            i.input_shapes,
            i.output_formats,
            i.output_types,
            i.output_shapes,
            self.na,
        ]
    }
}

/// A communication op's COMMUNICATION_OP row and its tasks' COMMUNICATION_TASK_INFO rows.
pub(super) struct CommOp<'a> {
    pub(super) o: &'a DbRow,
    pub(super) ids: &'a OpIds,
    pub(super) conn_id: i64,
    pub(super) group: i64,
    pub(super) op_id: i64,
    pub(super) na: i64,
}

impl CommOp<'_> {
    /// Writes the rows; the sending task's link (the second of two) goes to `links` too.
    pub(super) fn write(
        &self,
        st: &mut Statements,
        tasks: &[Task],
        link: Option<Link>,
        links: &mut Vec<[i64; 6]>,
    ) -> rusqlite::Result<()> {
        let o = self.o;
        st.comm_op.execute(rusqlite::named_params! {
            ":opName": self.ids.name,
            ":startNs": o.start as i64,
            ":endNs": o.end as i64,
            ":connectionId": self.conn_id,
            ":groupName": self.group,
            ":opId": self.op_id,
            ":dataType": INVALID_ENUM,
            ":algType": self.na,
            ":opType": self.ids.op_type,
            ":deviceId": o.dev,
            ":rankSize": NONE_U32,
        })?;
        for (k, t) in tasks.iter().enumerate() {
            let l = link.filter(|_| k == 1);
            let bw = match l {
                // Bytes per ns are GB/s, CANN's unit.
                Some(l) if t.end > t.start => {
                    rusqlite::types::Value::Real(l.bytes as f64 / (t.end - t.start) as f64)
                }
                Some(_) => rusqlite::types::Value::Real(0.0),
                None => rusqlite::types::Value::Integer(0),
            };
            st.comm_task.execute(rusqlite::named_params! {
                ":name": t.name,
                ":globalTaskId": t.global_id,
                ":taskType": t.task_type,
                ":groupName": self.group,
                ":notifyId": i64::MAX,
                ":rdmaType": INVALID_ENUM,
                ":srcRank": l.map_or(NONE_U32, |_| i64::from(o.dev)),
                ":dstRank": l.map_or(NONE_U32, |l| i64::from(l.peer)),
                ":transportType": l.map_or(INVALID_ENUM, |l| l.transport),
                ":size": l.map_or(0, |l| l.bytes as i64),
                ":opId": self.op_id,
                ":bandwidth": bw,
            })?;
            if let Some(l) = l {
                links.push([
                    self.op_id,
                    (t.start - o.start) as i64,
                    (t.end - t.start) as i64,
                    i64::from(l.peer),
                    l.transport,
                    l.bytes as i64,
                ]);
            }
        }
        Ok(())
    }
}

/// One TASK_PMU_INFO row: CANN's name, times in ns (op_summary's are in µs); NUMERIC, so
/// SQLite keeps a number as one and text (N/A, a percentage) as text.
pub(super) fn write_pmu(
    pmu: &mut rusqlite::CachedStatement,
    strings: &mut HashMap<String, i64>,
    id: i64,
    col: &str,
    v: &str,
) -> rusqlite::Result<()> {
    let (name, time) = crate::formats::db_schema::pmu_db_name(col);
    let col = sid(strings, &name);
    match v.parse::<f64>() {
        Ok(x) if time => pmu.execute(params![id, col, x * 1000.0])?,
        Ok(x) => pmu.execute(params![id, col, x])?,
        Err(_) => pmu.execute(params![id, col, v])?,
    };
    Ok(())
}

/// Each column's parameter among a row's: TASK binds its 11 columns; COMPUTE_TASK_INFO 13
/// (its last five, attributes, op state, HF32, grid and block dims, all N/A's id);
/// OVERLAP_ANALYSIS its 5.
pub(super) const TASK_SLOTS: [usize; 11] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
pub(super) const COMPUTE_SLOTS: [usize; 17] =
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 12, 12, 12, 12];
pub(super) const OVERLAP_SLOTS: [usize; 5] = [0, 1, 2, 3, 4];

/// Integer rows of one table, inserted [`MULTI`] at a time (the rest one by one).
pub(super) struct Multi<'c> {
    conn: &'c Connection,
    /// One row's VALUES and MULTI rows' INSERT.
    one: String,
    many: String,
    width: usize,
    values: Vec<i64>,
}

impl<'c> Multi<'c> {
    pub(super) fn new(conn: &'c Connection, table: &str, slots: &[usize]) -> Multi<'c> {
        let width = slots.iter().max().map_or(0, |m| m + 1);
        let row = |r: usize| {
            let cells: Vec<String> = slots
                .iter()
                .map(|s| format!("?{}", r * width + s + 1))
                .collect();
            format!("({})", cells.join(","))
        };
        let rows: Vec<String> = (0..MULTI).map(row).collect();
        Multi {
            conn,
            one: format!("INSERT INTO {table} VALUES {}", row(0)),
            many: format!("INSERT INTO {table} VALUES {}", rows.join(",")),
            width,
            values: Vec::with_capacity(width * MULTI),
        }
    }

    pub(super) fn push(&mut self, row: &[i64]) -> rusqlite::Result<()> {
        debug_assert_eq!(row.len(), self.width);
        self.values.extend_from_slice(row);
        if self.values.len() == self.width * MULTI {
            let mut st = self.conn.prepare_cached(&self.many)?;
            for (i, v) in self.values.iter().enumerate() {
                st.raw_bind_parameter(i + 1, *v)?;
            }
            st.raw_execute()?;
            self.values.clear();
        }
        Ok(())
    }

    pub(super) fn finish(self) -> rusqlite::Result<()> {
        let mut st = self.conn.prepare_cached(&self.one)?;
        for row in self.values.chunks(self.width) {
            for (i, v) in row.iter().enumerate() {
                st.raw_bind_parameter(i + 1, *v)?;
            }
            st.raw_execute()?;
        }
        Ok(())
    }
}

/// The STRING_IDS id of `s` in `strings` (ids in order of first use).
pub(super) fn sid(strings: &mut HashMap<String, i64>, s: &str) -> i64 {
    match strings.get(s) {
        Some(&id) => id,
        None => {
            let id = strings.len() as i64;
            strings.insert(s.to_string(), id);
            id
        }
    }
}
