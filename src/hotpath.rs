//! The reporting hot path: `aclprofExtReportOp`, registered ops and strings given with
//! their lengths, from any number of threads at once.
//!
//! * Nobody listening: argument checks and one atomic load.
//! * Someone listening: the thread's route cache (validated by one atomic load of a
//!   generation counter) finds the model's subscription and this thread's lane in it; the
//!   record is built in place in the lane. No global lock, no shared counter (op indices
//!   come from per-thread blocks), and no system call but one `write()` per full batch of
//!   a pipe subscription.

use crate::error::{err, Result, ACL_ERROR_INVALID_MODEL_ID, ACL_ERROR_INVALID_PARAM};
use crate::fork::{global, Mutex, Rank, RwLock};
use crate::formats::record::{Names, OpFields, OpStrings, FLAG_OP};
use crate::transport::{lane::Mem, Sub};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// [`LISTENING`] while any subscription, file-mode sink or watcher exists; [`ASKED`] while
/// a watcher's attach request waits to be answered (see [`poke`]). The idle path loads it
/// once and goes on only when it is not 0.
static ACTIVE: AtomicU8 = AtomicU8::new(0);
const LISTENING: u8 = 1;
const ASKED: u8 = 2;
/// What answers an attach request (the watcher's agent, which sits above this layer).
static ON_ASKED: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
/// Bumped whenever routes change (subscribe, unsubscribe, model load/unload).
static GEN: AtomicU64 = AtomicU64::new(1);
global! {
    /// Model -> its subscription. A forked child routes nothing it inherited: the
    /// subscriptions, file-mode sinks and tap are the parent's; its cached process and
    /// thread ids are read anew.
    static SUBS: RwLock<Option<HashMap<u32, Arc<Sub>>>> =
        RwLock::reset_in_child(Rank::Subs, None, |s| {
            std::mem::forget(s.take());
            FORK_GEN.fetch_add(1, Ordering::Relaxed);
            ACTIVE.store(0, Ordering::Relaxed);
            routes_changed();
        });
}
global! {
    /// File mode: device -> the sink recording that device's ops.
    static FILE_SINKS: RwLock<Option<HashMap<u32, Arc<Sub>>>> =
        RwLock::reset_in_child(Rank::FileSinks, None, |s| std::mem::forget(s.take()));
}
global! {
    /// The process's watcher (`aclprof top`, attached through the `watch` module): every op
    /// of every model.
    static TAP: RwLock<Option<Arc<Sub>>> =
        RwLock::reset_in_child(Rank::Tap, None, |t| std::mem::forget(t.take()));
}
static NEXT_OP_INDEX: AtomicU64 = AtomicU64::new(1);
static NEXT_STREAM: AtomicU32 = AtomicU32::new(1);
global! {
    /// Streams of threads that have exited, with the end of their last op, for new threads to
    /// reuse (as a device reuses its streams): the number of streams, and so of file-mode stream
    /// files, follows the number of reporting threads alive at once, not of all that ever ran.
    static FREE_STREAMS: Mutex<Vec<(u32, u64)>> = Mutex::new(Rank::FreeStreams, Vec::new());
}

/// A stream for a thread whose first op starts at `start`: a free one whose ops all ended
/// by then (so each stream's ops stay in time order), else a new one.
fn take_stream(start: u64) -> u32 {
    let mut free = FREE_STREAMS.lock();
    match free.iter().position(|&(_, end)| end <= start) {
        Some(i) => free.swap_remove(i).0,
        None => NEXT_STREAM.fetch_add(1, Ordering::Relaxed),
    }
}
const OP_INDEX_BLOCK: u64 = 4096;

struct Route {
    device: u32,
    /// The destination and this thread's lane in it.
    sub: Option<(Arc<Sub>, usize)>,
    /// A second destination: the device's file-mode sink when `sub` is the model's
    /// subscription and `PROFILING_MODE` drives file mode beside it (both get every op).
    also: Option<(Arc<Sub>, usize)>,
    /// A third: the process's watcher, when one is attached.
    tap: Option<(Arc<Sub>, usize)>,
}

