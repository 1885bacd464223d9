//! Memory and host resources in an export: `memory_record`, `operator_memory`,
//! `static_op_mem`, `npu_mem`, `npu_module_mem` and the host's usage files; their tables
//! in CANN's database; the `NPU MEM` and usage counter tracks of the timelines. The host
//! log's events are gathered by [`Gathered::take`] in `host_events`' one pass.

use super::*;
use crate::formats::host::HostEvent;
use crate::formats::host_sys::{self as hs, Sample};
use crate::formats::memory::{self as fm, kb, MemEvent, PlanEntry, Pool};
use rusqlite::types::Value as V;

/// The host log's memory and host-resource events.
#[derive(Default)]
pub(super) struct Gathered {
    mem: Vec<MemEvent>,
    plans: Vec<PlanEntry>,
    samples: Vec<Sample>,
}

impl Gathered {
    /// Keeps `ev` if it is one of this module's; returns it otherwise.
    pub(super) fn take(&mut self, ev: HostEvent) -> Option<HostEvent> {
        match ev {
            HostEvent::Mem(m) => self.mem.push(m),
            HostEvent::MemPlan(p) => self.plans.push(p),
            HostEvent::Sys(s) => self.samples.push(s),
            other => return Some(other),
        }
        None
    }
}

/// Writes a CSV file of `header` and `rows`.
fn csv_file(path: &Path, header: &[&str], rows: &[Vec<String>]) -> Result<()> {
    let mut w = csv_writer(path)?;
    w.write_record(header).map_err(|e| csv_err(path, e))?;
    for r in rows {
        w.write_record(r).map_err(|e| csv_err(path, e))?;
    }
    w.flush().map_err(|e| csv_err(path, e.into()))
}

/// The session's memory sampling frequency and its span (the library's clock, ns).
pub(super) struct Span {
    pub(super) devices: Vec<u32>,
    pub(super) mem_hz: Option<u32>,
    pub(super) start: u64,
    pub(super) end: u64,
}

