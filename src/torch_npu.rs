//! A result directory in torch_npu's layout (`formats::torch_npu`; docs/compatibility.md,
//! "torch_npu's layout"): `ASCEND_PROFILER_OUTPUT/` made from the directory's export
//! (`mindstudio_profiler_output/`), and `profiler_info_{rank}.json` and
//! `profiler_metadata.json` beside it.
//!
//! The run's ops are the device's kernels; each is also the framework op that launched it
//! (aclprof's bridges report an operator and its kernel as one op): a `cpu_op` named by the
//! op's type (`aten::convolution`, `Conv2D`) on the Python process, linked to its kernel by a
//! `torch_to_npu` flow, as torch_npu links them.

use crate::analyze::comm::{Comm, Link, Times};
use crate::error::{err, file_error, Result, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM};
use crate::formats::layout::{OUTPUT_DIR, SESSION_FILE};
use crate::formats::torch_npu as tn;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a result directory's export holds, read once.
struct Export {
    /// The export's files, by the prefix of their name.
    out: PathBuf,
    stamp: String,
    session: crate::formats::host::Session,
}

impl Export {
    fn open(prof: &Path) -> Result<Export> {
        let sp = prof.join(SESSION_FILE);
        let text = fs::read_to_string(&sp)
            .map_err(|e| file_error("not a result directory: cannot read", &sp, e))?;
        let session = crate::formats::host::Session::from_json(&text)
            .map_err(|e| file_error("cannot read", &sp, e))?;
        let out = prof.join(OUTPUT_DIR);
        let stamp = fs::read_dir(&out)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().into_string().ok()?;
                Some(
                    n.strip_prefix("op_summary_")?
                        .strip_suffix(".csv")?
                        .to_string(),
                )
            })
            .max();
        let Some(stamp) = stamp else {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "{}: no op_summary: the run holds no op, or it was never exported",
                    prof.display()
                ),
            );
        };
        Ok(Export {
            out,
            stamp,
            session,
        })
    }

    /// The export's `{name}_{stamp}.{ext}`, if it wrote one.
    fn file(&self, name: &str, ext: &str) -> Option<PathBuf> {
        let p = self.out.join(format!("{name}_{}.{ext}", self.stamp));
        p.is_file().then_some(p)
    }
}

/// The folder torch_npu would have written the run into: its host, the profiled process's
/// id and the local time it started, to the millisecond.
pub fn folder_name(prof: &Path) -> Result<String> {
    let e = Export::open(prof)?;
    // A run made from a database has no session clock: it started at its first kernel.
    let started = match e.session.wall_clock_ns {
        0 => Kernels::read(&e)?.first_start().unwrap_or(0),
        ns => ns,
    };
    let at = crate::clock::local_stamp_at(started, true);
    Ok(tn::folder_name(
        &crate::filemode::hostname(),
        e.session.pid,
        &at,
    ))
}

/// Writes `prof`'s export in torch_npu's layout into a folder of its own under `parent`
/// ([`folder_name`]; an earlier one of the same run is written over). Returns the folder.
pub fn export_into(prof: &Path, parent: &Path) -> Result<PathBuf> {
    let pt = parent.join(folder_name(prof)?);
    fs::create_dir_all(&pt).map_err(|e| file_error("cannot create", &pt, e))?;
    write(prof, &pt)?;
    Ok(pt)
}