/// The route of the model a thread reported for last, resolved, when it has one
/// destination and the thread has a lane of its own there (the common case): a repeated
/// report goes straight to that lane, with no lookup.
struct Fast {
    model: u32,
    device: u32,
    sub: Arc<Sub>,
    lane: usize,
    /// The lane's storage, inside `sub`'s lane (which `sub` keeps alive).
    mem: *const Mem,
}

struct Local {
    gen: u64,
    routes: Vec<(u32, Option<Route>)>,
    /// Cleared with the routes it came from.
    fast: Option<Fast>,
    /// The lane this thread holds in each subscription it reported to, kept while the
    /// subscription accepts records, whatever else changes: all of a thread's records to
    /// one subscription go through one lane, so they leave in the order it reported them
    /// (two lanes are drained independently).
    lanes: Vec<(Arc<Sub>, usize)>,
    ids: Ids,
}

/// What a thread stamps on its ops.
struct Ids {
    /// Process and thread ids, cached (getpid/gettid are system calls); refreshed in a
    /// forked child.
    fork_gen: u64,
    pid: u32,
    tid: u32,
    /// 0 until the thread's first op (see [`take_stream`]).
    stream: u32,
    /// The latest end among this thread's ops.
    last_end: u64,
    next_index: u64,
    end_index: u64,
}

impl Ids {
    /// The fields of this thread's next op: its index, and its stream unless replayed.
    #[inline(always)]
    fn stamp(&mut self, model: u32, device: u32, start: u64, end: u64, replay: Replay) -> OpFields {
        let stream = match replay.stream {
            Some(s) => s,
            None => {
                if self.stream == 0 {
                    self.stream = take_stream(start);
                }
                self.stream
            }
        };
        self.last_end = self.last_end.max(end);
        if self.next_index == self.end_index {
            self.next_index = NEXT_OP_INDEX.fetch_add(OP_INDEX_BLOCK, Ordering::Relaxed);
            self.end_index = self.next_index + OP_INDEX_BLOCK;
        }
        let op_index = self.next_index;
        self.next_index += 1;
        OpFields {
            model_id: model,
            flag: FLAG_OP,
            thread_id: self.tid,
            op_index,
            start,
            end,
            execution_time: end - start,
            dev_id: device,
            pid: self.pid,
            stream_id: stream,
            sim_op: replay.sim_op,
            meta: replay.meta,
        }
    }
}

impl Local {
    /// Routes changed: forgets the cached routes, and gives back the lanes of
    /// subscriptions that no longer accept records (what they hold is written soon after).
    fn forget_routes(&mut self) {
        self.fast = None;
        self.routes.clear();
        self.lanes.retain(|(sub, lane)| {
            let keep = sub.accepting();
            if !keep {
                sub.release(*lane);
            }
            keep
        });
    }

    /// This thread's lane in `sub`, claimed on first use.
    fn lane_in(&mut self, sub: &Arc<Sub>) -> usize {
        match self.lanes.iter().find(|(s, _)| Arc::ptr_eq(s, sub)) {
            Some(&(_, lane)) => lane,
            None => {
                let lane = sub.claim();
                self.lanes.push((sub.clone(), lane));
                lane
            }
        }
    }

    /// Where `model`'s ops go: its subscription, else its device's file-mode sink.
    /// All cached routes come from one generation of the tables: a thread that cached one
    /// model's route before a change and looked another's up after it would send one of
    /// its ops to the new destination (or nowhere) between two to the old one.
    fn lookup(&mut self, model: u32) -> Option<Route> {
        let (device, [sub, also, tap], gen) = lookup(model)?;
        if gen != self.gen {
            self.forget_routes();
            self.gen = gen;
        }
        let mut with_lane = |s: Arc<Sub>| {
            let lane = self.lane_in(&s);
            (s, lane)
        };
        Some(Route {
            device,
            sub: sub.map(&mut with_lane),
            also: also.map(&mut with_lane),
            tap: tap.map(with_lane),
        })
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // The thread's records are written before its stream can be reused, so a stream's
        // records stay in order (file mode writes the lane out at once).
        self.fast = None;
        self.routes.clear();
        for (sub, lane) in self.lanes.drain(..) {
            sub.retire_lane(lane);
        }
        if self.ids.stream != 0 {
            FREE_STREAMS
                .lock()
                .push((self.ids.stream, self.ids.last_end));
        }
    }
}

