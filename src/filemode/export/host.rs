//! The host side of an export: the steps, the step trace and the host events (API calls,
//! msproftx, pipeline spans) from the session's host log.

use super::*;
use crate::formats::host::{HostEvent, StepTag, TxKind};
use crate::formats::timeline::{CANN_TRACK, DATA_PIPELINE_TRACK, MSPROFTX_TRACK, STEP_TRACE_TRACK};

/// The steps `aclprofGetStepTimestamp` marked: (index, start, end).
pub fn read_host_steps(dir: &Path) -> Vec<(u64, u64, u64)> {
    let Ok(f) = File::open(dir.join(HOST_LOG)) else {
        return Vec::new();
    };
    let mut open: HashMap<u64, u64> = HashMap::new();
    let mut steps = Vec::new();
    for line in BufReader::new(f).lines().map_while(std::result::Result::ok) {
        // Most host events are API calls: only step lines are parsed.
        if !line.contains("\"step\"") {
            continue;
        }
        let Some(HostEvent::Step {
            index, start, tag, ..
        }) = HostEvent::from_line(&line)
        else {
            continue;
        };
        if tag == StepTag::Start {
            open.insert(index, start);
        } else if let Some(s) = open.remove(&index) {
            steps.push((index, s, start.max(s)));
        }
    }
    steps
}

/// step_trace_time.csv, in torch_npu's and msprof-analyze's shape: per device and step,
/// the Overlap Analysis times (µs).
pub(super) fn write_step_trace_time(out: &Path, rows: &[StepRow]) -> Result<()> {
    let p = out.join("step_trace_time.csv");
    let mut w = csv_writer(&p)?;
    w.write_record(crate::formats::op_summary::STEP_TRACE_TIME_HEADER)
        .map_err(|e| csv_err(&p, e))?;
    for r in rows {
        let st = &r.step;
        w.write_record([
            r.dev.to_string(),
            st.id.map_or(String::new(), |i| i.to_string()),
            us3(st.computing),
            us3(st.not_overlapped),
            us3(r.overlapped()),
            us3(st.communication),
            us3(r.free),
            us3(r.stage),
            "0".into(),
            us3(st.not_overlapped),
            us3(r.preparing),
        ])
        .map_err(|e| csv_err(&p, e))?;
    }
    w.flush().map_err(|e| csv_err(&p, e.into()))
}

/// The host side: API calls (CANN process, api_statistic), msproftx, and the steps of the
/// first device (Step Trace process, step_trace csv).
pub(super) fn host_events(
    dir: &Path,
    out: &Path,
    stamp: &str,
    session: &crate::formats::host::Session,
    steps: &[&StepRow],
    tl: &mut Timeline,
    db: &mut Db,
) -> Result<()> {
    let data_type = session.data_type_config;
    let mut h = HostSinks::new(out, stamp, data_type, tl, db)?;
    let mut gathered = super::memory::Gathered::default();
    let host = dir.join(HOST_LOG);
    let lines = File::open(&host).map(|f| BufReader::new(f).lines());
    for line in lines
        .into_iter()
        .flatten()
        .map_while(std::result::Result::ok)
    {
        let Some(ev) = HostEvent::from_line(&line).and_then(|e| gathered.take(e)) else {
            continue;
        };
        match &ev {
            HostEvent::Api { .. } => h.api(&ev)?,
            HostEvent::Pipeline(_) => h.pipeline(&ev)?,
            HostEvent::Tx { .. } => h.tx(&ev)?,
            _ => {}
        }
    }
    for m in crate::formats::memory::mem_log_of(dir) {
        gathered.take(HostEvent::Mem(m));
    }
    h.steps(steps)?;
    let HostSinks {
        tl,
        db,
        apis,
        waits,
        ..
    } = h.finish()?;
    let span = super::memory::Span::of(dir, session);
    super::memory::write(&mut gathered, &span, out, stamp, data_type, tl, db)?;
    let api_bits =
        crate::formats::acl_prof::ACL_PROF_ACL_API | crate::formats::acl_prof::ACL_PROF_RUNTIME_API;
    if data_type & api_bits != 0 {
        write_api_statistic(&out.join(format!("api_statistic_{stamp}.csv")), &apis)?;
    }
    if data_type & crate::formats::acl_prof::ACL_PROF_TRAINING_TRACE != 0 {
        let p = out.join(format!("step_trace_{stamp}.csv"));
        write_step_trace(&p, steps, &waits, tl)?;
    }
    Ok(())
}

