//! Model descriptions: what the simulator replays, parsed from the formats below, and the
//! table of the loaded ones (which the file-mode export also reads, to fill in what a
//! replayed op's record has no field for). Imports only leaves.
//!
//! Formats, told apart by content (never by file name):
//! * aclprof's JSON: `{"name": str, "device": int, "wait_us"?: number,
//!   "ops": [{"name": str, "type": str, "duration_us": number, "wait_us"?: number,
//!   "input_shapes"?: str, "input_types"?: str, "input_formats"?: str, "output_shapes"?: str,
//!   "output_types"?: str, "output_formats"?: str, "flops"?: int, "bytes"?: int,
//!   "output_bytes"?: int, "workspace_bytes"?: int, "peer"?: int, "transport"?: str,
//!   "transit_us"?: number}, ...],
//!   "inputs"?: [bytes, ...], "outputs"?: [bytes, ...]}`
//! * tables real runs write, replayed row by row: msprof's `op_summary_*.csv` (CANN 6.x-8.x
//!   column sets), torch_npu's `kernel_details.csv` (Level0/1/2), MindSpore's and
//!   MindStudio's variants of them (see [`Columns`]);
//! * a Chrome-trace timeline (torch_npu's `trace_view.json`, msprof's `msprof_*.json`):
//!   the task slices of its "Ascend Hardware" process;
//! * CANN's SQLite database (`msprof_*.db`, torch_npu's `ascend_pytorch_profiler_*.db`): its
//!   compute and communication tasks (see [`parse_db`]).
//!
//! A table or timeline keeps what it says: start times (so the gaps between tasks and the
//! overlap of streams), task type, block dims, stream and task ids, device. Without start
//! times, one execution starts at the current time and each op starts its wait time
//! (default 1 µs) after the previous one ended. Execution is synchronous, like
//! `aclmdlExecute`: the call returns when the simulated model has finished.

use crate::error::{err, Error, Result, ACL_ERROR_INVALID_FILE};
use std::collections::HashMap;
use std::path::Path;

pub const DEFAULT_WAIT_NS: u64 = 1_000;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimOp {
    pub name: String,
    pub op_type: String,
    pub duration_ns: u64,
    pub wait_ns: u64,
    /// When the input gave start times: this op's start after the first op's.
    pub offset_ns: Option<u64>,
    /// What a replayed table said about the task; `None` where aclprof fills it in.
    pub task: Option<TaskInfo>,
    /// A replayed table's PMU values, one per [`SimModel::pmu_columns`] (text as written).
    pub pmu: Vec<String>,
    /// What a replayed table, database or description said of the op's tensors and cost;
    /// None if nothing.
    pub meta: Option<Box<OpMeta>>,
    /// `meta`'s id in the process's table (see [`crate::opmeta`]) once the model is loaded;
    /// 0 before, or without metadata.
    pub meta_id: u32,
    /// Its id among the registered ops (`opreg`), set when the model is loaded: executions
    /// report its prepared record. 0 until then, or when the table was full.
    pub reg_id: u32,
    /// Bytes of the op's outputs, when the description gives them (otherwise worked out
    /// from `meta`'s output shapes and types).
    pub output_bytes: Option<u64>,
    /// Bytes of the op's workspace, held while it runs.
    pub workspace_bytes: u64,
}

impl SimOp {
    /// The device memory the op needs: (outputs, workspace), bytes.
    pub fn memory(&self) -> (u64, u64) {
        let outputs = self.output_bytes.unwrap_or_else(|| {
            self.meta.as_ref().map_or(0, |m| {
                crate::formats::memory::tensor_bytes(&m.output_shapes, &m.output_types)
                    .iter()
                    .sum()
            })
        });
        (outputs, self.workspace_bytes)
    }
}

pub use crate::opmeta::OpMeta;

/// A replayed task's own details (each `None` where the input does not say).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskInfo {
    pub task_type: Option<String>,
    pub block_dim: Option<u32>,
    pub mix_block_dim: Option<u32>,
    pub stream_id: Option<u32>,
    pub task_id: Option<u32>,
}

