//! The analysis engine behind `aclprof analyze` (docs/design.md, "Analysis"): reads raw
//! op records — a result directory's per-stream files, a folder of result directories, a
//! file of records a subscription wrote, or standard input — and ranks ops or groups of
//! ops by time. One pass; memory holds one group per distinct key (or the top N ops), never
//! one entry per op.

use crate::error::{err, Error, Result, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM};
use crate::record::{self, View, RECORD_SIZE};
use std::collections::{BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What ops are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Type,
    Name,
    Device,
    Stream,
    Model,
    Rank,
    /// The op's name and input shapes: one group per shape an op ran with.
    NameShape,
}

impl Key {
    pub fn parse(s: &str) -> Option<Key> {
        Some(match s {
            "type" => Key::Type,
            "name" => Key::Name,
            "device" => Key::Device,
            "stream" => Key::Stream,
            "model" => Key::Model,
            "rank" => Key::Rank,
            "name+shape" => Key::NameShape,
            _ => return None,
        })
    }
    fn title(self) -> &'static str {
        match self {
            Key::Type => "Type",
            Key::Name => "Name",
            Key::Device => "Device",
            Key::Stream => "Stream",
            Key::Model => "Model",
            Key::Rank => "Rank",
            Key::NameShape => "Name",
        }
    }
}

/// How a group's op times become its Time column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Sum,
    Mean,
    Max,
    Min,
    Count,
}

impl Func {
    pub fn parse(s: &str) -> Option<Func> {
        Some(match s {
            "sum" => Func::Sum,
            "mean" => Func::Mean,
            "max" => Func::Max,
            "min" => Func::Min,
            "count" => Func::Count,
            _ => return None,
        })
    }
}

/// Which ops count and how they are shown.
#[derive(Clone, Debug)]
pub struct Query {
    /// Rows shown (0: all; without grouping at most [`MAX_LISTED`] ops).
    pub top: usize,
    pub by: Option<Key>,
    pub func: Func,
    /// A column title (case-insensitive): "time" (default), "count", "total", "mean", "min",
    /// "max", "share", "name", or the key's title.
    pub order_by: Option<String>,
    /// Ops shorter than this are left out.
    pub min_time_ns: u64,
    /// Ops longer than this are left out.
    pub max_time_ns: u64,
    /// Only these op types (any of them), if any are given.
    pub types: Vec<String>,
    pub name: Option<regex::bytes::Regex>,
    pub device: Option<u32>,
    pub rank: Option<u32>,
    /// Only ops that start inside this step, numbered as step_trace_time.csv numbers them.
    pub step: Option<u64>,
    /// Only ops one of whose inputs has this data type (case-insensitive, "float16").
    pub input_dtype: Option<String>,
    /// Threads reading inputs (result directories' devices, files) at once; 0: one per core.
    pub threads: usize,
}

impl Default for Query {
    fn default() -> Query {
        Query {
            top: 10,
            by: None,
            func: Func::Sum,
            order_by: None,
            min_time_ns: 0,
            max_time_ns: u64::MAX,
            types: Vec::new(),
            name: None,
            device: None,
            rank: None,
            step: None,
            input_dtype: None,
            threads: 0,
        }
    }
}

impl Query {
    /// A time option (`--min-time`, `--max-time`) given in µs, checked; `option` names it in
    /// the error.
    pub fn time_ns(option: &str, us: f64) -> std::result::Result<u64, String> {
        if us >= 0.0 && us.is_finite() {
            Ok((us * 1000.0).round() as u64)
        } else {
            Err(format!(
                "{option} {us} is not a non-negative number of microseconds"
            ))
        }
    }

    /// `--name`: a regular expression over op names.
    pub fn name_regex(re: &str) -> std::result::Result<regex::bytes::Regex, String> {
        regex::bytes::Regex::new(re).map_err(|e| format!("name {re:?}: {e}"))
    }

    /// A query and an output format from a JSON object with the command line's options as
    /// keys (`top`, `aggregate_by`, `aggregate`, `order_by`, `min_time` in µs, `type` (a
    /// string or a list), `name`, `device`, `rank`, `step`, `format`). What the C and Python
    /// interfaces take; an unknown key or a value of the wrong kind is an error naming it.
    pub fn from_json(v: &serde_json::Value) -> std::result::Result<(Query, Format), String> {
        let obj = match v {
            serde_json::Value::Null => return Ok((Query::default(), Format::Json)),
            serde_json::Value::Object(o) => o,
            _ => return Err("the query is not a JSON object".into()),
        };
        let mut q = Query::default();
        let mut format = Format::Json;
        let bad = |k: &str, what: &str| format!("{k}: expected {what}");
        let uint =
            |k: &str, x: &serde_json::Value| x.as_u64().ok_or_else(|| bad(k, "a whole number"));
        let text = |k: &str, x: &serde_json::Value| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(k, "a string"))
        };
        let id = |k: &str, x: &serde_json::Value| {
            uint(k, x).and_then(|n| u32::try_from(n).map_err(|_| bad(k, "a 32-bit id")))
        };
        for (k, x) in obj {
            if x.is_null() {
                continue;
            }
            match k.as_str() {
                "top" => q.top = uint(k, x)? as usize,
                "aggregate_by" => {
                    q.by = Some(Key::parse(&text(k, x)?).ok_or_else(|| {
                        bad(
                            k,
                            "one of type, name, device, stream, model, rank, name+shape",
                        )
                    })?)
                }
                "aggregate" => {
                    q.func = Func::parse(&text(k, x)?)
                        .ok_or_else(|| bad(k, "one of sum, mean, max, min, count"))?
                }
                "order_by" => q.order_by = Some(text(k, x)?),
                "min_time" => {
                    q.min_time_ns =
                        Query::time_ns(k, x.as_f64().ok_or_else(|| bad(k, "a number"))?)?
                }
                "max_time" => {
                    q.max_time_ns =
                        Query::time_ns(k, x.as_f64().ok_or_else(|| bad(k, "a number"))?)?
                }
                "type" => {
                    q.types = match x {
                        serde_json::Value::Array(a) => a
                            .iter()
                            .map(|t| text(k, t))
                            .collect::<std::result::Result<_, _>>()?,
                        _ => vec![text(k, x)?],
                    }
                }
                "name" => q.name = Some(Query::name_regex(&text(k, x)?)?),
                "device" => q.device = Some(id(k, x)?),
                "rank" => q.rank = Some(id(k, x)?),
                "step" => q.step = Some(uint(k, x)?),
                "input_dtype" => q.input_dtype = Some(text(k, x)?),
                "threads" => q.threads = uint(k, x)? as usize,
                "format" => {
                    format = Format::parse(&text(k, x)?)
                        .ok_or_else(|| bad(k, "one of table, csv, json, markdown"))?
                }
                _ => return Err(format!("unknown option {k:?}")),
            }
        }
        Ok((q, format))
    }
}

/// One row of the result: a group, or (without grouping) one op.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// The group's key, or the op's name.
    pub key: String,
    /// For single ops: type, device, stream, model and start (ns).
    pub op: Option<(String, u32, u32, u32, u64)>,
    pub count: u64,
    /// The Time column: the group's times through [`Func`] (ns; a count for Func::Count).
    pub time: f64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// This row's total over all ops' total (%), and the running sum down the rows.
    pub share: f64,
    pub cumulative: f64,
    /// Floating-point operations and bytes moved over the row's ops, when every op's is
    /// known.
    pub flops: Option<u64>,
    pub bytes: Option<u64>,
    /// Input and output shapes (single ops and name+shape groups), when known.
    pub in_shapes: Option<String>,
    pub out_shapes: Option<String>,
}

impl Row {
    pub fn mean_ns(&self) -> f64 {
        self.total_ns as f64 / self.count.max(1) as f64
    }
}

