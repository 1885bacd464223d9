//! Turns a result directory's raw data into `mindstudio_profiler_output/` (docs/design.md,
//! "The result directory"): `op_summary`, `op_statistic`, `task_time`, `api_statistic` (ACL_PROF_ACL_API),
//! `step_trace` (ACL_PROF_TRAINING_TRACE) and the `msprof` timeline, all sharing one
//! 14-digit local-time stamp.
//!
//! One streaming pass: each device's per-stream raw files are merged in start-time order
//! (memory: one record per stream), host events are read line by line, and every output is
//! written as it goes. Aggregates are kept per op type / API name, never per op.

use super::db::{Db, DbBatch, DbInfo, DbOp};
use super::overlap::{Overlap, StepRow, Steps, Track};
use super::pftrace::{Arg, Pftrace};
use super::{HOST_LOG, SESSION_FILE};
use crate::agg::Agg;
use crate::clock::local_stamp;
use crate::error::*;
use crate::formats::raw::StreamReader;
use crate::formats::record::{View, RECORD_SIZE};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::io;
use crate::formats::text::*;

mod sinks;
use sinks::*;

use crate::formats::op_summary::*;

mod readme;
use readme::*;

mod host;
pub use host::*;

mod memory;

mod timeline;
pub use timeline::process_order;
use timeline::*;

/// What an export produced.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub stamp: String,
    /// Ops exported, per device.
    pub ops: BTreeMap<u32, u64>,
    /// Raw records skipped because their signature did not match (a torn tail after a crash).
    pub corrupt: u64,
}

/// The raw stream files of a device's `data` directory, in name order.
pub fn stream_files(dir: &Path) -> Result<Vec<PathBuf>> {
    io("cannot list", dir, crate::formats::raw::stream_files(dir))
}

use crate::formats::layout::is_output_name;

/// The stamp of the export already in `out`: that of its op_summary (every export writes
/// one), if there is exactly one.
fn previous_stamp(out: &Path) -> Option<String> {
    let mut found = fs::read_dir(out).ok()?.flatten().filter_map(|e| {
        let name = e.file_name().into_string().ok()?;
        let stamp = name.strip_prefix("op_summary_")?.strip_suffix(".csv")?;
        (stamp.len() == 14 && stamp.bytes().all(|b| b.is_ascii_digit())).then(|| stamp.to_string())
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// Creates (or truncates) an output file, refusing to follow a symbolic link: a link there
/// was not made by us, and writing through it could clobber anything.
pub(crate) fn create_output(p: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)
}

fn csv_writer(p: &Path) -> Result<csv::Writer<File>> {
    let f = io("cannot create", p, create_output(p))?;
    Ok(csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(f))
}

fn csv_err(p: &Path, e: csv::Error) -> Error {
    crate::error::file_error("cannot write", p, e)
}

/// The slice args an op's metadata gives: op_summary's six tensor columns, in its order and
/// with its names (Input Shapes … Output Formats).
const META_ARGS: &[&str] = OP_SUMMARY_HEADER.split_at(14).1.split_at(6).0;
const _: () = assert!(META_ARGS.len() == 6);

/// Whether an op is communication (HCCL): real runs give it its own track and leave it out
/// of op_statistic.
pub fn is_communication(task_type: &str, name: &str) -> bool {
    matches!(task_type, "COMMUNICATION" | "HCCL") || name.starts_with("hcom_")
}

/// What replayed ops' descriptions say (see the simulator): the export runs in the process
/// that replayed them, which still has the models loaded. Another process's directory, or
/// a record whose model was unloaded or replaced, gets what aclprof fills in.
/// A replayed model, and where each op_summary PMU column is among its PMU values.
type ReplayedModel = (
    std::sync::Arc<crate::sim::import::SimModel>,
    Vec<Option<usize>>,
);

struct Replays {
    same_process: bool,
    /// op_summary's PMU columns.
    columns: &'static [&'static str],
    /// Each model, with where each of `columns` is among its PMU values.
    models: HashMap<u32, Option<ReplayedModel>>,
}

impl Replays {
    fn new(session_pid: u64, columns: &'static [&'static str]) -> Replays {
        Replays {
            same_process: session_pid == std::process::id() as u64,
            columns,
            models: HashMap::new(),
        }
    }

    /// The replayed op a record came from, and where its PMU values are.
    fn op<'m>(
        &'m mut self,
        v: &View<'_>,
    ) -> Option<(&'m crate::sim::import::SimOp, &'m [Option<usize>])> {
        let i = (v.sim_op() as usize).checked_sub(1)?;
        if !self.same_process {
            return None;
        }
        let columns = self.columns;
        let (m, at) = self
            .models
            .entry(v.model_id())
            .or_insert_with(|| {
                let m = crate::registry::sim(v.model_id())?;
                let at = columns
                    .iter()
                    .map(|c| m.pmu_columns.iter().position(|h| h == c))
                    .collect();
                Some((m, at))
            })
            .as_ref()?;
        let op = m.ops.get(i)?;
        // The model id could name another model by now: the op must be the one recorded.
        let same = v.name()
            == Some(crate::formats::record::truncate_at_char(
                op.name.as_bytes(),
                crate::formats::record::MAX_NAME_LEN,
            ));
        same.then_some((op, at.as_slice()))
    }
}

