//! One run in numbers: what `aclprof diff`, the report site and its assistant read. A run is
//! a result directory, a folder of them (a cluster's ranks), a file of records or CANN's
//! database. Per-type and per-name totals come from the analysis engine; the overall split
//! (computing, communication not overlapped, free) and the steps from each device's ops in
//! start order, through the same Overlap Analysis and step code as the export's
//! `step_trace_time.csv` (docs/design.md, "Comparing runs").

use crate::analyze::{self, Key, Query, Report};
use crate::error::*;
use crate::filemode::export::is_communication;
use crate::filemode::overlap::{Overlap, Steps, Track};
use crate::formats::op_summary::task_type_and_block_dim;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Computing time is split into these classes of op type, as msprof-analyze's overall
/// comparison splits it (its "Cube", "Vector", "Conv", "Flash Attention" and "AI CPU").
pub const CLASSES: [&str; 6] = [
    "Cube (MatMul)",
    "Cube (Conv)",
    "Flash Attention",
    "Vector",
    "AI CPU",
    "Other",
];

/// The class of an op type whose accelerator is `core` (op_statistic's `Core Type`).
pub fn class_of(op_type: &str, core: &str) -> &'static str {
    let t = op_type.to_ascii_lowercase();
    if core == "AI_CPU" {
        "AI CPU"
    } else if t.contains("flashattention") {
        "Flash Attention"
    } else if t.starts_with("conv") || t.starts_with("depthwiseconv") {
        "Cube (Conv)"
    } else if t.contains("matmul") || t.contains("gemm") || t == "fullyconnection" {
        "Cube (MatMul)"
    } else if core.starts_with("AI_") || core.is_empty() || core == "MIX_AIV" || core == "MIX_AIC" {
        "Vector"
    } else {
        "Other"
    }
}

/// One device's whole run: its span from first op to last, split as Overlap Analysis splits
/// it (ns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceTime {
    pub input: usize,
    pub dev: u32,
    pub rank: Option<u32>,
    pub ops: u64,
    /// The sum of its ops' durations.
    pub op_time: u64,
    /// First op start to last op end.
    pub e2e: u64,
    pub computing: u64,
    pub communication: u64,
    pub not_overlapped: u64,
    pub free: u64,
}

/// One step of one device (ns). The three phases follow MindInsight's step trace: the
/// iteration gap before the forward pass (waiting for data), forward and backward, and the
/// tail after the backward pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepTime {
    pub input: usize,
    pub dev: u32,
    pub rank: Option<u32>,
    pub id: u64,
    pub start: u64,
    pub end: u64,
    pub computing: u64,
    pub not_overlapped: u64,
    pub free: u64,
    /// Host steps: from the step's start until the device is first busy. Steps cut at the
    /// fp_point op: from the previous step's last op end to this step's forward pass.
    pub gap: u64,
    /// From the forward pass's start to the backward pass's end (the step's ops when no
    /// fp_point/bp_point is set).
    pub fp_bp: u64,
    /// From the backward pass's end to the step's last op end.
    pub tail: u64,
}