/// Writes `prof`'s export in torch_npu's layout into the folder `pt` (made if missing):
/// `ASCEND_PROFILER_OUTPUT/` with every file that has a source in the run, and the info
/// and metadata files beside it. Returns the files written, relative to `pt`.
pub fn write(prof: &Path, pt: &Path) -> Result<Vec<String>> {
    let e = Export::open(prof)?;
    let dir = pt.join(tn::OUTPUT_DIR);
    fs::create_dir_all(&dir).map_err(|x| file_error("cannot create", &dir, x))?;
    let mut written = Vec::new();
    let mut done = |name: &str| written.push(format!("{}/{name}", tn::OUTPUT_DIR));
    let kernels = Kernels::read(&e)?;
    write_csv(
        &dir.join(tn::KERNEL_DETAILS),
        &kernels.details_header(),
        &kernels.rows,
    )?;
    done(tn::KERNEL_DETAILS);
    write_csv(
        &dir.join(tn::OPERATOR_DETAILS),
        &tn::OPERATOR_DETAILS_HEADER.map(String::from),
        &kernels.operator_details(),
    )?;
    done(tn::OPERATOR_DETAILS);
    write_trace_view(&e, &kernels, &dir.join(tn::TRACE_VIEW))?;
    done(tn::TRACE_VIEW);
    for (from, to) in [
        ("op_statistic", tn::OP_STATISTIC),
        ("api_statistic", tn::API_STATISTIC),
    ] {
        if let Some(p) = e.file(from, "csv") {
            copy(&p, &dir.join(to))?;
            done(to);
        }
    }
    let steps = e.out.join("step_trace_time.csv");
    if steps.is_file() {
        copy(&steps, &dir.join(tn::STEP_TRACE_TIME))?;
        done(tn::STEP_TRACE_TIME);
    }
    for (name, f) in [
        (tn::OPERATOR_MEMORY, operator_memory as MemoryTable),
        (tn::MEMORY_RECORD, memory_record),
        (tn::NPU_MODULE_MEM, npu_module_mem),
    ] {
        let source = name.trim_end_matches(".csv");
        if let Some(p) = e.file(source, "csv") {
            let (header, rows) = f(&read_csv(&p)?);
            write_csv(&dir.join(name), &header, &rows)?;
            done(name);
        }
    }
    let rank = rank_of(prof, &e.session);
    if let Some(c) = communication_of(prof, &e)? {
        write_json(&dir.join(tn::COMMUNICATION), &communication(&c), false)?;
        done(tn::COMMUNICATION);
        let matrix = communication_matrix(&c, rank);
        write_json(&dir.join(tn::COMMUNICATION_MATRIX), &matrix, false)?;
        done(tn::COMMUNICATION_MATRIX);
    }
    let info = tn::info_file(rank);
    write_json(&pt.join(&info), &profiler_info(&e.session, rank), true)?;
    written.push(info);
    write_json(&pt.join(tn::METADATA), &metadata(), false)?;
    written.push(tn::METADATA.to_string());
    Ok(written)
}

/// The run's communication, from its database (`msprof_{stamp}.db`), if it has any.
fn communication_of(prof: &Path, e: &Export) -> Result<Option<Comm>> {
    let db = prof.join(format!("msprof_{}.db", e.stamp));
    if !db.is_file() {
        return Ok(None);
    }
    let mut r = crate::analyze::comm::Reader::default();
    r.add(&db)?;
    Ok(r.finish(prof).ok())
}

/// communication.json: per op (`name@group`), collective or point-to-point, its times and
/// what it moved per transport, and each kind's totals ("Total Op Info"), under one step
/// ("step": aclprof splits no run into steps here).
fn communication(c: &Comm) -> Value {
    let mut kinds = [serde_json::Map::new(), serde_json::Map::new()];
    let mut totals = [Times::default(), Times::default()];
    let mut moved: [BTreeMap<String, Link>; 2] = Default::default();
    for op in &c.each {
        let k = usize::from(tn::is_p2p(&op.name));
        let info = json!({
            "Communication Time Info": time_info(&op.times, Some(op.start_ns)),
            "Communication Bandwidth Info": bandwidth_info(&op.links, true),
        });
        kinds[k].insert(format!("{}@{}", op.name, op.group), info);
        totals[k].add(&op.times);
        for l in &op.links {
            let t = moved[k].entry(l.transport.clone()).or_default();
            t.transport.clone_from(&l.transport);
            (t.count, t.bytes, t.ns) = (t.count + l.count, t.bytes + l.bytes, t.ns + l.ns);
        }
    }
    for k in 0..2 {
        if !kinds[k].is_empty() {
            let links: Vec<Link> = moved[k].values().cloned().collect();
            let total = json!({
                "Communication Time Info": time_info(&totals[k], None),
                "Communication Bandwidth Info": bandwidth_info(&links, false),
            });
            kinds[k].insert("Total Op Info".into(), total);
        }
    }
    let [collective, p2p] = kinds;
    json!({"step": {"collective": collective, "p2p": p2p}})
}