/// What an analysis found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    /// Ops that passed the filters, and their total time.
    pub ops: u64,
    pub total_ns: u64,
    /// Groups before `top` cut them (ops, without grouping).
    pub groups: usize,
    /// Records whose signature did not verify (skipped).
    pub corrupt: u64,
    pub by: Option<Key>,
    pub func: Option<Func>,
    /// Whether any op had metadata (shapes, FLOPs, bytes): the cost columns are shown.
    pub meta: bool,
}

/// One place records come from, with what it knows about them.
#[derive(Debug)]
enum Input {
    /// A device directory of a result directory: its stream files.
    Device {
        files: Vec<PathBuf>,
        rank: Option<u32>,
        steps: std::sync::Arc<Vec<(u64, u64, u64)>>,
        /// The session's `fp_point` op name, which cuts steps when the host marked none.
        fp: Option<std::sync::Arc<str>>,
        /// The session's `bp_point` op name (the end of a step's backward pass).
        bp: Option<std::sync::Arc<str>>,
        /// The op metadata its records' ids name (its `op_meta.tsv`).
        metas: std::sync::Arc<Metas>,
    },
    Raw(PathBuf),
    /// CANN's database (`msprof_*.db`, `ascend_pytorch_profiler_*.db`): its tasks, made
    /// records as they are read.
    Db(PathBuf),
    Stdin,
}

fn io_err<T>(p: &Path, e: std::io::Error) -> Result<T> {
    err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", p.display()))
}

/// True if `p` is a result directory (`PROF_*`).
pub fn is_prof_dir(p: &Path) -> bool {
    p.join(crate::filemode::SESSION_FILE).is_file()
        || p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("PROF_"))
            && p.is_dir()
}

/// The rank a device directory's info.json names (`rank_id`).
fn rank_of(device_dir: &Path) -> Option<u32> {
    let entries = std::fs::read_dir(device_dir).ok()?;
    for e in entries.flatten() {
        let n = e.file_name();
        if n.to_str().is_some_and(|n| n.starts_with("info.json")) {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok()?;
            return v["rank_id"].as_u64().and_then(|r| u32::try_from(r).ok());
        }
    }
    None
}

/// The ranks of result directory `dir`'s devices (those whose info.json gives one).
pub fn ranks_of(dir: &Path) -> Vec<u32> {
    entries_named(dir, "device_")
        .unwrap_or_default()
        .iter()
        .filter_map(|d| rank_of(d))
        .collect()
}

/// The entries of `dir` whose names start with `prefix`, sorted.
pub fn entries_named(dir: &Path, prefix: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    Ok(v)
}

fn prof_inputs(dir: &Path, out: &mut Vec<Input>) -> Result<()> {
    let steps = std::sync::Arc::new(crate::filemode::export::read_host_steps(dir));
    let session = std::fs::read(dir.join(crate::filemode::SESSION_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let point = |key: &str| -> Option<std::sync::Arc<str>> {
        session
            .as_ref()
            .and_then(|v| v[key].as_str().filter(|p| !p.is_empty()).map(Into::into))
    };
    let (fp, bp) = (point("fpPoint"), point("bpPoint"));
    for d in entries_named(dir, "device_").or_else(|e| io_err(dir, e))? {
        // A device that recorded nothing may have no data directory; any other failure to
        // list it is an error, not fewer ops.
        let data = d.join("data");
        let files = if data.exists() {
            crate::filemode::export::stream_files(&data)?
        } else {
            Vec::new()
        };
        let metas = std::sync::Arc::new(crate::opmeta::read(&data.join(crate::opmeta::FILE)));
        out.push(Input::Device {
            files,
            metas,
            rank: rank_of(&d),
            steps: steps.clone(),
            fp: fp.clone(),
            bp: bp.clone(),
        });
    }
    Ok(())
}

/// The result directories `path` names: itself if it is one, else every `PROF_*` directory
/// under it, at any depth (devices, ranks, repeated starts), sorted.
pub fn result_dirs(path: &Path) -> Result<Vec<PathBuf>> {
    if is_prof_dir(path) {
        return Ok(vec![path.to_path_buf()]);
    }
    if path.is_file() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: a file, not a PROF_* result directory or a folder of them",
                path.display()
            ),
        );
    }
    let mut stack = vec![path.to_path_buf()];
    let mut dirs = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).or_else(|e| io_err(&d, e))?.flatten() {
            let p = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if is_prof_dir(&p) {
                dirs.push(p);
            } else {
                stack.push(p);
            }
        }
    }
    dirs.sort();
    if dirs.is_empty() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: no PROF_* result directory in it (give a result directory, a folder \
                 of them, a file of records, or - for standard input)",
                path.display()
            ),
        );
    }
    Ok(dirs)
}

/// What `path` holds: "-" is standard input; a result directory; a folder of them; or a
/// file of records.
fn inputs(path: &Path) -> Result<Vec<Input>> {
    if path == Path::new("-") {
        return Ok(vec![Input::Stdin]);
    }
    let meta = std::fs::metadata(path).or_else(|e| io_err(path, e))?;
    let mut v = Vec::new();
    if meta.is_file() {
        v.push(if crate::sim::desc::is_database(path) {
            Input::Db(path.to_path_buf())
        } else {
            Input::Raw(path.to_path_buf())
        });
    } else {
        for d in result_dirs(path)? {
            prof_inputs(&d, &mut v)?;
        }
    }
    Ok(v)
}

/// Reads whole records from `r`, 2048 at a time; a torn tail is counted as corrupt.
fn each_record(
    r: &mut dyn Read,
    what: &Path,
    corrupt: &mut u64,
    f: &mut dyn FnMut(View<'_>),
) -> Result<()> {
    let mut buf = vec![0u8; RECORD_SIZE * 2048];
    let mut filled = 0;
    loop {
        let n = match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return io_err(what, e),
        };
        filled += n;
        let whole = filled / RECORD_SIZE * RECORD_SIZE;
        for rec in buf[..whole].chunks_exact(RECORD_SIZE) {
            if record::get_u32(rec, 0) == record::signature_of(rec) {
                f(View(rec.try_into().unwrap()));
            } else {
                *corrupt += 1;
            }
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
    }
    if filled > 0 {
        *corrupt += 1;
    }
    Ok(())
}

pub use crate::agg::Agg;

/// Ops listed at most without grouping, whatever `top` asks (memory stays bounded).
pub const MAX_LISTED: usize = 100_000;

/// A column rows are ordered by (`--order-by`), and whether ascending.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Time,
    Count,
    Total,
    Mean,
    Min,
    Max,
    Start,
    Key,
    /// MegEngine's columns: FLOPs, FLOPs per second, bytes, bytes per second.
    Computation,
    Flops,
    Memory,
    Bandwidth,
}

/// The order a query asks for: "+col" ascending (MegEngine's profile_analyze); numbers
/// otherwise descending; start and the key always ascending.
fn order_of(q: &Query) -> Result<(Col, bool)> {
    let asked = q.order_by.as_deref().unwrap_or("time");
    let (ascending, col) = match asked.strip_prefix('+') {
        Some(c) => (true, c.to_ascii_lowercase()),
        None => (false, asked.to_ascii_lowercase()),
    };
    let key_title = q.by.map_or("name", |k| k.title()).to_ascii_lowercase();
    let col = match col.as_str() {
        "time" | "duration" => Col::Time,
        "count" => Col::Count,
        "total" | "share" | "cumulative" => Col::Total,
        "mean" => Col::Mean,
        "min" => Col::Min,
        "max" => Col::Max,
        "start" => Col::Start,
        "computation" => Col::Computation,
        "flops" => Col::Flops,
        "memory" => Col::Memory,
        "bandwidth" => Col::Bandwidth,
        c if c == key_title || c == "name" || c == "key" => Col::Key,
        other => {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "--order-by {other:?}: not a column (time, count, total, share, mean, min, \
                     max, start, name, computation, flops, memory, bandwidth or the --aggregate-by key)"
                ),
            )
        }
    };
    Ok((col, ascending || matches!(col, Col::Start | Col::Key)))
}