/// A thread's first `Local`.
const LOCAL_INIT: Local = Local {
    gen: 0,
    routes: Vec::new(),
    fast: None,
    lanes: Vec::new(),
    ids: Ids {
        fork_gen: u64::MAX,
        pid: 0,
        tid: 0,
        stream: 0,
        last_end: 0,
        next_index: 0,
        end_index: 0,
    },
};

#[cfg(not(loom))]
thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(LOCAL_INIT) };
}
// Under loom every model thread runs on one OS thread: the route cache must be loom's.
#[cfg(loom)]
loom::thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(LOCAL_INIT);
}

/// Under loom: what a thread's exit does to its route cache, run by the model thread
/// itself (loom may run thread-local destructors after the model's shared state is gone).
#[cfg(all(loom, test))]
pub(crate) fn thread_exit() {
    LOCAL.with(|l| drop(std::mem::replace(&mut *l.borrow_mut(), LOCAL_INIT)));
}

/// Bumped in a forked child so cached process and thread ids are re-read.
static FORK_GEN: AtomicU64 = AtomicU64::new(0);

/// True while someone listens for reported ops, or a watcher asked to attach (the idle
/// fast path's one atomic load).
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Acquire) != 0
}

/// What a reporting thread has to do, from the idle path's one atomic load.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Nobody listens: nothing.
    Idle,
    /// Someone listens: report ([`report_repeated`] may do it all).
    Listening,
    /// A watcher asked to attach: [`report_op`] answers it first.
    Asked,
}

/// [`active`], told apart.
#[inline(always)]
pub fn activity() -> Activity {
    match ACTIVE.load(Ordering::Acquire) {
        0 => Activity::Idle,
        LISTENING => Activity::Listening,
        _ => Activity::Asked,
    }
}

/// Asks the next reporting thread to call the function given to [`on_asked`]. Only an
/// atomic operation: safe in a signal handler.
pub fn poke() {
    ACTIVE.fetch_or(ASKED, Ordering::AcqRel);
}

/// Sets what a [`poke`] calls (once per process; later calls are ignored).
pub fn on_asked(f: fn()) {
    let _ = ON_ASKED.set(f);
}

/// A poke seen by a reporting thread: clears it and answers, once.
#[cold]
#[inline(never)]
fn answer_poke() {
    if ACTIVE.fetch_and(!ASKED, Ordering::AcqRel) & ASKED != 0 {
        if let Some(f) = ON_ASKED.get() {
            f();
        }
    }
}

/// Invalidates every thread's route cache.
pub fn routes_changed() {
    GEN.fetch_add(1, Ordering::AcqRel);
}

/// Makes `sub` the destination of `model`'s ops (or removes the route with `None`);
/// returns the previous destination.
pub fn set_route(model: u32, sub: Option<Arc<Sub>>) -> Option<Arc<Sub>> {
    let mut g = SUBS.write();
    let m = g.get_or_insert_with(HashMap::new);
    let old = match sub {
        Some(s) => m.insert(model, s),
        None => m.remove(&model),
    };
    // Under the lock, so a lookup sees the tables and the generation together.
    routes_changed();
    drop(g);
    publish();
    old
}

/// File mode: records ops of models on these devices into these sinks (empty: stop).
pub fn set_file_sinks(sinks: HashMap<u32, Arc<Sub>>) {
    let mut g = FILE_SINKS.write();
    *g = Some(sinks);
    routes_changed(); // (as in set_route)
    drop(g);
    publish();
}

/// Makes `sub` the process's watcher, which gets every op of every model besides their
/// own destinations (or removes it with `None`); returns the previous one.
pub fn set_tap(sub: Option<Arc<Sub>>) -> Option<Arc<Sub>> {
    let mut g = TAP.write();
    let old = std::mem::replace(&mut *g, sub);
    routes_changed(); // (as in set_route)
    drop(g);
    publish();
    old
}

