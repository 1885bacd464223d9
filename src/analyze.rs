//! The analysis engine behind `aclprof analyze` (docs/design.md, "Analysis"): reads raw
//! op records — a result directory's per-stream files, a folder of result directories, a
//! file of records a subscription wrote, or standard input — and ranks ops or groups of
//! ops by time. One pass; memory holds one group per distinct key (or the top N ops), never
//! one entry per op.

use crate::error::{err, Error, Result, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM};
use crate::formats::record::{self, View, RECORD_SIZE};
use std::collections::{BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One row of the result: a group, or (without grouping) one op.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// The group's key, or the op's name.
    pub key: String,
    /// For single ops: type, device, stream, model and start (ns).
    pub op: Option<(String, u32, u32, u32, u64)>,
    /// When the row's first op started (ns): the op's start, or its group's earliest.
    pub first_ns: u64,
    /// What turns a single op's start into epoch time ([`Origin::wall_offset`]): the table
    /// shows it as op_summary does.
    pub wall_offset: i128,
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
    /// Device memory the row's ops allocated (`--order-by memory` on a run that recorded
    /// memory): the Memory column shows it instead of the bytes moved.
    pub allocated: Option<u64>,
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
    /// The per-op listing's own columns.
    OpType,
    Device,
    Stream,
    Model,
}

/// The order a query asks for: "+col" ascending (MegEngine's profile_analyze), "-col"
/// descending; by default numbers descending, and start, names and ids ascending.
fn order_of(q: &Query) -> Result<(Col, bool)> {
    let asked = q.order_by.as_deref().unwrap_or("time");
    let (dir, col) = match (asked.strip_prefix('+'), asked.strip_prefix('-')) {
        (Some(c), _) => (Some(true), c),
        (_, Some(c)) => (Some(false), c),
        _ => (None, asked),
    };
    // A column as the table heads it ("Mean(us)", "Share(%)") or as a word ("mean").
    let col = col
        .split('(')
        .next()
        .unwrap_or(col)
        .trim()
        .to_ascii_lowercase();
    let key_title = q.by.map_or("name", |k| k.title()).to_ascii_lowercase();
    if q.by.is_none() && col == "count" {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "--order-by \"count\": every op counts 1; order groups by it with --aggregate-by",
        );
    }
    let col = match col.as_str() {
        "time" | "duration" => Col::Time,
        "count" => Col::Count,
        "total" | "sum" | "share" | "cumulative" => Col::Total,
        "mean" => Col::Mean,
        "min" => Col::Min,
        "max" => Col::Max,
        "start" => Col::Start,
        "computation" => Col::Computation,
        "flops" => Col::Flops,
        "memory" => Col::Memory,
        "bandwidth" => Col::Bandwidth,
        c if c == key_title
            || c == "name"
            || c == "key"
            || (q.by.is_some() && Key::parse(c) == q.by) =>
        {
            Col::Key
        }
        "type" | "op_type" if q.by.is_none() => Col::OpType,
        "device" if q.by.is_none() => Col::Device,
        "stream" if q.by.is_none() => Col::Stream,
        "model" if q.by.is_none() => Col::Model,
        other => {
            let why = if matches!(other, "type" | "op_type" | "device" | "stream" | "model") {
                "a column of the per-op listing; with --aggregate-by, order by the key"
            } else {
                "not a column (time, count, total, share, mean, min, max, start, name, \
                 computation, flops, memory, bandwidth, the --aggregate-by key, or without it \
                 type, device, stream and model; a heading as the table writes it, such as \
                 \"Mean(us)\", works too)"
            };
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("--order-by {other:?}: {why}"),
            );
        }
    };
    let by_default = matches!(
        col,
        Col::Start | Col::Key | Col::OpType | Col::Device | Col::Stream | Col::Model
    );
    Ok((col, dir.unwrap_or(by_default)))
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
    /// Names, in reverse byte order.
    NameDesc(Vec<u8>),
}