/// Where a single op ranks for the top-N list under the query's order: the list keeps the
/// greatest ranks.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// Numbers listed largest first.
    Desc(u64),
    /// Numbers listed smallest first.
    Asc(std::cmp::Reverse<u64>),
    /// Names, in byte order.
    Name(std::cmp::Reverse<Vec<u8>>),
}

impl Rank {
    fn of(col: Col, ascending: bool, v: &View<'_>, cost: &Cost) -> Rank {
        let n = match col {
            Col::Start => Some(v.start()),
            Col::Key => {
                return Rank::Name(std::cmp::Reverse(v.name().unwrap_or_default().to_vec()))
            }
            Col::Computation | Col::Flops | Col::Memory | Col::Bandwidth => {
                cost.value(col, v.duration()).map(|x| x as u64)
            }
            // A single op's count is 1 and its total, mean, min and max its duration.
            _ => Some(v.duration()),
        };
        // An op whose cost is unknown comes last either way.
        let n = n.unwrap_or(if ascending { u64::MAX } else { 0 });
        if ascending {
            Rank::Asc(std::cmp::Reverse(n))
        } else {
            Rank::Desc(n)
        }
    }
}

/// The FLOPs and bytes of an op or a group, each None unless known for all its ops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Cost {
    flops: Option<u64>,
    bytes: Option<u64>,
}

impl Cost {
    fn of(m: Option<&crate::opmeta::OpMeta>) -> Cost {
        Cost {
            flops: m.and_then(|m| m.flops),
            bytes: m.and_then(|m| m.bytes),
        }
    }

    /// Adds an op's cost to a group's (`first`: the group's first op).
    fn add(&mut self, op: Cost, first: bool) {
        let sum = |a: Option<u64>, b: Option<u64>| match first {
            true => b,
            false => Some(a?.saturating_add(b?)),
        };
        self.flops = sum(self.flops, op.flops);
        self.bytes = sum(self.bytes, op.bytes);
    }

    /// A cost column's value over `ns` of device time; rates per second.
    fn value(&self, col: Col, ns: u64) -> Option<f64> {
        let rate = |x: u64| x as f64 * 1e9 / ns.max(1) as f64;
        match col {
            Col::Computation => self.flops.map(|f| f as f64),
            Col::Flops => self.flops.map(rate),
            Col::Memory => self.bytes.map(|b| b as f64),
            Col::Bandwidth => self.bytes.map(rate),
            _ => None,
        }
    }
}

/// A group's totals.
#[derive(Default)]
struct Group {
    agg: Agg,
    cost: Cost,
    shapes: Option<(String, String)>,
}

/// A single op kept for the top-N list, ordered by its rank (then arrival, for stability).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Kept {
    rank: Rank,
    seq: std::cmp::Reverse<(usize, u64)>,
    dur: u64,
    name: String,
    op_type: String,
    dev: u32,
    stream: u32,
    model: u32,
    start: u64,
    cost: Cost,
    shapes: Option<(String, String)>,
}

/// Input and output shapes as a row shows them ("N/A" where unknown), if any is known.
fn shapes_of(m: Option<&crate::opmeta::OpMeta>) -> Option<(String, String)> {
    let m = m?;
    let s = |x: &str| match x {
        "" => "N/A".to_string(),
        x => crate::opmeta::plain_shapes(x).to_string(),
    };
    (!m.input_shapes.is_empty() || !m.output_shapes.is_empty())
        .then(|| (s(&m.input_shapes), s(&m.output_shapes)))
}

/// What separates the name from the input shapes in a name+shape key.
const SHAPE_SEP: u8 = 0x1F;

fn key_text(
    key: Key,
    v: &View<'_>,
    rank: Option<u32>,
    meta: Option<&crate::opmeta::OpMeta>,
    buf: &mut Vec<u8>,
) {
    buf.clear();
    let mut num = |n: u32| buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    match key {
        Key::Type => buf.extend_from_slice(v.op_type().unwrap_or_default()),
        Key::Name => buf.extend_from_slice(v.name().unwrap_or_default()),
        Key::Device => num(v.dev_id()),
        Key::Stream => num(v.stream_id()),
        Key::Model => num(v.model_id()),
        Key::Rank => match rank {
            Some(r) => num(r),
            None => buf.push(b'-'),
        },
        Key::NameShape => {
            buf.extend_from_slice(v.name().unwrap_or_default());
            buf.push(SHAPE_SEP);
            let shapes = meta.map_or("", |m| crate::opmeta::plain_shapes(&m.input_shapes));
            buf.extend_from_slice(shapes.as_bytes());
        }
    }
}

/// Runs `q` over what `path` holds.
pub fn analyze(path: &Path, q: &Query) -> Result<Report> {
    analyze_with_progress(path, q, &mut |_, _| {})
}

pub use crate::opmeta::Metas;

/// Where a record came from: its input's index, its rank (`rank_id` of its device's
/// info.json), its result directory's host steps and `fp_point` (none for record files and
/// stdin), and the op metadata its ids name.
pub struct Origin<'a> {
    pub input: usize,
    pub rank: Option<u32>,
    pub steps: Option<&'a [(u64, u64, u64)]>,
    pub fp: Option<&'a str>,
    pub bp: Option<&'a str>,
    pub metas: Option<&'a Metas>,
}

impl Origin<'_> {
    /// The record's op metadata: from its directory's file, else (records of this process:
    /// a database read here, a live subscription's) from this process's table.
    pub fn meta(&self, v: &View<'_>) -> Option<std::sync::Arc<crate::opmeta::OpMeta>> {
        crate::opmeta::find(self.metas, v.meta(), v.pid())
    }
}

/// Calls `f` with every record under `path` (see [`inputs`]) whose signature verifies, and
/// `progress(read, expected)` every 256 Ki records: records read so far, and how many the
/// input files hold (0 for standard input). Returns the number of corrupt records skipped.
pub fn each_op(
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
    f: &mut dyn FnMut(&Origin<'_>, View<'_>),
) -> Result<u64> {
    let inputs = inputs(path)?;
    let expected = expected_records(&inputs);
    let mut read = 0u64;
    let mut corrupt = 0u64;
    progress(0, expected);
    for part in parts_of(&inputs) {
        each_part_op(&inputs, &part, &mut corrupt, &mut |o, v| {
            read += 1;
            if read % (1 << 18) == 0 {
                progress(read, expected);
            }
            f(o, v);
        })?;
    }
    progress(read, expected);
    Ok(corrupt)
}

/// How many records the inputs' files hold (databases and standard input count 0).
fn expected_records(inputs: &[Input]) -> u64 {
    let size = |p: &PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
    inputs
        .iter()
        .map(|i| match i {
            Input::Device { files, .. } => files.iter().map(size).sum(),
            Input::Raw(p) => size(p),
            Input::Db(_) => 0,
            Input::Stdin => 0,
        })
        .sum::<u64>()
        / RECORD_SIZE as u64
}

/// What input `i` knows about its records.
fn origin_of(i: usize, input: &Input) -> Origin<'_> {
    match input {
        Input::Device {
            rank,
            steps,
            fp,
            bp,
            metas,
            ..
        } => Origin {
            input: i,
            rank: *rank,
            steps: Some(steps),
            fp: fp.as_deref(),
            bp: bp.as_deref(),
            metas: Some(metas),
        },
        _ => Origin {
            input: i,
            rank: None,
            steps: None,
            fp: None,
            bp: None,
            metas: None,
        },
    }
}

/// "1 corrupt record skipped", "2 corrupt records skipped".
pub fn corrupt_skipped(n: u64) -> String {
    format!(
        "{n} corrupt record{} skipped",
        if n == 1 { "" } else { "s" }
    )
}