/// Reporting is active while any subscription, file-mode sink or watcher exists. The
/// listeners hear of each change, in order: the state is decided and told under one lock.
fn publish() {
    let listeners = LISTENERS.lock();
    let any = |m: &RwLock<Option<HashMap<u32, Arc<Sub>>>>| {
        m.read().as_ref().is_some_and(|m| !m.is_empty())
    };
    let tap = TAP.read().is_some();
    let now = any(&SUBS) || any(&FILE_SINKS) || tap;
    let before = if now {
        ACTIVE.fetch_or(LISTENING, Ordering::AcqRel)
    } else {
        ACTIVE.fetch_and(!LISTENING, Ordering::AcqRel)
    };
    if (before & LISTENING != 0) != now {
        for l in listeners.iter() {
            l.call(now);
        }
    }
}

/// A function told whether anyone listens for reported ops (see [`listen`]).
pub type ListenFn = unsafe extern "C" fn(listening: i32, user: *mut std::ffi::c_void);

/// A registered listener: the function and its argument (an address, kept as a number).
#[derive(Clone, Copy)]
struct Listener(ListenFn, usize);

impl PartialEq for Listener {
    fn eq(&self, o: &Self) -> bool {
        // The pair the caller registered, compared as the addresses it passed.
        (self.0 as usize, self.1) == (o.0 as usize, o.1)
    }
}

impl Listener {
    fn call(self, listening: bool) {
        // (An `extern "C"` function cannot unwind into us: a panic in one aborts at its own
        // boundary, so there is nothing to catch here.)
        // SAFETY: the registrant promised a function callable with its own argument.
        unsafe { (self.0)(i32::from(listening), self.1 as *mut std::ffi::c_void) }
    }
}

/// At most this many listeners: each costs every subscribe and unsubscribe a call.
pub const MAX_LISTENERS: usize = 16;
global! {
    static LISTENERS: Mutex<Vec<Listener>> = Mutex::new(Rank::Listeners, Vec::new());
}

/// Calls `f(listening, user)` now, with whether anyone listens for reported ops, and again
/// each time that changes, from the thread that changed it (a subscribe, an unsubscribe,
/// a file-mode start or stop, a watcher attaching or leaving). A runtime that reports ops
/// through callbacks of its own installs them only while someone listens. `f` must not
/// call back into the library (it runs under the lock that orders the calls).
pub fn listen(f: ListenFn, user: *mut std::ffi::c_void) -> Result<()> {
    let mut l = LISTENERS.lock();
    let me = Listener(f, user as usize);
    if l.contains(&me) {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "this callback and argument already listen",
        );
    }
    if l.len() == MAX_LISTENERS {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("at most {MAX_LISTENERS} listening callbacks"),
        );
    }
    l.push(me);
    me.call(ACTIVE.load(Ordering::Acquire) & LISTENING != 0);
    Ok(())
}

/// Undoes [`listen`]; `f` is not called again once this returns.
pub fn unlisten(f: ListenFn, user: *mut std::ffi::c_void) -> Result<()> {
    let mut l = LISTENERS.lock();
    let me = Listener(f, user as usize);
    match l.iter().position(|x| *x == me) {
        Some(i) => {
            l.remove(i);
            Ok(())
        }
        None => err(
            ACL_ERROR_INVALID_PARAM,
            "this callback and argument do not listen",
        ),
    }
}

/// The destinations of one model's ops: [primary, also, tap].
type Dests = [Option<Arc<Sub>>; 3];

/// Where `model`'s ops go: its device; its subscription, else its device's file-mode sink;
/// that sink as well when the model has both (file mode and subscriptions exclude each
/// other through the API, not under `PROFILING_MODE`); the watcher, if one is attached;
/// and the routes' generation this answer belongs to (the tables change and `GEN` is
/// bumped under their write locks, so with the read locks held they agree). None if the
/// model is not loaded.
fn lookup(model: u32) -> Option<(u32, Dests, u64)> {
    let m = crate::registry::get(model)?;
    let subs = SUBS.read();
    let sinks = FILE_SINKS.read();
    let tap = TAP.read().clone();
    let sub = subs.as_ref().and_then(|s| s.get(&model)).cloned();
    let sink = sinks.as_ref().and_then(|s| s.get(&m.device)).cloned();
    let gen = GEN.load(Ordering::Acquire);
    Some(match sub {
        Some(sub) => (m.device, [Some(sub), sink, tap], gen),
        None => (m.device, [sink, None, tap], gen),
    })
}