impl Rank {
    fn of(col: Col, ascending: bool, v: &View<'_>, cost: &Cost) -> Rank {
        let text = |b: Option<&[u8]>| {
            let b = b.unwrap_or_default().to_vec();
            if ascending {
                Rank::Name(std::cmp::Reverse(b))
            } else {
                Rank::NameDesc(b)
            }
        };
        let n = match col {
            Col::Start => Some(v.start()),
            Col::Key => return text(v.name()),
            Col::OpType => return text(v.op_type()),
            Col::Device => Some(v.dev_id().into()),
            Col::Stream => Some(v.stream_id().into()),
            Col::Model => Some(v.model_id().into()),
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
    /// Bytes of device memory allocated, when the run recorded them and they are asked for.
    allocated: Option<u64>,
}

impl Cost {
    fn of(m: Option<&crate::opmeta::OpMeta>, allocated: Option<u64>) -> Cost {
        Cost {
            flops: m.and_then(|m| m.flops),
            bytes: m.and_then(|m| m.bytes),
            allocated,
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
        self.allocated = sum(self.allocated, op.allocated);
    }

    /// A cost column's value over `ns` of device time; rates per second.
    fn value(&self, col: Col, ns: u64) -> Option<f64> {
        let rate = |x: u64| x as f64 * 1e9 / ns.max(1) as f64;
        match col {
            Col::Computation => self.flops.map(|f| f as f64),
            Col::Flops => self.flops.map(rate),
            Col::Memory => self.allocated.or(self.bytes).map(|b| b as f64),
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
    /// The start of its first op (ns), which orders groups by `start`.
    first: u64,
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
    wall_offset: i128,
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
    /// The epoch minus the records' clock (ns): a result directory's records are stamped
    /// on the monotonic clock and its session pairs that with the wall clock; 0 for inputs
    /// whose records are already in epoch time (a database, an imported one) or that carry
    /// no session (a file of records, standard input).
    pub wall_offset: i128,
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

/// Whether the result directories at `path` hold any op record (their files' sizes, not
/// read); `Err` says, in one line, why `path` is not a run.
pub fn holds_records(path: &Path) -> Result<bool> {
    Ok(expected_records(&inputs(path)?) > 0)
}

/// Why the result directories at `path` hold no op record, in one line.
pub fn why_no_records(path: &Path) -> String {
    no_records(path, 0)
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
            wall_offset,
            ..
        } => Origin {
            input: i,
            rank: *rank,
            steps: Some(steps),
            fp: fp.as_deref(),
            bp: bp.as_deref(),
            metas: Some(metas),
            wall_offset: *wall_offset,
        },
        _ => Origin {
            input: i,
            rank: None,
            steps: None,
            fp: None,
            bp: None,
            metas: None,
            wall_offset: 0,
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
    crate::sim::import::db_tasks(p, &mut |t| {
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
        _ if head.starts_with(crate::formats::layout::SQLITE_MAGIC) => {
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
                        first,
                    },
                )| Row {
                    first_ns: first,
                    key: String::from_utf8_lossy(k.split(|&b| b == SHAPE_SEP).next().unwrap_or(&k))
                        .into_owned(),
                    flops: cost.flops,
                    bytes: cost.bytes,
                    allocated: cost.allocated,
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
                first_ns: k.start,
                wall_offset: k.wall_offset,
                count: 1,
                time: k.dur as f64,
                total_ns: k.dur,
                min_ns: k.dur,
                max_ns: k.dur,
                flops: k.cost.flops,
                bytes: k.cost.bytes,
                allocated: k.cost.allocated,
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
        // Groups in the order of their first op; ties (and ops) then by key, so the order
        // never depends on how the groups were gathered.
        Col::Start => rows.sort_by(|a, b| {
            let o = a.first_ns.cmp(&b.first_ns);
            if ascending { o } else { o.reverse() }.then_with(|| a.key.cmp(&b.key))
        }),
        Col::Computation | Col::Flops | Col::Memory | Col::Bandwidth => {
            // Rows whose cost is unknown come last either way.
            let v = |r: &Row| {
                let c = Cost {
                    flops: r.flops,
                    bytes: r.bytes,
                    allocated: r.allocated,
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
            rows.sort_by(|a, b| {
                let o = match (a.key.parse::<u64>(), b.key.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    _ => a.key.cmp(&b.key),
                };
                if ascending {
                    o
                } else {
                    o.reverse()
                }
            })
        }
        // Refused with --aggregate-by (order_of): only single ops have them.
        Col::OpType | Col::Device | Col::Stream | Col::Model => {}
    }
}

pub mod comm;
mod discover;
pub mod memory;
mod options;
mod query;
pub use options::{Choices, Options};
pub use query::*;
mod render;
mod scan;
pub mod verdict;

pub use discover::*;
pub use render::*;
use scan::*;

#[cfg(test)]
mod tests;
