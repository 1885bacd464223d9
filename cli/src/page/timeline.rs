//! The report's own timeline: every track of the run's Perfetto traces, read back and laid
//! out for the page's canvas (`timeline.js`), so the timeline opens from disk with no
//! network and no second tool.
//!
//! The export writes each result directory's `msprof_*.pftrace` from the same calls as its
//! JSON timeline, so reading the trace back gives exactly the tracks the other viewers show:
//! device streams, HCCL, Overlap Analysis, host threads and their API calls, msproftx, the
//! step trace, the data pipeline and every counter. The reader knows only the messages the
//! writer emits (their field numbers come from the writer's module).
//!
//! What the page loads (docs/design.md, "The report's timeline"):
//! - `index.js`: the tracks, their rows (a track's slices are stacked into rows in which none
//!   overlap), the names and argument lists (each stored once), a coarse coverage of every
//!   row (drawn until its slices arrive), and which chunk holds which piece of which row;
//! - `chunk-N.js`: pieces of rows, at most [`PIECE`] slices each, as base64 columns (starts
//!   as f64; durations as u32 where they fit, else f64; name, arguments and, where any slice
//!   has one, task id as u32; times and values per counter sample as f64).
//!
//! Pages opened from disk may load scripts beside them but not fetch files, hence scripts.

use crate::interrupt::Outputs;
use aclprof::error::*;
use aclprof::filemode::pftrace as pf;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Our own names and ids: no hash-flooding defence needed.
type FxMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

/// Slices (or counter samples) in one piece of a row, and at least this many per chunk.
pub const PIECE: usize = 1 << 16;

/// Columns of a row's coarse coverage in the index.
const OVERVIEW_BINS: usize = 1024;

/// A slice's task id when it has none.
const NO_TASK: u32 = u32::MAX;

/// A piece's flag: its durations are u32 (else f64).
const DURATIONS_U32: u32 = 1;
/// A piece's flag: it has a column of task ids.
const TASK_IDS: u32 = 2;

/// Bytes reserved per slice of a piece: its start and duration (f64 at most), name,
/// arguments and task id (u32).
const PIECE_BYTES: usize = 28;

/// The kind of the tracks of a device's tasks, which the page draws flows from.
const KIND_DEVICE: &str = "d";
/// The kind of the tracks of host API calls, which the page draws flows to.
const KIND_API: &str = "a";

/// A slice as read back: times in the trace's wall-clock nanoseconds.
#[derive(Clone, Copy)]
struct Slice {
    start: u64,
    end: u64,
    name: u32,
    args: u32,
    /// Its `Task Id` argument ([`NO_TASK`] when it has none): the one argument that differs
    /// from slice to slice, so it is a column rather than part of the shared argument list.
    task: u32,
}

#[derive(Default)]
struct Track {
    parent: Option<u64>,
    name: String,
    /// A process track: (pid, name, label).
    process: Option<(u64, String, String)>,
    counter: bool,
    rank: u64,
    slices: Vec<Slice>,
    samples: Vec<(u64, f64)>,
}

/// Strings (or argument lists as JSON) each stored once, by id.
#[derive(Default)]
struct Table {
    ids: HashMap<String, u32, rustc_hash::FxBuildHasher>,
    list: Vec<String>,
}

impl Table {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.ids.insert(s.to_owned(), i);
        self.list.push(s.to_owned());
        i
    }
}

/// A protobuf field's value, as the writer's messages use them.
enum V<'a> {
    U(u64),
    B(&'a [u8]),
    F64(f64),
}

/// The fields of one message, read as they are iterated; iteration stops at the end or at
/// the first malformed byte ([`Fields::bad`] tells which).
struct Fields<'a> {
    b: &'a [u8],
    bad: bool,
}