/// The formats a model description can have, for error messages.
pub const FORMATS: &str = "aclprof's JSON model description, msprof's op_summary CSV, \
    torch_npu's kernel_details CSV, MindSpore's op CSV, a Chrome-trace timeline with an \
    \"Ascend Hardware\" process (trace_view.json, msprof_*.json), or CANN's database \
    (msprof_*.db, ascend_pytorch_profiler_*.db)";

#[derive(Clone, Debug, PartialEq)]
pub struct SimModel {
    pub name: String,
    pub device: u32,
    pub ops: Vec<SimOp>,
    /// Byte sizes of the model's inputs and outputs (what aclmdlGetInputSizeByIndex and
    /// aclmdlGetOutputSizeByIndex report); none unless the description lists them.
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    /// The PMU columns of a replayed table (`aic_mac_ratio`, `aiv_time(us)`, ...): those after
    /// its last descriptive column ("Context ID" or "Output Formats").
    pub pmu_columns: Vec<String>,
    /// The operator memory a replayed table's run recorded (`operator_memory*.csv` beside
    /// it), replayed with each execution instead of the memory worked out from shapes.
    pub memory: Vec<memory::Replayed>,
}

fn bad<T>(path: &Path, why: impl std::fmt::Display) -> Result<T> {
    // A database is a run to replay, not a description someone wrote.
    let what = if crate::formats::layout::is_database(path) {
        ""
    } else {
        "model description "
    };
    err(
        ACL_ERROR_INVALID_FILE,
        format!("{what}{}: {why}", path.display()),
    )
}

/// The longest duration, wait or spread of start times a model may have: 10^12 µs (11.6
/// days), so that every start and end the simulator adds up stays far inside a u64.
const MAX_SPAN_NS: u64 = 1_000_000_000_000_000;

fn us_to_ns(us: f64) -> Option<u64> {
    (0.0..1e12)
        .contains(&us)
        .then(|| (us * 1000.0).round() as u64)
}

/// A duration or wait written in µs, within [`MAX_SPAN_NS`].
fn span_str_to_ns(s: &str) -> Option<u64> {
    us_str_to_ns(s).filter(|&ns| ns < MAX_SPAN_NS)
}

/// The keys a model description has, and those of each of its ops.
const MODEL_KEYS: [&str; 6] = ["name", "device", "wait_us", "ops", "inputs", "outputs"];
const OP_KEYS: [&str; 17] = [
    "name",
    "type",
    "duration_us",
    "wait_us",
    "input_shapes",
    "input_types",
    "input_formats",
    "output_shapes",
    "output_types",
    "output_formats",
    "flops",
    "bytes",
    "output_bytes",
    "workspace_bytes",
    "peer",
    "transport",
    "transit_us",
];

/// The first key of the description (or of one of its ops) that the grammar does not have,
/// said with where it is and the nearest key it does have: a misspelt key must not be
/// silently ignored.
fn unknown_key(v: &serde_json::Value) -> Option<String> {
    let check = |obj: &serde_json::Map<String, serde_json::Value>, known: &[&str], at: &str| {
        obj.keys().find(|k| !known.contains(&k.as_str())).map(|k| {
            let near = known
                .iter()
                .map(|n| (edit_distance(k, n), *n))
                .min()
                .filter(|(d, _)| *d <= 3)
                .map_or_else(String::new, |(_, n)| format!(" (did you mean \"{n}\"?)"));
            format!(
                "{at}unknown key \"{k}\"{near}; the keys are {}",
                known.join(", ")
            )
        })
    };
    let obj = v.as_object()?;
    if let Some(e) = check(obj, &MODEL_KEYS, "") {
        return Some(e);
    }
    let ops = obj.get("ops")?.as_array()?;
    ops.iter().enumerate().find_map(|(i, op)| {
        op.as_object()
            .and_then(|o| check(o, &OP_KEYS, &format!("ops[{i}]: ")))
    })
}