/// The steps of each input under `path`, numbered as step_trace_time.csv numbers them: the
/// host's step marks (`aclprofGetStepTimestamp`) if it made any; else one step from each
/// `fp_point` op's start to the next one's (1, 2, ...; ops before the first are in none);
/// else none. Each: (index, start, end).
pub fn steps_of(path: &Path) -> Result<Vec<Vec<(u64, u64, u64)>>> {
    let mut steps: Vec<Vec<(u64, u64, u64)>> = Vec::new();
    let mut fp_starts: Vec<Vec<u64>> = Vec::new();
    let mut any_fp = false;
    // The fp_point ops are found in one pass, only if some input needs them.
    for (i, input) in inputs(path)?.iter().enumerate() {
        steps.push(match input {
            Input::Device { steps, .. } => steps.to_vec(),
            _ => Vec::new(),
        });
        fp_starts.push(Vec::new());
        any_fp |= matches!(input, Input::Device { fp: Some(_), .. }) && steps[i].is_empty();
    }
    if any_fp {
        each_op(path, &mut |_, _| {}, &mut |o, v| {
            if let Some(fp) = o.fp {
                if steps[o.input].is_empty() && v.name() == Some(fp.as_bytes()) {
                    fp_starts[o.input].push(v.start());
                }
            }
        })?;
        for (i, mut starts) in fp_starts.into_iter().enumerate() {
            starts.sort_unstable();
            let ends = starts.iter().skip(1).copied().chain([u64::MAX]);
            steps[i].extend(
                starts
                    .iter()
                    .zip(ends)
                    .enumerate()
                    .map(|(k, (&a, b))| (k as u64 + 1, a, b)),
            );
        }
    }
    Ok(steps)
}

/// Per input under `path`, the window (start, end) of step `step`, or an error listing the
/// steps there are if no input has it.
fn step_windows(path: &Path, step: u64) -> Result<Vec<Option<(u64, u64)>>> {
    if path == Path::new("-") || path.is_file() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "--step needs a result directory: records alone carry no steps",
        );
    }
    let steps = steps_of(path)?;
    let windows: Vec<Option<(u64, u64)>> = steps
        .iter()
        .map(|s| s.iter().find(|x| x.0 == step).map(|&(_, a, b)| (a, b)))
        .collect();
    if windows.iter().all(Option::is_none) {
        let mut ids: Vec<u64> = steps.iter().flatten().map(|x| x.0).collect();
        ids.sort_unstable();
        ids.dedup();
        let there = match ids.as_slice() {
            [] => "it has no steps (none marked with aclprofGetStepTimestamp, and no fp_point \
                   op with ACL_PROF_TRAINING_TRACE)"
                .to_string(),
            [one] => format!("its only step is {one}"),
            [first, .., last] if ids.len() > 20 => {
                format!("its steps are {first} to {last} ({} steps)", ids.len())
            }
            _ => format!(
                "its steps are {}",
                ids.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("--step {step}: no such step in {}; {there}", path.display()),
        );
    }
    Ok(windows)
}

/// Each task of CANN's database at `p` as a record (names longer than a record holds are
/// cut, as a subscriber's are).
fn db_records(p: &Path, f: &mut dyn FnMut(View<'_>)) -> Result<()> {
    let mut rec: record::Record = [0; RECORD_SIZE];
    let mut index = 0u64;
    crate::sim::desc::db_tasks(p, &mut |t| {
        index += 1;
        let fields = record::OpFields {
            model_id: 1,
            flag: record::FLAG_OP,
            op_index: index,
            start: t.start,
            end: t.end,
            execution_time: t.end - t.start,
            dev_id: t.device,
            stream_id: t.info.stream_id.unwrap_or(0),
            pid: std::process::id(),
            meta: t.meta.and_then(|m| crate::opmeta::intern(*m)).unwrap_or(0),
            ..Default::default()
        };
        rec.fill(0);
        let cut = |s: &str| record::until_nul(s.as_bytes()).to_vec();
        record::encode(&mut rec, &fields, &cut(&t.name), &cut(&t.op_type));
        record::sign(&mut rec);
        f(View(&rec));
        Ok(())
    })
    .map_err(|e| Error::new(e.code, format!("{}: {}", p.display(), e.msg)))
}

/// Why `path` gave no op record at all, in one line: what it looks like instead, and what
/// to give. (A filter that keeps nothing is not this: those inputs had records.)
fn no_records(path: &Path, corrupt: u64) -> String {
    let what = if path == Path::new("-") {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    let give = "give a PROF_* result directory, a folder of them, or a file of records a \
                subscription wrote";
    if path.is_dir() {
        return format!(
            "{what}: no op records in it (nothing was reported while it recorded); {give}"
        );
    }
    let mut head = [0u8; 512];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let text = std::str::from_utf8(&head[..n]).ok().map(str::trim_start);
    // Records have NULs in their padding; text has none.
    let is_text = text.is_some() && !head[..n].contains(&0);
    let looks = match text {
        _ if n == 0 && corrupt == 0 => "is empty".to_string(),
        _ if head.starts_with(crate::sim::desc::SQLITE_MAGIC) => {
            "is a database with no compute or communication task".to_string()
        }
        Some(t) if t.starts_with('{') || t.starts_with('[') => {
            "is JSON (a timeline?), not op records".to_string()
        }
        Some(t) if t.lines().next().is_some_and(|l| l.contains(',')) => {
            "is a CSV table (op_summary? replay it with aclprofExtSimModelLoad), not op records"
                .to_string()
        }
        _ if corrupt == 1 && n < RECORD_SIZE && path != Path::new("-") => {
            format!("is {n} bytes long, shorter than one op record ({RECORD_SIZE} bytes)")
        }
        _ if is_text => "is text, not op records".to_string(),
        _ => format!(
            "holds no valid op record ({corrupt} block{} of 512 bytes failed the signature check)",
            if corrupt == 1 { "" } else { "s" }
        ),
    };
    format!("{what} {looks}; {give}")
}

/// What a scan of the records needs to know of the query.
struct How<'a> {
    q: &'a Query,
    windows: &'a [Option<(u64, u64)>],
    col: Col,
    ascending: bool,
    keep: usize,
}

/// What one worker found in the inputs it read: groups, or the top ops, and the totals.
#[derive(Default)]
struct Scan {
    groups: HashMap<Box<[u8]>, Group>,
    heap: BinaryHeap<std::cmp::Reverse<Kept>>,
    any_meta: bool,
    ops: u64,
    total_ns: u64,
    valid: u64,
    corrupt: u64,
    key: Vec<u8>,
    /// The part being read and how many of its ops passed the filters (ties among the top
    /// ops go to the earlier part, then the earlier op, whichever worker read them).
    part: usize,
    passed: u64,
}

impl Scan {
    fn op(&mut self, h: &How<'_>, o: &Origin<'_>, v: View<'_>) {
        let q = h.q;
        self.valid += 1;
        if q.rank.is_some() && q.rank != o.rank {
            return;
        }
        if q.step.is_some() {
            match h.windows.get(o.input).copied().flatten() {
                Some((a, b)) if v.start() >= a && v.start() < b => {}
                _ => return,
            }
        }
        let d = v.duration();
        if d < q.min_time_ns || d > q.max_time_ns || q.device.is_some_and(|dev| dev != v.dev_id()) {
            return;
        }
        let ty = v.op_type().unwrap_or_default();
        if !q.types.is_empty() && !q.types.iter().any(|t| t.as_bytes() == ty) {
            return;
        }
        if let Some(re) = &q.name {
            if !re.is_match(v.name().unwrap_or_default()) {
                return;
            }
        }
        let meta = o.meta(&v);
        if let Some(t) = &q.input_dtype {
            let has = meta.as_deref().is_some_and(|m| {
                m.input_types
                    .split(';')
                    .any(|x| x.trim().eq_ignore_ascii_case(t))
            });
            if !has {
                return;
            }
        }
        self.any_meta |= meta.is_some();
        let cost = Cost::of(meta.as_deref());
        self.ops += 1;
        self.passed += 1;
        self.total_ns = self.total_ns.saturating_add(d);
        match q.by {
            Some(k) => {
                key_text(k, &v, o.rank, meta.as_deref(), &mut self.key);
                let g = match self.groups.get_mut(self.key.as_slice()) {
                    Some(g) => g,
                    None => {
                        let g = self.groups.entry(self.key.as_slice().into()).or_default();
                        if k == Key::NameShape {
                            g.shapes = shapes_of(meta.as_deref());
                        }
                        g
                    }
                };
                g.cost.add(cost, g.agg.count == 0);
                g.agg.add(d);
            }
            None => {
                let full = self.heap.len() >= h.keep;
                let rank = Rank::of(h.col, h.ascending, &v, &cost);
                // An op ranking no higher than the lowest kept arrived later: it loses.
                if full && self.heap.peek().is_some_and(|m| m.0.rank >= rank) {
                    return;
                }
                let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                self.heap.push(std::cmp::Reverse(Kept {
                    rank,
                    seq: std::cmp::Reverse((self.part, self.passed)),
                    dur: d,
                    name: lossy(v.name().unwrap_or_default()),
                    op_type: lossy(ty),
                    dev: v.dev_id(),
                    stream: v.stream_id(),
                    model: v.model_id(),
                    start: v.start(),
                    cost,
                    shapes: shapes_of(meta.as_deref()),
                }));
                if full {
                    self.heap.pop();
                }
            }
        }
    }

    /// Adds what another worker found.
    fn merge(&mut self, other: Scan, keep: usize) {
        self.any_meta |= other.any_meta;
        self.ops += other.ops;
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.valid += other.valid;
        self.corrupt += other.corrupt;
        for (k, g) in other.groups {
            match self.groups.get_mut(&k) {
                None => {
                    self.groups.insert(k, g);
                }
                Some(mine) => {
                    mine.cost.add(g.cost, false);
                    mine.agg.merge(&g.agg);
                }
            }
        }
        for k in other.heap {
            self.heap.push(k);
            if self.heap.len() > keep {
                self.heap.pop();
            }
        }
    }
}

/// The worker threads an analysis uses: `threads` (0: one per core), at most one per part.
fn workers(threads: usize, inputs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t = if threads == 0 { cores } else { threads };
    t.min(inputs).max(1)
}

/// Records per piece a thread reads at a time (32 MiB): a large file is read by every core.
/// (The unit tests cut their small files into many pieces.)
const PART_RECORDS: u64 = if cfg!(test) { 64 } else { 1 << 16 };

/// A piece of the inputs that one thread reads, from input `input`.
struct Part<'a> {
    input: usize,
    piece: Piece<'a>,
}