/// op_summary and task_time, formatted by hand into one reused line buffer: the export
/// runs at millions of rows, and per-field allocation dominated its cost.
struct Rows {
    ops_path: PathBuf,
    ops_w: BufWriter<File>,
    tt_path: PathBuf,
    tt_w: BufWriter<File>,
    line: String,
    /// op_summary's PMU columns.
    pmu_count: usize,
}

/// One op as op_summary and task_time show it.
struct OpRow<'a> {
    dev: u32,
    model: u32,
    task: u64,
    stream: u32,
    name: &'a str,
    ty: &'a str,
    task_type: &'a str,
    /// Start in epoch ns.
    start: u64,
    dur: u64,
    /// Since the end of the device's ops before it (None for its first op).
    wait: Option<u64>,
    block_dim: u32,
    mix_block_dim: u32,
    /// The replayed op and where each PMU column is among its values.
    replayed: Option<(&'a crate::sim::import::SimOp, &'a [Option<usize>])>,
    /// The op's shapes, types, formats and cost, if the runtime or the replay gave them.
    meta: Option<&'a crate::opmeta::OpMeta>,
}

impl Rows {
    fn create(out: &Path, stamp: &str, pmu: &[&str]) -> Result<Rows> {
        let open = |p: &Path, header: &str| -> Result<BufWriter<File>> {
            let mut w =
                BufWriter::with_capacity(1 << 20, io("cannot create", p, create_output(p))?);
            io("cannot write", p, writeln!(w, "{header}"))?;
            Ok(w)
        };
        let ops_path = out.join(format!("op_summary_{stamp}.csv"));
        let tt_path = out.join(format!("task_time_{stamp}.csv"));
        Ok(Rows {
            ops_w: open(&ops_path, &[&OP_SUMMARY_HEADER[..], pmu].concat().join(","))?,
            tt_w: open(
                &tt_path,
                "Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)",
            )?,
            ops_path,
            tt_path,
            line: String::with_capacity(1024),
            pmu_count: pmu.len(),
        })
    }

    /// Writes `r`'s op_summary and task_time rows.
    fn write(&mut self, r: &OpRow) -> Result<()> {
        let line = &mut self.line;
        line.clear();
        for x in [r.dev as u64, r.model as u64, r.task, r.stream as u64] {
            push_u64(line, x, 1);
            line.push(',');
        }
        push_csv_field(line, r.name);
        line.push(',');
        push_csv_field(line, r.ty);
        line.push_str(",static,");
        push_csv_field(line, r.task_type);
        line.push(',');
        push_us(line, r.start, 3);
        line.push_str("\t,");
        push_us(line, r.dur, 3);
        line.push(',');
        match r.wait {
            None => line.push('0'),
            Some(w) => push_us(line, w, 6),
        }
        line.push(',');
        push_u64(line, r.block_dim as u64, 1);
        line.push(',');
        push_u64(line, r.mix_block_dim as u64, 1);
        // HF32 Eligible, Input Shapes/Data Types/Formats, Output Shapes/Data Types/Formats,
        // Context ID: what a replayed table or database said, else unknown. Unknown shapes
        // are blank, not N/A: msprof-analyze skips an op with blank shapes but parses "N/A"
        // as a shape and logs errors.
        line.push_str(",N/A");
        let meta = r.meta;
        for (k, unknown) in ["", "N/A", "N/A", "", "N/A", "N/A"].into_iter().enumerate() {
            line.push(',');
            match meta
                .map(|m| m.fields()[k])
                .filter(|v| !v.is_empty() && *v != "N/A")
            {
                Some(v) => push_csv_field(line, v),
                None => line.push_str(unknown),
            }
        }
        line.push_str(",N/A");
        // PMU values: a replayed table's, N/A where there is no hardware.
        for k in 0..self.pmu_count {
            let value = r
                .replayed
                .and_then(|(o, at)| o.pmu.get(at[k]?))
                .filter(|x| !x.is_empty());
            line.push(',');
            match value {
                Some(x) => push_csv_field(line, x),
                None => line.push_str("N/A"),
            }
        }
        line.push('\n');
        io(
            "cannot write",
            &self.ops_path,
            self.ops_w.write_all(line.as_bytes()),
        )?;
        line.clear();
        push_u64(line, r.dev as u64, 1);
        line.push(',');
        push_csv_field(line, r.name);
        line.push(',');
        push_csv_field(line, r.task_type);
        for x in [r.stream as u64, r.task] {
            line.push(',');
            push_u64(line, x, 1);
        }
        for t in [r.dur, r.start, r.start + r.dur] {
            line.push(',');
            push_us(line, t, 3);
        }
        line.push('\n');
        io(
            "cannot write",
            &self.tt_path,
            self.tt_w.write_all(line.as_bytes()),
        )
    }