/// Levenshtein distance between two short keys.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A model description as written (docs/design.md, "The emulated device"): read by serde,
/// then checked by [`ModelDesc::into_model`].
#[derive(serde::Deserialize)]
struct ModelDesc {
    name: String,
    #[serde(default)]
    device: u32,
    wait_us: Option<f64>,
    ops: Vec<OpDesc>,
    #[serde(default)]
    inputs: Vec<u64>,
    #[serde(default)]
    outputs: Vec<u64>,
}

/// One op of a [`ModelDesc`]. The tensors are CANN's text ("1,3,224,224;64", "FLOAT16",
/// "NCHW"). A communication op's link: the rank it sends `bytes` to, over which transport,
/// and how much of its duration the transfer takes (the rest it waits for its peers).
#[derive(serde::Deserialize)]
struct OpDesc {
    name: String,
    #[serde(rename = "type")]
    op_type: String,
    duration_us: f64,
    wait_us: Option<f64>,
    #[serde(default)]
    input_shapes: String,
    #[serde(default)]
    input_types: String,
    #[serde(default)]
    input_formats: String,
    #[serde(default)]
    output_shapes: String,
    #[serde(default)]
    output_types: String,
    #[serde(default)]
    output_formats: String,
    flops: Option<u64>,
    bytes: Option<u64>,
    output_bytes: Option<u64>,
    workspace_bytes: Option<u64>,
    peer: Option<u32>,
    transport: Option<String>,
    transit_us: Option<f64>,
}

/// What a key's value must be, for the error that names it.
fn expected(key: &str) -> String {
    match key {
        "name" | "type" | "input_shapes" | "input_types" | "input_formats" | "output_shapes"
        | "output_types" | "output_formats" => "a string".into(),
        "device" | "flops" | "bytes" | "output_bytes" | "workspace_bytes" => {
            "a non-negative integer".into()
        }
        "wait_us" | "duration_us" => "a non-negative number".into(),
        "peer" => "a rank (0 to 2^32 - 1)".into(),
        "transport" => format!(
            "one of {}",
            crate::formats::db_schema::TRANSPORTS.join(", ")
        ),
        "transit_us" => "a number from 0 to duration_us".into(),
        "ops" => "an array of ops".into(),
        "inputs" | "outputs" => "an array of byte sizes".into(),
        _ => "an object".into(),
    }
}

/// serde's error said as the key-by-key checks say it: which key, where, and what it must be.
fn desc_error(e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let inner = e.inner().to_string();
    // "missing field `duration_us`" at the object that lacks it.
    if let Some(key) = inner
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next())
    {
        let what = expected(key);
        return if path == "." {
            format!("missing \"{key}\" ({what})")
        } else {
            format!("{path} needs \"{key}\" ({what})")
        };
    }
    // The key is the path's last name ("ops[3].flops", "inputs[2]", "device").
    let last = path.rsplit('.').next().unwrap_or_default();
    let key = last.split('[').next().unwrap_or_default();
    if key == "ops" && last != key {
        return format!("{path} must be an op (a JSON object)");
    }
    let shown = if path.contains('.') || key == last {
        path.clone()
    } else {
        key.to_string()
    };
    format!("{shown} must be {}", expected(key))
}

pub fn parse_json(path: &Path, text: &str) -> Result<SimModel> {
    let v: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return bad(path, format!("not valid JSON: {e}")),
    };
    if !v.is_object() {
        // (serde would read a struct from an array too.)
        return bad(path, "the description must be a JSON object");
    }
    if let Some(e) = unknown_key(&v) {
        return bad(path, e);
    }
    match serde_path_to_error::deserialize::<_, ModelDesc>(v) {
        Ok(d) => d.into_model().or_else(|e| bad(path, e)),
        Err(e) => bad(path, desc_error(e)),
    }
}