/// A destination began closing after this thread cached its route (the model is being
/// unsubscribed, file mode stopped, the watcher left): look again once, since the model may
/// have a new destination already, and give the op to each that has not taken it.
#[cold]
#[inline(never)]
fn retry<'a>(l: &mut Local, model: u32, f: &OpFields, op: impl OpStrings<'a>, took: &[*const Sub]) {
    l.forget_routes();
    if let Some(r) = l.lookup(model) {
        for (s, lane) in [r.sub, r.also, r.tap].into_iter().flatten() {
            if !took.contains(&Arc::as_ptr(&s)) {
                s.push_op(lane, f, op);
            }
        }
    }
}

/// What the simulator knows about a replayed op beyond its times (or a registered op: its
/// metadata id, [`Replay::of`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Replay {
    /// The stream the input says it ran on (else the reporting thread's).
    pub stream: Option<u32>,
    /// 1 + its index in its simulated model (see [`crate::formats::record::OpFields::sim_op`]).
    pub sim_op: u32,
    /// The op's id in the op metadata table ([`crate::opmeta`]), or 0.
    pub meta: u32,
}

impl Replay {
    /// What a registered op ([`crate::opreg`]) carries beyond its image: its metadata id.
    pub fn of(op: &crate::opreg::Op) -> Replay {
        Replay {
            meta: op.meta,
            ..Default::default()
        }
    }
}

/// Reports one executed op. `name` and `op_type` are the bytes of C strings (no NUL inside;
/// use [`crate::formats::record::until_nul`] on other input); `replay` is the default unless the
/// simulator replays the op.
#[inline]
pub fn report_op(
    model: u32,
    name: &[u8],
    op_type: &[u8],
    start: u64,
    end: u64,
    replay: Replay,
) -> Result<()> {
    report_with(model, Names(name, op_type), start, end, replay)
}

/// [`report_op`] of an op's strings in either form: its names, or the image of a
/// registered op ([`crate::opreg`]).
#[inline]
pub fn report_with<'a>(
    model: u32,
    op: impl OpStrings<'a>,
    start: u64,
    end: u64,
    replay: Replay,
) -> Result<()> {
    if ACTIVE.load(Ordering::Acquire) == LISTENING
        && report_repeated::<{ Site::Rust as u8 }>(model, op, start, end, replay)
    {
        return Ok(());
    }
    report_whole_op(model, op, start, end, replay)
}

/// [`report_op`] without trying the resolved route: for a caller that tried it already
/// (the C entry point) and for everything the route does not take, with its errors.
pub fn report_whole(
    model: u32,
    name: &[u8],
    op_type: &[u8],
    start: u64,
    end: u64,
    replay: Replay,
) -> Result<()> {
    report_whole_op(model, Names(name, op_type), start, end, replay)
}

/// [`report_whole`] of an op's strings in either form.
#[inline(never)]
fn report_whole_op<'a>(
    model: u32,
    op: impl OpStrings<'a>,
    start: u64,
    end: u64,
    replay: Replay,
) -> Result<()> {
    if end < start {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("endNs {end} is before startNs {start}"),
        );
    }
    let a = ACTIVE.load(Ordering::Acquire);
    if a & ASKED != 0 {
        answer_poke();
    }
    if a & LISTENING == 0 {
        return Ok(());
    }
    report_active(model, op, start, end, replay)
}

/// Who calls [`report_repeated`]: each caller gets its own copy inlined (one generic
/// instance per caller; with one shared by two callers, the compiler stopped inlining
/// the thread-local access into either, which cost the C entry point 70 instructions).
#[derive(Clone, Copy)]
pub enum Site {
    /// `aclprofExtReportOp`.
    C = 0,
    /// [`report_op`]: the simulator.
    Rust = 1,
    /// `aclprofExtReportRegisteredOp`.
    Registered = 2,
    /// `aclprofExtReportOpLen`.
    Lengths = 3,
}