    fn flush(&mut self) -> Result<()> {
        io("cannot write", &self.ops_path, self.ops_w.flush())?;
        io("cannot write", &self.tt_path, self.tt_w.flush())
    }
}

/// What the merge reads: the result directory's devices, the clock offset to epoch time,
/// and the replayed models.
struct Source<'a, 'b> {
    dir: &'a Path,
    devices: &'a [u32],
    offset: i128,
    replays: Replays,
    /// Called every 256 Ki ops with (ops merged, ops the stream files hold).
    progress: &'a mut dyn FnMut(u64, u64),
    /// The session's process id, and op_summary's PMU columns.
    pid: u64,
    pmu: &'static [&'static str],
    db: &'a mut DbSink<'b>,
}

/// Merges each device's stream files by start time into op_summary and task_time rows,
/// timeline ops and per-type statistics.
fn merge_devices(
    src: Source,
    summary: &mut Summary,
    rows: &mut Rows,
    sink: &mut TlSink,
    stats: &mut Vec<(u32, String, String, Agg)>,
) -> Result<()> {
    let Source {
        dir,
        devices,
        offset,
        mut replays,
        progress,
        pid,
        pmu,
        db,
    } = src;
    let mut expected = 0u64;
    for &dev in devices {
        for p in stream_files(&dir.join(format!("device_{dev}/data")))? {
            expected += fs::metadata(&p).map_or(0, |m| m.len()) / RECORD_SIZE as u64;
        }
    }
    let mut merged = 0u64;
    progress(0, expected);
    for &dev in devices {
        let mark = TlOp {
            kind: TlKind::Device,
            name_end: 0,
            type_end: 0,
            dev,
            stream: 0,
            model: 0,
            task: 0,
            start: 0,
            end: 0,
            comm: false,
            meta: None,
        };
        sink.push(mark, "", "").or_else(timeline_error)?;
        let data = dir.join(format!("device_{dev}/data"));
        let mut readers: Vec<StreamReader> = Vec::new();
        for p in stream_files(&data)? {
            let mut r = io("cannot open", &p, StreamReader::open(&p))?;
            if r.advance(&mut summary.corrupt) {
                readers.push(r);
            }
        }
        let mut heap: BinaryHeap<Reverse<(u64, u64, usize)>> = readers
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let v = r.current();
                Reverse((v.start(), v.end(), i))
            })
            .collect();
        let mut d = DeviceMerge {
            dev,
            pid,
            pmu,
            offset,
            metas: crate::opmeta::Lookup::new(&data, pid as u32),
            overlap: Overlap::default(),
            task_ids: HashMap::new(),
            by_type: HashMap::new(),
            prev_end: None,
            n: 0,
        };
        while let Some(Reverse((start, end, i))) = heap.pop() {
            let out = MergeOut { rows, sink, db };
            d.op(&readers[i].current(), start, end, &mut replays, out)?;
            merged += 1;
            if merged % (1 << 18) == 0 {
                progress(merged, expected);
            }
            if readers[i].advance(&mut summary.corrupt) {
                let v = readers[i].current();
                heap.push(Reverse((v.start(), v.end(), i)));
            }
        }
        d.finish(&data, db, summary, stats)?;
    }
    progress(merged, expected);
    Ok(())
}