/// Where the host log's events go while it is read: the timeline's host processes, the
/// database, msprof_tx's csv, and what the tables after it need (API times, data waits).
struct HostSinks<'a> {
    tl: &'a mut Timeline,
    db: &'a mut Db,
    tl_path: PathBuf,
    /// msproftx events also go to msprof_tx_<ts14>.csv (ACL_PROF_MSPROFTX), streamed.
    tx_csv: Option<csv::Writer<File>>,
    tx_path: PathBuf,
    tx_events: u64,
    cann: u64,
    txp: u64,
    stepp: u64,
    pipep: u64,
    /// Data-pipeline tracks: a thread per (stage, worker), a counter per queue.
    pipe_tracks: HashMap<(String, u32), u64>,
    /// The training thread's waits for data: each step's Data Aug Bound.
    waits: Vec<crate::pipeline::Event>,
    apis: BTreeMap<(String, String), Agg>,
}

impl<'a> HostSinks<'a> {
    fn new(
        out: &Path,
        stamp: &str,
        data_type: u64,
        tl: &'a mut Timeline,
        db: &'a mut Db,
    ) -> Result<Self> {
        let tx_path = out.join(format!("msprof_tx_{stamp}.csv"));
        let tx_csv = if data_type & crate::formats::acl_prof::ACL_PROF_MSPROFTX != 0 {
            let mut w = csv_writer(&tx_path)?;
            w.write_record([
                "pid",
                "tid",
                "category",
                "event_type",
                "payload_type",
                "payload_value",
                "Start_time(us)",
                "End_time(us)",
                "message_type",
                "message",
            ])
            .map_err(|e| csv_err(&tx_path, e))?;
            Some(w)
        } else {
            None
        };
        Ok(HostSinks {
            cann: tl.pid(CANN_TRACK.1, HOST_DEV),
            txp: tl.pid(MSPROFTX_TRACK.1, HOST_DEV),
            stepp: tl.pid(STEP_TRACE_TRACK.1, HOST_DEV),
            pipep: tl.pid(DATA_PIPELINE_TRACK.1, HOST_DEV),
            tl_path: out.join(format!("msprof_{stamp}.json")),
            tl,
            db,
            tx_csv,
            tx_path,
            tx_events: 0,
            pipe_tracks: HashMap::new(),
            waits: Vec::new(),
            apis: BTreeMap::new(),
        })
    }

    /// The timeline's errors name its file.
    fn tlw(&self, r: std::io::Result<()>) -> Result<()> {
        io("cannot write", &self.tl_path, r)
    }

    /// An API call: the CANN process, the database, api_statistic's times.
    fn api(&mut self, ev: &HostEvent) -> Result<()> {
        let HostEvent::Api {
            end,
            item,
            level,
            name,
            start,
            tid,
        } = ev
        else {
            return Ok(());
        };
        let (start, tid, name) = (*start, *tid, name.clone());
        let end = (*end).max(start);
        let runtime = level == crate::formats::db_schema::API_LEVEL_RUNTIME;
        let (level, prefix, db_level) = if runtime {
            ("runtime", "Runtime", crate::formats::db_schema::API_RUNTIME)
        } else {
            ("acl", "AscendCL", crate::formats::db_schema::API_ACL)
        };
        let cann = self.cann;
        let r = self.tl.process(cann, CANN_TRACK.0, "CPU", CANN_TRACK.1);
        self.tlw(r)?;
        let r = self.tl.thread(cann, tid, &format!("Thread {tid}"), tid);
        self.tlw(r)?;
        let args = [
            ("Thread Id", Arg::U(tid)),
            ("Mode", Arg::S("ACL_MODEL")),
            ("level", Arg::S(level)),
            ("item_id", Arg::S(item)),
        ];
        let r = self.tl.slice(
            &format!("{prefix}@{name}"),
            cann,
            tid,
            start,
            end - start,
            &args,
        );
        self.tlw(r)?;
        let tl = &*self.tl;
        self.db
            .api(db_level, tl.pid, tid, &name, tl.wall(start), tl.wall(end))?;
        self.apis
            .entry((level.into(), name))
            .or_default()
            .add(end - start);
        Ok(())
    }