impl Span {
    /// From the session and its directory's end_info (the library's clock at the stop).
    pub(super) fn of(dir: &Path, session: &crate::formats::host::Session) -> Span {
        let end = fs::read(dir.join("host/end_info"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["clockMonotonicRaw"].as_str()?.parse::<u64>().ok())
            .unwrap_or(0);
        Span {
            devices: session.devices.clone(),
            mem_hz: session.mem_freq_hz,
            start: session.clock_monotonic_raw,
            end,
        }
    }
}

/// Writes everything memory and host resources give: files, tables, tracks.
pub(super) fn write(
    g: &mut Gathered,
    span: &Span,
    out: &Path,
    stamp: &str,
    data_type: u64,
    tl: &mut Timeline,
    db: &mut Db,
) -> Result<()> {
    // Each pool's events in the order they happened (a stable sort keeps a thread's order
    // at equal times).
    g.mem.sort_by_key(|m| m.start);
    if data_type & crate::formats::acl_prof::ACL_PROF_TASK_MEMORY != 0 {
        operator_memory(g, out, stamp, tl, db)?;
        static_plan(g, out, stamp)?;
    }
    if let Some(hz) = span.mem_hz {
        sampled(g, span, hz, out, stamp, tl, db)?;
    }
    if !g.samples.is_empty() {
        host_usage(g, out, stamp, tl, db)?;
    }
    Ok(())
}

fn operator_memory(
    g: &Gathered,
    out: &Path,
    stamp: &str,
    tl: &Timeline,
    db: &mut Db,
) -> Result<()> {
    let mut record = Vec::new();
    let mut paired: Vec<Vec<String>> = Vec::new();
    // Open allocations by (device, name, address): their row in `paired` and their time.
    let mut open: HashMap<(u32, &str, u64), (usize, u64)> = HashMap::new();
    use crate::formats::db_schema::{MEMORY_ALLOCATE, MEMORY_RELEASE};
    // (Events of size 0 are the totals when the session started: state, not rows.)
    for m in g.mem.iter().filter(|m| m.pool == Pool::Op && m.size != 0) {
        let dev = m.device.to_string();
        let component = if m.component.is_empty() {
            fm::OP_COMPONENT
        } else {
            m.component.as_str()
        };
        record.push(vec![
            dev.clone(),
            component.to_string(),
            tl.ts(m.start),
            kb(m.allocated),
            kb(m.reserved),
            fm::device_cell(m.device),
        ]);
        let key = (m.device, m.name.as_str(), m.addr);
        if m.size > 0 {
            open.insert(key, (paired.len(), m.start));
            paired.push(vec![
                dev,
                m.name.clone(),
                kb(m.size.unsigned_abs()),
                tl.ts(m.start),
                String::new(),
                kb(m.allocated),
                kb(m.reserved),
                String::new(),
                String::new(),
                fm::device_cell(m.device),
            ]);
        } else if let Some((i, began)) = open.remove(&key) {
            let r = &mut paired[i];
            r[4] = us3(m.start.saturating_sub(began));
            r[7] = kb(m.allocated);
            r[8] = kb(m.reserved);
        }
        let name = db.string_id(&m.name);
        let component = db.string_id(component);
        db.row(
            "NPU_OP_MEM",
            &[
                V::Integer(name),
                V::Integer(m.addr as i64),
                V::Integer(if m.size > 0 {
                    MEMORY_ALLOCATE
                } else {
                    MEMORY_RELEASE
                }),
                V::Integer(m.size.unsigned_abs() as i64),
                V::Integer(tl.wall(m.start) as i64),
                V::Integer(super::super::db::global_tid(tl.pid, m.tid)),
                V::Integer(m.allocated as i64),
                V::Integer(m.reserved as i64),
                V::Integer(component),
                V::Integer(i64::from(m.device)),
            ],
        )?;
    }
    if record.is_empty() {
        return Ok(()); // no operator memory: no files, as CANN writes none
    }
    csv_file(
        &out.join(format!("memory_record_{stamp}.csv")),
        fm::MEMORY_RECORD,
        &record,
    )?;
    csv_file(
        &out.join(format!("operator_memory_{stamp}.csv")),
        fm::OPERATOR_MEMORY,
        &paired,
    )
}

/// static_op_mem: each graph's plan, then its TOTAL: the most the plan holds at once.
fn static_plan(g: &Gathered, out: &Path, stamp: &str) -> Result<()> {
    let mut rows = Vec::new();
    // Per (device, graph, model): (first node, last node, bytes).
    type Plan = Vec<(u32, u32, u64)>;
    let mut graphs: BTreeMap<(u32, u32, &str), Plan> = BTreeMap::new();
    // A model loaded while a session starts may be planned twice: written once.
    let mut seen = std::collections::HashSet::new();
    for p in g.plans.iter().filter(|p| seen.insert(*p)) {
        rows.push(vec![
            p.device.to_string(),
            p.name.clone(),
            p.model.clone(),
            p.graph.to_string(),
            p.first.to_string(),
            p.last.to_string(),
            kb(p.size),
        ]);
        graphs
            .entry((p.device, p.graph, p.model.as_str()))
            .or_default()
            .push((p.first, p.last, p.size));
    }
    if rows.is_empty() {
        return Ok(());
    }
    for ((device, graph, model), entries) in &graphs {
        let peak = entries
            .iter()
            .map(|&(node, _, _)| {
                entries
                    .iter()
                    .filter(|&&(f, l, _)| f <= node && node <= l)
                    .map(|e| e.2)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        rows.push(vec![
            device.to_string(),
            fm::STATIC_TOTAL.to_string(),
            model.to_string(),
            graph.to_string(),
            String::new(),
            String::new(),
            kb(peak),
        ]);
    }
    csv_file(
        &out.join(format!("static_op_mem_{stamp}.csv")),
        fm::STATIC_OP_MEM,
        &rows,
    )
}

/// npu_mem and npu_module_mem: the device memory the process holds, read at every tick of
/// the configured frequency from the recorded allocations (they change only at events, so
/// a tick reads exactly what a sampler on the device would), and once more at the end.
#[allow(clippy::too_many_arguments)]
fn sampled(
    g: &Gathered,
    span: &Span,
    hz: u32,
    out: &Path,
    stamp: &str,
    tl: &mut Timeline,
    db: &mut Db,
) -> Result<()> {
    let period = 1_000_000_000 / u64::from(hz.max(1));
    let last = g.mem.last().map_or(0, |m| m.start);
    let end = span.end.max(last).max(span.start);
    let mut devices: Vec<u32> = g.mem.iter().map(|m| m.device).collect();
    devices.extend(&span.devices);
    devices.sort_unstable();
    devices.dedup();
    let (mut mem_rows, mut module_rows) = (Vec::new(), Vec::new());
    let (app, device_s) = (
        crate::formats::db_schema::MEMORY_APP,
        crate::formats::db_schema::MEMORY_DEVICE,
    );
    let memp = tl.pid(fm::NPU_MEM_SORT, HOST_DEV);
    let tl_path = out.join(format!("msprof_{stamp}.json"));
    let tlw = |r: std::io::Result<()>| io("cannot write", &tl_path, r);
    tlw(tl.process(memp, fm::NPU_MEM_TRACK, "NPU", fm::NPU_MEM_SORT))?;
    for dev in devices {
        let evs: Vec<&MemEvent> = g.mem.iter().filter(|m| m.device == dev).collect();
        let mut held: BTreeMap<Pool, u64> = BTreeMap::new();
        let mut i = 0;
        let mut t = span.start;
        // Every tick of the frequency, and the end: what the process held when it stopped.
        let mut last_tick = false;
        while !last_tick {
            if t >= end {
                (t, last_tick) = (end, true);
            }
            while i < evs.len() && evs[i].start <= t {
                held.insert(evs[i].pool, evs[i].reserved);
                i += 1;
            }
            let get = |p: Pool| held.get(&p).copied().unwrap_or(0);
            let total = get(Pool::Op) + get(Pool::App) + get(Pool::Model);
            let ts = tl.ts(t);
            for event in [fm::NPU_MEM_APP, fm::NPU_MEM_DEVICE] {
                mem_rows.push(vec![
                    dev.to_string(),
                    event.to_string(),
                    kb(0),
                    kb(total),
                    kb(total),
                    ts.clone(),
                ]);
            }
            for (ty, v) in [(app, total), (device_s, total)] {
                db.row(
                    "NPU_MEM",
                    &[
                        V::Integer(ty),
                        V::Integer(0),
                        V::Integer(v as i64),
                        V::Integer(tl.wall(t) as i64),
                        V::Integer(i64::from(dev)),
                    ],
                )?;
            }
            for (module, v) in [
                (fm::MODULE_RUNTIME, get(Pool::App)),
                (fm::MODULE_GE, get(Pool::Op) + get(Pool::Model)),
            ] {
                module_rows.push(vec![
                    dev.to_string(),
                    module.1.to_string(),
                    ts.clone(),
                    kb(v),
                    fm::device_cell(dev),
                ]);
                db.row(
                    "NPU_MODULE_MEM",
                    &[
                        V::Integer(module.0),
                        V::Integer(tl.wall(t) as i64),
                        V::Integer(v as i64),
                        V::Integer(i64::from(dev)),
                    ],
                )?;
            }
            for (k, (name, v)) in [("DDR", 0), ("HBM", total), ("Memory", total)]
                .into_iter()
                .enumerate()
            {
                let track = format!("APP/{name}");
                let tid = u64::from(dev) << 8 | k as u64;
                tlw(tl.counter(memp, tid, &track, t, fm::NPU_MEM_UNIT, v as f64 / 1024.0, 3))?;
            }
            t += period;
        }
    }
    csv_file(
        &out.join(format!("npu_mem_{stamp}.csv")),
        fm::NPU_MEM,
        &mem_rows,
    )?;
    csv_file(
        &out.join(format!("npu_module_mem_{stamp}.csv")),
        fm::NPU_MODULE_MEM,
        &module_rows,
    )
}

/// The host's usage: per-process summaries (`host_*_usage`), system summaries
/// (`cpu_usage`, `process_cpu_usage`, `sys_mem`, `process_mem`), the tables and tracks.
fn host_usage(g: &Gathered, out: &Path, stamp: &str, tl: &mut Timeline, db: &mut Db) -> Result<()> {
    let file = |name: &str| out.join(format!("{name}_{stamp}.csv"));
    let mut u = Usage {
        tl_path: out.join(format!("msprof_{stamp}.json")),
        cpup: tl.pid(hs::CPU_TRACK.1, HOST_DEV),
        memp: tl.pid(hs::MEM_TRACK.1, HOST_DEV),
        diskp: tl.pid(hs::DISK_TRACK.1, HOST_DEV),
        netp: tl.pid(hs::NET_TRACK.1, HOST_DEV),
        ..Usage::default()
    };
    for s in &g.samples {
        u.sample(s, tl, db)?;
    }
    u.write_summaries(&file)?;
    if !u.sys_cpu.is_empty() {
        csv_file(&file("cpu_usage"), hs::CPU_USAGE, &u.sys_cpu_rows())?;
    }
    if !u.sys_mem.is_empty() {
        csv_file(&file("sys_mem"), hs::SYS_MEM, &[u.sys_mem_row()])?;
    }
    if !u.procs.is_empty() {
        let (cpu_rows, mem_rows) = u.process_rows();
        csv_file(&file("process_cpu_usage"), hs::PROCESS_CPU_USAGE, &cpu_rows)?;
        csv_file(&file("process_mem"), hs::PROCESS_MEM, &mem_rows)?;
    }
    Ok(())
}

/// Per (pid, name): sums of CPU %, size, resident and shared pages, and the samples.
type ProcSums = (f64, u64, u64, u64, u64);

/// The host's samples as they are read: drawn and stored at once, and summed for the
/// summaries written after the last.
#[derive(Default)]
struct Usage<'g> {
    tl_path: PathBuf,
    cpup: u64,
    memp: u64,
    diskp: u64,
    netp: u64,
    totals: Vec<f64>,
    used_cpus: std::collections::BTreeSet<usize>,
    ncpu: usize,
    mem: Vec<f64>,
    mem_total: u64,
    reads: Vec<f64>,
    writes: Vec<f64>,
    net: Vec<f64>,
    speed: u64,
    sys_cpu: Vec<&'g [[f64; 6]]>,
    sys_mem: Vec<&'g [u64]>,
    procs: BTreeMap<(u32, String), ProcSums>,
}

impl<'g> Usage<'g> {
    /// One sample: its timeline counters and database row, and its part of the sums.
    fn sample(&mut self, s: &'g Sample, tl: &mut Timeline, db: &mut Db) -> Result<()> {
        let tl_path = self.tl_path.clone();
        let tlw = |r: std::io::Result<()>| io("cannot write", &tl_path, r);
        let (cpu_name, cpu_sort) = hs::CPU_TRACK;
        let (mem_name, mem_sort) = hs::MEM_TRACK;
        let (disk_name, disk_sort) = hs::DISK_TRACK;
        let (net_name, net_sort) = hs::NET_TRACK;
        let (cpup, memp, diskp, netp) = (self.cpup, self.memp, self.diskp, self.netp);
        let at = s.start();
        let wall = tl.wall(at) as i64;
        match s {
            Sample::Cpu { cpus, .. } => {
                tlw(tl.process(cpup, cpu_name, "CPU", cpu_sort))?;
                self.ncpu = self.ncpu.max(cpus.len());
                for (i, u) in cpus.iter().enumerate() {
                    if *u > 0.0 {
                        self.used_cpus.insert(i);
                    }
                    tlw(tl.counter(
                        cpup,
                        i as u64,
                        &format!("CPU {i}"),
                        at,
                        hs::USAGE_UNIT,
                        *u,
                        2,
                    ))?;
                    db.row(
                        "CPU_USAGE",
                        &[V::Integer(wall), V::Integer(i as i64), V::Real(*u)],
                    )?;
                }
                let avg = cpus.iter().sum::<f64>() / cpus.len().max(1) as f64;
                tlw(tl.counter(cpup, 1 << 16, "CPU Avg", at, hs::USAGE_UNIT, avg, 2))?;
                self.totals.push(cpus.iter().sum::<f64>() / 100.0);
            }
            Sample::Mem { used, total, .. } => {
                self.mem.push(*used as f64);
                self.mem_total = self.mem_total.max(*total);
                let pct = 100.0 * *used as f64 / (*total).max(1) as f64;
                tlw(tl.process(memp, mem_name, "CPU", mem_sort))?;
                tlw(tl.counter(memp, 0, mem_name, at, hs::USAGE_UNIT, pct, 2))?;
                db.row("HOST_MEM_USAGE", &[V::Integer(wall), V::Real(pct)])?;
            }
            Sample::Disk { read, write, .. } => {
                self.reads.push(*read as f64);
                self.writes.push(*write as f64);
                tlw(tl.process(diskp, disk_name, "CPU", disk_sort))?;
                tlw(tl.counter(diskp, 0, "Disk Read", at, "KB/s", *read as f64 / 1024.0, 3))?;
                tlw(tl.counter(
                    diskp,
                    1,
                    "Disk Write",
                    at,
                    "KB/s",
                    *write as f64 / 1024.0,
                    3,
                ))?;
                db.row(
                    "HOST_DISK_USAGE",
                    &[
                        V::Integer(wall),
                        V::Integer(*read as i64),
                        V::Integer(*write as i64),
                        V::Null,
                    ],
                )?;
            }
            Sample::Net {
                used, speed: sp, ..
            } => {
                self.net.push(*used as f64);
                self.speed = self.speed.max(*sp);
                let pct = if *sp > 0 {
                    100.0 * *used as f64 / *sp as f64
                } else {
                    0.0
                };
                tlw(tl.process(netp, net_name, "CPU", net_sort))?;
                tlw(tl.counter(netp, 0, net_name, at, hs::USAGE_UNIT, pct, 2))?;
                db.row(
                    "HOST_NETWORK_USAGE",
                    &[V::Integer(wall), V::Real(pct), V::Integer(*sp as i64)],
                )?;
            }
            Sample::SysCpu { cpus, .. } => self.sys_cpu.push(cpus),
            Sample::SysMem { values, .. } => self.sys_mem.push(values),
            Sample::Procs { procs: ps, .. } => {
                for p in ps {
                    let e = self.procs.entry((p.pid, p.name.clone())).or_default();
                    e.0 += p.cpu;
                    e.1 += p.size;
                    e.2 += p.resident;
                    e.3 += p.shared;
                    e.4 += 1;
                }
            }
            Sample::Other => {}
        }
        Ok(())
    }

    /// The per-process summaries, each written when its item was sampled.
    fn write_summaries(&self, file: &dyn Fn(&str) -> PathBuf) -> Result<()> {
        let kbs = |v: f64| format!("{:.3}", v / 1024.0);
        let peak = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let summaries: [(&str, &[&str], bool, Vec<String>); 4] = [
            (
                "host_cpu_usage",
                hs::HOST_CPU_USAGE,
                !self.totals.is_empty(),
                vec![
                    self.ncpu.to_string(),
                    self.used_cpus.len().to_string(),
                    format!("{:.0}", hs::recommend(&self.totals).ceil()),
                ],
            ),
            (
                "host_mem_usage",
                hs::HOST_MEM_USAGE,
                !self.mem.is_empty(),
                vec![
                    kbs(self.mem_total as f64),
                    kbs(peak(&self.mem)),
                    kbs(hs::recommend(&self.mem)),
                ],
            ),
            (
                "host_disk_usage",
                hs::HOST_DISK_USAGE,
                !self.reads.is_empty(),
                vec![
                    kbs(peak(&self.reads)),
                    kbs(hs::recommend(&self.reads)),
                    kbs(peak(&self.writes)),
                    kbs(hs::recommend(&self.writes)),
                ],
            ),
            (
                "host_network_usage",
                hs::HOST_NETWORK_USAGE,
                !self.net.is_empty(),
                vec![
                    kbs(self.speed as f64),
                    kbs(peak(&self.net)),
                    kbs(hs::recommend(&self.net)),
                ],
            ),
        ];
        for (name, header, sampled, cells) in summaries {
            if sampled {
                let row: Vec<String> = std::iter::once(HOST.to_string()).chain(cells).collect();
                csv_file(&file(name), header, &[row])?;
            }
        }
        Ok(())
    }

    /// `cpu_usage`: averages over the run, per CPU, then all CPUs ("Avg").
    fn sys_cpu_rows(&self) -> Vec<Vec<String>> {
        let n = self.sys_cpu.iter().map(|c| c.len()).max().unwrap_or(0);
        let mut rows = Vec::new();
        let mut all = [0.0f64; 6];
        for i in 0..n {
            let mut sum = [0.0f64; 6];
            let mut k = 0.0;
            for c in &self.sys_cpu {
                if let Some(v) = c.get(i) {
                    for j in 0..6 {
                        sum[j] += v[j];
                    }
                    k += 1.0;
                }
            }
            let avg = sum.map(|x| x / f64::max(k, 1.0));
            for j in 0..6 {
                all[j] += avg[j] / n as f64;
            }
            let mut r = vec![HOST.to_string(), format!("CPU{i}")];
            r.extend(avg.iter().map(|x| hs::pct(*x)));
            rows.push(r);
        }
        let mut r = vec![HOST.to_string(), "Avg".to_string()];
        r.extend(all.iter().map(|x| hs::pct(*x)));
        rows.push(r);
        rows
    }

    /// `sys_mem`: each value's average over the run.
    fn sys_mem_row(&self) -> Vec<String> {
        let k = self.sys_mem.len() as u64;
        let cols = hs::SYS_MEM_KEYS.len();
        let mut r = vec![HOST.to_string()];
        r.extend((0..cols).map(|j| {
            (self
                .sys_mem
                .iter()
                .map(|v| v.get(j).copied().unwrap_or(0))
                .sum::<u64>()
                / k)
                .to_string()
        }));
        r
    }

    /// `process_cpu_usage` and `process_mem`: each process's averages over the run.
    fn process_rows(&self) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
        let (mut cpu_rows, mut mem_rows) = (Vec::new(), Vec::new());
        for ((pid, name), (cpu, size, res, shared, k)) in &self.procs {
            let k = (*k).max(1);
            cpu_rows.push(vec![
                HOST.to_string(),
                pid.to_string(),
                name.clone(),
                hs::pct(cpu / k as f64),
            ]);
            mem_rows.push(vec![
                HOST.to_string(),
                pid.to_string(),
                name.clone(),
                (size / k).to_string(),
                (res / k).to_string(),
                (shared / k).to_string(),
            ]);
        }
        (cpu_rows, mem_rows)
    }
}

/// The host column of the host's tables.
const HOST: &str = "host";
