//! The safe implementation behind the C entry points: the global state, handle tables and
//! subscriptions, glued together. `ffi/` only converts C arguments and calls in here.

use crate::error::*;
use crate::fork::{global, Mutex, MutexGuard, Rank};
use crate::handles::Table;
use crate::hotpath;
use crate::settings;
use crate::state::{self, Core, ProfConfig};
use crate::transport::{self, Counts, Dest, Sub, UserFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

global! {
    /// The profiler; a forked child is not initialised.
    static CORE: Mutex<Option<Core>> =
        Mutex::reset_in_child(Rank::Core, None, |c| std::mem::forget(c.take()));
}
global! {
    pub static CONFIGS: Table<ProfConfig> = Table::new(Rank::Configs);
}
global! {
    pub static SUB_CONFIGS: Table<SubConfig> = Table::new(Rank::SubConfigs);
}
static NEXT_CONFIG_ID: AtomicU64 = AtomicU64::new(1);
global! {
    /// Every subscription not yet retired (subscribed, or flushing in an unsubscribe). A
    /// forked child orphans them: they are the parent's.
    static LIVE: Mutex<Vec<Arc<Sub>>> = Mutex::reset_in_child(Rank::Live, Vec::new(), |live| {
        for s in live.drain(..) {
            s.orphan();
            std::mem::forget(s);
        }
    });
}
global! {
    /// Counts of retired subscriptions; a forked child's start from zero.
    static RETIRED: Mutex<Counts> = Mutex::reset_in_child(
        Rank::Retired,
        Counts {
            reported: 0,
            delivered: 0,
            dropped: 0,
            bytes: 0,
        },
        |r| *r = Counts::default(),
    );
}

/// What `aclprofCreateSubscribeConfig` built.
#[derive(Clone, Copy, Debug)]
pub struct SubConfig {
    pub time_info: bool,
    pub aicore_metrics: u32,
    pub fd: UserFd,
}

fn core() -> MutexGuard<'static, Option<Core>> {
    CORE.lock()
}

fn with_core<R>(f: impl FnOnce(&mut Core) -> R) -> R {
    let mut g = core();
    f(g.get_or_insert_with(Core::default))
}

fn live() -> MutexGuard<'static, Vec<Arc<Sub>>> {
    LIVE.lock()
}

fn config(handle: usize, what: &str) -> Result<ProfConfig> {
    CONFIGS.with(handle, |c| c.clone()).map_or_else(
        || {
            err(
                ACL_ERROR_INVALID_PARAM,
                format!("{what}: not a live aclprofConfig (NULL, destroyed, or never created)"),
            )
        },
        Ok,
    )
}

pub fn init(path: &Path) -> Result<()> {
    if matches!(
        std::env::var("PROFILING_MODE").as_deref(),
        Ok("dynamic") | Ok("delay_or_duration")
    ) {
        return err(
            ACL_ERROR_FEATURE_UNSUPPORTED,
            "PROFILING_MODE asks for dynamic profiling, which excludes aclprofInit",
        );
    }
    with_core(|c| c.init(path)).map(|_| ())
}

global! {
    /// The running file-mode session, if any. A forked child orphans it: it is the parent's,
    /// never written or exported by the child.
    static SESSION: Mutex<Option<crate::filemode::Session>> =
        Mutex::reset_in_child(Rank::Session, None, |s| {
            if let Some(sess) = s.take() {
                for s in sess.sinks() {
                    s.orphan();
                }
                std::mem::forget(sess);
            }
        });
}

/// Exports a result directory again (`aclprofExtExport`), unless it is the one this
/// process is recording into: its stream files are still being written.
pub fn export_again(dir: &Path) -> Result<()> {
    let running = SESSION.lock().as_ref().map(|s| s.dir.clone());
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Some(r) = running.filter(|r| same(r, dir)) {
        return err(
            ACL_ERROR_PROF_ALREADY_RUN,
            format!(
                "{} is the result directory being recorded now: aclprofStop exports it",
                r.display()
            ),
        );
    }
    crate::filemode::export_quietly(dir).map(|_| ())
}

fn end_session() -> Result<()> {
    let s = SESSION.lock().take();
    match s {
        Some(s) => crate::filemode::end(s).map(|_| ()),
        None => Ok(()),
    }
}

pub fn finalize() -> Result<()> {
    with_core(|c| c.finalize())?;
    crate::tx::set_enabled(false);
    end_session()
}