/// An op's (or a kind's total) times, in CANN's units (ms; its start in µs).
fn time_info(t: &Times, start_ns: Option<i64>) -> Value {
    let ms = |ns: u64| ns as f64 / 1e6;
    let idle = t.total_ns.saturating_sub(t.transit_ns + t.wait_ns);
    let mut v = json!({
        "Elapse Time(ms)": ms(t.total_ns),
        "Transit Time(ms)": ms(t.transit_ns),
        "Wait Time(ms)": ms(t.wait_ns),
        "Synchronization Time(ms)": 0.0,
        "Idle Time(ms)": ms(idle),
        "Wait Time Ratio": (t.wait_ratio() * 1e4).round() / 1e4,
        "Synchronization Time Ratio": 0.0,
    });
    if let Some(s) = start_ns {
        v["Start Timestamp(us)"] = json!(s as f64 / 1e3);
    }
    v
}

/// What moved per transport: MB (10^6 bytes), ms and GB/s, as `aclprof analyze
/// --communication` counts them; a kind's totals have no bandwidth, as torch_npu's do not.
fn bandwidth_info(links: &[Link], with_bandwidth: bool) -> Value {
    let mut by: BTreeMap<&str, Link> = BTreeMap::new();
    for l in links {
        let t = by.entry(l.transport.as_str()).or_default();
        (t.count, t.bytes, t.ns) = (t.count + l.count, t.bytes + l.bytes, t.ns + l.ns);
    }
    let info: serde_json::Map<String, Value> = by
        .into_iter()
        .map(|(transport, l)| {
            let packet = l.bytes as f64 / l.count.max(1) as f64 / 1e6;
            let mut v = json!({
                "Transit Size(MB)": l.bytes as f64 / 1e6,
                "Transit Time(ms)": l.ns as f64 / 1e6,
                "Large Packet Ratio": 0.0,
                "Size Distribution": {packet.to_string(): [l.count, l.ns as f64 / 1e6]},
            });
            if with_bandwidth {
                v["Bandwidth(GB/s)"] = json!((l.bandwidth() * 1e4).round() / 1e4);
            }
            (transport.to_string(), v)
        })
        .collect();
    Value::Object(info)
}

/// communication_matrix.json: per op, each link it sent on (`src-dst` ranks) with what it
/// moved, and the rank's own link (`rank-rank`), by which readers map the group's ranks.
fn communication_matrix(c: &Comm, rank: u32) -> Value {
    let mut kinds = [serde_json::Map::new(), serde_json::Map::new()];
    for op in &c.each {
        let mut links = serde_json::Map::new();
        let link = |transport: &str, l: Option<&Link>| {
            let (bytes, ns) = l.map_or((0, 0), |l| (l.bytes, l.ns));
            json!({
                "Transport Type": transport,
                "Transit Size(MB)": bytes as f64 / 1e6,
                "Transit Time(ms)": ns as f64 / 1e6,
                "Bandwidth(GB/s)": l.map_or(0.0, |l| (l.bandwidth() * 1e4).round() / 1e4),
                "Op Name": op.name,
            })
        };
        links.insert(format!("{rank}-{rank}"), link("LOCAL", None));
        for l in &op.links {
            links.insert(format!("{}-{}", l.src, l.dst), link(&l.transport, Some(l)));
        }
        let k = usize::from(tn::is_p2p(&op.name));
        kinds[k].insert(format!("{}@{}", op.name, op.group), Value::Object(links));
    }
    let [collective, p2p] = kinds;
    json!({"step": {"collective": collective, "p2p": p2p}})
}

