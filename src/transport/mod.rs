//! The transport: how a reported op reaches its reader. One place, importing downward only
//! (`record`, `error`, `settings`).
//!
//! ```text
//!  reporting thread ── encode in place ─────────▶ its lane of the subscription
//!      │                                            │
//!      │ ring: the lane is in the shared mapping ───┴──▶ reader (any process) signs what it
//!      │                                                acquires and decodes it in place
//!      │ pipe: batches of 64 records (32 KiB) ───────────▶ signed and written by the flusher
//!      │ file mode: batches of 128 records ──────────────▶ thread, ~10 ms later, while
//!      │                                                   records wait;
//!      └ a lane half full ──▶ the reporting thread signs and writes it itself
//! ```
//!
//! * Each reporting thread owns one lane per subscription (lane 0 is shared, under a lock,
//!   by threads beyond the others), so reporters never contend and each stream stays in
//!   order. A lane is a fixed ring of records: memory is bounded.
//! * Writes to an fd are up to 32 KiB of whole records. A write the fd cuts short inside a
//!   record is finished before anything else goes to the fd, so a reader reading multiples
//!   of the record size never sees a torn record, even with two subscriptions writing into
//!   one pipe. `EAGAIN` leaves the rest in the lane; `EPIPE` marks the subscription broken
//!   and never raises `SIGPIPE` in the host.
//! * A full lane waits (`OnFull::Block`, lossless) or drops and counts (`OnFull::Drop`).
//! * Nothing polls: an idle subscription costs nothing.
//!
//! See `docs/design.md` ("The data path") for why the flusher writes, measured both ways.

mod barrier;
mod counts;
mod drain;
pub use counts::{Counts, Losses};
pub mod fd;
mod flusher;
pub(crate) mod lane;
#[cfg(all(test, loom))]
mod loom_models;
pub mod ring;
mod waits;

pub use fd::{prepare_fd, Kind, UserFd};
pub mod files;
pub use files::StreamFiles;
use waits::Waited;
pub use waits::{waits, Waits};

use crate::error::Result;
use crate::formats::record::{self, OpFields, RECORD_SIZE};
use crate::settings::OnFull;
use crate::sync::{AtomicBool, AtomicU64, AtomicU8, Mutex};
use lane::{Cons, Lane, Mem, Prod};
use std::os::raw::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Records per `write()` to a pipe: 32 KiB, half a default pipe, so a reader reading 64 KiB
/// gets 64 records or more per `read()` and the writer can fill one half while the reader
/// empties the other (64 KiB writes made them take turns). See docs/design.md ("Where pipe
/// `write()` happens") for the measured trade-off, and ("No torn records") for why writes
/// past `PIPE_BUF` stay whole.
pub const PIPE_BATCH: u64 = 64;
/// Records in a page, a pipe's buffer (`fd::piece`).
const SLOTS_PER_PAGE: u64 = (fd::PIPE_PAGE / RECORD_SIZE) as u64;
/// Records per `write()` to a raw stream file.
const FILE_BATCH: u64 = 128;
/// Lanes of a pipe or file subscription (one shared, the others owned by one thread each).
/// (Four under loom: the models need a few, and each is state to explore.)
const HEAP_LANES: usize = if cfg!(loom) { 4 } else { 16 };
/// How long a partial batch may wait before the flusher writes it.
pub const FLUSH_DELAY: Duration = Duration::from_millis(10);
/// How long past its deadline closing waits for a push still under way (one blocked on a
/// full lane gives up at the deadline).
const CLOSE_GRACE: Duration = Duration::from_millis(500);

// A subscription's life: OPEN, then CLOSING once `close` begins (no push starts any more,
// see `Lane::enter`), then CLOSED once every lane is drained (nothing is written any more).
const OPEN: u8 = 0;
const CLOSING: u8 = 1;
const CLOSED: u8 = 2;
/// In a forked child: the subscription is the parent's; it takes and writes nothing.
const ORPHANED: u8 = 3;