fn fields(b: &[u8]) -> Fields<'_> {
    Fields { b, bad: false }
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for s in (0..64).step_by(7) {
            let (&x, rest) = self.b.split_first()?;
            self.b = rest;
            v |= u64::from(x & 0x7f) << s;
            if x & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn field(&mut self) -> Option<(u32, V<'a>)> {
        let key = self.varint()?;
        let field = (key >> 3) as u32;
        let v = match key & 7 {
            0 => V::U(self.varint()?),
            1 => {
                let (x, rest) = self.b.split_at_checked(8)?;
                self.b = rest;
                V::F64(f64::from_le_bytes(x.try_into().ok()?))
            }
            2 => {
                let n = usize::try_from(self.varint()?).ok()?;
                let (x, rest) = self.b.split_at_checked(n)?;
                self.b = rest;
                V::B(x)
            }
            5 => {
                self.b = self.b.get(4..)?;
                V::U(0)
            }
            _ => return None,
        };
        Some((field, v))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, V<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.b.is_empty() || self.bad {
            return None;
        }
        let f = self.field();
        self.bad = f.is_none();
        f
    }
}

/// What one trace file holds, its strings resolved.
#[derive(Default)]
struct Trace {
    tracks: BTreeMap<u64, Track>,
}

/// One argument's value, as the details panel shows it.
enum ArgValue {
    U(u64),
    S(String),
}

/// The trace's interned strings by iid: event names (as ids in the shared table), and
/// annotation names and string values.
#[derive(Default)]
struct Interned {
    events: FxMap<u64, u32>,
    ann_names: FxMap<u64, String>,
    ann_strings: FxMap<u64, String>,
}

impl Interned {
    /// Forgets every string (the sequence's incremental state was cleared).
    fn clear(&mut self) {
        self.events.clear();
        self.ann_names.clear();
        self.ann_strings.clear();
    }

    /// Adds the entries of interned data `d`, event names into `names`.
    fn add(&mut self, d: &[u8], names: &mut Table) {
        for (table, v) in fields(d) {
            let V::B(e) = v else { continue };
            let (mut iid, mut name) = (0, String::new());
            for (k, v) in fields(e) {
                match (k, v) {
                    (pf::ENTRY_IID, V::U(i)) => iid = i,
                    (pf::ENTRY_NAME, V::B(s)) => name = String::from_utf8_lossy(s).into_owned(),
                    _ => {}
                }
            }
            match table {
                pf::ID_EVENT_NAMES => self.events.insert(iid, names.id(&name)),
                pf::ID_ANNOTATION_NAMES => self.ann_names.insert(iid, name).map(|_| 0),
                pf::ID_ANNOTATION_STRINGS => self.ann_strings.insert(iid, name).map(|_| 0),
                _ => None,
            };
        }
    }
}

/// Open slices per track: (start, name, args, task).
type Open = FxMap<u64, Vec<(u64, u32, u32, u32)>>;

/// Reads trace `path` into `trace`, names and argument lists into the shared tables.
fn read(path: &Path, names: &mut Table, args: &mut Table) -> Result<Trace> {
    let bytes = std::fs::read(path)
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())))?;
    let bad = || {
        err(
            ACL_ERROR_INVALID_FILE,
            format!("{}: not a trace aclprof wrote", path.display()),
        )
    };
    let mut trace = Trace::default();
    let mut interned = Interned::default();
    let mut key = String::new();
    let mut open = Open::default();
    let mut packets = fields(&bytes);
    for (f, v) in packets.by_ref() {
        let (pf::TRACE_PACKET, V::B(p)) = (f, v) else {
            continue;
        };
        let Some((ts, event)) = packet(p, &mut trace, &mut interned, names) else {
            return bad();
        };
        let Some(e) = event else { continue };
        let e = track_event(e, names, &interned);
        let track = e.track;
        match e.kind {
            pf::TYPE_SLICE_BEGIN => {
                let (a, task) = arg_list(e.list, args, &mut key);
                let n = e.name.unwrap_or_else(|| names.id(""));
                open.entry(track).or_default().push((ts, n, a, task));
            }
            pf::TYPE_SLICE_END => {
                if let Some((start, name, args, task)) = open.get_mut(&track).and_then(Vec::pop) {
                    let end = ts.max(start);
                    trace.tracks.entry(track).or_default().slices.push(Slice {
                        start,
                        end,
                        name,
                        args,
                        task,
                    });
                }
            }
            pf::TYPE_COUNTER => {
                if let Some(v) = e.value {
                    trace.tracks.entry(track).or_default().samples.push((ts, v));
                }
            }
            _ => {}
        }
    }
    if packets.bad {
        return bad();
    }
    Ok(trace)
}