fn timeline_error(e: std::io::Error) -> Result<()> {
    err(
        ACL_ERROR_INVALID_FILE,
        format!("cannot write the timeline: {e}"),
    )
}

/// Where the merge writes each op: op_summary and task_time, the timeline, the database.
struct MergeOut<'m, 'a, 's, 'b> {
    rows: &'m mut Rows,
    sink: &'m mut TlSink<'a, 's>,
    db: &'m mut DbSink<'b>,
}

/// One device's merge: what is known of its ops so far.
struct DeviceMerge {
    dev: u32,
    /// The session's process id, and op_summary's PMU columns.
    pid: u64,
    pmu: &'static [&'static str],
    /// Monotonic ns -> epoch ns.
    offset: i128,
    metas: crate::opmeta::Lookup,
    overlap: Overlap,
    /// Tasks counted per stream, and whether the stream's track is named yet.
    task_ids: HashMap<u32, (u64, bool)>,
    /// Type -> its task types (op_statistic's Core Type; usually one) and their totals.
    by_type: HashMap<String, Vec<(String, Agg)>>,
    prev_end: Option<u64>,
    n: u64,
}

impl DeviceMerge {
    fn wall(&self, t: u64) -> u64 {
        (t as i128 + self.offset).max(0) as u64
    }

    /// One op, the next by start time: its op_summary and task_time rows, its database
    /// rows and Overlap Analysis pieces, its timeline op and its type's statistics.
    fn op(
        &mut self,
        v: &View,
        start: u64,
        end: u64,
        replays: &mut Replays,
        out: MergeOut,
    ) -> Result<()> {
        let dev = self.dev;
        let replayed = replays.op(v);
        let sim = replayed.map(|r| r.0);
        let meta = self.metas.get(v.meta());
        // A replayed op's strings in full (a record holds 256 and 64 bytes of them).
        let (name, ty) = match sim {
            Some(o) => (
                Cow::Borrowed(o.name.as_str()),
                Cow::Borrowed(o.op_type.as_str()),
            ),
            None => (
                String::from_utf8_lossy(v.name().unwrap_or_default()),
                String::from_utf8_lossy(v.op_type().unwrap_or_default()),
            ),
        };
        let stream = v.stream_id();
        let task_info = sim.and_then(|o| o.task.as_ref());
        let dur = end - start;
        let (derived_type, derived_dim) = task_type_and_block_dim(&ty);
        let task_type = task_info
            .and_then(|t| t.task_type.as_deref())
            .unwrap_or(derived_type);
        let comm = is_communication(task_type, &name);
        // Communication is drawn on the HCCL track instead of its stream's.
        let (counted, named) = self.task_ids.entry(stream).or_insert((0, false));
        *counted += 1;
        let first_on_stream = !comm && !std::mem::replace(named, true);
        let task = task_info
            .and_then(|t| t.task_id)
            .map_or(*counted, u64::from);
        let row = OpRow {
            dev,
            model: v.model_id(),
            task,
            stream,
            name: &name,
            ty: &ty,
            task_type,
            start: self.wall(start),
            dur,
            wait: self.prev_end.map(|p| start.saturating_sub(p)),
            block_dim: task_info.and_then(|t| t.block_dim).unwrap_or(derived_dim),
            mix_block_dim: task_info.and_then(|t| t.mix_block_dim).unwrap_or(0),
            replayed,
            meta: meta.as_deref(),
        };
        out.rows.write(&row)?;
        self.to_db(&row, comm, out.db)?;
        let offset = self.offset;
        let wall = |t: u64| (t as i128 + offset).max(0) as u64;
        let b = out.db.batch();
        self.overlap.op(start, end, comm, &mut |p, s, e| {
            b.piece(dev, overlap_kind(p), wall(s), wall(e))
        });
        out.db.send_if_full()?;
        self.prev_end = Some(self.prev_end.map_or(end, |p| p.max(end)));
        let op = TlOp {
            kind: if first_on_stream {
                TlKind::FirstOnStream
            } else {
                TlKind::Op
            },
            name_end: 0,
            type_end: 0,
            dev,
            stream,
            model: v.model_id(),
            task,
            start,
            end,
            comm,
            meta: meta.clone(),
        };
        out.sink
            .push(op, &name, task_type)
            .or_else(timeline_error)?;
        // Real runs leave communication out of op_statistic.
        if !comm {
            self.count(ty, task_type, dur);
        }
        self.n += 1;
        Ok(())
    }