/// The reporting path's common case, whole, once [`activity`] said someone listens: this
/// thread's last op was for the same model, whose route it resolved ([`Fast`]) in the
/// routes' current generation. True when the op was reported (or, if its destination
/// began closing meanwhile, handed on as the whole path would); false, with nothing done,
/// otherwise: then the whole path takes it (and says what is wrong with `end < start`).
/// `SITE` is the caller's [`Site`].
#[inline(always)]
pub fn report_repeated<'a, const SITE: u8>(
    model: u32,
    op: impl OpStrings<'a>,
    start: u64,
    end: u64,
    replay: Replay,
) -> bool {
    if end < start {
        return false;
    }
    LOCAL
        .try_with(|l| {
            let Ok(mut guard) = l.try_borrow_mut() else {
                return false;
            };
            let l = &mut *guard;
            let Some(fast) = l.fast.as_ref().filter(|f| f.model == model) else {
                return false;
            };
            if l.gen != GEN.load(Ordering::Acquire) {
                return false;
            }
            let f = l.ids.stamp(model, fast.device, start, end, replay);
            if let Some(Names(name, op_type)) = op.cut() {
                crate::names::remember(f.op_index, name, op_type);
            }
            // SAFETY: `mem` is the storage of `fast.lane` in `fast.sub`, which `fast` keeps.
            let m = unsafe { &*fast.mem };
            if !fast.sub.push_to(fast.lane, m, &f, op) {
                retry(l, model, &f, op, &[]);
            }
            true
        })
        .unwrap_or(false)
}

#[inline(never)]
fn report_active<'a>(
    model: u32,
    op: impl OpStrings<'a>,
    start: u64,
    end: u64,
    replay: Replay,
) -> Result<()> {
    LOCAL.with(|l| {
        let mut guard = l.borrow_mut();
        let l = &mut *guard;
        let gen = GEN.load(Ordering::Acquire);
        if l.gen != gen {
            l.forget_routes();
            l.gen = gen;
        }
        let fork_gen = FORK_GEN.load(Ordering::Relaxed);
        if l.ids.fork_gen != fork_gen {
            l.ids.fork_gen = fork_gen;
            l.ids.pid = std::process::id();
            l.ids.tid = crate::clock::thread_id();
        }
        // A thread reports for few models: a linear scan beats hashing.
        let i = match l.routes.iter().position(|(m, _)| *m == model) {
            Some(i) => i,
            None => {
                let r = l.lookup(model);
                l.routes.push((model, r));
                l.routes.len() - 1
            }
        };
        let Some(route) = &l.routes[i].1 else {
            return err(
                ACL_ERROR_INVALID_MODEL_ID,
                format!("model {model} is not loaded"),
            );
        };
        if route.sub.is_none() && route.tap.is_none() {
            return Ok(());
        }
        if let (Some((sub, lane)), None, None) = (&route.sub, &route.also, &route.tap) {
            // One destination, in a lane of this thread's own: [`report_repeated`] can
            // take this model's next ops.
            if *lane != 0 && l.fast.as_ref().is_none_or(|f| f.model != model) {
                if let Some(m) = sub.mem(*lane) {
                    let mem: *const Mem = m;
                    l.fast = Some(Fast {
                        model,
                        device: route.device,
                        sub: sub.clone(),
                        lane: *lane,
                        mem,
                    });
                }
            }
        }
        let f = l.ids.stamp(model, route.device, start, end, replay);
        if let Some(Names(name, op_type)) = op.cut() {
            crate::names::remember(f.op_index, name, op_type);
        }
        let push = |d: &Option<(Arc<Sub>, usize)>| match d {
            Some((s, lane)) => s.push_op(*lane, &f, op),
            None => true,
        };
        let took = [push(&route.sub), push(&route.also), push(&route.tap)];
        if took != [true; 3] {
            let dests = [&route.sub, &route.also, &route.tap];
            // Each destination that took the op, so the retry never gives it one twice.
            let took: Vec<*const Sub> = dests
                .iter()
                .zip(took)
                .filter_map(|(d, ok)| d.as_ref().filter(|_| ok).map(|(s, _)| Arc::as_ptr(s)))
                .collect();
            retry(l, model, &f, op, &took);
        }
        Ok(())
    })
}