/// For tests: back to the state a fresh process starts in, whatever an earlier test (or a
/// failed one) left: every subscription closed, any file-mode session ended (its
/// directory exported), msproftx off, the profiler not initialised. Loaded models,
/// handles and settings stay. Tests that share a process run one at a time and call this
/// first (tests/filemode.rs).
pub fn reset() {
    let models: Vec<u32> = live().iter().map(|s| s.model_id).collect();
    for m in models {
        let _ = unsubscribe(m);
    }
    crate::tx::set_enabled(false);
    let _ = end_session();
    *core() = None;
}

pub fn create_config(
    devices: &[u32],
    metrics: u32,
    events_given: bool,
    data_type: u64,
) -> Result<usize> {
    let id = NEXT_CONFIG_ID.fetch_add(1, Ordering::Relaxed);
    let c = state::new_config(
        devices,
        metrics,
        events_given,
        data_type,
        settings::get().device_count,
        id,
    )?;
    Ok(CONFIGS.insert(c))
}

pub fn destroy_config(handle: usize) -> Result<()> {
    if CONFIGS.remove(handle) {
        Ok(())
    } else {
        err(
            ACL_ERROR_INVALID_PARAM,
            "not a live aclprofConfig (NULL, already destroyed, or never created)",
        )
    }
}

pub fn start(handle: usize) -> Result<()> {
    let c = config(handle, "aclprofStart")?;
    let mut g = core();
    let core = g.get_or_insert_with(Core::default);
    if !core.start(&c)? {
        return Ok(()); // already running with this config
    }
    let (Some(root), Some(run)) = (core.result_path.clone(), core.running.clone()) else {
        return err(
            ACL_ERROR_PROFILING_FAILURE,
            "internal: started without a result path",
        );
    };
    match crate::filemode::begin(&root, run.dir_index - 1, &c, &core.config_values()) {
        Ok(s) => *SESSION.lock() = Some(s),
        Err(e) => {
            core.abort_start();
            return Err(e);
        }
    }
    session_started(c.data_type);
    Ok(())
}

pub fn stop(handle: usize) -> Result<()> {
    let c = config(handle, "aclprofStop")?;
    with_core(|core| core.stop(&c))?;
    end_session()
}

pub fn set_config(ty: i32, value: String) -> Result<()> {
    with_core(|c| c.set_config(ty, value));
    Ok(())
}

pub fn create_sub_config(time_info: i8, metrics: u32, fd: UserFd) -> Result<usize> {
    if time_info != 0 && time_info != 1 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("timeInfoSwitch must be 0 or 1, not {time_info}"),
        );
    }
    Ok(SUB_CONFIGS.insert(SubConfig {
        time_info: time_info == 1,
        aicore_metrics: metrics,
        fd,
    }))
}

pub fn destroy_sub_config(handle: usize) -> Result<()> {
    if SUB_CONFIGS.remove(handle) {
        Ok(())
    } else {
        err(
            ACL_ERROR_INVALID_PARAM,
            "not a live aclprofSubscribeConfig (NULL, already destroyed, or never created)",
        )
    }
}

pub fn subscribe(model: u32, handle: usize) -> Result<()> {
    let Some(sc) = SUB_CONFIGS.with(handle, |c| *c) else {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "not a live aclprofSubscribeConfig (NULL, destroyed, or never created)",
        );
    };
    subscribe_with(model, sc.time_info, sc.aicore_metrics, || {
        let fd = sc.fd.get();
        let (raises, kind) = transport::prepare_fd(fd)?;
        Ok(Dest::Fd {
            fd,
            user: sc.fd,
            raises,
            kind,
        })
    })
    .map(|_| ())
}

/// Subscribes `model` to a new shared-memory ring of `capacity` records (a memfd, or a new
/// file at `path`). Returns the ring's fd (valid until the model is unsubscribed).
pub fn ring_subscribe(model: u32, path: Option<&std::path::Path>, capacity: u64) -> Result<i32> {
    let mut fd = -1;
    subscribe_with(
        model,
        true,
        crate::formats::prof_values::AICORE_NONE,
        || {
            let ring = Arc::new(crate::transport::ring::Ring::create(path, capacity)?);
            fd = ring.fd();
            Ok(Dest::Ring(ring))
        },
    )?;
    Ok(fd)
}

/// The subscription rules, then `dest()`, then the subscription and its route.
fn subscribe_with(
    model: u32,
    time_info: bool,
    metrics: u32,
    dest: impl FnOnce() -> Result<Dest>,
) -> Result<Arc<Sub>> {
    let s = settings::get();
    let mut g = core();
    let core = g.get_or_insert_with(Core::default);
    let device = crate::registry::get(model).map(|m| m.device);
    let device = core.check_subscribe(model, device, time_info, metrics)?;
    let sub = Sub::start(model, device, dest()?, s.buffer_records, s.on_full)?;
    core.add_subscription(model, device, time_info, metrics);
    live().push(sub.clone());
    hotpath::set_route(model, Some(sub.clone()));
    log::info!("aclprof: {} subscribed (device {device})", sub.describe());
    Ok(sub)
}

