//! File mode (`aclprofInit/Start/Stop/Finalize`): one `PROF_…` result directory per start.
//!
//! While a session runs, each profiled device's ops stream to disk through a file sink (the
//! same staging and writer thread as a pipe subscription, writing one raw file of 512-byte
//! records per stream under `device_<id>/data/`), and host-side events (API calls, msproftx,
//! steps) are appended as JSON lines to `host/data/aclprof_host.jsonl`. Memory does not
//! grow with the run. At stop, [`export`] turns the raw data into the files Ascend's tools
//! read (`mindstudio_profiler_output/`) in one streaming pass; the same function exports a
//! directory left behind by a process that died (`aclprofExtExport`).

pub mod db;
pub mod export;
pub mod memlog;
pub mod overlap;
pub mod pftrace;
pub mod sampler;

use crate::error::*;
use crate::fork::{global, Mutex, Rank};
use crate::settings;
use crate::state::ProfConfig;
use crate::transport::{Dest, StreamFiles, Sub};
use serde_json::json;
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::formats::host::{HostEvent, Session as HostSession};
use crate::formats::layout::{HOST_LOG, MEM_LOG, SESSION_FILE};

/// One running `aclprofStart`: its result directory and config, the file sinks of its
/// devices, its host event log and data types (published to reporting threads while it
/// lives), and its host sampler.
pub struct Session {
    pub dir: PathBuf,
    pub config: ProfConfig,
    sinks: Vec<Arc<Sub>>,
    host: HostRecording,
    sampler: Option<sampler::Sampler>,
}

/// A session's host event log and data types, published where reporting threads find them
/// without a lock ([`host_event`], [`recording`]). Only a [`Session`] holds one, so the
/// log and the switch begin and end with it: installed when the session begins, removed
/// when it ends or is dropped.
struct HostRecording(());

impl HostRecording {
    fn install(log: HostLog, data_type: u64) -> HostRecording {
        *HOST.lock() = Some(log);
        DATA_TYPE.store(data_type, std::sync::atomic::Ordering::Release);
        HostRecording(())
    }

    /// Stops recording host events (the log stays open for what is in flight).
    fn pause(&self) {
        DATA_TYPE.store(0, std::sync::atomic::Ordering::Release);
    }

    /// Closes the log, writing what it holds; returns the events it lost and why.
    fn finish(self) -> (u64, String) {
        self.pause();
        let host = HOST.lock().take().map(|mut h| {
            h.flush();
            (h.lost, h.why.clone())
        });
        both(host.unwrap_or_default(), memlog::close())
    }
}

/// The host log's and the memory log's losses as one figure, and why.
fn both((a, why_a): (u64, String), (b, why_b): (u64, String)) -> (u64, String) {
    let why = match (why_a.is_empty(), why_b.is_empty()) {
        (false, false) => format!("{why_a}; {why_b}"),
        (true, _) => why_b,
        (false, true) => why_a,
    };
    (a + b, why)
}

impl Drop for HostRecording {
    fn drop(&mut self) {
        self.pause();
        drop(HOST.lock().take());
        memlog::discard();
    }
}

global! {
    /// The host event log. A forked child records no host events: the log and its buffer
    /// are the parent's, never flushed by the child.
    static HOST: Mutex<Option<HostLog>> = Mutex::reset_in_child(Rank::Host, None, |h| {
        DATA_TYPE.store(0, std::sync::atomic::Ordering::Release);
        std::mem::forget(h.take());
    });
}

/// The host event log of the running session, and what it lost.
struct HostLog {
    file: fs::File,
    /// Whole lines not written yet, and how many events they are.
    buf: Vec<u8>,
    pending: u64,
    /// Events lost to write errors, and why; `reported` of them already said by a flush.
    lost: u64,
    reported: u64,
    why: String,
    /// A failed write may have left part of a line in the file: the next write starts with
    /// a line break, so the fragment stays a line of its own (unreadable; its event is
    /// counted lost) and the next event is not glued to it.
    torn: bool,
}

