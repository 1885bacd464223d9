//! `aclprof export --format parquet PATH -o OUT`: one Parquet dataset for a result directory,
//! a folder of them (a cluster's ranks) or CANN's database. Each table mirrors the database's
//! (docs/compatibility.md, "Parquet datasets": columns and units), with names and types
//! resolved, and is partitioned by rank as Hive does it: `OUT/<table>/rank=<N>/part-<K>.parquet`,
//! which DuckDB, Polars, pyarrow, Spark and Dask read as one table with a `rank` column.
//!
//! It streams: rows come from SQLite one at a time and leave as a row group every
//! [`ROW_GROUP`] rows, so memory is bounded by one row group of one table, never by the
//! dataset. A result directory without a database is exported first.

use crate::databases::{databases, sql_err};
use aclprof::error::*;
use aclprof::sim::has_table;
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use rusqlite::types::ValueRef;
use std::path::Path;
use std::sync::Arc;

/// Rows per row group.
pub const ROW_GROUP: usize = 65_536;

/// A column's Parquet type: every column is OPTIONAL (NULL where the database has none).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// INT64: nanoseconds, bytes, ids and counts.
    Int,
    /// DOUBLE.
    Real,
    /// BYTE_ARRAY (STRING).
    Text,
}

/// A table of the dataset: its name, its columns, and the query that reads it from one
/// database for one device (`?1`; host tables ignore it).
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
    sql: &'static str,
    /// Host data: read once per database, into its first rank.
    host: bool,
}

use Kind::*;