    /// The op's database rows, with the PMU values a replayed table carried.
    fn to_db(&self, row: &OpRow, comm: bool, db: &mut DbSink) -> Result<()> {
        // (Empty, and not allocated, unless a replayed table carried PMU values.)
        let mut pmu_values: Vec<(&str, &str)> = Vec::new();
        if let Some((o, at)) = row.replayed {
            for (k, col) in self.pmu.iter().enumerate() {
                if let Some(x) = at[k].and_then(|i| o.pmu.get(i)).filter(|x| !x.is_empty()) {
                    pmu_values.push((col, x.as_str()));
                }
            }
        }
        db.batch().op(&DbOp {
            dev: row.dev,
            model: row.model,
            stream: row.stream,
            task: row.task,
            pid: self.pid,
            start: row.start,
            end: row.start + row.dur,
            name: row.name,
            op_type: row.ty,
            task_type: row.task_type,
            block_dim: row.block_dim,
            mix_block_dim: row.mix_block_dim,
            comm,
            pmu: &pmu_values,
            meta: row.meta,
        });
        Ok(())
    }

    /// Adds a computing op's time to its type's and task type's statistics.
    fn count(&mut self, ty: Cow<str>, task_type: &str, dur: u64) {
        let cores = match self.by_type.get_mut(ty.as_ref()) {
            Some(c) => c,
            None => self.by_type.entry(ty.into_owned()).or_default(),
        };
        match cores.iter_mut().find(|(c, _)| c == task_type) {
            Some((_, a)) => a.add(dur),
            None => {
                let mut a = Agg::default();
                a.add(dur);
                cores.push((task_type.to_string(), a));
            }
        }
    }

    /// After the device's last op: its metadata ids, its last Overlap Analysis pieces, its
    /// op count and statistics.
    fn finish(
        mut self,
        data: &Path,
        db: &mut DbSink,
        summary: &mut Summary,
        stats: &mut Vec<(u32, String, String, Agg)>,
    ) -> Result<()> {
        let dev = self.dev;
        // Another process (a re-export, `aclprof analyze`) finds the ids here.
        let path = data.join(crate::formats::layout::OP_META_FILE);
        io("cannot write", &path, self.metas.write(&path))?;
        let offset = self.offset;
        let wall = |t: u64| (t as i128 + offset).max(0) as u64;
        let b = db.batch();
        self.overlap
            .finish(&mut |p, s, e| b.piece(dev, overlap_kind(p), wall(s), wall(e)));
        summary.ops.insert(dev, self.n);
        for (ty, cores) in self.by_type {
            for (core, a) in cores {
                stats.push((dev, ty.clone(), core, a));
            }
        }
        Ok(())
    }
}

/// A piece's ENUM_OVERLAP_ANALYSIS_TYPE.
fn overlap_kind(p: Track) -> i64 {
    match p {
        Track::Computing => 0,
        Track::Communication => 1,
        Track::NotOverlapped => 2,
        Track::Free => 3,
    }
}

/// op_statistic_<ts14>.csv: per device and op type (and task type), the ops' times, by
/// device, then total time descending.
fn write_op_statistic(st_path: &Path, stats: &mut [(u32, String, String, Agg)]) -> Result<()> {
    let mut st_csv = csv_writer(st_path)?;
    st_csv
        .write_record([
            "Device_id",
            "OP Type",
            "Core Type",
            "Count",
            "Total Time(us)",
            "Min Time(us)",
            "Avg Time(us)",
            "Max Time(us)",
            "Ratio(%)",
        ])
        .map_err(|e| csv_err(st_path, e))?;
    let mut dev_total: HashMap<u32, u64> = HashMap::new();
    for (d, _, _, a) in stats.iter() {
        *dev_total.entry(*d).or_default() += a.total;
    }
    stats.sort_by(|a, b| a.0.cmp(&b.0).then(b.3.total.cmp(&a.3.total)));
    for (d, ty, core, a) in stats.iter() {
        let ratio = 100.0 * a.total as f64 / dev_total[d].max(1) as f64;
        st_csv
            .write_record([
                d.to_string().as_str(),
                ty,
                core,
                &a.count.to_string(),
                &us_trim(a.total as f64),
                &us_trim(a.min as f64),
                &us_trim(a.avg()),
                &us_trim(a.max as f64),
                &format!("{}", (ratio * 1000.0).round() / 1000.0),
            ])
            .map_err(|e| csv_err(st_path, e))?;
    }
    st_csv.flush().map_err(|e| csv_err(st_path, e.into()))
}