/// Host events are written in batches of about this many bytes.
const HOST_BATCH: usize = 64 * 1024;

impl HostLog {
    fn push(&mut self, ev: &HostEvent) {
        ev.to_line(&mut self.buf);
        self.buf.push(b'\n');
        self.pending += 1;
        if self.buf.len() >= HOST_BATCH {
            self.flush();
        }
    }

    /// Writes the buffered events; if that fails they are lost (counted), never written
    /// twice.
    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let (file, buf, torn) = (&mut self.file, &self.buf, self.torn);
        let r = crate::transport::fd::quietly(crate::transport::fd::Signals::FSIZE, || {
            if torn {
                file.write_all(b"\n")?;
            }
            file.write_all(buf)
        });
        if let Err(e) = &r {
            self.lost += self.pending;
            self.why = format!("host events: {e}");
        }
        self.torn = r.is_err();
        self.buf.clear();
        self.pending = 0;
    }
}
static DATA_TYPE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub use crate::clock::local_stamp;

/// `PROF_<index 6>_<local time 17>_<pid 8><8 letters A-R>`, as CANN names them, for this
/// process.
pub fn dir_name(index: u64) -> String {
    dir_name_of(index, std::process::id())
}

/// [`dir_name`] for process `pid`.
pub fn dir_name_of(index: u64, pid: u32) -> String {
    use std::hash::{BuildHasher, RandomState};
    let mut h = RandomState::new().hash_one((index, crate::clock::wall_ns()));
    let letters: String = (0..8)
        .map(|_| {
            let c = (b'A' + (h % 18) as u8) as char;
            h /= 18;
            c
        })
        .collect();
    format!(
        "PROF_{:06}_{}_{:08}{letters}",
        (index % 999_999) + 1,
        local_stamp(true),
        pid
    )
}