/// The dataset's tables, besides `steps` (read from step_trace_time.csv: [`STEPS`]).
pub const TABLES: &[Table] = &[
    Table {
        name: "tasks",
        columns: &[
            ("start_ns", Int),
            ("end_ns", Int),
            ("duration_ns", Int),
            ("device", Int),
            ("stream", Int),
            ("task_id", Int),
            ("model_id", Int),
            ("name", Text),
            ("op_type", Text),
            ("task_type", Text),
            ("block_dim", Int),
            ("input_shapes", Text),
            ("global_task_id", Int),
            ("kind", Text),
        ],
        sql: "SELECT t.startNs, t.endNs, t.endNs - t.startNs, t.deviceId, t.streamId, t.taskId,
                     t.modelId, COALESCE(n.value, cn.value), COALESCE(ty.value, cty.value),
                     COALESCE(tt.value, ct.value),
                     c.blockDim, sh.value, t.globalTaskId,
                     CASE WHEN c.globalTaskId IS NOT NULL THEN 'compute'
                          WHEN m.globalTaskId IS NOT NULL THEN 'communication' END
              FROM TASK t
              LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
              LEFT JOIN STRING_IDS n ON n.id = c.name
              LEFT JOIN STRING_IDS ty ON ty.id = c.opType
              LEFT JOIN STRING_IDS tt ON tt.id = c.taskType
              LEFT JOIN STRING_IDS sh ON sh.id = c.inputShapes
              LEFT JOIN COMMUNICATION_TASK_INFO m ON m.globalTaskId = t.globalTaskId
              LEFT JOIN STRING_IDS cn ON cn.id = m.name
              LEFT JOIN STRING_IDS ct ON ct.id = m.taskType
              LEFT JOIN COMMUNICATION_OP co ON co.opId = m.opId
              LEFT JOIN STRING_IDS cty ON cty.id = co.opType
              WHERE COALESCE(t.deviceId, ?1) = ?1",
        host: false,
    },
    Table {
        name: "ops",
        columns: &[
            ("start_ns", Int),
            ("end_ns", Int),
            ("duration_ns", Int),
            ("device", Int),
            ("stream", Int),
            ("name", Text),
            ("op_type", Text),
            ("kind", Text),
        ],
        // The ops analysis counts: each compute task, and each communication op once (its
        // tasks, the waits and copies, are not ops).
        sql: "SELECT t.startNs, t.endNs, t.endNs - t.startNs, t.deviceId, t.streamId,
                     n.value, COALESCE(ty.value, n.value), 'compute'
              FROM TASK t
              JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
              LEFT JOIN STRING_IDS n ON n.id = c.name
              LEFT JOIN STRING_IDS ty ON ty.id = c.opType
              WHERE COALESCE(t.deviceId, ?1) = ?1
              UNION ALL
              SELECT o.startNs, o.endNs, o.endNs - o.startNs, o.deviceId, NULL,
                     n.value, COALESCE(ty.value, n.value), 'communication'
              FROM COMMUNICATION_OP o
              LEFT JOIN STRING_IDS n ON n.id = o.opName
              LEFT JOIN STRING_IDS ty ON ty.id = o.opType
              WHERE COALESCE(o.deviceId, ?1) = ?1",
        host: false,
    },
    Table {
        name: "communication",
        columns: &[
            ("start_ns", Int),
            ("end_ns", Int),
            ("duration_ns", Int),
            ("device", Int),
            ("name", Text),
            ("op_type", Text),
            ("group_name", Text),
            ("op_id", Int),
            ("count", Real),
            ("data_type", Text),
            ("rank_size", Int),
        ],
        sql: "SELECT o.startNs, o.endNs, o.endNs - o.startNs, o.deviceId, n.value, ty.value,
                     g.value, o.opId, o.count, d.name, o.rankSize
              FROM COMMUNICATION_OP o
              LEFT JOIN STRING_IDS n ON n.id = o.opName
              LEFT JOIN STRING_IDS ty ON ty.id = o.opType
              LEFT JOIN STRING_IDS g ON g.id = o.groupName
              LEFT JOIN ENUM_HCCL_DATA_TYPE d ON d.id = o.dataType
              WHERE COALESCE(o.deviceId, ?1) = ?1",
        host: false,
    },
    Table {
        name: "communication_tasks",
        columns: &[
            ("start_ns", Int),
            ("end_ns", Int),
            ("duration_ns", Int),
            ("device", Int),
            ("name", Text),
            ("op_id", Int),
            ("group_name", Text),
            ("src_rank", Int),
            ("dst_rank", Int),
            ("transport_type", Text),
            ("link_type", Text),
            ("size_bytes", Int),
            ("bandwidth_gbps", Real),
        ],
        sql: "SELECT t.startNs, t.endNs, t.endNs - t.startNs, t.deviceId, n.value, m.opId, g.value,
                     m.srcRank, m.dstRank, tr.name, lk.name, m.size, m.bandwidth
              FROM COMMUNICATION_TASK_INFO m
              JOIN TASK t ON t.globalTaskId = m.globalTaskId
              LEFT JOIN STRING_IDS n ON n.id = m.name
              LEFT JOIN STRING_IDS g ON g.id = m.groupName
              LEFT JOIN ENUM_HCCL_TRANSPORT_TYPE tr ON tr.id = m.transportType
              LEFT JOIN ENUM_HCCL_LINK_TYPE lk ON lk.id = m.linkType
              WHERE COALESCE(t.deviceId, ?1) = ?1",
        host: false,
    },
    Table {
        name: "memory",
        columns: &[
            ("timestamp_ns", Int),
            ("device", Int),
            ("operator", Text),
            ("event", Text),
            ("addr", Int),
            ("size_bytes", Int),
            ("total_allocated_bytes", Real),
            ("total_reserved_bytes", Real),
            ("component", Text),
            ("global_tid", Int),
        ],
        sql: "SELECT o.timestampNs, o.deviceId, n.value, e.name, o.addr, o.size, o.totalAllocate,
                     o.totalReserve, c.value, o.globalTid
              FROM NPU_OP_MEM o
              LEFT JOIN STRING_IDS n ON n.id = o.operatorName
              LEFT JOIN ENUM_MEMORY e ON e.id = o.type
              LEFT JOIN STRING_IDS c ON c.id = o.component
              WHERE COALESCE(o.deviceId, ?1) = ?1",
        host: false,
    },
    Table {
        name: "api",
        columns: &[
            ("start_ns", Int),
            ("end_ns", Int),
            ("duration_ns", Int),
            ("name", Text),
            ("level", Text),
            ("global_tid", Int),
            ("connection_id", Int),
        ],
        sql: "SELECT a.startNs, a.endNs, a.endNs - a.startNs, n.value, e.name, a.globalTid,
                     a.connectionId
              FROM CANN_API a
              LEFT JOIN STRING_IDS n ON n.id = a.name
              LEFT JOIN ENUM_API_TYPE e ON e.id = a.type
              WHERE ?1 IS NOT NULL",
        host: true,
    },
    Table {
        name: "msproftx",
        columns: &[
            ("start_ns", Int),
            ("end_ns", Int),
            ("duration_ns", Int),
            ("message", Text),
            ("event_type", Text),
            ("range_id", Int),
            ("global_tid", Int),
            ("connection_id", Int),
        ],
        sql: "SELECT m.startNs, m.endNs, m.endNs - m.startNs, s.value, e.name, m.rangeId,
                     m.globalTid, m.connectionId
              FROM MSTX_EVENTS m
              LEFT JOIN STRING_IDS s ON s.id = m.message
              LEFT JOIN ENUM_MSTX_EVENT_TYPE e ON e.id = m.eventType
              WHERE ?1 IS NOT NULL",
        host: false,
    },
];