    /// A data-pipeline span or queue sample: the Data Pipeline process.
    fn pipeline(&mut self, ev: &HostEvent) -> Result<()> {
        let (name, sort) = DATA_PIPELINE_TRACK;
        let pipep = self.pipep;
        let r = self.tl.process(pipep, name, "CPU", sort);
        self.tlw(r)?;
        let n = self.pipe_tracks.len() as u64;
        let Some(e) = crate::pipeline::parse(ev) else {
            return Ok(());
        };
        match &e {
            crate::pipeline::Event::Span {
                stage,
                worker,
                start,
                end,
                ..
            } => {
                let wait = stage == crate::pipeline::WAIT;
                let label = if wait {
                    "wait for data (training thread)".to_string()
                } else {
                    format!("{stage} worker {worker}")
                };
                let key = (stage.clone(), *worker);
                let tid = *self.pipe_tracks.entry(key).or_insert(n + 1);
                let r = self.tl.thread(pipep, tid, &label, tid);
                self.tlw(r)?;
                let args = [("Worker", Arg::U(u64::from(*worker)))];
                let r = self.tl.slice(stage, pipep, tid, *start, end - start, &args);
                self.tlw(r)?;
                if wait {
                    self.waits.push(e.clone());
                }
            }
            crate::pipeline::Event::Queue {
                stage, depth, ns, ..
            } => {
                // (Counter tracks are keyed apart from the threads.)
                let key = (stage.clone(), u32::MAX);
                let tid = (1 << 32) | *self.pipe_tracks.entry(key).or_insert(n + 1);
                let name = format!("Queue {stage}");
                let r = self
                    .tl
                    .counter(pipep, tid, &name, *ns, "depth", f64::from(*depth), 0);
                self.tlw(r)?;
            }
        }
        Ok(())
    }

    /// An msproftx range or mark: the MsprofTx process, the database, msprof_tx's csv.
    fn tx(&mut self, ev: &HostEvent) -> Result<()> {
        let HostEvent::Tx {
            end,
            name,
            start,
            tid,
            kind,
        } = ev
        else {
            return Ok(());
        };
        let (start, tid, kind_name) = (*start, *tid, kind.as_str());
        let end = (*end).max(start);
        let txp = self.txp;
        let r = self
            .tl
            .process(txp, MSPROFTX_TRACK.0, "CPU", MSPROFTX_TRACK.1);
        self.tlw(r)?;
        let r = self.tl.thread(txp, tid, &format!("Thread {tid}"), tid);
        self.tlw(r)?;
        let args = [("Event Type", Arg::S(kind_name))];
        let r = self.tl.slice(name, txp, tid, start, end - start, &args);
        self.tlw(r)?;
        let db_kind = match kind {
            TxKind::Range => crate::filemode::db::MSTX_RANGE,
            TxKind::PushPop => crate::filemode::db::MSTX_PUSH_POP,
            TxKind::MarkEx => crate::filemode::db::MSTX_MARKER_EX,
            TxKind::Mark | TxKind::Unknown => crate::filemode::db::MSTX_MARKER,
        };
        let tl = &*self.tl;
        let (at, until) = (tl.wall(start), tl.wall(end));
        self.db
            .mstx(self.tx_events, db_kind, tl.pid, tid, name, at, until)?;
        self.tx_events += 1;
        if let Some(w) = self.tx_csv.as_mut() {
            w.write_record([
                tl.pid.to_string().as_str(),
                &tid.to_string(),
                "0",
                kind_name,
                "0",
                "0",
                &tl.ts(start),
                &tl.ts(end),
                "0",
                name,
            ])
            .map_err(|e| csv_err(&self.tx_path, e))?;
        }
        Ok(())
    }