pub fn unsubscribe(model: u32) -> Result<()> {
    let timeout = settings::get().unsubscribe_timeout;
    let sub = {
        let mut g = core();
        g.get_or_insert_with(Core::default)
            .remove_subscription(model)?;
        hotpath::set_route(model, None)
    };
    let Some(sub) = sub else { return Ok(()) };
    let c = sub.close(timeout);
    let shared = {
        // Moved from the live list to the retired counts in one step (both locks held, in
        // `stats`'s order), so no `stats` call sees it in neither or in both.
        let mut retired = RETIRED.lock();
        let mut l = live();
        l.retain(|s| !Arc::ptr_eq(s, &sub));
        *retired += c;
        sub.fd().is_some() && l.iter().any(|s| s.fd() == sub.fd())
    };
    if let (Some(fd), Some(user), false) = (sub.fd(), sub.user_fd(), shared) {
        // SAFETY: closing the fd the application handed over to us, as CANN does.
        unsafe { libc::close(fd) };
        user.set_closed();
    }
    if let Some(l) = sub.new_losses() {
        let why = if l.lost > 0 {
            sub.loss_reason()
        } else {
            "full buffers under ACLPROF_ON_FULL=drop".into()
        };
        crate::logging::loss(&format!(
            "model {model} unsubscribed; {} of its {} records were lost ({why})",
            l.lost + l.chosen,
            c.reported
        ));
    }
    Ok(())
}

/// `aclprofExtFlush`: waits until everything reported so far is written (or dropped).
pub fn flush() -> Result<()> {
    let deadline = Instant::now() + settings::get().unsubscribe_timeout;
    let mut subs: Vec<Arc<Sub>> = live().clone();
    if let Some(s) = SESSION.lock().as_ref() {
        subs.extend(s.sinks().iter().cloned());
    }
    let host_lost = crate::filemode::flush_host_events();
    for s in &subs {
        if !s.flush(deadline) {
            return err(
                ACL_ERROR_PROFILING_FAILURE,
                format!(
                    "{} was not delivered within ACLPROF_UNSUBSCRIBE_TIMEOUT_MS",
                    s.describe()
                ),
            );
        }
    }
    // Records accepted and then lost since the last look: an error, and a warning. Records
    // dropped because ACLPROF_ON_FULL=drop asked for it are not a failure: a warning, and
    // counted in the stats (docs/design.md, "Loss is never silent").
    let mut lost: Vec<String> = Vec::new();
    let mut chosen: Vec<String> = Vec::new();
    for s in &subs {
        let Some(l) = s.new_losses() else { continue };
        if l.lost > 0 {
            lost.push(format!(
                "{}: {} records lost ({})",
                s.describe(),
                l.lost,
                s.loss_reason()
            ));
        }
        if l.chosen > 0 {
            chosen.push(format!(
                "{}: {} records dropped (full buffers under ACLPROF_ON_FULL=drop)",
                s.describe(),
                l.chosen
            ));
        }
    }
    if let Some((n, why)) = host_lost {
        lost.push(format!("{n} host events lost ({why})"));
    }
    if !chosen.is_empty() {
        crate::logging::loss(&chosen.join("; "));
    }
    if !lost.is_empty() {
        let msg = lost.join("; ");
        crate::logging::loss(&msg);
        return err(ACL_ERROR_PROFILING_FAILURE, msg);
    }
    Ok(())
}

pub fn stats() -> Counts {
    let retired = RETIRED.lock();
    let mut c = *retired;
    for s in live().iter() {
        c += s.counts();
    }
    c
}

/// How often and how long threads waited for readers, since the process started.
pub fn waits() -> transport::Waits {
    transport::waits()
}

/// Loads a model (with the description the simulator executes, for a simulated one): the
/// one place a model enters the registry.
pub fn model_load(
    name: &str,
    device: u32,
    sim: Option<Arc<crate::sim::import::SimModel>>,
) -> Result<u32> {
    let count = settings::get().device_count;
    let id = crate::registry::with(|r| r.load(name, device, count, sim))?;
    hotpath::routes_changed();
    Ok(id)
}