impl ModelDesc {
    /// Checks what serde cannot (ranges, a link's parts together) and makes the model.
    fn into_model(self) -> std::result::Result<SimModel, String> {
        let model_wait = match self.wait_us {
            None => DEFAULT_WAIT_NS,
            Some(w) => {
                us_to_ns(w).ok_or_else(|| format!("wait_us must be {}", expected("wait_us")))?
            }
        };
        let ops = self
            .ops
            .into_iter()
            .enumerate()
            .map(|(i, op)| op.into_op(model_wait).map_err(|e| format!("ops[{i}].{e}")))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(SimModel {
            name: self.name,
            device: self.device,
            ops,
            inputs: self.inputs,
            outputs: self.outputs,
            pmu_columns: Vec::new(),
            memory: Vec::new(),
        })
    }
}

impl OpDesc {
    /// The op, or what is wrong with it (as "key must be ...", or ": why" for the op).
    fn into_op(self, model_wait: u64) -> std::result::Result<SimOp, String> {
        let must = |key: &str| format!("{key} must be {}", expected(key));
        let d = us_to_ns(self.duration_us).ok_or_else(|| must("duration_us"))?;
        let w = match self.wait_us {
            None => model_wait,
            Some(w) => us_to_ns(w).ok_or_else(|| must("wait_us"))?,
        };
        let transit_ns = match self.transit_us {
            None => None,
            Some(t) => Some(
                us_to_ns(t)
                    .filter(|&t| t <= d)
                    .ok_or_else(|| must("transit_us"))?,
            ),
        };
        let transport = match self.transport {
            None => String::new(),
            Some(t) if crate::formats::db_schema::transport_id(&t).is_some() => t,
            Some(_) => return Err(must("transport")),
        };
        if self.peer.is_some() != transit_ns.is_some()
            || (self.peer.is_some() && self.bytes.is_none())
        {
            return Err(": a link needs peer, transit_us and bytes together".into());
        }
        let mut meta = OpMeta {
            // Shapes as CANN writes them, in double quotes.
            input_shapes: crate::opmeta::cann_shapes(&self.input_shapes).into_owned(),
            input_types: self.input_types,
            input_formats: self.input_formats,
            output_shapes: crate::opmeta::cann_shapes(&self.output_shapes).into_owned(),
            output_types: self.output_types,
            output_formats: self.output_formats,
            flops: self.flops,
            bytes: self.bytes,
            peer: self.peer,
            transport,
            transit_ns,
        };
        if meta.peer.is_some() && meta.transport.is_empty() {
            meta.transport = "SDMA".into();
        }
        Ok(SimOp {
            name: self.name,
            op_type: self.op_type,
            duration_ns: d,
            wait_ns: w,
            meta: meta.known().map(Box::new),
            output_bytes: self.output_bytes,
            workspace_bytes: self.workspace_bytes.unwrap_or(0),
            ..Default::default()
        })
    }
}

/// Microseconds as written in a table ("1736405443881410.320\t", "12.5", "5e-05") to
/// nanoseconds. Decimal strings are converted exactly (an epoch in µs has 19 significant
/// digits with its decimals, more than an f64 holds); "N/A" and blanks are `None`.
pub fn us_str_to_ns(s: &str) -> Option<u64> {
    let s = s.trim().trim_matches('"').trim();
    if s.is_empty() || s.starts_with('-') {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.is_empty() && frac.is_empty() || frac.contains('.') {
            return None;
        }
        let int: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut f = 0u64;
        for (i, d) in frac
            .bytes()
            .chain(std::iter::repeat(b'0'))
            .take(4)
            .enumerate()
        {
            if i < 3 {
                f = f * 10 + (d - b'0') as u64;
            } else if d >= b'5' {
                f += 1; // round the fourth decimal (tenths of ns)
            }
        }
        return int.checked_mul(1000)?.checked_add(f);
    }
    s.parse::<f64>().ok().and_then(us_to_ns)
}