/// Makes `dir`'s output folder ready for an export: created, or emptied of an earlier
/// export's files. Returns it and the stamp its files are named with.
fn prepare_output(dir: &Path) -> Result<(PathBuf, String)> {
    let out = dir.join(crate::formats::layout::OUTPUT_DIR);
    if fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink()) {
        return err(
            ACL_ERROR_INVALID_FILE,
            format!(
                "{} is a symbolic link: aclprof never writes or deletes through a link it did \
                 not create; remove the link and export again",
                out.display()
            ),
        );
    }
    io("cannot create", &out, fs::create_dir_all(&out))?;
    // A re-export replaces the previous one under the same names (its stamp), so that what
    // points at them (a report's links, a user's bookmarks) stays valid; our own regular
    // files, nothing else.
    let stamp = previous_stamp(&out).unwrap_or_else(|| local_stamp(false));
    for e in fs::read_dir(&out).into_iter().flatten().flatten() {
        let ours = e.file_name().to_str().is_some_and(is_output_name);
        if ours && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(e.path());
        }
    }
    Ok((out, stamp))
}

/// The database goes where CANN puts it, in the result directory itself (msprof-analyze
/// finds it there, not beside the text files); an earlier export's is replaced.
fn remove_old_databases(dir: &Path) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let ours = name
            .to_str()
            .is_some_and(|n| n.starts_with("msprof_") && n.ends_with(".db"));
        if ours && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Writes `dir`'s mindstudio_profiler_output/ from its raw data.
pub fn export(dir: &Path) -> Result<Summary> {
    export_with_progress(dir, &mut |_, _| {})
}