/// The rank of the run's first device, as its `info.json` says (its id without RANK_ID).
fn rank_of(prof: &Path, s: &crate::formats::host::Session) -> u32 {
    let d = s.devices.first().copied().unwrap_or(0);
    let p = prof.join(format!("device_{d}/info.json.{d}"));
    fs::read_to_string(p)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("rank_id")?.as_u64())
        .and_then(|r| u32::try_from(r).ok())
        .unwrap_or(d)
}

/// A header and rows of text cells.
type Table = (Vec<String>, Vec<Vec<String>>);
/// One of the memory tables, from the export's table of the same name.
type MemoryTable = fn(&Table) -> Table;

fn read_csv(p: &Path) -> Result<Table> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(p)
        .map_err(|e| file_error("cannot read", p, e))?;
    let header = rd
        .headers()
        .map_err(|e| file_error("cannot read", p, e))?
        .iter()
        .map(String::from)
        .collect();
    let mut rows = Vec::new();
    for r in rd.records() {
        let r = r.map_err(|e| file_error("cannot read", p, e))?;
        rows.push(r.iter().map(String::from).collect());
    }
    Ok((header, rows))
}

/// Creates (or truncates) an output file, never through a symbolic link (as the export
/// writes its own).
fn create(p: &Path) -> Result<fs::File> {
    crate::filemode::export::create_output(p).map_err(|e| file_error("cannot create", p, e))
}

/// torch_npu's CSV: Python's csv module's (CRLF, fields quoted only when they must be).
fn write_csv(p: &Path, header: &[String], rows: &[Vec<String>]) -> Result<()> {
    let f = create(p)?;
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(std::io::BufWriter::new(f));
    let werr = |e: csv::Error| file_error("cannot write", p, e);
    w.write_record(header).map_err(werr)?;
    for r in rows {
        w.write_record(r).map_err(werr)?;
    }
    w.flush().map_err(|e| file_error("cannot write", p, e))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    let mut src = fs::File::open(from).map_err(|e| file_error("cannot read", from, e))?;
    std::io::copy(&mut src, &mut create(to)?)
        .map(|_| ())
        .map_err(|e| file_error("cannot write", to, e))
}

fn write_json(p: &Path, v: &Value, pretty: bool) -> Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(v)
    } else {
        serde_json::to_string(v)
    }
    .unwrap_or_default();
    create(p)?
        .write_all(text.as_bytes())
        .map_err(|e| file_error("cannot write", p, e))
}

/// The run's kernels: op_summary's rows, kernel_details' columns.
struct Kernels {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Where each column the layout needs is.
    name: usize,
    ty: usize,
    core: usize,
    start: usize,
    dur: usize,
    stream: Option<usize>,
    shapes: Option<usize>,
    types: Option<usize>,
}

impl Kernels {
    fn read(e: &Export) -> Result<Kernels> {
        let Some(p) = e.file("op_summary", "csv") else {
            return err(ACL_ERROR_INVALID_FILE, "the export has no op_summary");
        };
        let (header, rows) = read_csv(&p)?;
        let at = |h: &str| header.iter().position(|x| x == h);
        let need = |h: &str| {
            at(h).ok_or_else(|| file_error("cannot read", &p, format!("no {h:?} column")))
        };
        Ok(Kernels {
            name: need("Op Name")?,
            ty: need("OP Type")?,
            core: need("Task Type")?,
            start: need("Task Start Time(us)")?,
            dur: need("Task Duration(us)")?,
            stream: at("Stream ID"),
            shapes: at("Input Shapes"),
            types: at("Input Data Types"),
            header,
            rows,
        })
    }

    /// The earliest kernel's start, epoch ns.
    fn first_start(&self) -> Option<u64> {
        self.rows
            .iter()
            .filter_map(|r| tn::ns_of_us(Self::cell(r, Some(self.start))))
            .min()
    }

