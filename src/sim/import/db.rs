//! Importing CANN's SQLite database (`msprof_*.db`, `ascend_pytorch_profiler_*.db`): its
//! tasks, with their streams, shapes and PMU values, as a replayable model.

use super::*;

/// One task of CANN's database, as [`db_tasks`] reads it.
pub struct DbTask {
    /// Epoch ns.
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub name: String,
    pub op_type: String,
    pub info: TaskInfo,
    pub meta: Option<Box<OpMeta>>,
    /// TASK's globalTaskId (compute tasks).
    pub global_id: Option<i64>,
}

/// Opens a database someone else wrote, only ever to read it: nothing is written beside it
/// (no `-shm` or `-wal` file) and it opens on a read-only file system or share. Without a
/// `-wal` file beside it, or an empty one (a finished run, checkpointed as CANN leaves it),
/// it opens as immutable; with one that holds pages, those are part of the data, so SQLite
/// reads them as it reads any database in WAL mode (and needs to write its `-shm` index). The first read names the real cause when the file
/// cannot be read.
pub fn open_read_only(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        rusqlite::Connection::open_with_flags(path, flags)?
    } else {
        let uri = format!("file:{}?immutable=1", uri_path(path));
        rusqlite::Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)?
    };
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
    Ok(conn)
}

/// Whether the database has the table `name` (its own, not a TEMP one).
pub fn has_table(conn: &rusqlite::Connection, name: &str) -> bool {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |_| Ok(()),
    )
    .is_ok()
}

/// `path` as the path of an SQLite `file:` URI: every byte but unreserved ones and `/`
/// percent-encoded.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The tasks of CANN's database (`msprof_*.db`, torch_npu's `ascend_pytorch_profiler_*.db`):
/// the compute tasks (TASK + COMPUTE_TASK_INFO) and the communication ops
/// (COMMUNICATION_OP), names and types from STRING_IDS, of the database's first device, in
/// start order, one at a time to `f`. Read-only: the file is never changed. Errors say what
/// is wrong, not which file (the caller names it).
pub fn db_tasks(path: &Path, f: &mut dyn FnMut(DbTask) -> Result<()>) -> Result<()> {
    let conn = open_read_only(path).map_err(|e| {
        Error::new(
            ACL_ERROR_INVALID_FILE,
            format!("cannot be read as an SQLite database: {e}"),
        )
    })?;
    let fail = |e: rusqlite::Error| -> Error { Error::new(ACL_ERROR_INVALID_FILE, e.to_string()) };
    let has = |table: &str| has_table(&conn, table);
    if !has("TASK") || !has("STRING_IDS") || !(has("COMPUTE_TASK_INFO") || has("COMMUNICATION_OP"))
    {
        return err(
            ACL_ERROR_INVALID_FILE,
            "an SQLite database without CANN's TASK, STRING_IDS and COMPUTE_TASK_INFO tables has no tasks",
        );
    }
    // CANN 8.2 renamed blockDim and mixBlockDim to blockNum and mixBlockNum.
    let block = |c: &str| -> String {
        let newer = conn
            .prepare(&format!("SELECT {c}Num FROM COMPUTE_TASK_INFO LIMIT 0"))
            .is_ok();
        format!("c.{c}{}", if newer { "Num" } else { "Dim" })
    };
    let mut parts = Vec::new();
    if has("COMPUTE_TASK_INFO") {
        let meta = [
            "inputShapes",
            "inputDataTypes",
            "inputFormats",
            "outputShapes",
            "outputDataTypes",
            "outputFormats",
        ];
        let cols: Vec<String> = meta
            .iter()
            .map(|m| format!("(SELECT value FROM STRING_IDS WHERE id = c.{m})"))
            .collect();
        parts.push(format!(
            "SELECT t.startNs, t.endNs, t.deviceId, t.streamId, t.taskId, n.value, o.value, \
             k.value, {}, {}, {}, t.globalTaskId FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId \
             JOIN STRING_IDS n ON n.id = c.name LEFT JOIN STRING_IDS o ON o.id = c.opType \
             LEFT JOIN STRING_IDS k ON k.id = c.taskType",
            block("block"),
            block("mixBlock"),
            cols.join(", ")
        ));
    }
    if has("COMMUNICATION_OP") {
        // One row per communication op, as kernel_details lists them (its tasks, the
        // notify waits and copies of COMMUNICATION_TASK_INFO, are not ops); its device is
        // that of the tasks its launch made.
        parts.push(
            "SELECT p.startNs, p.endNs, coalesce((SELECT min(t.deviceId) FROM TASK t \
             WHERE t.connectionId = p.connectionId), (SELECT min(deviceId) FROM TASK)), \
             NULL, NULL, n.value, coalesce(o.value, n.value), 'COMMUNICATION', NULL, NULL, \
             NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM COMMUNICATION_OP p JOIN STRING_IDS n ON n.id = p.opName \
             LEFT JOIN STRING_IDS o ON o.id = p.opType"
                .to_string(),
        );
    }
    let sql = format!(
        "SELECT * FROM ({}) WHERE deviceId = (SELECT min(deviceId) FROM TASK) ORDER BY 1, 2",
        parts.join(" UNION ALL ")
    );
    let mut stmt = conn.prepare(&sql).map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let int = |v: Option<i64>| v.and_then(|x| u32::try_from(x).ok());
    while let Some(r) = rows.next().map_err(fail)? {
        let (start, end): (i64, i64) = (r.get(0).map_err(fail)?, r.get(1).map_err(fail)?);
        if start < 0 || end < start || (end - start) as u64 >= MAX_SPAN_NS {
            return err(
                ACL_ERROR_INVALID_FILE,
                format!("a task from {start} to {end} ns"),
            );
        }
        let name: String = r.get(5).map_err(fail)?;
        let op_type: Option<String> = r.get(6).map_err(fail)?;
        let text = |i: usize| -> Result<String> {
            Ok(r.get::<_, Option<String>>(i)
                .map_err(fail)?
                .unwrap_or_default())
        };
        let meta = OpMeta {
            input_shapes: text(10)?,
            input_types: text(11)?,
            input_formats: text(12)?,
            output_shapes: text(13)?,
            output_types: text(14)?,
            output_formats: text(15)?,
            ..OpMeta::default()
        }
        .known()
        .map(Box::new);
        f(DbTask {
            meta,
            global_id: r.get(16).map_err(fail)?,
            start: start as u64,
            end: end as u64,
            device: int(r.get(2).map_err(fail)?).unwrap_or(0),
            op_type: op_type.unwrap_or_else(|| name.clone()),
            name,
            info: TaskInfo {
                task_type: r.get(7).map_err(fail)?,
                block_dim: int(r.get(8).map_err(fail)?),
                mix_block_dim: int(r.get(9).map_err(fail)?),
                stream_id: int(r.get(3).map_err(fail)?),
                task_id: int(r.get(4).map_err(fail)?),
            },
        })?;
    }
    Ok(())
}