/// Reads packet `p`: its interned data into `interned` and its track descriptors into
/// `trace`. Returns its timestamp and its track event, if it has one (None: malformed).
fn packet<'a>(
    p: &'a [u8],
    trace: &mut Trace,
    interned: &mut Interned,
    names: &mut Table,
) -> Option<(u64, Option<&'a [u8]>)> {
    let mut ts = 0;
    let mut event = None;
    let mut p = fields(p);
    for (f, v) in p.by_ref() {
        match (f, v) {
            (pf::PKT_TIMESTAMP, V::U(t)) => ts = t,
            (pf::PKT_SEQUENCE_FLAGS, V::U(fl)) if fl & pf::SEQ_INCREMENTAL_STATE_CLEARED != 0 => {
                interned.clear();
            }
            (pf::PKT_INTERNED_DATA, V::B(d)) => interned.add(d, names),
            (pf::PKT_TRACK_DESCRIPTOR, V::B(d)) => {
                let (uuid, mut t) = track_descriptor(d);
                let e = trace.tracks.entry(uuid).or_default();
                (t.slices, t.samples) = (
                    std::mem::take(&mut e.slices),
                    std::mem::take(&mut e.samples),
                );
                *e = t;
            }
            (pf::PKT_TRACK_EVENT, V::B(e)) => event = Some(e),
            _ => {}
        }
    }
    if p.bad {
        return None;
    }
    Some((ts, event))
}

/// Reads track descriptor `d`: its uuid, and the track it describes (with nothing on it).
fn track_descriptor(d: &[u8]) -> (u64, Track) {
    let mut t = Track::default();
    let mut uuid = 0;
    for (k, v) in fields(d) {
        match (k, v) {
            (pf::TD_UUID, V::U(u)) => uuid = u,
            (pf::TD_NAME, V::B(s)) => t.name = String::from_utf8_lossy(s).into(),
            (pf::TD_PARENT, V::U(u)) => t.parent = Some(u),
            (pf::TD_COUNTER, _) => t.counter = true,
            (pf::TD_SIBLING_RANK, V::U(r)) => t.rank = r,
            (pf::TD_PROCESS, V::B(pd)) => t.process = Some(process_descriptor(pd)),
            _ => {}
        }
    }
    (uuid, t)
}

/// Reads process descriptor `pd`: (pid, name, label).
fn process_descriptor(pd: &[u8]) -> (u64, String, String) {
    let mut p = (0, String::new(), String::new());
    for (k, v) in fields(pd) {
        match (k, v) {
            (pf::PD_PID, V::U(x)) => p.0 = x,
            (pf::PD_NAME, V::B(s)) => p.1 = String::from_utf8_lossy(s).into(),
            (pf::PD_LABELS, V::B(s)) => p.2 = String::from_utf8_lossy(s).into(),
            _ => {}
        }
    }
    p
}

/// A track event as read.
struct Event {
    kind: u64,
    track: u64,
    /// Its name's id in the shared table.
    name: Option<u32>,
    /// A counter's value.
    value: Option<f64>,
    /// Its arguments (debug annotations), in order.
    list: Vec<(String, ArgValue)>,
}

/// Reads track event `e`, its name into `names`.
fn track_event(e: &[u8], names: &mut Table, interned: &Interned) -> Event {
    let mut ev = Event {
        kind: 0,
        track: 0,
        name: None,
        value: None,
        list: Vec::new(),
    };
    for (k, v) in fields(e) {
        match (k, v) {
            (pf::TE_TYPE, V::U(x)) => ev.kind = x,
            (pf::TE_TRACK, V::U(x)) => ev.track = x,
            (pf::TE_NAME_IID, V::U(i)) => ev.name = interned.events.get(&i).copied(),
            (pf::TE_NAME, V::B(s)) => ev.name = Some(names.id(&String::from_utf8_lossy(s))),
            (pf::TE_COUNTER_VALUE, V::U(x)) => ev.value = Some(x as f64),
            (pf::TE_DOUBLE_COUNTER_VALUE, V::F64(x)) => ev.value = Some(x),
            (pf::TE_ANNOTATION, V::B(a)) => ev.list.push(annotation(a, interned)),
            _ => {}
        }
    }
    ev
}