/// Which column of a table holds what: each field has the names CANN's, torch_npu's and
/// MindSpore's tables give it.
struct Columns {
    name: usize,
    op_type: Option<usize>,
    duration: usize,
    /// MindSpore's legacy tables give milliseconds.
    duration_in_ms: bool,
    start: Option<usize>,
    wait: Option<usize>,
    task_type: Option<usize>,
    block_dim: Option<usize>,
    mix_block_dim: Option<usize>,
    stream: Option<usize>,
    task_id: Option<usize>,
    device: Option<usize>,
    model: Option<usize>,
    /// Input Shapes, Input Data Types, Input Formats, Output Shapes, Output Data Types,
    /// Output Formats.
    meta: [Option<usize>; 6],
    /// Where the PMU columns start.
    pmu_from: usize,
}

impl Columns {
    fn find(headers: &csv::StringRecord) -> Option<Columns> {
        let col = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| headers.iter().position(|h| h.trim() == *n))
        };
        let in_us = col(&[
            "Task Duration(us)",
            "Duration(us)",
            "Task Duration",
            "Duration",
        ]);
        Some(Columns {
            name: col(&[
                "Op Name",
                "Name",
                "full_kernel_name",
                "full_op_name",
                "op_name",
            ])?,
            op_type: col(&["OP Type", "Type", "op_type", "kernel_type"]),
            duration: in_us.or(col(&["execution_time"]))?,
            duration_in_ms: in_us.is_none(),
            start: col(&["Task Start Time(us)", "Start Time(us)", "Task Start Time"]),
            wait: col(&["Task Wait Time(us)", "Wait Time(us)"]),
            task_type: col(&["Task Type", "Accelerator Core"]),
            block_dim: col(&["Block Dim", "Block Num"]),
            mix_block_dim: col(&["Mix Block Dim", "Mix Block Num"]),
            stream: col(&["Stream ID", "Stream Id"]),
            task_id: col(&["Task ID", "Task Id"]),
            device: col(&["Device_id", "Device ID"]),
            model: col(&["Model Name"]),
            meta: [
                col(&["Input Shapes"]),
                col(&["Input Data Types"]),
                col(&["Input Formats"]),
                col(&["Output Shapes"]),
                col(&["Output Data Types"]),
                col(&["Output Formats"]),
            ],
            pmu_from: col(&["Context ID"])
                .or(col(&["Output Formats"]))
                .map_or(headers.len(), |c| c + 1),
        })
    }
}

/// MindSpore's legacy kernel names ("Default/network/Conv2D-op12") carry the type.
fn type_from_kernel_name(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    last.split("-op").next().unwrap_or(last).to_string()
}

/// A table row's duration and wait (ns), or what is wrong with them (`line` is the row's
/// line in the file).
fn row_times(
    c: &Columns,
    row: &csv::StringRecord,
    line: usize,
) -> std::result::Result<(u64, u64), String> {
    let get = |c: usize| row.get(c).unwrap_or("");
    let dur = if c.duration_in_ms {
        get(c.duration)
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(|ms| us_to_ns(ms * 1000.0))
    } else {
        span_str_to_ns(get(c.duration))
    };
    let Some(d) = dur else {
        return Err(format!(
            "row {line}: the duration {:?} is not a number",
            get(c.duration)
        ));
    };
    // A blank or "N/A" wait is filled in; a number out of range is an error.
    let w = match c.wait.and_then(|c| us_str_to_ns(get(c))) {
        None => DEFAULT_WAIT_NS,
        Some(w) if w < MAX_SPAN_NS => w,
        Some(_) => {
            return Err(format!(
                "row {line}: the wait time {:?} is out of range",
                get(c.wait.unwrap_or(0))
            ))
        }
    };
    Ok((d, w))
}