enum Piece<'a> {
    /// A database, read whole.
    Db(&'a Path),
    Stdin,
    /// `len` bytes of a record file from `start`.
    Bytes(&'a Path, u64, u64),
}

/// The inputs cut into [`Part`]s, in input, file and offset order (the order one thread
/// reading everything would see the records in).
fn parts_of(inputs: &[Input]) -> Vec<Part<'_>> {
    let step = PART_RECORDS * RECORD_SIZE as u64;
    let mut parts = Vec::new();
    for (input, i) in inputs.iter().enumerate() {
        let files: &[PathBuf] = match i {
            Input::Device { files, .. } => files,
            Input::Raw(p) => std::slice::from_ref(p),
            Input::Db(p) => {
                parts.push(Part {
                    input,
                    piece: Piece::Db(p),
                });
                continue;
            }
            Input::Stdin => {
                parts.push(Part {
                    input,
                    piece: Piece::Stdin,
                });
                continue;
            }
        };
        for p in files {
            let size = std::fs::metadata(p).map_or(0, |m| m.len());
            let mut start = 0;
            loop {
                // The last piece takes the rest, a torn tail included.
                let len = (size - start).min(step);
                parts.push(Part {
                    input,
                    piece: Piece::Bytes(p, start, len),
                });
                start += len;
                if start >= size {
                    break;
                }
            }
        }
    }
    parts
}

/// Calls `f` with every verified record of `part`, counting corrupt ones.
fn each_part_op(
    inputs: &[Input],
    part: &Part<'_>,
    corrupt: &mut u64,
    f: &mut dyn FnMut(&Origin<'_>, View<'_>),
) -> Result<()> {
    let input = &inputs[part.input];
    let origin = origin_of(part.input, input);
    let mut on_record = |v: View<'_>| f(&origin, v);
    match part.piece {
        Piece::Bytes(p, start, len) => {
            let mut file = std::fs::File::open(p).or_else(|e| io_err(p, e))?;
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(start))
                .or_else(|e| io_err(p, e))?;
            each_record(&mut file.take(len), p, corrupt, &mut on_record)
        }
        Piece::Db(p) => db_records(p, &mut on_record),
        Piece::Stdin => {
            let stdin = std::io::stdin();
            each_record(&mut stdin.lock(), Path::new("-"), corrupt, &mut on_record)
        }
    }
}

/// Scans every input under `path` on [`workers`] threads that each take the next
/// [`Part`] (so a large file is read by every core, and memory holds what the pieces being
/// read need, not the whole cluster), and merges what they found in part order.
fn scan_parallel(path: &Path, how: &How<'_>, progress: &mut dyn FnMut(u64, u64)) -> Result<Scan> {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
    let inputs = inputs(path)?;
    let parts = parts_of(&inputs);
    let expected = expected_records(&inputs);
    progress(0, expected);
    let n = workers(how.q.threads, parts.len());
    let next = AtomicUsize::new(0);
    let read = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let main = std::thread::current();
    let work = || -> Result<Scan> {
        let mut scan = Scan::default();
        let result = (|| {
            while !failed.load(Relaxed) {
                let i = next.fetch_add(1, Relaxed);
                let Some(part) = parts.get(i) else { break };
                scan.part = i;
                scan.passed = 0;
                let mut corrupt = 0;
                let mut local = 0u64;
                each_part_op(&inputs, part, &mut corrupt, &mut |o, v| {
                    scan.op(how, o, v);
                    local += 1;
                    if local % 4096 == 0 {
                        read.fetch_add(4096, Relaxed);
                    }
                })?;
                read.fetch_add(local % 4096, Relaxed);
                scan.corrupt += corrupt;
            }
            Ok(())
        })();
        if result.is_err() {
            failed.store(true, Relaxed);
        }
        main.unpark();
        result.map(|()| scan)
    };
    let scans: Vec<Result<Scan>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .map(|_| std::thread::Builder::new().spawn_scoped(sc, work))
            .collect();
        let mut last = 0;
        while handles
            .iter()
            .any(|h| h.as_ref().is_ok_and(|h| !h.is_finished()))
        {
            std::thread::park_timeout(std::time::Duration::from_millis(100));
            let now = read.load(Relaxed);
            if now / (1 << 18) != last / (1 << 18) {
                progress(now, expected);
                last = now;
            }
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    err(
                        crate::error::ACL_ERROR_INTERNAL_ERROR,
                        "an analysis thread panicked",
                    )
                }),
                Err(e) => err(
                    crate::error::ACL_ERROR_INTERNAL_ERROR,
                    format!("cannot start an analysis thread: {e}"),
                ),
            })
            .collect()
    });
    progress(read.load(Relaxed), expected);
    let mut all = Scan::default();
    for s in scans {
        all.merge(s?, how.keep);
    }
    Ok(all)
}