/// Reads debug annotation `a`: (key, value).
fn annotation(a: &[u8], interned: &Interned) -> (String, ArgValue) {
    let (mut key, mut val) = (String::new(), ArgValue::U(0));
    for (k, v) in fields(a) {
        match (k, v) {
            (pf::DA_NAME_IID, V::U(i)) => {
                key = interned.ann_names.get(&i).cloned().unwrap_or_default()
            }
            (pf::DA_NAME, V::B(s)) => key = String::from_utf8_lossy(s).into(),
            (pf::DA_UINT, V::U(x)) => val = ArgValue::U(x),
            (pf::DA_STRING_IID, V::U(i)) => {
                val = ArgValue::S(interned.ann_strings.get(&i).cloned().unwrap_or_default())
            }
            (pf::DA_STRING, V::B(s)) => val = ArgValue::S(String::from_utf8_lossy(s).into()),
            _ => {}
        }
    }
    (key, val)
}

/// A slice's arguments `list` as JSON, [[key, value], ...], built in `key`, without its
/// `Task Id`: (the list's id in `args`, the task id or [`NO_TASK`]).
fn arg_list(list: Vec<(String, ArgValue)>, args: &mut Table, key: &mut String) -> (u32, u32) {
    let mut task = NO_TASK;
    key.clear();
    key.push('[');
    for (k, v) in list {
        if let ArgValue::U(x) = v {
            if k == "Task Id" {
                task = x.min(u64::from(NO_TASK) - 1) as u32;
                continue;
            }
        }
        if key.len() > 1 {
            key.push(',');
        }
        key.push('[');
        key.push_str(&serde_json::Value::from(k).to_string());
        key.push(',');
        match v {
            ArgValue::U(x) => {
                let _ = write!(key, "{x}");
            }
            ArgValue::S(s) => key.push_str(&serde_json::Value::from(s).to_string()),
        }
        key.push(']');
    }
    key.push(']');
    (args.id(key), task)
}

/// A row of the page's timeline: one track's slices that do not overlap, or its counter.
struct Row {
    track: usize,
    counter: bool,
    slices: Vec<Slice>,
    samples: Vec<(u64, f64)>,
}

/// Stacks `slices` into rows in which none overlap (a slice goes to the first row whose last
/// slice ended by its start, so nested calls sit under their callers).
fn stack(mut slices: Vec<Slice>) -> Vec<Vec<Slice>> {
    slices.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut rows: Vec<Vec<Slice>> = Vec::new();
    for s in slices {
        match rows
            .iter_mut()
            .find(|r| r.last().is_none_or(|l| l.end <= s.start))
        {
            Some(r) => r.push(s),
            None => rows.push(vec![s]),
        }
    }
    rows
}