/// A table row's op, its duration `d` and wait `w` known.
fn csv_op(
    c: &Columns,
    row: &csv::StringRecord,
    columns: usize,
    has_task_columns: bool,
    d: u64,
    w: u64,
) -> SimOp {
    let get = |c: usize| row.get(c).unwrap_or("");
    let int = |s: &str| s.trim().parse::<u32>().ok();
    let name = get(c.name).to_string();
    let op_type = match c.op_type {
        Some(t) => get(t).to_string(),
        None => type_from_kernel_name(&name),
    };
    let task = has_task_columns.then(|| TaskInfo {
        task_type: c
            .task_type
            .map(|c| get(c).trim().to_string())
            .filter(|t| !t.is_empty()),
        block_dim: c.block_dim.and_then(|c| int(get(c))),
        mix_block_dim: c.mix_block_dim.and_then(|c| int(get(c))),
        stream_id: c.stream.and_then(|c| int(get(c))),
        task_id: c.task_id.and_then(|c| int(get(c))),
    });
    SimOp {
        name,
        op_type,
        duration_ns: d,
        wait_ns: w,
        offset_ns: None,
        task,
        pmu: (c.pmu_from..columns)
            .map(|i| get(i).trim().to_string())
            .collect(),
        meta: {
            let m = |k: usize| c.meta[k].map_or(String::new(), |i| get(i).trim().to_string());
            OpMeta {
                input_shapes: m(0),
                input_types: m(1),
                input_formats: m(2),
                output_shapes: m(3),
                output_types: m(4),
                output_formats: m(5),
                ..OpMeta::default()
            }
            .known()
            .map(Box::new)
        },
        meta_id: 0,
        reg_id: 0,
        ..Default::default()
    }
}

pub fn parse_csv(path: &Path, text: &str) -> Result<SimModel> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers = match rd.headers() {
        Ok(h) => h.clone(),
        Err(e) => return bad(path, format!("not a CSV table: {e}")),
    };
    let Some(c) = Columns::find(&headers) else {
        return bad(
            path,
            format!(
                "not a supported model description: a table needs an op name column \
                 (\"Op Name\", \"Name\") and a duration column (\"Task Duration(us)\", \
                 \"Duration(us)\"). Supported: {FORMATS}"
            ),
        );
    };
    let int = |s: &str| s.trim().parse::<u32>().ok();
    let has_task_columns = c.task_type.is_some() || c.stream.is_some() || c.block_dim.is_some();
    let mut ops = Vec::new();
    let mut starts = Vec::new();
    let mut device = None;
    let mut model_name = None;
    for (i, row) in rd.records().enumerate() {
        let row = match row {
            Ok(r) => r,
            Err(e) => return bad(path, format!("row {}: {e}", i + 2)),
        };
        let get = |c: usize| row.get(c).unwrap_or("");
        let (d, w) = row_times(&c, &row, i + 2).or_else(|e| bad(path, e))?;
        if device.is_none() {
            device = c.device.and_then(|c| int(get(c)));
        }
        if model_name.is_none() {
            model_name = c
                .model
                .map(|c| get(c).to_string())
                .filter(|s| !s.is_empty());
        }
        starts.push(c.start.and_then(|c| us_str_to_ns(get(c))));
        ops.push(csv_op(&c, &row, headers.len(), has_task_columns, d, w));
    }
    // The run's memory beside the table, at its offsets from the first op.
    let t0 = starts.iter().flatten().min().copied();
    let memory = match t0 {
        Some(t0) => memory::beside(path, t0)?,
        None => Vec::new(),
    };
    with_offsets(path, &mut ops, &starts)?;
    let name = model_name.unwrap_or_else(|| stem(path));
    Ok(SimModel {
        name,
        device: device.unwrap_or(0),
        ops,
        inputs: Vec::new(),
        outputs: Vec::new(),
        pmu_columns: headers
            .iter()
            .skip(c.pmu_from)
            .map(|h| h.trim().to_string())
            .collect(),
        memory,
    })
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or("model".into(), |s| s.to_string_lossy().into_owned())
}

/// When every op has a start time, keeps them (relative to the first) and orders the ops
/// by start, as a device ran them.
/// Fails when the start times spread over more than [`MAX_SPAN_NS`].
fn with_offsets(path: &Path, ops: &mut [SimOp], starts: &[Option<u64>]) -> Result<()> {
    let Some(all) = starts.iter().copied().collect::<Option<Vec<u64>>>() else {
        return Ok(());
    };
    let (Some(&t0), Some(&t1)) = (all.iter().min(), all.iter().max()) else {
        return Ok(());
    };
    if t1 - t0 >= MAX_SPAN_NS {
        return bad(
            path,
            format!(
                "the start times spread over {} µs, more than 10^12 µs",
                (t1 - t0) / 1000
            ),
        );
    }
    for (op, s) in ops.iter_mut().zip(all) {
        op.offset_ns = Some(s - t0);
    }
    ops.sort_by_key(|o| o.offset_ns);
    Ok(())
}