use crate::formats::db_schema::pmu_column_of;

/// PMU column names, and each task's values by globalTaskId (see [`db_pmu`]).
type PmuValues = (Vec<String>, HashMap<i64, Vec<String>>);

/// A database's PMU values (TASK_PMU_INFO): its names as op_summary columns, in the order
/// they first appear, and each task's values (text, times in µs) by globalTaskId. None if
/// it has no such table.
fn db_pmu(conn: &rusqlite::Connection) -> rusqlite::Result<Option<PmuValues>> {
    if !has_table(conn, "TASK_PMU_INFO") {
        return Ok(None);
    }
    let mut stmt = conn.prepare(
        "SELECT p.globalTaskId, s.value, p.value FROM TASK_PMU_INFO p \
         JOIN STRING_IDS s ON s.id = p.name ORDER BY p.rowid",
    )?;
    let mut rows = stmt.query([])?;
    let (mut columns, mut at): (Vec<String>, HashMap<String, (usize, bool)>) = Default::default();
    let mut values: HashMap<i64, Vec<String>> = HashMap::new();
    while let Some(r) = rows.next()? {
        let task: i64 = r.get(0)?;
        let name: String = r.get(1)?;
        let (k, time) = *at.entry(name).or_insert_with_key(|n| {
            let (col, time) = pmu_column_of(n);
            columns.push(col);
            (columns.len() - 1, time)
        });
        use rusqlite::types::ValueRef;
        let text = match r.get_ref(2)? {
            ValueRef::Integer(i) if time && i >= 0 => crate::formats::text::us3(i as u64),
            ValueRef::Integer(i) if time => format!("{:.3}", i as f64 / 1000.0),
            ValueRef::Real(x) if time => format!("{:.3}", x / 1000.0),
            ValueRef::Integer(i) => i.to_string(),
            ValueRef::Real(x) => x.to_string(),
            ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
            _ => String::new(),
        };
        let v = values.entry(task).or_default();
        if v.len() <= k {
            v.resize(k + 1, String::new());
        }
        v[k] = text;
    }
    Ok(Some((columns, values)))
}