    /// op_summary's header with kernel_details' names.
    fn details_header(&self) -> Vec<String> {
        self.header
            .iter()
            .map(|h| {
                tn::KERNEL_RENAMES
                    .iter()
                    .find(|(from, _)| from == h)
                    .map_or(h.clone(), |(_, to)| to.to_string())
            })
            .collect()
    }

    fn cell(row: &[String], i: Option<usize>) -> &str {
        i.and_then(|i| row.get(i)).map_or("", |s| s.as_str())
    }

    /// The kernel's duration in µs, as written.
    fn dur_us(&self, row: &[String]) -> f64 {
        Self::cell(row, Some(self.dur))
            .trim()
            .parse()
            .unwrap_or(0.0)
    }

    /// Each op's thread (its stream) and its span on the Python process (µs): its kernel's,
    /// but ending 1 ns before the next op on its thread starts when their kernels touch, since
    /// readers nest an op that starts exactly where another ends inside it.
    fn host_spans(&self) -> Vec<(u64, f64)> {
        let mut spans: Vec<(u64, Option<u64>, u64)> = self
            .rows
            .iter()
            .map(|r| {
                let tid = Self::cell(r, self.stream).trim().parse().unwrap_or(0);
                let start = tn::ns_of_us(Self::cell(r, Some(self.start)));
                let dur = tn::ns_of_us(Self::cell(r, Some(self.dur))).unwrap_or(0);
                (tid, start, dur)
            })
            .collect();
        let mut order: Vec<usize> = (0..spans.len()).collect();
        order.sort_by_key(|&i| (spans[i].0, spans[i].1));
        for w in order.windows(2) {
            let (a, b) = (spans[w[0]], spans[w[1]]);
            if let (true, Some(s0), Some(s1)) = (a.0 == b.0, a.1, b.1) {
                if s0 + a.2 >= s1 {
                    spans[w[0]].2 = s1.saturating_sub(s0 + 1);
                }
            }
        }
        spans
            .into_iter()
            .map(|(tid, _, dur)| (tid, dur as f64 / 1000.0))
            .collect()
    }

    /// One row per framework op: its host and device times are its kernel's.
    fn operator_details(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                let d = self.dur_us(r);
                let on_ai_core = Self::cell(r, Some(self.core)) == "AI_CORE";
                let ai_core = if on_ai_core { d } else { 0.0 };
                vec![
                    Self::cell(r, Some(self.ty)).to_string(),
                    tn::input_dims(Self::cell(r, self.shapes)),
                    String::new(),
                    d.to_string(),
                    d.to_string(),
                    d.to_string(),
                    d.to_string(),
                    ai_core.to_string(),
                    ai_core.to_string(),
                ]
            })
            .collect()
    }
}