/// The `steps` table: step_trace_time.csv's rows, in nanoseconds.
pub const STEPS: &[(&str, Kind)] = &[
    ("device", Int),
    ("step", Int),
    ("computing_ns", Int),
    ("communication_not_overlapped_ns", Int),
    ("overlapped_ns", Int),
    ("communication_ns", Int),
    ("free_ns", Int),
    ("stage_ns", Int),
    ("bubble_ns", Int),
    ("preparing_ns", Int),
];
/// step_trace_time.csv's columns for [`STEPS`], in its order (the one exclusive of receive
/// is left out).
fn step_columns() -> Vec<&'static str> {
    aclprof::formats::op_summary::STEP_TRACE_TIME_HEADER
        .into_iter()
        .filter(|c| !c.contains("Exclude Receive"))
        .collect()
}

/// One value of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// Writes one Parquet file of `columns`, a row group every [`ROW_GROUP`] rows pushed.
pub struct Writer {
    w: SerializedFileWriter<std::fs::File>,
    columns: Vec<(String, Kind)>,
    rows: Vec<Vec<Cell>>,
    pub written: u64,
}

fn perr(e: impl std::fmt::Display) -> Error {
    Error::new(ACL_ERROR_INVALID_FILE, format!("parquet: {e}"))
}

impl Writer {
    pub fn create(path: &Path, table: &str, columns: &[(&str, Kind)]) -> Result<Writer> {
        let fields: String = columns
            .iter()
            .map(|(n, k)| match k {
                Int => format!("OPTIONAL INT64 {n};"),
                Real => format!("OPTIONAL DOUBLE {n};"),
                Text => format!("OPTIONAL BYTE_ARRAY {n} (STRING);"),
            })
            .collect();
        let schema =
            parse_message_type(&format!("message {table} {{ {fields} }}")).map_err(perr)?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("aclprof {}", env!("CARGO_PKG_VERSION")))
            .build();
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)
                .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", d.display())))?;
        }
        let f = std::fs::File::create(path)
            .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())))?;
        let w = SerializedFileWriter::new(f, Arc::new(schema), Arc::new(props)).map_err(perr)?;
        Ok(Writer {
            w,
            columns: columns.iter().map(|(n, k)| (n.to_string(), *k)).collect(),
            rows: Vec::with_capacity(ROW_GROUP),
            written: 0,
        })
    }

    pub fn push(&mut self, row: Vec<Cell>) -> Result<()> {
        self.rows.push(row);
        if self.rows.len() >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the rows pushed so far as one row group.
    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut rg = self.w.next_row_group().map_err(perr)?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column().map_err(perr)? {
            let kind = self.columns[i].1;
            let cells = self.rows.iter().map(|r| &r[i]);
            let defs: Vec<i16> = cells.clone().map(|c| i16::from(*c != Cell::Null)).collect();
            match kind {
                Int => {
                    let v: Vec<i64> = cells
                        .filter_map(|c| match c {
                            Cell::Int(x) => Some(*x),
                            Cell::Real(x) => Some(*x as i64),
                            Cell::Text(t) => Some(t.parse().unwrap_or(0)),
                            Cell::Null => None,
                        })
                        .collect();
                    col.typed::<Int64Type>()
                        .write_batch(&v, Some(&defs), None)
                        .map_err(perr)?;
                }
                Real => {
                    let v: Vec<f64> = cells
                        .filter_map(|c| match c {
                            Cell::Int(x) => Some(*x as f64),
                            Cell::Real(x) => Some(*x),
                            Cell::Text(t) => Some(t.parse().unwrap_or(0.0)),
                            Cell::Null => None,
                        })
                        .collect();
                    col.typed::<DoubleType>()
                        .write_batch(&v, Some(&defs), None)
                        .map_err(perr)?;
                }
                Text => {
                    let v: Vec<ByteArray> = cells
                        .filter_map(|c| match c {
                            Cell::Int(x) => Some(ByteArray::from(x.to_string().into_bytes())),
                            Cell::Real(x) => Some(ByteArray::from(x.to_string().into_bytes())),
                            Cell::Text(t) => Some(ByteArray::from(t.as_bytes().to_vec())),
                            Cell::Null => None,
                        })
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&v, Some(&defs), None)
                        .map_err(perr)?;
                }
            }
            col.close().map_err(perr)?;
            i += 1;
        }
        rg.close().map_err(perr)?;
        self.written += self.rows.len() as u64;
        self.rows.clear();
        Ok(())
    }

    pub fn close(mut self) -> Result<u64> {
        self.flush()?;
        self.w.close().map_err(perr)?;
        Ok(self.written)
    }
}