/// As [`analyze`], with a progress callback (see [`each_op`]).
pub fn analyze_with_progress(
    path: &Path,
    q: &Query,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Report> {
    let mut report = Report {
        by: q.by,
        func: q.by.map(|_| q.func),
        ..Default::default()
    };
    let (col, ascending) = order_of(q)?;
    let keep = if q.top == 0 {
        MAX_LISTED
    } else {
        q.top.min(MAX_LISTED)
    };
    // Per input, the window of the step asked for (None: that input has no such step).
    let windows = match q.step {
        Some(s) => step_windows(path, s)?,
        None => Vec::new(),
    };
    let how = How {
        q,
        windows: &windows,
        col,
        ascending,
        keep,
    };
    let Scan {
        groups,
        heap,
        any_meta,
        ops,
        total_ns,
        valid,
        corrupt,
        ..
    } = scan_parallel(path, &how, progress)?;
    if valid == 0 {
        return err(ACL_ERROR_INVALID_FILE, no_records(path, corrupt));
    }
    report.ops = ops;
    report.total_ns = total_ns;
    report.corrupt = corrupt;
    report.meta = any_meta;
    let mut rows: Vec<Row> = match q.by {
        Some(_) => groups
            .into_iter()
            .map(
                |(
                    k,
                    Group {
                        agg: a,
                        cost,
                        shapes,
                    },
                )| Row {
                    key: String::from_utf8_lossy(k.split(|&b| b == SHAPE_SEP).next().unwrap_or(&k))
                        .into_owned(),
                    flops: cost.flops,
                    bytes: cost.bytes,
                    in_shapes: shapes.as_ref().map(|s| s.0.clone()),
                    out_shapes: shapes.map(|s| s.1),
                    op: None,
                    count: a.count,
                    time: match q.func {
                        Func::Sum => a.total as f64,
                        Func::Mean => a.avg(),
                        Func::Max => a.max as f64,
                        Func::Min => a.min as f64,
                        Func::Count => a.count as f64,
                    },
                    total_ns: a.total,
                    min_ns: a.min,
                    max_ns: a.max,
                    ..Default::default()
                },
            )
            .collect(),
        // Best first, ties in arrival order, for the stable sort below.
        None => heap
            .into_sorted_vec()
            .into_iter()
            .map(|std::cmp::Reverse(k)| Row {
                key: k.name,
                op: Some((k.op_type, k.dev, k.stream, k.model, k.start)),
                count: 1,
                time: k.dur as f64,
                total_ns: k.dur,
                min_ns: k.dur,
                max_ns: k.dur,
                flops: k.cost.flops,
                bytes: k.cost.bytes,
                in_shapes: k.shapes.as_ref().map(|s| s.0.clone()),
                out_shapes: k.shapes.map(|s| s.1),
                ..Default::default()
            })
            .collect(),
    };
    report.groups = if q.by.is_some() {
        rows.len()
    } else {
        report.ops as usize
    };
    sort_rows(&mut rows, col, ascending);
    if q.top != 0 {
        rows.truncate(q.top);
    }
    let mut cum = 0.0;
    for r in &mut rows {
        r.share = 100.0 * r.total_ns as f64 / report.total_ns.max(1) as f64;
        cum += r.share;
        r.cumulative = cum;
    }
    report.rows = rows;
    Ok(report)
}

fn sort_rows(rows: &mut [Row], col: Col, ascending: bool) {
    let num = |f: fn(&Row) -> f64| {
        move |a: &Row, b: &Row| {
            let by_value = f(b).total_cmp(&f(a));
            let by_value = if ascending {
                by_value.reverse()
            } else {
                by_value
            };
            by_value.then_with(|| a.key.cmp(&b.key))
        }
    };
    match col {
        Col::Time => rows.sort_by(num(|r| r.time)),
        Col::Count => rows.sort_by(num(|r| r.count as f64)),
        Col::Total => rows.sort_by(num(|r| r.total_ns as f64)),
        Col::Mean => rows.sort_by(num(Row::mean_ns)),
        Col::Min => rows.sort_by(num(|r| r.min_ns as f64)),
        Col::Max => rows.sort_by(num(|r| r.max_ns as f64)),
        Col::Start => rows.sort_by_key(|r| r.op.as_ref().map_or(0, |o| o.4)),
        Col::Computation | Col::Flops | Col::Memory | Col::Bandwidth => {
            // Rows whose cost is unknown come last either way.
            let v = |r: &Row| {
                let c = Cost {
                    flops: r.flops,
                    bytes: r.bytes,
                };
                c.value(col, r.total_ns)
            };
            rows.sort_by(|a, b| {
                let o = match (v(a), v(b)) {
                    (Some(x), Some(y)) if ascending => x.total_cmp(&y),
                    (Some(x), Some(y)) => y.total_cmp(&x),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                };
                o.then_with(|| a.key.cmp(&b.key))
            })
        }
        Col::Key => {
            // Numeric keys (device, stream, model, rank) in numeric order.
            rows.sort_by(|a, b| match (a.key.parse::<u64>(), b.key.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => a.key.cmp(&b.key),
            })
        }
    }
}

/// Output formats of [`render`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
    Markdown,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "table" => Format::Table,
            "csv" => Format::Csv,
            "json" => Format::Json,
            "markdown" | "md" => Format::Markdown,
            _ => return None,
        })
    }
}

fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// The cost columns (MegEngine's computation, FLOPS, memory and bandwidth), shown when the
/// ops carried metadata; `--order-by computation|flops|memory|bandwidth` sorts by them.
pub const COST_COLUMNS: [&str; 4] = [
    "Computation(FLOPs)",
    "FLOPS(G/s)",
    "Memory(bytes)",
    "Bandwidth(GB/s)",
];

/// The report's columns and cells.
pub fn table(r: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let time_title = match r.func {
        None => "Duration(us)".to_string(),
        Some(Func::Count) => "Count(agg)".to_string(),
        Some(f) => format!("{f:?}(us)"),
    };
    let mut head: Vec<String> = match r.by {
        Some(k) => vec![k.title().into(), "Count".into(), time_title],
        // Start tells apart the ops a listing shows under one name (each execution's).
        None => ["Name", "Type", "Device", "Stream", "Model", "Start(us)"]
            .iter()
            .map(|s| s.to_string())
            .chain([time_title])
            .collect(),
    };
    // A group's mean, min and max; not for a single op (they are its duration), and not
    // the one the aggregate column already is.
    let stats: Vec<Func> = [Func::Mean, Func::Min, Func::Max]
        .into_iter()
        .filter(|&f| r.by.is_some() && r.func != Some(f))
        .collect();
    head.extend(["Share(%)".to_string(), "Cumulative(%)".to_string()]);
    head.extend(stats.iter().map(|f| format!("{f:?}(us)")));
    // MegEngine's profile_analyze columns, when the ops carried metadata.
    let shapes = r.meta && matches!(r.by, None | Some(Key::NameShape));
    if r.meta {
        head.extend(COST_COLUMNS.iter().map(|c| c.to_string()));
    }
    if shapes {
        head.extend(["Input Shapes".to_string(), "Output Shapes".to_string()]);
    }
    let rows = r
        .rows
        .iter()
        .map(|row| {
            let mut c = vec![row.key.clone()];
            match &row.op {
                Some((ty, dev, stream, model, start)) => {
                    c.extend([
                        ty.clone(),
                        dev.to_string(),
                        stream.to_string(),
                        model.to_string(),
                        us(*start as f64),
                    ]);
                    c.push(us(row.time));
                }
                None => {
                    c.push(row.count.to_string());
                    c.push(if r.func == Some(Func::Count) {
                        format!("{}", row.time)
                    } else {
                        us(row.time)
                    });
                }
            }
            c.push(format!("{:.2}", row.share));
            c.push(format!("{:.2}", row.cumulative));
            c.extend(stats.iter().map(|f| match f {
                Func::Min => us(row.min_ns as f64),
                Func::Max => us(row.max_ns as f64),
                _ => us(row.mean_ns()),
            }));
            if r.meta {
                let cost = Cost {
                    flops: row.flops,
                    bytes: row.bytes,
                };
                for (col, scale) in [
                    (Col::Computation, 1.0),
                    (Col::Flops, 1e-9),
                    (Col::Memory, 1.0),
                    (Col::Bandwidth, 1e-9),
                ] {
                    c.push(match cost.value(col, row.total_ns) {
                        Some(x) if scale == 1.0 => format!("{x}"),
                        Some(x) => format!("{:.3}", x * scale),
                        None => "N/A".into(),
                    });
                }
            }
            if shapes {
                let na = || "N/A".to_string();
                c.push(row.in_shapes.clone().unwrap_or_else(na));
                c.push(row.out_shapes.clone().unwrap_or_else(na));
            }
            c
        })
        .collect();
    (head, rows)
}