    /// The steps of the first device: the Step Trace process.
    fn steps(&mut self, steps: &[&StepRow]) -> Result<()> {
        let (name, sort) = STEP_TRACE_TRACK;
        let stepp = self.stepp;
        for r in steps {
            let w = self.tl.process(stepp, name, "CPU", sort);
            self.tlw(w)?;
            let w = self.tl.thread(stepp, 0, "Steps", 0);
            self.tlw(w)?;
            let (idx, s) = (r.step.id.unwrap_or(0), r.step.start);
            let name = format!("Iteration {idx}");
            let w = self
                .tl
                .slice(&name, stepp, 0, s, r.end.saturating_sub(s), &[]);
            self.tlw(w)?;
        }
        Ok(())
    }

    /// Flushes msprof_tx's csv.
    fn finish(mut self) -> Result<Self> {
        if let Some(mut w) = self.tx_csv.take() {
            w.flush().map_err(|e| csv_err(&self.tx_path, e.into()))?;
        }
        Ok(self)
    }
}

/// api_statistic_<ts14>.csv: per API level and name, its calls' times (µs).
fn write_api_statistic(p: &Path, apis: &BTreeMap<(String, String), Agg>) -> Result<()> {
    let mut w = csv_writer(p)?;
    w.write_record([
        "Device_id",
        "Level",
        "API Name",
        "Time(us)",
        "Count",
        "Avg(us)",
        "Min(us)",
        "Max(us)",
        "Variance",
    ])
    .map_err(|e| csv_err(p, e))?;
    for ((level, name), a) in apis {
        let avg_us = a.avg() / 1000.0;
        let var = (a.sq / a.count.max(1) as f64 - avg_us * avg_us).max(0.0);
        w.write_record([
            "host",
            level.as_str(),
            name.as_str(),
            &us_trim(a.total as f64),
            &a.count.to_string(),
            &us_trim(a.avg()),
            &us_trim(a.min as f64),
            &us_trim(a.max as f64),
            &format!("{}", (var * 1000.0).round() / 1000.0),
        ])
        .map_err(|e| csv_err(p, e))?;
    }
    w.flush().map_err(|e| csv_err(p, e.into()))
}

/// step_trace_<ts14>.csv: per step of the first device, its times (µs).
fn write_step_trace(
    p: &Path,
    steps: &[&StepRow],
    waits: &[crate::pipeline::Event],
    tl: &Timeline,
) -> Result<()> {
    let mut w = csv_writer(p)?;
    w.write_record([
        "Device_id",
        "Iteration ID",
        "FP Start(us)",
        "BP End(us)",
        "Iteration End(us)",
        "Iteration Time(us)",
        "FP to BP Time(us)",
        "Iteration Refresh(us)",
        "Data Aug Bound(us)",
        "Model ID",
    ])
    .map_err(|e| csv_err(p, e))?;
    let na = || "N/A".to_string();
    for r in steps {
        let (st, e) = (&r.step, r.end);
        let fp_to_bp = st.fp_start.zip(st.bp_end).map(|(f, b)| b.saturating_sub(f));
        w.write_record([
            r.dev.to_string(),
            st.id.unwrap_or(0).to_string(),
            st.fp_start.map_or_else(na, |t| tl.ts(t)),
            st.bp_end.map_or_else(na, |t| tl.ts(t)),
            tl.ts(e),
            us3(e.saturating_sub(st.start)),
            fp_to_bp.map_or_else(na, us3),
            st.bp_end.map_or_else(na, |b| us3(e.saturating_sub(b))),
            // The training thread's wait for data in the step, when the data pipeline
            // reported it.
            if waits.is_empty() {
                na()
            } else {
                us3(crate::pipeline::wait_in(waits, st.start, e))
            },
            "4294967295".to_string(),
        ])
        .map_err(|e| csv_err(p, e))?;
    }
    w.flush().map_err(|e| csv_err(p, e.into()))
}