/// What an export wrote: rows per table, and the files.
#[derive(Default)]
pub struct Written {
    pub rows: std::collections::BTreeMap<&'static str, u64>,
    pub files: u64,
    pub ranks: std::collections::BTreeSet<i64>,
}

/// Exports every database under `path` into the dataset at `out`.
pub fn export(path: &Path, out: &Path, progress: &mut dyn FnMut(&Path)) -> Result<Written> {
    let mut written = Written::default();
    for (part, (db, dir)) in databases(path)?.into_iter().enumerate() {
        progress(dir.as_deref().unwrap_or(&db));
        export_one(&db, dir.as_deref(), out, part, &mut written)?;
    }
    Ok(written)
}

fn export_one(
    db: &Path,
    dir: Option<&Path>,
    out: &Path,
    part: usize,
    written: &mut Written,
) -> Result<()> {
    let e = sql_err(db);
    let c = aclprof::sim::open_read_only(db).map_err(&e)?;
    if !has_table(&c, "TASK") {
        return err(
            ACL_ERROR_INVALID_FILE,
            format!("{}: not a CANN database (no TASK table)", db.display()),
        );
    }
    complete_schema(&c, db)?;
    let pairs = rank_devices(&c, db)?;
    for (i, &(rank, dev)) in pairs.iter().enumerate() {
        written.ranks.insert(rank);
        let file = |table: &str| {
            out.join(table)
                .join(format!("rank={rank}"))
                .join(format!("part-{part:05}-{dev}.parquet"))
        };
        for t in TABLES {
            if t.host && i > 0 {
                continue;
            }
            let mut w = Writer::create(&file(t.name), t.name, t.columns)?;
            {
                let mut s = c.prepare(t.sql).map_err(&e)?;
                let mut rows = s.query([dev]).map_err(&e)?;
                while let Some(r) = rows.next().map_err(&e)? {
                    let mut row = Vec::with_capacity(t.columns.len());
                    for k in 0..t.columns.len() {
                        row.push(match r.get_ref(k).map_err(&e)? {
                            ValueRef::Null => Cell::Null,
                            ValueRef::Integer(x) => Cell::Int(x),
                            ValueRef::Real(x) => Cell::Real(x),
                            ValueRef::Text(b) | ValueRef::Blob(b) => {
                                Cell::Text(String::from_utf8_lossy(b).into_owned())
                            }
                        });
                    }
                    w.push(row)?;
                }
            }
            *written.rows.entry(t.name).or_default() += w.close()?;
            written.files += 1;
        }
        let mut w = Writer::create(&file("steps"), "steps", STEPS)?;
        if let Some(dir) = dir {
            for row in steps(dir, dev)? {
                w.push(row)?;
            }
        }
        *written.rows.entry("steps").or_default() += w.close()?;
        written.files += 1;
    }
    Ok(())
}

/// Gives the database every table and column the queries read, in its TEMP schema.
fn complete_schema(c: &rusqlite::Connection, db: &Path) -> Result<()> {
    let e = sql_err(db);
    // CANN creates some tables only when they have rows: the missing ones, empty (and the
    // enumerations with their values), in this connection's TEMP schema, so that every
    // query runs on every database.
    use aclprof::formats::db_schema::{DATA_TABLES, ENUMS, TABLES as DB_TABLES};
    // Tables of older schemas that lack some of the columns read: a TEMP view of the same
    // name (found first) gives them as NULL.
    for (name, cols) in DB_TABLES.iter().chain(DATA_TABLES) {
        if !has_table(c, name) {
            c.execute_batch(&format!("CREATE TEMP TABLE {name} ({cols})"))
                .map_err(&e)?;
            continue;
        }
        let mut have = std::collections::HashSet::new();
        {
            let mut s = c
                .prepare(&format!("PRAGMA main.table_info({name})"))
                .map_err(&e)?;
            let names = s.query_map([], |r| r.get::<_, String>(1)).map_err(&e)?;
            for n in names {
                have.insert(n.map_err(&e)?);
            }
        }
        let wanted: Vec<&str> = cols
            .split(',')
            .filter_map(|c| c.split_whitespace().next())
            .collect();
        if wanted.iter().all(|w| have.contains(*w)) {
            continue;
        }
        let select: Vec<String> = wanted
            .iter()
            .map(|w| {
                if have.contains(*w) {
                    w.to_string()
                } else {
                    format!("NULL AS {w}")
                }
            })
            .collect();
        c.execute_batch(&format!(
            "CREATE TEMP VIEW {name} AS SELECT {} FROM main.{name}",
            select.join(", ")
        ))
        .map_err(&e)?;
    }
    for (name, values) in ENUMS {
        if !has_table(c, name) {
            c.execute_batch(&format!(
                "CREATE TEMP TABLE {name} (id INTEGER PRIMARY KEY, name TEXT)"
            ))
            .map_err(&e)?;
            for (id, v) in values.iter() {
                c.execute(&format!("INSERT INTO temp.{name} VALUES (?1, ?2)"), (id, v))
                    .map_err(&e)?;
            }
        }
    }
    Ok(())
}