impl StepTime {
    /// The step's length: its window.
    pub fn total(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// A run's figures.
#[derive(Debug, Default)]
pub struct RunStats {
    /// The run's own name (its directory's or file's), not where this machine keeps it.
    pub name: String,
    pub path: PathBuf,
    /// When it was recorded, as "YYYY-MM-DD hh:mm:ss" (from the PROF_* name, else the
    /// file's modification time).
    pub when: String,
    pub types: Report,
    pub names: Report,
    /// Op type -> its accelerator (op_statistic's Core Type, else derived from the type).
    pub core: BTreeMap<String, String>,
    /// Communication op types (left out of the computing classes).
    pub comm_types: std::collections::BTreeSet<String>,
    pub devices: Vec<DeviceTime>,
    pub steps: Vec<StepTime>,
    /// (device, stream) -> its busy time.
    pub streams: BTreeMap<(u32, u32), StreamTime>,
    /// The earliest op start (0 without ops).
    pub first: u64,
    /// The data pipeline's events (`aclprof.pipeline`, aclprofExtPipelineSpan/Queue), if
    /// it reported any, and their analysis.
    pub pipeline: Vec<crate::pipeline::Event>,
    pub pipeline_analysis: Option<crate::pipeline::analysis::Analysis>,
    /// Device memory, static plans and host samples, when recorded, and the memory's
    /// analysis.
    pub memory: crate::analyze::memory::Logged,
    pub memory_analysis: Option<crate::analyze::memory::Analysis>,
}

/// One stream's busy time: the union of its ops' intervals (ops of a stream are reported in
/// start order, so the union is a running merge).
#[derive(Clone, Debug, Default)]
pub struct StreamTime {
    pub ops: u64,
    pub first: u64,
    pub last: u64,
    done: u64,
    cur: Option<(u64, u64)>,
}

impl StreamTime {
    pub fn add(&mut self, s: u64, e: u64) {
        self.first = if self.ops == 0 { s } else { self.first.min(s) };
        self.ops += 1;
        self.last = self.last.max(e);
        match &mut self.cur {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            _ => {
                if let Some((cs, ce)) = self.cur.replace((s, e)) {
                    self.done += ce - cs;
                }
            }
        }
    }
    pub fn busy(&self) -> u64 {
        self.done + self.cur.map_or(0, |(s, e)| e - s)
    }
}

/// One op as the overall and step passes need it.
#[derive(Clone, Copy)]
struct Op {
    start: u64,
    end: u64,
    comm: bool,
    fp: bool,
    bp: bool,
}

/// Per input and device: host steps, fp/bp point names, rank, and the ops.
#[derive(Default)]
struct DeviceOps {
    rank: Option<u32>,
    host: Vec<(u64, u64, u64)>,
    fp: Option<String>,
    bp: Option<String>,
    ops: Vec<Op>,
    op_time: u64,
}

impl RunStats {
    pub fn ops(&self) -> u64 {
        self.types.ops
    }
    pub fn ranks(&self) -> usize {
        let r: std::collections::BTreeSet<_> = self.devices.iter().map(|d| d.rank).collect();
        r.len()
    }
    /// The devices' end-to-end time, summed.
    pub fn e2e(&self) -> u64 {
        self.devices.iter().map(|d| d.e2e).sum()
    }
    /// Computing per class: its ops and the sum of their durations (communication ops are
    /// left out).
    pub fn classes(&self) -> BTreeMap<&'static str, (u64, u64)> {
        let mut m: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
        for r in &self.types.rows {
            if self.comm_types.contains(&r.key) {
                continue;
            }
            let core = self.core.get(&r.key).map_or("", String::as_str);
            let e = m.entry(class_of(&r.key, core)).or_default();
            e.0 += r.count;
            e.1 += r.total_ns;
        }
        m
    }

    /// Each step as its slowest device saw it (the first of equally slow ones), in step
    /// order, with how many devices ran it: what the diff, the report and the assistant
    /// call a step.
    pub fn slowest_steps(&self) -> Vec<(&StepTime, u64)> {
        let mut m: BTreeMap<u64, (&StepTime, u64)> = BTreeMap::new();
        for s in &self.steps {
            let e = m.entry(s.id).or_insert((s, 0));
            e.1 += 1;
            if s.total() > e.0.total() {
                e.0 = s;
            }
        }
        m.into_values().collect()
    }

    /// Each rank's (computing, communication not overlapped, free), ns, over its devices:
    /// from its steps when the run has a step trace, else each device from its first op to
    /// its last. What the cluster view draws and [`RunStats::slow_rank`] decides from.
    pub fn rank_splits(&self) -> BTreeMap<u32, [u64; 3]> {
        let mut ranks: BTreeMap<u32, [u64; 3]> = BTreeMap::new();
        for d in &self.devices {
            if let Some(rank) = d.rank {
                ranks.entry(rank).or_default();
            }
        }
        let stepped = self.steps.iter().any(|s| s.rank.is_some());
        let parts: Vec<(Option<u32>, [u64; 3])> = if stepped {
            let split = |s: &StepTime| [s.computing, s.not_overlapped, s.free];
            self.steps.iter().map(|s| (s.rank, split(s))).collect()
        } else {
            let split = |d: &DeviceTime| [d.computing, d.not_overlapped, d.free];
            self.devices.iter().map(|d| (d.rank, split(d))).collect()
        };
        for (rank, p) in parts {
            if let Some(rank) = rank {
                let t = ranks.entry(rank).or_default();
                for (t, p) in t.iter_mut().zip(p) {
                    *t += p;
                }
            }
        }
        ranks
    }

    /// The rank that stands out, by the one rule ([`analyze::verdict::slow_rank`]) every
    /// consumer uses: the report, the assistant, `analyze --communication`, Python's cluster.
    pub fn slow_rank(&self) -> Option<analyze::verdict::SlowRank> {
        let times: Vec<analyze::verdict::RankTime> = self
            .rank_splits()
            .into_iter()
            .map(|(rank, s)| analyze::verdict::RankTime {
                rank,
                computing_ns: s[0],
                waiting_ns: s[1],
            })
            .collect();
        analyze::verdict::slow_rank(&times)
    }

    /// The overall split, in a fixed order: E2E, computing and its classes, communication
    /// not overlapped, free; each (name, ops, ns), summed over devices (free time has no
    /// ops).
    pub fn overall(&self) -> Vec<(String, Option<u64>, u64)> {
        let sum = |f: fn(&DeviceTime) -> u64| self.devices.iter().map(f).sum::<u64>();
        let classes = self.classes();
        let computing_ops: u64 = classes.values().map(|c| c.0).sum();
        let mut v = vec![
            ("E2E time".to_string(), Some(self.ops()), sum(|d| d.e2e)),
            (
                "Computing time".to_string(),
                Some(computing_ops),
                sum(|d| d.computing),
            ),
        ];
        for c in CLASSES {
            if let Some(&(n, t)) = classes.get(c) {
                v.push((format!("Computing: {c}"), Some(n), t));
            }
        }
        v.push((
            "Communication not overlapped".to_string(),
            Some(self.ops() - computing_ops),
            sum(|d| d.not_overlapped),
        ));
        v.push(("Free time".to_string(), None, sum(|d| d.free)));
        v
    }

    /// Reads the run at `path`.
    pub fn of(path: &Path) -> Result<RunStats> {
        Self::with_progress(path, &mut |_, _| {})
    }

    /// [`RunStats::of`], calling `progress(read, expected)` in its pass over the records.
    pub fn with_progress(path: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<RunStats> {
        let by = |k: Key| Query {
            top: 0,
            by: Some(k),
            ..Default::default()
        };
        let types = analyze::analyze(path, &by(Key::Type))?;
        if types.ops == 0 {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("{}: it holds no ops", path.display()),
            );
        }
        let names = analyze::analyze(path, &by(Key::Name))?;
        let mut core = BTreeMap::new();
        let mut comm_types = std::collections::BTreeSet::new();
        let mut pipeline = Vec::new();
        let mut memory = crate::analyze::memory::Logged::default();
        let mut host_steps = Vec::new();
        if path.is_dir() {
            for d in analyze::result_dirs(path)? {
                pipeline.extend(crate::pipeline::read(
                    &d.join(crate::formats::layout::HOST_LOG),
                ));
                let l = crate::analyze::memory::read_log(&d);
                if !l.events.is_empty() {
                    host_steps.extend(crate::filemode::export::read_host_steps(&d));
                }
                memory.events.extend(l.events);
                memory.plan.extend(l.plan);
                memory.samples.extend(l.samples);
                let out = d.join(crate::formats::layout::OUTPUT_DIR);
                for f in
                    crate::formats::layout::entries_named(&out, "op_statistic_").unwrap_or_default()
                {
                    for r in csv_rows(&f) {
                        if let (Some(t), Some(c)) = (r.get("OP Type"), r.get("Core Type")) {
                            core.insert(t.clone(), c.clone());
                        }
                    }
                }
            }
        }
        let mut per: BTreeMap<(usize, u32), DeviceOps> = BTreeMap::new();
        let mut streams: BTreeMap<(u32, u32), StreamTime> = BTreeMap::new();
        let mut first = u64::MAX;
        let mut type_buf = String::new();
        analyze::each_op(path, progress, &mut |o, v| {
            first = first.min(v.start());
            streams
                .entry((v.dev_id(), v.stream_id()))
                .or_default()
                .add(v.start(), v.end());
            let d = per
                .entry((o.input, v.dev_id()))
                .or_insert_with(|| DeviceOps {
                    rank: o.rank,
                    host: o.steps.map(<[_]>::to_vec).unwrap_or_default(),
                    fp: o.fp.map(str::to_string),
                    bp: o.bp.map(str::to_string),
                    ..Default::default()
                });
            let name = v.name().unwrap_or_default();
            let ty = v.op_type().unwrap_or_default();
            type_buf.clear();
            type_buf.push_str(&String::from_utf8_lossy(ty));
            let name_s = String::from_utf8_lossy(name);
            let comm = is_communication(task_type_and_block_dim(&type_buf).0, &name_s);
            if comm && !comm_types.contains(&type_buf) {
                comm_types.insert(type_buf.clone());
            }
            let is = |p: &Option<String>| p.as_deref().is_some_and(|p| p.as_bytes() == name);
            d.ops.push(Op {
                start: v.start(),
                end: v.end(),
                comm,
                fp: is(&d.fp),
                bp: is(&d.bp),
            });
            d.op_time += v.duration();
        })?;
        for r in &types.rows {
            core.entry(r.key.clone())
                .or_insert_with(|| task_type_and_block_dim(&r.key).0.to_string());
        }
        let mut devices = Vec::new();
        let mut steps = Vec::new();
        for ((input, dev), mut d) in per {
            d.ops.sort_by_key(|o| (o.start, o.end));
            devices.push(device_time(input, dev, &d));
            steps.extend(step_times(input, dev, &d));
        }
        Ok(RunStats {
            name: run_name(path),
            path: path.to_path_buf(),
            when: when(path),
            types,
            names,
            core,
            comm_types,
            devices,
            steps,
            streams,
            first: if first == u64::MAX { 0 } else { first },
            pipeline_analysis: (!pipeline.is_empty())
                .then(|| crate::pipeline::analysis::analyze(&pipeline)),
            pipeline,
            memory_analysis: (!memory.events.is_empty()).then(|| {
                memory.events.sort_by_key(|e| e.start);
                host_steps.sort_unstable();
                crate::analyze::memory::analyze(&memory.events, &host_steps)
            }),
            memory,
        })
    }
}

fn device_time(input: usize, dev: u32, d: &DeviceOps) -> DeviceTime {
    let mut t = DeviceTime {
        input,
        dev,
        rank: d.rank,
        ops: d.ops.len() as u64,
        op_time: d.op_time,
        ..Default::default()
    };
    let mut ov = Overlap::default();
    let mut out = |p: Track, s: u64, e: u64| {
        let n = e.saturating_sub(s);
        match p {
            Track::Computing => t.computing += n,
            Track::Communication => t.communication += n,
            Track::NotOverlapped => t.not_overlapped += n,
            Track::Free => t.free += n,
        }
    };
    for o in &d.ops {
        ov.op(o.start, o.end, o.comm, &mut out);
    }
    ov.finish(&mut out);
    let first = d.ops.first().map_or(0, |o| o.start);
    let last = d.ops.iter().map(|o| o.end).max().unwrap_or(first);
    t.e2e = last - first;
    t
}

fn step_times(input: usize, dev: u32, d: &DeviceOps) -> Vec<StepTime> {
    let (fp, bp) = (d.fp.clone(), d.bp.clone());
    let from_host = !d.host.is_empty();
    let mut steps = Steps::new(d.host.clone(), fp.clone(), bp.clone());
    steps.begin_device();
    let mut ov = Overlap::default();
    for o in &d.ops {
        let name = if o.fp {
            fp.as_deref().unwrap_or("")
        } else if o.bp {
            bp.as_deref().unwrap_or("")
        } else {
            ""
        };
        // (An op that is both has the same name as both points.)
        steps.op(name, o.start, o.end);
        ov.op(o.start, o.end, o.comm, &mut |p, s, e| steps.add(p, s, e));
    }
    ov.finish(&mut |p, s, e| steps.add(p, s, e));
    steps.end_device(dev);
    let rows = std::mem::take(&mut steps.rows);
    // A run without steps (no host marks, no fp_point) has one row for all of it: no steps.
    if !from_host && fp.is_none() {
        return Vec::new();
    }
    let mut out: Vec<StepTime> = Vec::with_capacity(rows.len());
    let mut prev_last: Option<u64> = None;
    for r in rows {
        let st = &r.step;
        let start = if from_host {
            st.start
        } else {
            st.fp_start.unwrap_or(st.start)
        };
        let fwd = st.fp_start.or(st.first_op).unwrap_or(start);
        let last = st.last_end.max(fwd);
        let gap = if from_host {
            r.preparing
        } else {
            prev_last.map_or(0, |p| fwd.saturating_sub(p))
        };
        let bwd = st.bp_end.unwrap_or(last).min(last);
        out.push(StepTime {
            input,
            dev,
            rank: d.rank,
            id: st.id.unwrap_or(0),
            start: st.start,
            end: r.end,
            computing: st.computing,
            not_overlapped: st.not_overlapped,
            free: r.free,
            gap,
            fp_bp: bwd.saturating_sub(fwd),
            tail: last - bwd,
        });
        prev_last = Some(last);
    }
    out
}

/// Reads a CSV file into header-keyed rows; a missing or unreadable file is no rows.
pub fn csv_rows(p: &Path) -> Vec<BTreeMap<String, String>> {
    let Ok(mut r) = csv::Reader::from_path(p) else {
        return Vec::new();
    };
    let head: Vec<String> = match r.headers() {
        Ok(h) => h.iter().map(str::to_string).collect(),
        Err(_) => return Vec::new(),
    };
    r.records()
        .flatten()
        .map(|rec| {
            head.iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The run's name: its directory's or file's (what a person calls it), not its path.
pub fn run_name(path: &Path) -> String {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| path.display().to_string())
}

/// When `path` was recorded: the time stamp in its (first) PROF_* directory's name
/// (`PROF_000001_20261126004133342_...`), else its modification time (UTC).
pub fn when(path: &Path) -> String {
    let dirs = if path.is_dir() {
        analyze::result_dirs(path).unwrap_or_default()
    } else {
        Vec::new()
    };
    for d in &dirs {
        let name = d.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(t) = name.split('_').nth(2).filter(|t| t.len() >= 14) {
            if t.bytes().all(|b| b.is_ascii_digit()) {
                return format!(
                    "{}-{}-{} {}:{}:{}",
                    &t[0..4],
                    &t[4..6],
                    &t[6..8],
                    &t[8..10],
                    &t[10..12],
                    &t[12..14]
                );
            }
        }
    }
    let secs = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    crate::clock::utc_date_time(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_type_and_its_core() {
        assert_eq!(class_of("MatMulV2", "AI_CORE"), "Cube (MatMul)");
        assert_eq!(class_of("Conv2D", "AI_CORE"), "Cube (Conv)");
        assert_eq!(
            class_of("FlashAttentionScore", "MIX_AIC"),
            "Flash Attention"
        );
        assert_eq!(class_of("Relu", "AI_VECTOR_CORE"), "Vector");
        assert_eq!(class_of("Where", "AI_CPU"), "AI CPU");
        assert_eq!(class_of("Memcpy", "SDMA"), "Other");
    }

    #[test]
    fn stream_busy_is_the_union_of_its_ops() {
        let mut s = StreamTime::default();
        for (a, b) in [(0, 10), (5, 12), (12, 15), (20, 30), (25, 26)] {
            s.add(a, b);
        }
        assert_eq!((s.ops, s.first, s.last, s.busy()), (5, 0, 30, 25));
    }

    fn ops(v: &[(u64, u64, bool, bool)]) -> DeviceOps {
        DeviceOps {
            fp: Some("fp".into()),
            bp: Some("bp".into()),
            ops: v
                .iter()
                .map(|&(start, end, fp, bp)| Op {
                    start,
                    end,
                    comm: false,
                    fp,
                    bp,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn steps_cut_at_fp_have_gap_forward_backward_and_tail() {
        // Step 1: fp 100..110, bp ..150, last op ends 170. Step 2 starts 230 (gap 60).
        let d = ops(&[
            (100, 110, true, false),
            (120, 150, false, true),
            (150, 170, false, false),
            (230, 240, true, false),
            (240, 250, false, true),
        ]);
        let s = step_times(0, 0, &d);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].id, s[0].gap, s[0].fp_bp, s[0].tail), (1, 0, 50, 20));
        assert_eq!((s[1].id, s[1].gap, s[1].fp_bp, s[1].tail), (2, 60, 20, 0));
        assert_eq!(s[0].total(), 130);
        let t = device_time(0, 0, &d);
        assert_eq!((t.e2e, t.computing, t.free), (150, 80, 70));
    }
}