mod db;
pub use db::*;
pub mod memory;

/// The task slices of a Chrome-trace timeline's "Ascend Hardware" process.
pub fn parse_trace(path: &Path, events: &[serde_json::Value]) -> Result<SimModel> {
    let hw: std::collections::HashSet<String> = events
        .iter()
        .filter(|e| {
            e["ph"] == "M"
                && e["name"] == "process_name"
                && e["args"]["name"] == crate::formats::timeline::HARDWARE_PROCESS
        })
        .map(|e| e["pid"].to_string())
        .collect();
    if hw.is_empty() {
        return bad(
            path,
            format!("a timeline without an \"Ascend Hardware\" process has no tasks to replay. Supported: {FORMATS}"),
        );
    }
    let num = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => us_str_to_ns(s),
        serde_json::Value::Number(n) => us_str_to_ns(&n.to_string()),
        _ => None,
    };
    let span = |v: &serde_json::Value| num(v).filter(|&ns| ns < MAX_SPAN_NS);
    let int = |v: &serde_json::Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    let mut ops = Vec::new();
    let mut starts = Vec::new();
    for e in events {
        let a = &e["args"];
        if e["ph"] != "X" || !hw.contains(&e["pid"].to_string()) || a.get("Task Type").is_none() {
            continue;
        }
        let (Some(name), Some(ts), Some(dur)) =
            (e["name"].as_str(), num(&e["ts"]), span(&e["dur"]))
        else {
            continue;
        };
        let stream = a.get("Physic Stream Id").or(a.get("Stream Id"));
        starts.push(Some(ts));
        ops.push(SimOp {
            name: name.to_string(),
            op_type: a["Type"].as_str().unwrap_or(name).to_string(),
            duration_ns: dur,
            wait_ns: 0,
            offset_ns: None,
            task: Some(TaskInfo {
                task_type: a["Task Type"].as_str().map(str::to_string),
                block_dim: None,
                mix_block_dim: None,
                stream_id: stream.and_then(int),
                task_id: int(&a["Task Id"]),
            }),
            pmu: Vec::new(),
            meta: None,
            meta_id: 0,
            reg_id: 0,
            ..Default::default()
        });
    }
    with_offsets(path, &mut ops, &starts)?;
    Ok(SimModel {
        name: stem(path),
        device: 0,
        ops,
        inputs: Vec::new(),
        outputs: Vec::new(),
        pmu_columns: Vec::new(),
        memory: Vec::new(),
    })
}

/// Reads a description, choosing the format by content (JSON starts with `{` or `[`, after
/// an optional UTF-8 byte-order mark, which editors on Windows write).
pub fn parse_file(path: &Path) -> Result<SimModel> {
    let bytes = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) => return bad(path, format!("cannot read: {e}")),
    };
    if bytes.starts_with(crate::formats::layout::SQLITE_MAGIC) {
        return parse_db(path);
    }
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => parse_text(path, &text),
        _ => bad(
            path,
            format!("a binary file is not a supported model description; give one of: {FORMATS}"),
        ),
    }
}

/// A model description of any supported format, told apart by its content.
pub fn parse_text(path: &Path, text: &str) -> Result<SimModel> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let t = text.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return parse_csv(path, text);
    }
    let v: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return bad(path, format!("not valid JSON: {e}")),
    };
    if let Some(events) = v.as_array().or_else(|| v["traceEvents"].as_array()) {
        return parse_trace(path, events);
    }
    if v.get("ops").is_none() && v.get("name").is_none() {
        return bad(path, format!("a JSON file without \"ops\" is not a supported model description; give one of: {FORMATS}"));
    }
    parse_json(path, text)
}

#[cfg(test)]
mod tests;