/// (rank, device) pairs: RANK_DEVICE_MAP, else each device of TASK as its own rank.
fn rank_devices(c: &rusqlite::Connection, db: &Path) -> Result<Vec<(i64, i64)>> {
    let e = sql_err(db);
    let mut pairs: Vec<(i64, i64)> = Vec::new();
    if has_table(c, "RANK_DEVICE_MAP") {
        let mut s = c
            .prepare("SELECT rankId, deviceId FROM RANK_DEVICE_MAP ORDER BY deviceId")
            .map_err(&e)?;
        let rows = s
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map_err(&e)?;
        for r in rows {
            let (rank, dev) = r.map_err(&e)?;
            pairs.push((if rank < 0 { dev } else { rank }, dev));
        }
    }
    if pairs.is_empty() {
        let mut s = c
            .prepare("SELECT DISTINCT deviceId FROM TASK ORDER BY deviceId")
            .map_err(&e)?;
        let rows = s.query_map([], |r| r.get::<_, i64>(0)).map_err(&e)?;
        for d in rows {
            let d = d.map_err(&e)?;
            pairs.push((d, d));
        }
    }
    Ok(pairs)
}

/// Microseconds written with up to three decimals, as whole nanoseconds (exactly).
fn us_to_ns(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (neg, s) = s.strip_prefix('-').map_or((false, s), |r| (true, r));
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<f64>().ok().map(|v| {
            let ns = (v * 1000.0).round() as i64;
            if neg {
                -ns
            } else {
                ns
            }
        });
    }
    let ns = whole.parse::<i64>().ok()? * 1000 + format!("{frac:0<3}").parse::<i64>().ok()?;
    Some(if neg { -ns } else { ns })
}

/// Device `dev`'s rows of the result directory's step_trace_time.csv, as [`STEPS`] rows.
fn steps(dir: &Path, dev: i64) -> Result<Vec<Vec<Cell>>> {
    let file = dir
        .join(aclprof::formats::layout::OUTPUT_DIR)
        .join("step_trace_time.csv");
    let Ok(mut r) = csv::Reader::from_path(&file) else {
        return Ok(Vec::new());
    };
    let headers = r
        .headers()
        .map_err(|e| Error::new(ACL_ERROR_INVALID_FILE, format!("{}: {e}", file.display())))?
        .clone();
    let columns = step_columns();
    let at: Vec<Option<usize>> = columns
        .iter()
        .map(|c| headers.iter().position(|h| h == *c))
        .collect();
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec
            .map_err(|e| Error::new(ACL_ERROR_INVALID_FILE, format!("{}: {e}", file.display())))?;
        let get = |i: usize| at[i].and_then(|p| rec.get(p)).unwrap_or("");
        let device = get(0).trim().parse::<i64>().unwrap_or(dev);
        if device != dev {
            continue;
        }
        let mut row = vec![
            Cell::Int(device),
            get(1).trim().parse::<i64>().map_or(Cell::Null, Cell::Int),
        ];
        row.extend((2..columns.len()).map(|i| us_to_ns(get(i)).map_or(Cell::Null, Cell::Int)));
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_become_exact_nanoseconds() {
        assert_eq!(us_to_ns("823974.292"), Some(823_974_292));
        assert_eq!(us_to_ns("0.5"), Some(500));
        assert_eq!(us_to_ns("12"), Some(12_000));
        assert_eq!(us_to_ns("-1.001"), Some(-1_001));
        assert_eq!(us_to_ns(""), None);
    }
}