/// Where a subscription's records go.
pub enum Dest {
    /// The application's fd (a pipe, FIFO, socket or file; it passed [`prepare_fd`]) and
    /// the `int` it came from, which unsubscribe sets to -1.
    Fd {
        fd: c_int,
        user: UserFd,
        /// What a write to it can raise (from [`prepare_fd`]).
        raises: fd::Signals,
        /// A pipe, and whether it is written with `vmsplice()` (from [`prepare_fd`]):
        /// spliced records leave without a copy, and their slots are freed only once the
        /// reader has read them.
        kind: Kind,
    },
    /// File mode: per-stream raw files.
    Files(Mutex<StreamFiles>),
    /// A shared-memory ring: the lanes are in its mapping.
    Ring(Arc<ring::Ring>),
}

/// How long a consumer may wait for a full fd.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Not at all: leave the rest in the lane.
    No,
    /// Until this instant (then the rest is lost and counted).
    Until(Instant),
    /// Lossless backpressure: until the reader has made no progress for this long, or the
    /// subscription closes and its unsubscribe timeout runs out.
    Backpressure(Instant),
}

/// One model's subscription, or one device's file-mode recording.
pub struct Sub {
    pub model_id: u32,
    pub device: u32,
    dest: Dest,
    lanes: Box<[Lane]>,
    /// Guards the producer side of the shared lane 0.
    shared: Mutex<()>,
    lane_cap: u64,
    batch: u64,
    /// A reporting thread writes its lane itself once this many records wait (the flusher
    /// writes the rest, every FLUSH_DELAY).
    inline_at: u64,
    policy: OnFull,
    state: AtomicU8,
    /// The destination failed (reader gone, write error, drain timeout): records are taken
    /// from the lanes and counted as dropped, and a report that finds its lane full is
    /// dropped at once. Independent of `state`: a broken subscription still takes records,
    /// and still closes.
    broken: AtomicBool,
    deadline: Mutex<Option<Instant>>,
    /// Records taken from a lane that never arrived (broken fd, timeout, storage limit).
    lost: AtomicU64,
    /// Why records were lost last (for the error that reports them).
    lost_why: Mutex<String>,
    /// Losses (lost + dropped) already reported by [`Sub::new_losses`].
    losses_reported: AtomicU64,
    /// Records dropped because a lane was full under `OnFull::Drop`, as the user chose
    /// (counted as dropped, and not a failure), and how many [`Sub::new_losses`] has seen.
    chosen_drops: AtomicU64,
    chosen_reported: AtomicU64,
    /// File mode: records not written because ACL_PROF_STORAGE_LIMIT was reached.
    over_limit: AtomicU64,
    /// Records reported that never had a slot (their lane could not be allocated).
    reported_unplaced: AtomicU64,
    /// Set while the flusher has this subscription on its list.
    armed: AtomicBool,
    /// How long a reporting thread waits for a reader that makes no progress.
    stall_timeout: Duration,
    /// Set when a reader made no progress for `stall_timeout`: records are dropped (and
    /// counted) without waiting until it reads again.
    stalled: AtomicBool,
    /// A pipe written with `vmsplice()` ([`Dest::Fd`]) whose lanes hold its size with room
    /// to spare ([`lanes_hold_pipe`]); cleared for good if its reader makes it larger.
    splicing: AtomicBool,
}

/// Whether lanes of `lane_cap` records can splice into the pipe `fd`: spliced records keep
/// their slots until read, so half a lane must hold the pipe's size and a batch, leaving
/// the other half for records that wait while the pipe is full. Otherwise a reporting
/// thread could find its lane full of records the pipe holds while the pipe has room.
fn lanes_hold_pipe(fd: c_int, lane_cap: u64) -> bool {
    fd::pipe_size(fd) / RECORD_SIZE as u64 + PIPE_BATCH <= lane_cap / 2
}

/// How a [`Sub::write_fd`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Written {
    All,
    Full,
    Broken,
}

impl Sub {
    /// A subscription delivering to `dest`; pipe and file lanes hold `capacity / 4` records
    /// each (at least 64).
    pub fn start(
        model_id: u32,
        device: u32,
        dest: Dest,
        capacity: usize,
        policy: OnFull,
    ) -> Result<Arc<Sub>> {
        let stall = crate::settings::get().unsubscribe_timeout;
        Self::start_with_stall(model_id, device, dest, capacity, policy, stall)
    }