/// trace_view.json: the framework's ops on the Python process, the export's timeline as it
/// is, and a `torch_to_npu` flow from each op to its kernel. A bare JSON array, as torch_npu
/// writes it (readers take no `traceEvents` object).
fn write_trace_view(e: &Export, k: &Kernels, to: &Path) -> Result<()> {
    let Some(tl) = e.file("msprof", "json") else {
        return err(ACL_ERROR_INVALID_FILE, "the export has no msprof timeline");
    };
    let text = fs::read_to_string(&tl).map_err(|x| file_error("cannot read", &tl, x))?;
    let events: Vec<Value> =
        serde_json::from_str(&text).map_err(|x| file_error("cannot read", &tl, x))?;
    let placed = kernel_places(&events);
    let py = e.session.pid;
    let mut out: Vec<Value> = vec![
        meta(py, 0, "process_name", json!({"name": tn::PYTHON_PROCESS})),
        meta(py, 0, "process_labels", json!({"labels": "CPU"})),
        meta(py, 0, "process_sort_index", json!({"sort_index": 0})),
    ];
    let mut threads = std::collections::BTreeSet::new();
    let mut flows = Vec::new();
    let spans = k.host_spans();
    for (r, (tid, host_dur)) in k.rows.iter().zip(spans) {
        let start = Kernels::cell(r, Some(k.start)).trim().to_string();
        let name = Kernels::cell(r, Some(k.name));
        threads.insert(tid);
        let mut args = serde_json::Map::new();
        args.insert("Sequence number".into(), json!(-1));
        args.insert("Fwd thread id".into(), json!(0));
        let dims = tn::input_dims(Kernels::cell(r, k.shapes));
        if !dims.is_empty() {
            args.insert("Input Dims".into(), json!(dims));
            let types = Kernels::cell(r, k.types).replace(';', ";\r\n");
            args.insert("Input type".into(), json!(types));
        }
        out.push(json!({
            "ph": "X", "name": Kernels::cell(r, Some(k.ty)), "pid": py, "tid": tid,
            "ts": start, "dur": host_dur, "cat": tn::CPU_OP, "args": args,
        }));
        let (Some(&(pid, ktid)), Some(id)) =
            (placed.get(&(start.as_str(), name)), tn::ns_of_us(&start))
        else {
            continue;
        };
        let flow = |ph: &str, pid: &Value, tid: &Value| {
            json!({"ph": ph, "bp": "e", "name": tn::FLOW_NAME, "id": id, "pid": pid,
                   "tid": tid, "ts": start, "cat": tn::FLOW_CATEGORY})
        };
        flows.push(flow("s", &json!(py), &json!(tid)));
        flows.push(flow("f", pid, ktid));
    }
    for t in threads {
        out.push(meta(
            py,
            t,
            "thread_name",
            json!({"name": format!("Thread {t}")}),
        ));
        out.push(meta(py, t, "thread_sort_index", json!({"sort_index": t})));
    }
    let mut w = std::io::BufWriter::new(create(to)?);
    let werr = |x: std::io::Error| file_error("cannot write", to, x);
    w.write_all(b"[").map_err(werr)?;
    let all = out.iter().chain(events.iter()).chain(flows.iter());
    for (i, ev) in all.enumerate() {
        if i > 0 {
            w.write_all(b",\n").map_err(werr)?;
        }
        serde_json::to_writer(&mut w, ev).map_err(|x| werr(x.into()))?;
    }
    w.write_all(b"]\n").map_err(werr)?;
    w.flush().map_err(werr)
}