/// A CSV field, quoted when it must be.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `head` and `rows` as a Markdown table.
pub fn markdown_table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "|{}|", vec!["---"; head.len()].join("|"));
    for cells in rows {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o
}

/// `head` and `rows` as aligned columns under a rule; column `i` is left-aligned when
/// `left(i)`, else right-aligned.
pub fn text_table(head: &[String], rows: &[Vec<String>], left: impl Fn(usize) -> bool) -> String {
    let mut o = String::new();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for cells in rows {
        for (i, c) in cells.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String], o: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if left(i) {
                    format!("{c:<w$}", w = w[i])
                } else {
                    format!("{c:>w$}", w = w[i])
                }
            })
            .collect();
        let _ = writeln!(o, "{}", parts.join("  ").trim_end());
    };
    line(head, &mut o);
    let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
    line(&rule, &mut o);
    for cells in rows {
        line(cells, &mut o);
    }
    o
}

/// The report as text in `format`.
pub fn render(r: &Report, format: Format) -> String {
    let (head, rows) = table(r);
    let mut o = String::new();
    match format {
        Format::Csv => {
            for line in std::iter::once(&head).chain(rows.iter()) {
                let cells: Vec<String> = line.iter().map(|c| csv_field(c)).collect();
                let _ = writeln!(o, "{}", cells.join(","));
            }
        }
        Format::Json => {
            let rows: Vec<serde_json::Value> = rows
                .iter()
                .map(|cells| {
                    let m: serde_json::Map<String, serde_json::Value> = head
                        .iter()
                        .zip(cells)
                        .map(|(h, c)| {
                            let text = matches!(
                                h.as_str(),
                                "Name" | "Type" | "Input Shapes" | "Output Shapes"
                            );
                            let v = c
                                .parse::<u64>()
                                .ok()
                                .filter(|_| !text)
                                .map(Into::into)
                                .or_else(|| {
                                    c.parse::<f64>()
                                        .ok()
                                        .filter(|_| !text)
                                        .and_then(serde_json::Number::from_f64)
                                        .map(Into::into)
                                })
                                .unwrap_or_else(|| c.clone().into());
                            (h.clone(), v)
                        })
                        .collect();
                    m.into()
                })
                .collect();
            let v = serde_json::json!({
                "ops": r.ops, "total_us": r.total_ns as f64 / 1000.0, "groups": r.groups,
                "corrupt_records": r.corrupt, "rows": rows,
            });
            let _ = writeln!(
                o,
                "{}",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            );
        }
        Format::Markdown => o.push_str(&markdown_table(&head, &rows)),
        Format::Table => {
            // Text left-aligned, numbers right-aligned.
            o.push_str(&text_table(&head, &rows, |i| {
                i == 0 || (r.by.is_none() && i == 1)
            }));
            let shown = rows.len();
            let what = if r.by.is_some() { "groups" } else { "ops" };
            let _ = writeln!(
                o,
                "{shown} of {} {what}; {} ops, {} us in all{}",
                r.groups,
                r.ops,
                us(r.total_ns as f64),
                if r.corrupt > 0 {
                    format!("; {}", corrupt_skipped(r.corrupt))
                } else {
                    String::new()
                }
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{encode, sign, OpFields};

    fn rec(name: &str, ty: &str, dev: u32, stream: u32, start: u64, dur: u64) -> Vec<u8> {
        let mut r = Box::new([0u8; RECORD_SIZE]);
        let f = OpFields {
            model_id: 1,
            start,
            end: start + dur,
            dev_id: dev,
            stream_id: stream,
            ..Default::default()
        };
        encode(&mut r, &f, name.as_bytes(), ty.as_bytes());
        sign(&mut r[..]);
        r.to_vec()
    }

    fn file(recs: &[Vec<u8>]) -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "aclprof-analyze-{}-{}.bin",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::write(&p, recs.concat()).unwrap();
        p
    }

    fn sample() -> PathBuf {
        file(&[
            rec("conv1", "Conv2D", 0, 1, 0, 10_000),
            rec("relu1", "Relu", 0, 1, 10_000, 1_000),
            rec("conv2", "Conv2D", 1, 2, 0, 30_000),
            rec("relu2", "Relu", 1, 2, 30_000, 3_000),
            rec("fc", "MatMulV2", 0, 1, 11_000, 6_000),
        ])
    }

    #[test]
    fn the_top_n_without_grouping_follows_the_order_asked() {
        let p = sample();
        let names = |order: &str| {
            let q = Query {
                top: 2,
                order_by: Some(order.into()),
                ..Default::default()
            };
            let r = analyze(&p, &q).unwrap();
            assert_eq!((r.ops, r.groups), (5, 5), "{order}");
            r.rows.into_iter().map(|x| x.key).collect::<Vec<_>>()
        };
        assert_eq!(names("time"), ["conv2", "conv1"]);
        assert_eq!(names("+time"), ["relu1", "relu2"]);
        assert_eq!(names("start"), ["conv1", "conv2"]);
        assert_eq!(names("name"), ["conv1", "conv2"]);
        assert_eq!(names("+max"), ["relu1", "relu2"]);
        let bad = Query {
            order_by: Some("colour".into()),
            ..Default::default()
        };
        assert_eq!(analyze(&p, &bad).unwrap_err().code, ACL_ERROR_INVALID_PARAM);
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn huge_durations_saturate_the_totals_and_malformed_names_count_as_signed_ops() {
        let mut bad_name = rec("x", "T", 0, 1, 0, 5);
        bad_name[record::OFF_NAME] = 0; // the stored length says 1, the NUL comes first
        record::sign(&mut bad_name);
        let p = file(&[
            rec("a", "T", 0, 1, 0, u64::MAX),
            rec("b", "T", 0, 1, 0, u64::MAX),
            bad_name,
        ]);
        for by in [None, Some(Key::Type)] {
            let q = Query {
                by,
                ..Default::default()
            };
            let r = analyze(&p, &q).unwrap();
            // A signed record is an op, as aclprofGetOpNum and the export count it; only
            // its name cannot be read (docs/design.md, "Decoding").
            assert_eq!((r.ops, r.total_ns, r.corrupt), (3, u64::MAX, 0), "{by:?}");
        }
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn groups_by_type_with_every_aggregate() {
        let p = sample();
        let q = Query {
            by: Some(Key::Type),
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        assert_eq!((r.ops, r.total_ns, r.groups), (5, 50_000, 3));
        let keys: Vec<&str> = r.rows.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(keys, ["Conv2D", "MatMulV2", "Relu"]);
        assert_eq!(r.rows[0].count, 2);
        assert_eq!((r.rows[0].min_ns, r.rows[0].max_ns), (10_000, 30_000));
        assert!((r.rows[0].share - 80.0).abs() < 1e-9);
        assert!((r.rows[2].cumulative - 100.0).abs() < 1e-9);
        for (f, want) in [
            (Func::Mean, 20_000.0),
            (Func::Max, 30_000.0),
            (Func::Min, 10_000.0),
            (Func::Count, 2.0),
        ] {
            let r = analyze(
                &p,
                &Query {
                    func: f,
                    ..q.clone()
                },
            )
            .unwrap();
            let conv = r.rows.iter().find(|x| x.key == "Conv2D").unwrap();
            assert_eq!(conv.time, want, "{f:?}");
        }
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn filters_and_top_ops() {
        let p = sample();
        let r = analyze(
            &p,
            &Query {
                top: 2,
                ..Default::default()
            },
        )
        .unwrap();
        let names: Vec<&str> = r.rows.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(names, ["conv2", "conv1"], "the two longest ops");
        assert_eq!(r.groups, 5);
        let shortest = analyze(
            &p,
            &Query {
                top: 0,
                order_by: Some("+time".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let times: Vec<f64> = shortest.rows.iter().map(|x| x.time).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(shortest.rows.last().unwrap().key, "conv2");
        let capped = Query {
            top: 0,
            max_time_ns: shortest.rows[1].time as u64,
            ..Default::default()
        };
        assert_eq!(analyze(&p, &capped).unwrap().ops, 2, "the two shortest ops");
        let q = Query {
            top: 0,
            types: vec!["Relu".into()],
            device: Some(1),
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        assert_eq!((r.ops, r.rows[0].key.as_str()), (1, "relu2"));
        let q = Query {
            top: 0,
            name: Some(regex::bytes::Regex::new("^conv").unwrap()),
            min_time_ns: 20_000,
            ..Default::default()
        };
        assert_eq!(analyze(&p, &q).unwrap().ops, 1);
        let q = Query {
            by: Some(Key::Device),
            order_by: Some("device".into()),
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        assert_eq!(r.rows[0].key, "0");
        assert_eq!(r.rows[0].total_ns, 17_000);
        let bad = Query {
            order_by: Some("colour".into()),
            ..Default::default()
        };
        assert!(analyze(&p, &bad).is_err());
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn corrupt_and_torn_records_are_skipped_and_counted() {
        let mut bad = rec("x", "X", 0, 0, 0, 5);
        bad[200] ^= 1;
        let mut torn = rec("y", "Y", 0, 0, 0, 5);
        torn.truncate(100);
        let p = file(&[rec("a", "A", 0, 0, 0, 7), bad, torn]);
        let r = analyze(&p, &Query::default()).unwrap();
        assert_eq!((r.ops, r.corrupt), (1, 2));
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn renders_every_format() {
        let p = sample();
        let q = Query {
            by: Some(Key::Type),
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        let t = render(&r, Format::Table);
        assert!(t.lines().next().unwrap().starts_with("Type"), "{t}");
        assert!(
            t.contains("Conv2D") && t.contains("3 of 3 groups; 5 ops, 50.000 us in all"),
            "{t}"
        );
        let c = render(&r, Format::Csv);
        assert_eq!(
            c.lines().nth(1).unwrap(),
            "Conv2D,2,40.000,80.00,80.00,20.000,10.000,30.000"
        );
        let j: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
        assert_eq!(j["rows"][0]["Type"], "Conv2D");
        assert_eq!(j["rows"][0]["Count"], 2.0);
        let m = render(&r, Format::Markdown);
        assert!(
            m.starts_with("| Type | Count |") && m.lines().nth(1).unwrap().starts_with("|---|")
        );
        let _ = std::fs::remove_file(p);
    }

    /// `--aggregate mean|min|max`: the aggregate's column is not repeated by the fixed ones.
    #[test]
    fn an_aggregate_column_is_not_repeated() {
        let p = sample();
        for (func, title) in [
            (Func::Mean, "Mean(us)"),
            (Func::Min, "Min(us)"),
            (Func::Max, "Max(us)"),
        ] {
            let q = Query {
                by: Some(Key::Type),
                func,
                ..Default::default()
            };
            let r = analyze(&p, &q).unwrap();
            let c = render(&r, Format::Csv);
            let head: Vec<&str> = c.lines().next().unwrap().split(',').collect();
            assert_eq!(head.iter().filter(|h| **h == title).count(), 1, "{c}");
            assert_eq!(head.len(), 7, "{c}");
            let row: Vec<&str> = c.lines().nth(1).unwrap().split(',').collect();
            assert_eq!(row.len(), head.len(), "{c}");
            let j: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
            assert_eq!(j["rows"][0].as_object().unwrap().len(), 7);
        }
        let _ = std::fs::remove_file(p);
    }

    /// A folder of result directories, each with devices of their own rank: `ranks` device
    /// directories in all, `ops` ops each (durations repeat, so the top N has ties).
    fn cluster(ranks: u32, ops: u64) -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "aclprof-cluster-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        for r in 0..ranks {
            let dev = root.join(format!("PROF_{:06}_x/device_{}", r / 2, r % 2));
            std::fs::create_dir_all(dev.join("data")).unwrap();
            std::fs::write(
                dev.join(format!("info.json.{}", r % 2)),
                format!("{{\"rank_id\": {r}}}"),
            )
            .unwrap();
            let recs: Vec<Vec<u8>> = (0..ops)
                .map(|i| {
                    let ty = ["Conv2D", "Relu", "MatMulV2"][(i % 3) as usize];
                    rec(
                        &format!("op{i}"),
                        ty,
                        r % 2,
                        1,
                        i * 100,
                        10 + (i * 7 + r as u64) % 50,
                    )
                })
                .collect();
            std::fs::write(dev.join("data/aclprof_ops.stream_1.bin"), recs.concat()).unwrap();
        }
        root
    }

    /// `q` analysed on `threads` threads.
    fn on_threads(path: &Path, q: &Query, threads: usize) -> Report {
        analyze(
            path,
            &Query {
                threads,
                ..q.clone()
            },
        )
        .unwrap()
    }

    /// Any number of threads finds exactly what one does, ties among the top ops included.
    #[test]
    fn threads_change_nothing_but_speed() {
        let root = cluster(7, 400);
        for q in [
            Query {
                by: Some(Key::Rank),
                top: 0,
                ..Default::default()
            },
            Query {
                by: Some(Key::Type),
                func: Func::Max,
                ..Default::default()
            },
            Query {
                top: 25,
                ..Default::default()
            },
            Query {
                top: 25,
                order_by: Some("+time".into()),
                ..Default::default()
            },
        ] {
            let one = on_threads(&root, &q, 1);
            assert_eq!(one.ops, 7 * 400);
            assert!(one.rows.len() > 2);
            for threads in [2, 3, 8] {
                let many = on_threads(&root, &q, threads);
                assert_eq!(many.rows, one.rows, "{threads} threads, {q:?}");
                assert_eq!((many.ops, many.total_ns), (one.ops, one.total_ns));
            }
        }
        // One file, cut into pieces, with a torn record at its end.
        let mut recs: Vec<Vec<u8>> = (0..1000u64)
            .map(|i| rec(&format!("op{}", i % 37), "Add", 0, 1, i * 10, 5 + i % 11))
            .collect();
        recs.push(vec![1u8; 100]);
        let one = file(&recs);
        for q in [
            Query {
                top: 30,
                ..Default::default()
            },
            Query {
                by: Some(Key::Name),
                top: 0,
                ..Default::default()
            },
        ] {
            let a = on_threads(&one, &q, 1);
            assert_eq!((a.ops, a.corrupt), (1000, 1));
            for threads in [2, 5] {
                let b = on_threads(&one, &q, threads);
                assert_eq!(b.rows, a.rows, "{threads} threads over one file, {q:?}");
                assert_eq!(
                    (b.ops, b.total_ns, b.corrupt),
                    (a.ops, a.total_ns, a.corrupt)
                );
            }
        }
        assert!(
            parts_of(&inputs(&one).unwrap()).len() > 10,
            "the file is cut into pieces"
        );
        let _ = std::fs::remove_file(one);
        assert_eq!(workers(0, 1), 1);
        assert_eq!(workers(2, 100), 2);
        assert_eq!(workers(8, 3), 3);
        let _ = std::fs::remove_dir_all(root);
    }
}