fn write_json(path: &Path, v: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    fs::write(path, text + "\n").or_else(|e| {
        err(
            ACL_ERROR_INVALID_FILE,
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

fn mkdir(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o750)
        .create(path)
        .or_else(|e| {
            err(
                ACL_ERROR_INVALID_FILE,
                format!("cannot create {}: {e}", path.display()),
            )
        })
}

/// This machine's name, as CANN writes it in a result directory.
pub(crate) fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// `DeviceInfo` of an emulated device: an Ascend 310P-class NPU.
fn device_info(id: u32) -> serde_json::Value {
    json!({"id": id, "ai_core_num": crate::formats::op_summary::AI_CORE_NUM, "aiv_num": crate::formats::op_summary::AIV_NUM, "aic_frequency": "1080", "hwts_frequency": "100",
           "aiv_frequency": "1080", "env_type": 3, "ctrl_cpu_id": "ARMv8_Cortex_A55", "ctrl_cpu_core_num": 8})
}

fn time_info(begin: bool, wall: u64, mono: u64) -> serde_json::Value {
    let (d, t) = if begin {
        ("collectionDateBegin", "collectionTimeBegin")
    } else {
        ("collectionDateEnd", "collectionTimeEnd")
    };
    json!({ d: local_stamp(true), t: (wall / 1000).to_string(), "clockMonotonicRaw": mono.to_string() })
}

/// A result directory being laid out: what each device's metadata repeats.
pub struct Layout {
    pub dir: PathBuf,
    pid: u32,
    host_uid: String,
    sample: serde_json::Value,
    mono: u64,
    wall: u64,
    session: HostSession,
}

/// Creates result directory `dir` of process `pid` recording `config`: the host's metadata,
/// an empty host event log, and the session file, which lets `export` rebuild everything
/// from disk, even after a crash. [`Layout::add_device`] adds each device.
pub fn lay_out(
    dir: PathBuf,
    pid: u32,
    config: &ProfConfig,
    settings_kv: &HashMap<i32, String>,
) -> Result<Layout> {
    let mono = crate::clock::now_ns();
    let wall = crate::clock::wall_ns();
    let host_uid = format!("{:016x}", {
        use std::hash::{BuildHasher, Hasher};
        let mut h =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .build_hasher();
        h.write(hostname().as_bytes());
        h.finish()
    });
    mkdir(&dir.join("host/data"))?;
    mkdir(&dir.join(crate::formats::layout::OUTPUT_DIR))?;
    mkdir(&dir.join("analyze"))?;
    let limit = settings_kv
        .get(&crate::formats::prof_values::config_type::STORAGE_LIMIT)
        .and_then(|v| v.strip_suffix("MB"))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|mb| mb << 20);
    use crate::formats::prof_values::config_type as ct;
    let hz = |ty: i32| {
        settings_kv
            .get(&ty)
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    let mem_freq_hz = hz(ct::SYS_HARDWARE_MEM_FREQ);
    let host_sys = settings_kv.get(&ct::HOST_SYS).cloned();
    let host_sys_usage = settings_kv.get(&ct::HOST_SYS_USAGE).cloned();
    let host_sys_hz = (host_sys.is_some() || host_sys_usage.is_some())
        .then(|| hz(ct::HOST_SYS_USAGE_FREQ).unwrap_or(crate::formats::host_sys::HOST_SYS_HZ));
    // aclprofSetConfig types that ask for what only an NPU's hardware (or root) has.
    let asked = |ty: i32| settings_kv.contains_key(&ty);
    let hardware_only: Vec<String> = [
        (
            ct::LLC_MODE,
            "LLC bandwidth and hit rates (ACL_PROF_LLC_MODE)",
        ),
        (ct::SYS_IO_FREQ, "NIC and RoCE I/O (ACL_PROF_SYS_IO_FREQ)"),
        (
            ct::SYS_INTERCONNECTION_FREQ,
            "HCCS and PCIe bandwidth (ACL_PROF_SYS_INTERCONNECTION_FREQ)",
        ),
        (ct::DVPP_FREQ, "DVPP (ACL_PROF_DVPP_FREQ)"),
        (
            ct::LOW_POWER_FREQ,
            "low-power states (ACL_PROF_LOW_POWER_FREQ)",
        ),
    ]
    .into_iter()
    .filter(|(ty, _)| asked(*ty))
    .map(|(_, what)| what.to_string())
    .chain(
        host_sys
            .as_deref()
            .filter(|v| v.split(',').any(|i| i.trim() == "osrt"))
            .map(|_| {
                "OS runtime calls (ACL_PROF_HOST_SYS osrt): msprof traces them with perf and \
                 ltrace, which need root"
                    .to_string()
            }),
    )
    .collect();
    let sample = json!({
        "devices": config.devices.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","),
        "dataTypeConfig": format!("{:#x}", config.data_type),
        "ai_core_metrics": config.aicore_metrics,
        "acl": if config.data_type & crate::formats::acl_prof::ACL_PROF_ACL_API != 0 { "on" } else { "off" },
        "task_time": if config.data_type & (0x2 | 0x800) != 0 { "on" } else { "off" },
        "training_trace": if config.data_type & crate::formats::acl_prof::ACL_PROF_TRAINING_TRACE != 0 { "on" } else { "off" },
        "msproftx": if config.data_type & crate::formats::acl_prof::ACL_PROF_MSPROFTX != 0 { "on" } else { "off" },
        "storage_limit": settings_kv.get(&crate::formats::prof_values::config_type::STORAGE_LIMIT).cloned().unwrap_or_default(),
    });
    write_json(
        &dir.join("host/info.json"),
        &json!({"pid": pid.to_string(), "hostname": hostname(), "hostUid": host_uid, "DeviceInfo": []}),
    )?;
    write_json(&dir.join("host/sample.json"), &sample)?;
    write_json(&dir.join("host/start_info"), &time_info(true, wall, mono))?;
    let session = HostSession {
        aicore_metrics: u64::from(config.aicore_metrics),
        bp_point: config.bp_point.clone(),
        clock_monotonic_raw: mono,
        data_type_config: config.data_type,
        devices: config.devices.clone(),
        fp_point: config.fp_point.clone(),
        host_sys: host_sys.clone(),
        host_sys_usage: host_sys_usage.clone(),
        host_sys_hz,
        hardware_only,
        imported_from: None,
        mem_freq_hz,
        pid: u64::from(pid),
        storage_limit_bytes: limit,
        record: settings::get().record.clone(),
        wall_clock_ns: wall,
    };
    write_json(&dir.join(SESSION_FILE), &session)?;
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(HOST_LOG))
        .or_else(|e| {
            err(
                ACL_ERROR_INVALID_FILE,
                format!("cannot create the host event log: {e}"),
            )
        })?;
    Ok(Layout {
        dir,
        pid,
        host_uid,
        sample,
        mono,
        wall,
        session,
    })
}

impl Layout {
    /// Adds device `d` as rank `rank`: its metadata and its `data` directory (returned),
    /// where its raw stream files go. A device the session file does not list yet is added
    /// to it.
    pub fn add_device(&mut self, d: u32, rank: u32) -> Result<PathBuf> {
        let dd = self.dir.join(format!("device_{d}"));
        mkdir(&dd.join("data"))?;
        let mut info = json!({"pid": self.pid.to_string(), "rank_id": rank, "hostUid": self.host_uid, "hostname": hostname(),
                              "platform_version": "aclprof-emulated", "DeviceInfo": [device_info(d)]});
        info["devices"] = json!(d.to_string());
        write_json(&dd.join(format!("info.json.{d}")), &info)?;
        write_json(&dd.join("sample.json"), &self.sample)?;
        write_json(
            &dd.join(format!("start_info.{d}")),
            &time_info(true, self.wall, self.mono),
        )?;
        if !self.session.devices.contains(&d) {
            self.session.devices.push(d);
            // Whole or not at all: a crash never leaves half a session file.
            let tmp = self.dir.join("host/data/session.tmp");
            write_json(&tmp, &self.session)?;
            fs::rename(&tmp, self.dir.join(SESSION_FILE)).or_else(|e| {
                err(
                    ACL_ERROR_INVALID_FILE,
                    format!("cannot write the session file: {e}"),
                )
            })?;
        }
        Ok(dd.join("data"))
    }
}

/// Creates the result directory and its metadata, and starts recording.
pub fn begin(
    root: &Path,
    index: u64,
    config: &ProfConfig,
    settings_kv: &HashMap<i32, String>,
) -> Result<Session> {
    let mut layout = lay_out(
        root.join(dir_name(index)),
        std::process::id(),
        config,
        settings_kv,
    )?;
    let dir = layout.dir.clone();
    let limit = layout.session.storage_limit_bytes;
    let mem_freq_hz = layout.session.mem_freq_hz;
    let host_sys = layout.session.host_sys.clone();
    let host_sys_usage = layout.session.host_sys_usage.clone();
    let host_sys_hz = layout.session.host_sys_hz;
    let s = settings::get();
    let mut sinks = Vec::new();
    let mut routes = HashMap::new();
    for (i, &d) in config.devices.iter().enumerate() {
        // With RANK_ID set, the process's devices are ranks RANK_ID, RANK_ID + 1, ... in the
        // config's order; without, a device's rank is its id (docs/design.md, "Clusters").
        let rank = s.rank.map_or(d, |r| r.saturating_add(i as u32));
        let data = layout.add_device(d, rank)?;
        let files = StreamFiles::new(data, limit.map(|l| l / config.devices.len().max(1) as u64));
        let sink = Sub::start(
            u32::MAX,
            d,
            Dest::Files(crate::sync::Mutex::new(files)),
            s.buffer_records,
            s.on_full,
        )?;
        routes.insert(d, sink.clone());
        sinks.push(sink);
    }
    let host = fs::OpenOptions::new()
        .append(true)
        .open(dir.join(HOST_LOG))
        .or_else(|e| {
            err(
                ACL_ERROR_INVALID_FILE,
                format!("cannot open the host event log: {e}"),
            )
        })?;
    let sampled = if mem_freq_hz.is_some() {
        crate::formats::prof_values::MEM_SAMPLED
    } else {
        0
    };
    let log = HostLog {
        file: host,
        buf: Vec::new(),
        pending: 0,
        lost: 0,
        reported: 0,
        why: String::new(),
        torn: false,
    };
    let data_type = config.data_type | sampled;
    if data_type & (crate::formats::acl_prof::ACL_PROF_TASK_MEMORY | sampled) != 0 {
        memlog::open(&dir.join(MEM_LOG)).or_else(|e| {
            err(
                ACL_ERROR_INVALID_FILE,
                format!("cannot create the memory event log: {e}"),
            )
        })?;
    }
    let host = HostRecording::install(log, data_type);
    crate::hotpath::set_file_sinks(routes);
    let ask = sampler::Ask::new(
        host_sys.as_deref(),
        host_sys_usage.as_deref(),
        host_sys_hz.unwrap_or(1),
    );
    let sampler = if ask.any() {
        sampler::Sampler::start(ask, record_sample)
    } else {
        None
    };
    log::info!(
        "aclprof: profiling devices {:?} into {}",
        config.devices,
        dir.display()
    );
    Ok(Session {
        dir,
        config: config.clone(),
        sinks,
        host,
        sampler,
    })
}

impl Session {
    /// The file sinks recording this session's devices.
    pub fn sinks(&self) -> &[Arc<Sub>] {
        &self.sinks
    }
}

/// Writes buffered host events to disk. Returns the events lost since the last call, and
/// why, if any were.
pub fn flush_host_events() -> Option<(u64, String)> {
    let host = {
        let mut g = HOST.lock();
        g.as_mut().map(|h| {
            h.flush();
            let new = h.lost - h.reported;
            h.reported = h.lost;
            (
                new,
                if new > 0 {
                    h.why.clone()
                } else {
                    String::new()
                },
            )
        })
    };
    let (n, why) = both(
        host.unwrap_or_default(),
        memlog::flush().unwrap_or_default(),
    );
    (n > 0).then_some((n, why))
}

/// Appends one host event if its switch is on (`bit` of dataTypeConfig); `ev` makes it, so
/// nothing is built (no allocation, no system call) while the switch is off.
pub fn host_event(bit: u64, ev: impl FnOnce() -> HostEvent) {
    if DATA_TYPE.load(std::sync::atomic::Ordering::Acquire) & bit == 0 {
        return;
    }
    let ev = ev();
    if let Some(h) = HOST.lock().as_mut() {
        h.push(&ev);
    }
}

/// True while a session records events of any of `bits` (`ACL_PROF_*` and
/// [`crate::formats::prof_values::MEM_SAMPLED`]).
pub fn recording(bits: u64) -> bool {
    DATA_TYPE.load(std::sync::atomic::Ordering::Acquire) & bits != 0
}

/// Appends a sample of the host sampler to the host log.
fn record_sample(ev: HostEvent) {
    if let Some(h) = HOST.lock().as_mut() {
        h.push(&ev);
    }
}

/// Stops recording and exports the session. Returns the result directory.
pub fn end(mut session: Session) -> Result<PathBuf> {
    // The sampler's last sample goes into the log before it closes.
    if let Some(s) = session.sampler.take() {
        s.stop();
    }
    session.host.pause();
    crate::hotpath::set_file_sinks(HashMap::new());
    let timeout = settings::get()
        .unsubscribe_timeout
        .max(Duration::from_secs(1));
    let mut over_limit = false;
    let (mut lost, mut why) = (0, String::new());
    for sink in &session.sinks {
        let c = sink.close(timeout);
        over_limit |= sink.over_limit() > 0;
        let n = sink.lost_of(&c);
        if n > 0 {
            lost += n;
            why = sink.loss_reason();
        }
    }
    let host_lost = session.host.finish();
    // Best effort (a full disk): the loss marker and the export still run; the first
    // error is returned after them, unless a loss is.
    let failed = write_end_info(&session.dir, &session.config.devices);
    if over_limit {
        log::warn!("aclprof: ACL_PROF_STORAGE_LIMIT reached: ops beyond it were not recorded");
        let marker = session.dir.join("host/data/aclprof_storage_limit_reached");
        let _ = fs::write(marker, "ops after the storage limit were not recorded\n");
    }
    let (host_lost, host_why) = host_lost;
    if lost > 0 || host_lost > 0 {
        // Counted where the user looks: the result directory, the return code, a warning.
        write_lost(&session.dir, (lost, &why), (host_lost, &host_why));
    }
    let exported = if crate::settings::get().progress {
        let r = export_quietly_with_progress(
            &session.dir,
            &mut crate::logging::progress_bar("aclprof: exporting"),
        );
        crate::logging::progress_done();
        r
    } else {
        export_quietly(&session.dir)
    };
    if lost > 0 || host_lost > 0 {
        let msg = format!(
            "{lost} ops and {host_lost} host events were recorded but lost before they \
             reached {} ({}); the rest was exported, and README.txt there says so",
            session.dir.display(),
            if lost > 0 { &why } else { &host_why }
        );
        crate::logging::loss(&msg);
        return err(ACL_ERROR_PROFILING_FAILURE, msg);
    }
    failed?;
    exported?;
    Ok(session.dir)
}

/// Writes the end times of result directory `dir` (the host's and each device's). Every file
/// is tried; the first error is returned.
pub fn write_end_info(dir: &Path, devices: &[u32]) -> Result<()> {
    let mono = crate::clock::now_ns();
    let wall = crate::clock::wall_ns();
    let mut failed = Ok(());
    let end_infos = std::iter::once(dir.join("host/end_info")).chain(
        devices
            .iter()
            .map(|d| dir.join(format!("device_{d}/end_info.{d}"))),
    );
    for path in end_infos {
        if let Err(e) = write_json(&path, &time_info(false, wall, mono)) {
            log::error!("aclprof: {}", e.msg);
            failed = failed.and(Err(e));
        }
    }
    failed
}

/// Records in result directory `dir` how many ops and host events were accepted and then
/// lost, and why ([`LOST_OPS`]; the export's README.txt says it).
pub fn write_lost(dir: &Path, ops: (u64, &str), host: (u64, &str)) {
    let text = format!("{}\n{}\n{}\n{}\n", ops.0, ops.1, host.0, host.1);
    let _ = fs::write(dir.join(LOST_OPS), text);
}

/// Exports `dir` with the write signals held off (`SIGXFSZ` under a file-size limit would
/// kill the host): a write that fails is an error, not a death.
pub fn export_quietly(dir: &Path) -> Result<export::Summary> {
    export_quietly_with_progress(dir, &mut |_, _| {})
}

/// [`export_quietly`], calling `progress(merged, expected)` every 256 Ki ops.
pub fn export_quietly_with_progress(
    dir: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<export::Summary> {
    crate::transport::fd::quietly(crate::transport::fd::Signals::FSIZE, || {
        export::export_with_progress(dir, progress)
    })
}

/// In a result directory: how many ops were lost and why (written at stop).
pub const LOST_OPS: &str = "host/data/aclprof_lost_ops";