fn meta(pid: u64, tid: u64, name: &str, args: Value) -> Value {
    json!({"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args})
}

/// Where each kernel is drawn, by its start text and name: the (pid, tid) of its slice on
/// the Ascend Hardware or HCCL process (a flow ends there, on the very same text).
fn kernel_places(events: &[Value]) -> HashMap<(&str, &str), (&Value, &Value)> {
    use crate::formats::timeline::{HARDWARE_PROCESS, HCCL_PROCESS};
    let devices: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .filter(|e| e["args"]["name"] == HARDWARE_PROCESS || e["args"]["name"] == HCCL_PROCESS)
        .map(|e| &e["pid"])
        .collect();
    events
        .iter()
        .filter(|e| e["ph"] == "X" && devices.contains(&&e["pid"]))
        .filter_map(|e| {
            let key = (e["ts"].as_str()?, e["name"].as_str()?);
            Some((key, (&e["pid"], &e["tid"])))
        })
        .collect()
}

/// The column `h` of `t`'s row `r`, "" if absent.
fn col<'t>(t: &'t Table, r: &'t [String], h: &str) -> &'t str {
    t.0.iter()
        .position(|x| x == h)
        .and_then(|i| r.get(i))
        .map_or("", |s| s.as_str())
}

/// KB (as written) in MB, as torch_npu prints a float.
fn mb(kb: &str) -> String {
    kb.trim()
        .parse::<f64>()
        .map_or(String::new(), |k| (k / 1024.0).to_string())
}

/// A µs time cell in torch_npu's form, or "" when unknown.
fn us(text: &str) -> String {
    tn::ns_of_us(text).map_or(String::new(), tn::us_cell)
}

/// operator_memory: each allocation, its release time from its duration.
fn operator_memory(t: &Table) -> Table {
    let rows =
        t.1.iter()
            .map(|r| {
                let at = tn::ns_of_us(col(t, r, "Allocation Time(us)"));
                let dur = tn::ns_of_us(col(t, r, "Duration(us)"));
                let released = at
                    .zip(dur)
                    .map_or(String::new(), |(a, d)| tn::us_cell(a + d));
                vec![
                    col(t, r, "Name").to_string(),
                    col(t, r, "Size(KB)").to_string(),
                    us(col(t, r, "Allocation Time(us)")),
                    released,
                    String::new(),
                    us(col(t, r, "Duration(us)")),
                    String::new(),
                    mb(col(t, r, "Allocation Total Allocated(KB)")),
                    mb(col(t, r, "Allocation Total Reserved(KB)")),
                    String::new(),
                    mb(col(t, r, "Release Total Allocated(KB)")),
                    mb(col(t, r, "Release Total Reserved(KB)")),
                    String::new(),
                    String::new(),
                    col(t, r, "Device").to_string(),
                ]
            })
            .collect();
    (tn::OPERATOR_MEMORY_HEADER.map(String::from).to_vec(), rows)
}

/// memory_record: each component's totals over time.
fn memory_record(t: &Table) -> Table {
    let rows =
        t.1.iter()
            .map(|r| {
                vec![
                    col(t, r, "Component").to_string(),
                    us(col(t, r, "Timestamp(us)")),
                    mb(col(t, r, "Total Allocated(KB)")),
                    mb(col(t, r, "Total Reserved(KB)")),
                    String::new(),
                    String::new(),
                    col(t, r, "Device").to_string(),
                ]
            })
            .collect();
    (tn::MEMORY_RECORD_HEADER.map(String::from).to_vec(), rows)
}

/// npu_module_mem: each module's reserved memory, sampled.
fn npu_module_mem(t: &Table) -> Table {
    let rows =
        t.1.iter()
            .map(|r| {
                vec![
                    col(t, r, "Device_id").to_string(),
                    col(t, r, "Component").to_string(),
                    us(col(t, r, "Timestamp(us)")),
                    mb(col(t, r, "Total Reserved(KB)")),
                    col(t, r, "Device").to_string(),
                ]
            })
            .collect();
    (tn::NPU_MODULE_MEM_HEADER.map(String::from).to_vec(), rows)
}

/// profiler_info_{rank}.json: what was collected, and when (torch_npu's keys; its version
/// keys are not claimed: aclprof's is said instead).
fn profiler_info(s: &crate::formats::host::Session, rank: u32) -> Value {
    use crate::formats::acl_prof::{ACL_PROF_MSPROFTX, ACL_PROF_TASK_MEMORY};
    let metric = tn::aic_metrics_name(s.aicore_metrics);
    json!({
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": null,
                "record_shapes": true,
                "profile_memory": s.data_type_config & ACL_PROF_TASK_MEMORY != 0,
                "with_stack": false,
                "with_flops": false,
                "with_modules": false,
            },
            "experimental_config": {
                "_profiler_level": "Level1",
                "_aic_metrics": metric,
                "_l2_cache": false,
                "_msprof_tx": s.data_type_config & ACL_PROF_MSPROFTX != 0,
                "_data_simplification": true,
                "record_op_args": false,
                "_export_type": ["text"],
            },
        },
        "start_info": {"collectionTimeBegin": s.wall_clock_ns, "clockMonotonicRaw": s.clock_monotonic_raw},
        "aclprof_version": env!("CARGO_PKG_VERSION"),
        "rank_id": rank,
    })
}

/// profiler_metadata.json: the environment variables torch_npu reports ("" when unset).
fn metadata() -> Value {
    let env: serde_json::Map<String, Value> = tn::ENV_VARIABLES
        .iter()
        .map(|k| (k.to_string(), json!(std::env::var(k).unwrap_or_default())))
        .collect();
    json!({"ENV_VARIABLES": env})
}