    fn start_with_stall(
        model_id: u32,
        device: u32,
        dest: Dest,
        capacity: usize,
        policy: OnFull,
        stall_timeout: Duration,
    ) -> Result<Arc<Sub>> {
        let (lanes, lane_cap, batch): (Vec<Lane>, u64, u64) = match &dest {
            Dest::Ring(r) => (
                (0..r.lane_count())
                    .map(|l| Lane::new(Some(r.lane_mem(l))))
                    .collect(),
                0,
                u64::MAX,
            ),
            Dest::Fd { .. } | Dest::Files(_) => {
                let cap = if cfg!(loom) {
                    // The models use lanes of a few slots, so the producer wraps around.
                    capacity as u64
                } else {
                    (capacity as u64 / 4).max(64).div_ceil(FILE_BATCH) * FILE_BATCH
                };
                let batch = if cfg!(loom) {
                    // So that a model's producer writes its own lane once it is full.
                    2
                } else if matches!(dest, Dest::Fd { .. }) {
                    PIPE_BATCH
                } else {
                    FILE_BATCH
                };
                (
                    (0..HEAP_LANES)
                        .map(|_| {
                            // Under loom the storage is mapped up front: the lazy mapping's
                            // once-cell is std's, whose ordering loom cannot see.
                            Lane::new(if cfg!(loom) {
                                Some(Mem::heap(cap).expect("a lane"))
                            } else {
                                None
                            })
                        })
                        .collect(),
                    cap,
                    batch,
                )
            }
        };
        let splicing = match dest {
            Dest::Fd {
                fd,
                kind: Kind::Pipe { splice: true },
                ..
            } => lanes_hold_pipe(fd, lane_cap),
            _ => false,
        };
        flusher::ensure_started()?;
        Ok(Arc::new(Sub {
            model_id,
            device,
            dest,
            lanes: lanes.into_boxed_slice(),
            shared: Mutex::new(()),
            lane_cap,
            batch,
            inline_at: (lane_cap / 2).max(batch),
            policy,
            state: AtomicU8::new(OPEN),
            broken: AtomicBool::new(false),
            deadline: Mutex::new(None),
            lost: AtomicU64::new(0),
            lost_why: Mutex::new(String::new()),
            losses_reported: AtomicU64::new(0),
            chosen_drops: AtomicU64::new(0),
            chosen_reported: AtomicU64::new(0),
            over_limit: AtomicU64::new(0),
            reported_unplaced: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            stall_timeout,
            stalled: AtomicBool::new(false),
            splicing: AtomicBool::new(splicing),
        }))
    }

    /// What this is, for messages.
    pub fn describe(&self) -> String {
        match &self.dest {
            Dest::Fd { fd, .. } => format!("model {}'s subscription to fd {fd}", self.model_id),
            Dest::Ring(r) => format!(
                "model {}'s ring subscription (fd {})",
                self.model_id,
                r.fd()
            ),
            Dest::Files(_) => format!("the recording of device {}'s ops", self.device),
        }
    }

    /// The application's fd, for subscriptions that write to one.
    pub fn fd(&self) -> Option<c_int> {
        match self.dest {
            Dest::Fd { fd, .. } => Some(fd),
            _ => None,
        }
    }

    pub fn user_fd(&self) -> Option<UserFd> {
        match self.dest {
            Dest::Fd { user, .. } => Some(user),
            _ => None,
        }
    }

    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Closed, or the parent's (in a forked child): nothing is written any more.
    fn finished(&self) -> bool {
        matches!(self.state.load(Ordering::Acquire), CLOSED | ORPHANED)
    }

    /// The storage of `lane` (from [`Sub::claim`]), mapped now if it was not yet: with
    /// it, the calling thread can push through [`Sub::push_to`] without looking it up
    /// again. None if it cannot be mapped (then [`Sub::push`] counts each record lost).
    #[inline]
    pub fn mem(&self, lane: usize) -> Option<&Mem> {
        self.lanes[lane].mem(self.lane_cap)
    }

    /// A lane for the calling thread: one of its own if one is free, else the shared lane 0.
    /// Give it back with [`Sub::release`] when the thread stops reporting here.
    pub fn claim(&self) -> usize {
        (1..self.lanes.len())
            .find(|&i| self.lanes[i].try_own())
            .unwrap_or(0)
    }