/// Standard base64 of `b`.
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            o.push(if i <= c.len() {
                A[(n >> shift) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    o
}

/// What [`write`] laid out.
#[derive(Default)]
pub struct Laid {
    pub slices: usize,
    pub tracks: usize,
}

/// Reads the traces (each with the label its processes carry when there are several: a
/// rank) and writes the page's timeline into directory `dir`. The index carries where the
/// first device task starts: the op tables count time from the run's first op, so the page
/// turns a table's start into a timeline position through it.
/// Writes the timeline of `traces` to become the directory `dir` (replacing what was there)
/// when `outs` are committed.
pub fn write(traces: &[(String, PathBuf)], dir: &Path, outs: &mut Outputs) -> Result<Laid> {
    let staged = crate::interrupt::Staged::beside(dir);
    let laid = write_into(traces, staged.path())?;
    outs.add(staged, dir);
    Ok(laid)
}

fn write_into(traces: &[(String, PathBuf)], dir: &Path) -> Result<Laid> {
    let (mut names, mut args) = (Table::default(), Table::default());
    let mut read_all = Vec::new();
    for (label, p) in traces {
        read_all.push((label, read(p, &mut names, &mut args)?));
    }
    let mut layout = Layout::default();
    for (trace, (label, t)) in read_all.into_iter().enumerate() {
        layout.add_trace(trace, label, t);
    }
    let Layout { metas, rows } = layout;
    let (t0, t1) = span(&rows);
    // The first device task, where the op tables' time 0 is.
    let first_task = rows
        .iter()
        .filter(|r| metas[r.track].kind == KIND_DEVICE)
        .filter_map(|r| r.slices.first().map(|s| s.start))
        .min()
        .unwrap_or(t0);

    std::fs::create_dir_all(dir)
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", dir.display())))?;
    // Pieces, packed into chunks in row order.
    let mut chunks = Chunks::default();
    let mut row_json = Vec::new();
    let mut laid = Laid {
        // Tracks with something on them (a process may name tracks it never used).
        tracks: rows
            .iter()
            .map(|r| r.track)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        ..Default::default()
    };
    for (ri, r) in rows.iter().enumerate() {
        laid.slices += if r.counter { 0 } else { r.slices.len() };
        row_json.push(lay_row(ri, r, (t0, t1), &mut chunks));
    }
    let chunks = chunks.finish();
    for (i, c) in chunks.iter().enumerate() {
        let p = dir.join(format!("chunk-{i}.js"));
        write_file(&p, format!("aclprofTimeline.chunk({i},[{c}]);\n"))?;
    }
    let tracks: Vec<serde_json::Value> = metas
        .iter()
        .map(|m| {
            serde_json::json!({"p": m.process, "l": m.label, "n": m.name, "c": m.counter,
                "k": m.kind, "t": m.trace})
        })
        .collect();
    let index = serde_json::json!({
        "span": t1 - t0,
        "firstTask": first_task - t0,
        "wall0": t0,
        "bins": OVERVIEW_BINS,
        "chunks": chunks.len(),
        "names": names.list,
        "args": args.list,
        "tracks": tracks,
        "rows": row_json,
    });
    write_file(
        &dir.join("index.js"),
        format!(
            "aclprofTimeline.index({});\n",
            index.to_string().replace("</", "<\\/")
        ),
    )?;
    Ok(laid)
}

/// Writes `text` to file `p`.
fn write_file(p: &Path, text: String) -> Result<()> {
    std::fs::write(p, text)
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", p.display())))
}

/// A track of the page's timeline.
struct Meta {
    process: String,
    label: String,
    name: String,
    counter: bool,
    /// The trace it came from (its rank, when there are several).
    trace: usize,
    /// What the page draws flows between: [`KIND_DEVICE`], [`KIND_API`] or neither.
    kind: &'static str,
}

/// Tracks in the page's order, and their rows: each trace's processes by their sort index,
/// then each process's children by their rank among siblings.
#[derive(Default)]
struct Layout {
    metas: Vec<Meta>,
    rows: Vec<Row>,
}

impl Layout {
    /// Adds the processes of `t`, trace number `trace` labelled `label`.
    fn add_trace(&mut self, trace: usize, label: &str, mut t: Trace) {
        let mut procs: Vec<(u64, u64)> = t
            .tracks
            .iter()
            .filter_map(|(&u, tr)| tr.process.as_ref().map(|p| (u, p.0)))
            .collect();
        procs.sort_by_key(|&(u, pid)| (aclprof::filemode::export::process_order(pid), pid, u));
        for (pu, _) in procs {
            self.add_process(&mut t, trace, label, pu);
        }
    }

    /// Adds process track `pu` of `t` and its children, taking their slices and samples.
    fn add_process(&mut self, t: &mut Trace, trace: usize, label: &str, pu: u64) {
        let (pname, plabel) = {
            let p = t.tracks[&pu].process.clone().unwrap_or_default();
            (p.1, p.2)
        };
        use aclprof::formats::timeline::{CANN_PROCESS, HARDWARE_PROCESS, HCCL_PROCESS};
        let kind = match pname.as_str() {
            HARDWARE_PROCESS | HCCL_PROCESS => KIND_DEVICE,
            CANN_PROCESS => KIND_API,
            _ => "",
        };
        let pname = if label.is_empty() {
            pname
        } else {
            format!("{label} {pname}")
        };
        let mut kids: Vec<u64> = t
            .tracks
            .iter()
            .filter(|(_, tr)| tr.parent == Some(pu))
            .map(|(&u, _)| u)
            .collect();
        kids.sort_by_key(|u| (t.tracks[u].counter, t.tracks[u].rank, *u));
        // Slices put on the process track itself come first.
        for u in std::iter::once(pu).chain(kids) {
            let Some(tr) = t.tracks.get_mut(&u) else {
                continue;
            };
            if tr.slices.is_empty() && tr.samples.is_empty() && u == pu {
                continue;
            }
            let idx = self.metas.len();
            self.metas.push(Meta {
                trace,
                kind,
                process: pname.clone(),
                label: plabel.clone(),
                name: if u == pu {
                    pname.clone()
                } else {
                    tr.name.clone()
                },
                counter: tr.counter,
            });
            self.add_rows(idx, tr);
        }
    }

    /// Adds the rows of track number `idx`, taking the slices or samples of `tr`.
    fn add_rows(&mut self, idx: usize, tr: &mut Track) {
        if tr.counter {
            let mut samples = std::mem::take(&mut tr.samples);
            samples.sort_by_key(|s| s.0);
            self.rows.push(Row {
                track: idx,
                counter: true,
                slices: Vec::new(),
                samples,
            });
        } else {
            for r in stack(std::mem::take(&mut tr.slices)) {
                self.rows.push(Row {
                    track: idx,
                    counter: false,
                    slices: r,
                    samples: Vec::new(),
                });
            }
        }
    }
}

/// The span of `rows`: the first start to the last end of any row (a row's starts rise),
/// at least 1 ns long.
fn span(rows: &[Row]) -> (u64, u64) {
    let (t0, t1) = rows.iter().fold((u64::MAX, 0), |(lo, hi), r| {
        let first = r.slices.first().map(|s| s.start);
        let last = r.slices.iter().map(|s| s.end).max();
        let (first, last) = (
            first.or(r.samples.first().map(|s| s.0)),
            last.or(r.samples.last().map(|s| s.0)),
        );
        (
            first.map_or(lo, |f| lo.min(f)),
            last.map_or(hi, |l| hi.max(l)),
        )
    });
    let t0 = if t0 == u64::MAX { 0 } else { t0 };
    (t0, t1.max(t0 + 1))
}

/// Pieces packed into chunks in row order, a chunk closed once it holds [`PIECE`] slices.
#[derive(Default)]
struct Chunks {
    done: Vec<String>,
    chunk: String,
    in_chunk: usize,
}

impl Chunks {
    /// Adds piece `pi` of row `ri`, `n` slices as bytes `b`; returns its chunk's number.
    fn add(&mut self, ri: usize, pi: usize, b: &[u8], n: usize) -> usize {
        if self.in_chunk > 0 {
            self.chunk.push(',');
        }
        let _ = write!(self.chunk, "[{ri},{pi},\"{}\"]", base64(b));
        self.in_chunk += n;
        let at = self.done.len();
        if self.in_chunk >= PIECE {
            self.done.push(std::mem::take(&mut self.chunk));
            self.in_chunk = 0;
        }
        at
    }

    /// The chunks, the last one closed.
    fn finish(mut self) -> Vec<String> {
        if self.in_chunk > 0 {
            self.done.push(self.chunk);
        }
        self.done
    }
}

/// Lays out row number `ri` in pieces added to `chunks`, with its coarse coverage of the
/// span `(t0, t1)`: the row's entry in the index.
fn lay_row(ri: usize, r: &Row, (t0, t1): (u64, u64), chunks: &mut Chunks) -> serde_json::Value {
    let n = if r.counter {
        r.samples.len()
    } else {
        r.slices.len()
    };
    let mut pieces = Vec::new();
    let mut cover = vec![0f64; OVERVIEW_BINS];
    let per_bin = (t1 - t0) as f64 / OVERVIEW_BINS as f64;
    for (pi, from) in (0..n.max(1)).step_by(PIECE).enumerate() {
        let to = (from + PIECE).min(n);
        let (b, flags) = if r.counter {
            (counter_piece(&r.samples[from..to], t0), 0)
        } else {
            slice_piece(&r.slices[from..to], t0, per_bin, &mut cover)
        };
        if to == from {
            break;
        }
        let c = chunks.add(ri, pi, &b, to - from);
        pieces.push(serde_json::json!([c, to - from, flags]));
    }
    let overview: Vec<u8> = cover
        .iter()
        .map(|c| (c * 255.0).round().min(255.0) as u8)
        .collect();
    let max = r.samples.iter().map(|s| s.1).fold(0f64, f64::max);
    serde_json::json!({
        "t": r.track,
        "c": r.counter,
        "n": n,
        "max": max,
        "pieces": pieces,
        "cover": if r.counter { String::new() } else { base64(&overview) },
    })
}

/// A piece of counter samples `s` as columns: times from `t0`, then values (f64).
fn counter_piece(s: &[(u64, f64)], t0: u64) -> Vec<u8> {
    let rel = |t: u64| (t - t0) as f64;
    let mut b: Vec<u8> = Vec::with_capacity(s.len() * PIECE_BYTES);
    s.iter().for_each(|x| b.extend(rel(x.0).to_le_bytes()));
    s.iter().for_each(|x| b.extend(x.1.to_le_bytes()));
    b
}

/// A piece of slices `s` as columns (starts from `t0`, durations, names, arguments and task
/// ids) and its flags, adding each slice's share of the bins of `per_bin` ns to `cover`.
fn slice_piece(s: &[Slice], t0: u64, per_bin: f64, cover: &mut [f64]) -> (Vec<u8>, u32) {
    let rel = |t: u64| (t - t0) as f64;
    let mut b: Vec<u8> = Vec::with_capacity(s.len() * PIECE_BYTES);
    let mut flags = 0;
    s.iter().for_each(|x| b.extend(rel(x.start).to_le_bytes()));
    // Durations as u32 ns where every one fits, the task ids only where a slice has one: a
    // device's Overlap Analysis has none.
    if s.iter().all(|x| x.end - x.start <= u64::from(u32::MAX)) {
        flags |= DURATIONS_U32;
        s.iter()
            .for_each(|x| b.extend(((x.end - x.start) as u32).to_le_bytes()));
    } else {
        s.iter()
            .for_each(|x| b.extend(((x.end - x.start) as f64).to_le_bytes()));
    }
    s.iter().for_each(|x| b.extend(x.name.to_le_bytes()));
    s.iter().for_each(|x| b.extend(x.args.to_le_bytes()));
    if s.iter().any(|x| x.task != NO_TASK) {
        flags |= TASK_IDS;
        s.iter().for_each(|x| b.extend(x.task.to_le_bytes()));
    }
    for x in s {
        // Each bin's share covered, for the coarse view.
        let (a, z) = (rel(x.start) / per_bin, rel(x.end) / per_bin);
        let mut i = a as usize;
        while i < OVERVIEW_BINS && (i as f64) < z {
            let lo = a.max(i as f64);
            let hi = z.min(i as f64 + 1.0);
            cover[i] += (hi - lo).max(0.0);
            i += 1;
        }
    }
    (b, flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn overlapping_slices_stack_into_rows_and_nested_ones_sit_under_their_callers() {
        let s = |start, end| Slice {
            start,
            end,
            name: 0,
            args: 0,
            task: 0,
        };
        let rows = stack(vec![s(0, 10), s(2, 5), s(10, 12), s(4, 11), s(5, 6)]);
        let spans: Vec<Vec<(u64, u64)>> = rows
            .iter()
            .map(|r| r.iter().map(|x| (x.start, x.end)).collect())
            .collect();
        assert_eq!(
            spans,
            vec![vec![(0, 10), (10, 12)], vec![(2, 5), (5, 6)], vec![(4, 11)]]
        );
    }

    #[test]
    fn a_malformed_trace_is_refused_in_one_line() {
        let d = std::env::temp_dir().join(format!("aclprof-tl-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("bad.pftrace");
        std::fs::write(&p, [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1]).unwrap();
        let e = write(
            &[(String::new(), p)],
            &d.join("out"),
            &mut Outputs::default(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("not a trace aclprof wrote"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