/// [`export`], calling `progress(merged, expected)` every 256 Ki ops.
pub fn export_with_progress(dir: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Summary> {
    let session = {
        let p = dir.join(SESSION_FILE);
        let text = io("cannot read", &p, fs::read_to_string(&p))?;
        crate::formats::host::Session::from_json(&text)
            .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", p.display())))?
    };
    let devices = session.devices.clone();
    let mono0 = session.clock_monotonic_raw;
    let wall0 = session.wall_clock_ns;
    let pid = session.pid;
    let (out, stamp) = prepare_output(dir)?;
    let mut summary = Summary {
        stamp: stamp.clone(),
        ..Default::default()
    };

    let tl_path = out.join(format!("msprof_{stamp}.json"));
    let pf_path = out.join(format!("msprof_{stamp}.pftrace"));
    let mut tl = Timeline {
        w: BufWriter::with_capacity(
            1 << 20,
            io("cannot create", &tl_path, create_output(&tl_path))?,
        ),
        pf: Pftrace::new(BufWriter::with_capacity(
            1 << 20,
            io("cannot create", &pf_path, create_output(&pf_path))?,
        )),
        pf_path,
        buf: String::with_capacity(1024),
        first: true,
        offset: wall0 as i128 - mono0 as i128,
        pid,
        named: Default::default(),
    };
    let tlw = |r: std::io::Result<()>| io("cannot write", &tl_path, r);
    tlw(tl.w.write_all(b"["))?;
    let r = tl.pf.clock(wall0);
    tlw(tl.pf_err(r))?;

    let metric = session.aicore_metrics;
    let pmu = pmu_columns(metric);
    let mut rows = Rows::create(&out, &stamp, pmu)?;
    remove_old_databases(dir);
    let db = Db::create(&dir.join(format!("msprof_{stamp}.db")))?;
    let mut stats: Vec<(u32, String, String, Agg)> = Vec::new();

    // The timeline is most of what the export writes: a second thread formats it from
    // batches of ops while this one merges the streams and writes the CSV files (see
    // docs/design.md, "File-mode export"). If no thread can be started, it is done inline.
    let offset = tl.offset;
    let tl_cell = std::sync::Mutex::new(tl);
    // Steps: the host's step timestamps, else the fp_point ops, else the whole run.
    let host_steps = read_host_steps(dir);
    let (fp, bp) = (session.fp_point.clone(), session.bp_point.clone());
    let new_steps = || Steps::new(host_steps.clone(), fp.clone(), bp.clone());
    let (steps_done, mut db) = std::thread::scope(|scope| -> Result<(Steps, Db)> {
        let mut db_sink = DbSink::start(scope, db);
        let steps = new_steps();
        let (tx, rx) = std::sync::mpsc::sync_channel::<TlBatch>(4);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<TlBatch>();
        let tl_cell = &tl_cell;
        let spawned = std::thread::Builder::new()
            .name("aclprof-export".into())
            .spawn_scoped(scope, move || {
                let mut tl = tl_cell.lock().unwrap_or_else(|p| p.into_inner());
                let mut st = TlState::new(steps);
                for b in rx {
                    st.write(&mut tl, &b)?;
                    let _ = back_tx.send(b);
                }
                st.finish(&mut tl)?;
                Ok(st)
            });
        let mut sink = match spawned {
            Ok(h) => TlSink::Thread {
                tx,
                back_rx,
                h,
                cur: TlBatch::default(),
            },
            Err(e) => {
                log::warn!("aclprof: the export runs on one thread (cannot start a second: {e})");
                TlSink::Inline {
                    tl: tl_cell,
                    st: TlState::new(new_steps()),
                    cur: TlBatch::default(),
                }
            }
        };
        let src = Source {
            dir,
            devices: &devices,
            offset,
            replays: Replays::new(pid, pmu),
            progress: &mut *progress,
            pid,
            pmu,
            db: &mut db_sink,
        };
        let merged = merge_devices(src, &mut summary, &mut rows, &mut sink, &mut stats);
        let steps = sink.finish();
        let db = db_sink.finish();
        merged?;
        Ok((io("cannot write", &tl_path, steps)?, db?))
    })?;
    let step_rows = steps_done.rows;
    let mut tl = tl_cell.into_inner().unwrap_or_else(|p| p.into_inner());
    rows.flush()?;

    write_op_statistic(&out.join(format!("op_statistic_{stamp}.csv")), &mut stats)?;

    write_step_trace_time(&out, &step_rows)?;
    // The Step Trace process and step_trace csv show the first device's steps.
    let first_dev = step_rows.first().map(|r| r.dev);
    let steps: Vec<&StepRow> = step_rows
        .iter()
        .filter(|r| r.step.id.is_some() && Some(r.dev) == first_dev)
        .collect();
    host_events(dir, &out, &stamp, &session, &steps, &mut tl, &mut db)?;
    finish_db(dir, db, &devices, wall0)?;
    tlw(tl.w.write_all(b"]\n"))?;
    tlw(tl.w.flush())?;
    let r = tl.pf.flush();
    tlw(tl.pf_err(r))?;
    write_readme(dir, &out, &stamp, &session, metric)?;
    Ok(summary)
}

/// The chip the emulated device presents itself as in NPU_INFO: op_summary's PMU columns
/// are Ascend 910B's (docs/design.md).
const CHIP: &str = "Ascend910B";

/// Completes the database with what the result directory says about the run: its time
/// span, host, devices and ranks.
fn finish_db(dir: &Path, db: Db, devices: &[u32], wall0: u64) -> Result<()> {
    let json = |p: PathBuf| -> serde_json::Value {
        fs::read(p)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    };
    let host = json(dir.join("host/info.json"));
    let end_us = json(dir.join("host/end_info"))["collectionTimeEnd"]
        .as_str()
        .and_then(|t| t.parse::<u64>().ok());
    let ranks: Vec<(u32, Option<u32>)> = devices
        .iter()
        .map(|&d| {
            let info = json(dir.join(format!("device_{d}/info.json.{d}")));
            let rank = info["rank_id"].as_u64().and_then(|r| u32::try_from(r).ok());
            (d, rank)
        })
        .collect();
    db.finish(&DbInfo {
        start_ns: wall0,
        end_ns: end_us.map_or(0, |us| us.saturating_mul(1000)),
        host_uid: host["hostUid"].as_str().unwrap_or(""),
        host_name: host["hostname"].as_str().unwrap_or(""),
        devices: &ranks,
        chip: CHIP,
        analyzer: &dir.join("analyze/communication_analyzer.db"),
    })
}

#[cfg(test)]
mod tests;