/// A database's tasks as a model (see [`db_tasks`]).
pub fn parse_db(path: &Path) -> Result<SimModel> {
    let (mut ops, mut starts, mut ids) = (Vec::new(), Vec::new(), Vec::new());
    let mut device = 0;
    db_tasks(path, &mut |t| {
        device = t.device;
        starts.push(Some(t.start));
        ids.push(t.global_id);
        ops.push(SimOp {
            name: t.name,
            op_type: t.op_type,
            duration_ns: t.end - t.start,
            wait_ns: 0,
            offset_ns: None,
            task: Some(t.info),
            pmu: Vec::new(),
            meta: t.meta,
            meta_id: 0,
            reg_id: 0,
            ..Default::default()
        });
        Ok(())
    })
    .or_else(|e| bad(path, e.msg))?;
    if ops.is_empty() {
        return bad(path, "the database has no compute or communication tasks");
    }
    // The tasks' PMU values, now that the database is known to be CANN's.
    let pmu = open_read_only(path)
        .and_then(|c| db_pmu(&c))
        .or_else(|e| bad(path, format!("TASK_PMU_INFO: {e}")))?;
    let (pmu_columns, mut values) = pmu.unwrap_or_default();
    for (op, id) in ops.iter_mut().zip(&ids) {
        if let Some(mut v) = id.and_then(|id| values.remove(&id)) {
            v.resize(pmu_columns.len(), String::new());
            op.pmu = v;
        }
    }
    with_offsets(path, &mut ops, &starts)?;
    Ok(SimModel {
        name: stem(path),
        device,
        ops,
        inputs: Vec::new(),
        outputs: Vec::new(),
        pmu_columns,
        memory: Vec::new(),
    })
}

/// The operator memory CANN's database recorded, on every device (NPU_OP_MEM: names and
/// components from STRING_IDS, allocate or release from ENUM_MEMORY), as the host log's
/// events: epoch ns, sizes and the totals as written. Empty without the table.
pub fn db_op_memory(path: &Path) -> Result<Vec<crate::formats::memory::MemEvent>> {
    use crate::formats::db_schema::{MEMORY_ALLOCATE, MEMORY_RELEASE};
    use crate::formats::memory::{MemEvent, Pool};
    let fail = |e: rusqlite::Error| -> Error {
        Error::new(ACL_ERROR_INVALID_FILE, format!("NPU_OP_MEM: {e}"))
    };
    let conn = open_read_only(path).map_err(fail)?;
    if !has_table(&conn, "NPU_OP_MEM") {
        return Ok(Vec::new());
    }
    let mut st = conn
        .prepare(
            "SELECT coalesce(s.value, ''), m.addr, m.type, m.size, m.timestampNs, m.globalTid, \
             m.totalAllocate, m.totalReserve, coalesce(c.value, ''), m.deviceId FROM NPU_OP_MEM m \
             LEFT JOIN STRING_IDS s ON m.operatorName = s.id \
             LEFT JOIN STRING_IDS c ON m.component = c.id \
             ORDER BY m.timestampNs, m.rowid",
        )
        .map_err(fail)?;
    let rows = st
        .query_map([], |r| {
            let kind: i64 = r.get(2)?;
            let size = r.get::<_, i64>(3)?.abs();
            let total = |i: usize| -> rusqlite::Result<u64> {
                Ok(r.get::<_, Option<f64>>(i)?.unwrap_or(0.0).max(0.0) as u64)
            };
            Ok((
                kind,
                MemEvent {
                    addr: r.get::<_, i64>(1)? as u64,
                    allocated: total(6)?,
                    component: r.get(8)?,
                    device: u32::try_from(r.get::<_, i64>(9)?).unwrap_or(0),
                    name: r.get(0)?,
                    pool: Pool::Op,
                    reserved: total(7)?,
                    size: if kind == MEMORY_RELEASE { -size } else { size },
                    start: r.get::<_, i64>(4)?.max(0) as u64,
                    tid: r.get::<_, i64>(5)? as u64 & 0xffff_ffff,
                },
            ))
        })
        .map_err(fail)?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, ev) = row.map_err(fail)?;
        // Neither allocate nor release (ENUM_MEMORY's read and write): not an allocation.
        if kind == MEMORY_ALLOCATE || kind == MEMORY_RELEASE {
            out.push(ev);
        }
    }
    Ok(out)
}