/// Records that the emulated runtime allocated `bytes` of work and weight memory for model
/// `id` (a memory event; [`model_unload`] releases it).
pub fn model_memory(id: u32, bytes: u64) {
    let Some(m) = crate::registry::get(id) else {
        return;
    };
    crate::registry::with(|r| r.set_runtime_bytes(id, bytes));
    let (name, at) = (format!("model {id}"), crate::clock::now_ns());
    crate::memory::event(
        m.device,
        crate::formats::memory::Pool::Model,
        0,
        bytes as i64,
        &name,
        at,
        None,
    );
}

/// Unloads a model, whoever loaded it: the one place a model leaves the registry, with
/// the memory the runtime allocated for it.
pub fn model_unload(id: u32) -> Result<()> {
    let m = crate::registry::with(|r| r.unload(id))?;
    hotpath::routes_changed();
    if m.runtime_bytes > 0 {
        let (name, at) = (format!("model {id}"), crate::clock::now_ns());
        let bytes = -(m.runtime_bytes as i64);
        crate::memory::event(
            m.device,
            crate::formats::memory::Pool::Model,
            0,
            bytes,
            &name,
            at,
            None,
        );
    }
    Ok(())
}

/// A fresh config id (configs made by the library itself, as for PROFILING_MODE).
pub fn next_config_id() -> u64 {
    NEXT_CONFIG_ID.fetch_add(1, Ordering::Relaxed)
}

/// Environment-variable profiling: a file-mode session for `config` into `root`, started
/// without aclprofInit/aclprofStart (the control calls then answer 100042).
/// `settings`: the aclprofSetConfig values PROFILING_OPTIONS gave (they override the
/// process's own).
pub fn start_env_session(
    root: &Path,
    config: &ProfConfig,
    settings: &std::collections::HashMap<i32, String>,
) -> Result<()> {
    let mut g = core();
    let core = g.get_or_insert_with(Core::default);
    // Subscriptions go on beside it, as beside PROFILING_MODE (docs/compatibility.md).
    if !matches!(core.mode, state::Mode::Off | state::Mode::Subscribe) {
        return err(
            ACL_ERROR_PROF_ALREADY_RUN,
            "profiling is already running in this process (aclprofInit or \
             PROFILING_OPTIONS): stop it first",
        );
    }
    let root = state::prepare_result_dir(root)?;
    let index = core.start_cmd(config, root.clone());
    let mut values = core.config_values();
    values.extend(settings.iter().map(|(k, v)| (*k, v.clone())));
    let r = crate::filemode::begin(&root, index - 1, config, &values);
    match r {
        Ok(session) => {
            *SESSION.lock() = Some(session);
            session_started(config.data_type);
            Ok(())
        }
        Err(e) => {
            core.end_cmd();
            Err(e)
        }
    }
}

/// Ends environment-variable profiling and exports its result directory; None if it was
/// not running.
pub fn end_env_session() -> Option<Result<()>> {
    with_core(|c| c.end_cmd())?;
    crate::tx::set_enabled(false);
    Some(end_session())
}

/// What a file-mode session turns on once it records: msproftx, and the memory that was
/// allocated and planned before it started.
fn session_started(data_type: u64) {
    if data_type & crate::formats::acl_prof::ACL_PROF_MSPROFTX != 0 {
        crate::tx::set_enabled(true);
    }
    crate::memory::snapshot();
    for (id, m) in crate::registry::simulated() {
        crate::memory::plan(id, &m);
    }
}

/// Runs a call of the emulated runtime (`aclrt*`, `aclmdl*`, ...) and records it as CANN
/// does: an AscendCL API call (`ACL_PROF_ACL_API`, level "acl"; `aclmdlExecute`, which the
/// simulator records with its model, aside) and a call at the runtime level
/// (`ACL_PROF_RUNTIME_API`).
pub fn runtime_api(name: &str, body: impl FnOnce() -> Result<()>) -> Result<()> {
    use crate::formats::acl_prof::{ACL_PROF_ACL_API, ACL_PROF_RUNTIME_API};
    if !crate::filemode::recording(ACL_PROF_ACL_API | ACL_PROF_RUNTIME_API) {
        return body();
    }
    let start = crate::clock::now_ns();
    let r = body();
    let end = crate::clock::now_ns();
    let tid = u64::from(crate::clock::thread_id());
    let event = |level: &str| crate::formats::host::HostEvent::Api {
        end,
        item: String::new(),
        level: level.into(),
        name: name.into(),
        start,
        tid,
    };
    if !name.starts_with("aclmdlExecute") {
        crate::filemode::host_event(ACL_PROF_ACL_API, || event(""));
    }
    let runtime = crate::formats::db_schema::API_LEVEL_RUNTIME;
    crate::filemode::host_event(ACL_PROF_RUNTIME_API, || event(runtime));
    r
}