    /// Gives back a lane from [`Sub::claim`]; what it holds is written by the flusher soon.
    pub fn release(self: &Arc<Self>, lane: usize) {
        // Orphaned: the parent's business. Closed: nothing left to write.
        if self.finished() {
            return;
        }
        if lane != 0 {
            self.lanes[lane].disown();
        }
        self.arm();
    }

    /// Marks a subscription inherited by a forked child: it takes and writes nothing more
    /// (its lanes, locks and fd are the parent's business).
    pub fn orphan(&self) {
        self.state.store(ORPHANED, Ordering::Release);
    }

    fn orphaned(&self) -> bool {
        self.state.load(Ordering::Acquire) == ORPHANED
    }

    /// Gives back the lane of a thread that is exiting. File mode writes what the lane holds
    /// first (the thread's stream may be reused next); other destinations leave it to the
    /// flusher, as [`Sub::release`] does.
    pub fn retire_lane(self: &Arc<Self>, lane: usize) {
        if matches!(self.dest, Dest::Files(_)) && !self.orphaned() {
            let mut c = self.lanes[lane].cons();
            self.drain(lane, &mut c, false, Wait::No);
        }
        self.release(lane);
    }

    /// Whether the subscription still takes records (false once closing has begun, and
    /// in a forked child: a thread that finds it so looks its model's route up again).
    #[inline]
    pub fn accepting(&self) -> bool {
        self.state.load(Ordering::Relaxed) == OPEN
    }

    /// Records one op in `lane` (from [`Sub::claim`]; the calling thread owns it). False,
    /// with nothing recorded or counted, if the subscription is closing: the op was
    /// reported after its model's unsubscribe began.
    #[inline(always)]
    pub fn push(self: &Arc<Self>, lane: usize, f: &OpFields, name: &[u8], op_type: &[u8]) -> bool {
        self.push_op(lane, f, record::Names(name, op_type))
    }

    /// [`Sub::push`] of an op's strings in either form ([`record::OpStrings`]).
    #[inline(always)]
    pub fn push_op<'a>(
        self: &Arc<Self>,
        lane: usize,
        f: &OpFields,
        op: impl record::OpStrings<'a>,
    ) -> bool {
        // (No orphan check here: a forked child invalidates its routes, so it never pushes
        // to a subscription it inherited.)
        let _shared = (lane == 0).then(|| self.shared.lock().unwrap_or_else(|p| p.into_inner()));
        match self.mem(lane) {
            Some(m) => self.push_to(lane, m, f, op),
            None => {
                let l = &self.lanes[lane];
                if !l.enter(|| self.accepting()) {
                    return false;
                }
                // No memory for the lane: the record is lost, and counted.
                self.lost.fetch_add(1, Ordering::Relaxed);
                self.reported_unplaced.fetch_add(1, Ordering::Relaxed);
                self.note_loss("a lane could not be allocated (out of memory)");
                l.leave();
                true
            }
        }
    }

    /// [`Sub::push`] once the lane's storage `m` is known ([`Sub::mem`] of the same
    /// lane): the calling thread owns `lane`, or holds the shared lane's lock (in `push`).
    #[inline(always)]
    pub fn push_to<'a>(
        self: &Arc<Self>,
        lane: usize,
        m: &Mem,
        f: &OpFields,
        op: impl record::OpStrings<'a>,
    ) -> bool {
        let l = &self.lanes[lane];
        if !l.enter(|| self.accepting()) {
            return false;
        }
        // SAFETY: the calling thread owns `lane` (claimed), or holds `shared` for lane 0.
        let p = unsafe { l.prod() };
        self.push_entered(lane, m, p, f, op);
        l.leave();
        true
    }

    #[inline(always)]
    fn push_entered<'a>(
        self: &Arc<Self>,
        lane: usize,
        m: &Mem,
        p: &mut Prod,
        f: &OpFields,
        op: impl record::OpStrings<'a>,
    ) {
        if !m.has_room(p) && !self.make_room(lane, p) {
            let c = m.ctl();
            c.dropped
                .store(c.dropped.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            if self.policy == OnFull::Drop && !self.is_broken() {
                // Only on a full lane: the reporting path of an op that fits stays as it was.
                self.chosen_drops.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        m.track_write(p.slot);
        // SAFETY: slot `p.slot` is free (head - tail < cap) and only this producer writes it.
        let slot = unsafe { &mut *(m.slot(p.slot) as *mut record::Record) };
        // On the lane's first lap the slot is fresh zero pages: reading the old record first
        // would map the zero page and the write would then copy it (two page faults, not one).
        op.encode(slot, f, p.head < m.cap);
        // Signed off the reporting thread: by a ring's reader when it acquires them, by
        // the consumer that writes a pipe's or a file's batch (docs/design.md, "The
        // signature").
        m.publish(p);
        match &self.dest {
            Dest::Ring(r) => r.notify(),
            _ => self.after_publish(lane, p),
        }
    }

    /// Pipe and file mode: write full batches now; leave a partial one to the flusher.
    #[inline(always)]
    fn after_publish(self: &Arc<Self>, lane: usize, p: &mut Prod) {
        if p.head - p.cached_tail >= self.inline_at {
            self.write_own_lane(lane, p);
        }
        if p.head != p.cached_tail {
            // Publish, then look at `armed`: the flusher clears `armed` and then runs the
            // heavy fence before it looks at the heads, so either it sees this record or
            // this thread sees `armed` cleared and arms it again.
            barrier::light();
            if !self.armed.load(Ordering::Relaxed) {
                self.arm();
            }
        }
    }

    /// The reporting thread's lane holds half its records: it writes its full batches
    /// itself, unless they are sent already (spliced records keep their slots until read:
    /// what counts is what is unsent) or a consumer is at it.
    #[cold]
    #[inline(never)]
    fn write_own_lane(self: &Arc<Self>, lane: usize, p: &mut Prod) {
        if p.head - self.lanes[lane].sent_total.load(Ordering::Relaxed) >= self.inline_at {
            if let Some(mut c) = self.lanes[lane].try_cons() {
                self.drain(lane, &mut c, true, Wait::No);
            }
            if let Some(m) = self.mem(lane) {
                p.cached_tail = m.ctl().tail.load(Ordering::Acquire);
            }
        }
    }

    fn arm(self: &Arc<Self>) {
        if !matches!(self.dest, Dest::Ring(_)) && !self.armed.swap(true, Ordering::AcqRel) {
            flusher::schedule(self.clone());
        }
    }

    /// A full lane: wait for room (lossless) or give up (drop). True if there is room now.
    /// A reader that makes no progress for the unsubscribe timeout is declared stalled:
    /// from then on records are dropped and counted without waiting, until it reads again.
    #[cold]
    fn make_room(&self, lane: usize, p: &mut Prod) -> bool {
        let Some(m) = self.mem(lane) else {
            return false;
        };
        if self.is_broken() {
            // Nothing more is delivered: drop and count this one at once, without draining
            // or asking a pipe how far it was read on every report (spliced slots stay taken
            // until their reader reads them, which it may never do).
            return false;
        }
        let stalled = self.stalled.load(Ordering::Relaxed);
        let mut waited = Waited::new(0);
        let room = match &self.dest {
            Dest::Ring(r) => {
                let give_up = Instant::now() + self.stall_timeout;
                loop {
                    if m.has_room(p) {
                        break true;
                    }
                    if self.policy == OnFull::Drop || stalled {
                        break false;
                    }
                    if r.reader_gone() {
                        self.stall("the reader detached or died");
                        break false;
                    }
                    if self.deadline_passed() || Instant::now() >= give_up {
                        self.stall(&self.no_progress());
                        break false;
                    }
                    waited.wait(|| std::thread::sleep(Duration::from_micros(50)));
                }
            }
            _ => {
                let wait = if self.policy == OnFull::Block && !stalled {
                    Wait::Backpressure(Instant::now() + self.stall_timeout)
                } else {
                    Wait::No
                };
                let mut c = self.lanes[lane].cons();
                self.drain(lane, &mut c, false, wait);
                if let Wait::Backpressure(give_up) = wait {
                    // Everything is in the pipe, but spliced records keep their slots until
                    // the reader has read them.
                    while !m.has_room(p) && !c.in_pipe.is_empty() && !self.is_broken() {
                        if self.deadline_passed() || Instant::now() >= give_up {
                            break;
                        }
                        waited.wait(|| std::thread::sleep(Duration::from_micros(50)));
                        self.reclaim(m, &mut c);
                    }
                }
                drop(c);
                let room = m.has_room(p);
                if !room && !stalled && self.policy == OnFull::Block {
                    self.stall(&self.no_progress());
                }
                room
            }
        };
        if room && stalled {
            self.stalled.store(false, Ordering::Relaxed);
            log::warn!("aclprof: {}: the reader reads again", self.describe());
        }
        room
    }

    fn no_progress(&self) -> String {
        format!(
            "the reader made no progress for {} ms (ACLPROF_UNSUBSCRIBE_TIMEOUT_MS)",
            self.stall_timeout.as_millis()
        )
    }

    /// From now on a full lane drops (and counts) at once, until the reader makes room.
    fn stall(&self, why: &str) {
        if !self.stalled.swap(true, Ordering::Relaxed) {
            log::warn!(
                "aclprof: {}: {why}; records are dropped and counted until a reader reads again",
                self.describe()
            );
        }
    }

    /// Flusher: writes every lane without waiting on a full fd. Returns (all lanes empty,
    /// something was written).
    fn flush_now(&self) -> (bool, bool) {
        let (mut empty, mut wrote) = (true, false);
        for (i, l) in self.lanes.iter().enumerate() {
            if l.used().is_none() {
                continue;
            }
            match l.try_cons() {
                Some(mut c) => {
                    let before = c.sent;
                    empty &= self.drain(i, &mut c, false, Wait::No);
                    wrote |= c.sent != before;
                    if let Some(m) = l.used() {
                        let c = &mut *c;
                        m.prefault(&mut c.prefaulted, &mut c.prefault_seen);
                    }
                }
                None => empty = false,
            }
        }
        (empty, wrote)
    }

    /// True once an unsubscribe's wait for the reader has run out.
    fn deadline_passed(&self) -> bool {
        self.deadline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|d| Instant::now() >= d)
    }

    /// Writes everything reported so far, waiting for a full fd until `deadline`. Returns
    /// false on timeout. Rings have nothing to do: a published record is in the ring.
    pub fn flush(&self, deadline: Instant) -> bool {
        if matches!(self.dest, Dest::Ring(_)) || self.orphaned() {
            return true;
        }
        let mut ok = true;
        for (i, l) in self.lanes.iter().enumerate() {
            if l.used().is_some() {
                let mut c = l.cons();
                ok &= self.drain(i, &mut c, false, Wait::Until(deadline));
            }
        }
        ok
    }

    /// Unsubscribe: writes everything reported, waiting at most `timeout` for the reader;
    /// what is still unwritten then is counted as dropped. Returns the final counts. Does
    /// not close the fd (the caller decides: it may be shared).
    pub fn close(&self, timeout: Duration) -> Counts {
        let deadline = Instant::now() + timeout;
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = Some(deadline);
        // The gate (`Lane::enter`): after this, every push either saw the subscription
        // closing or is seen busy here and finishes before the drain below. A push blocked
        // on a full lane gives up by the deadline.
        let _ = self
            .state
            .compare_exchange(OPEN, CLOSING, Ordering::AcqRel, Ordering::Acquire);
        barrier::heavy();
        for l in self.lanes.iter() {
            if !l.wait_idle(deadline + CLOSE_GRACE) {
                log::error!(
                    "aclprof: {}: a reporting thread is still inside a report call after \
                     the unsubscribe timeout; its record will not be delivered",
                    self.describe()
                );
            }
        }
        for (i, l) in self.lanes.iter().enumerate() {
            if l.used().is_some() && !matches!(self.dest, Dest::Ring(_)) {
                // Empties the lane: a reader that does not drain by the deadline breaks the
                // subscription (`write_fd`), and the rest is counted as dropped.
                self.drain(i, &mut l.cons(), false, Wait::Until(deadline));
            }
        }
        // From here on no consumer writes: one that is writing now holds its lane's
        // consumer lock, and taking each lock once waits for it. (An orphan stays one.)
        let _ = self
            .state
            .compare_exchange(CLOSING, CLOSED, Ordering::AcqRel, Ordering::Acquire);
        match &self.dest {
            Dest::Ring(r) => r.close_producer(),
            _ => {
                for l in self.lanes.iter().filter(|l| l.used().is_some()) {
                    drop(l.cons());
                }
            }
        }
        self.counts()
    }
}

#[cfg(test)]
mod tests;
