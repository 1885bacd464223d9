//! The transport: how a reported op reaches its reader. One place, importing downward only
//! (`record`, `error`, `settings`).
//!
//! ```text
//!  reporting thread ── encode (+ sign) in place ─▶ its lane of the subscription
//!      │                                            │
//!      │ ring: the lane is in the shared mapping ───┴──▶ reader (any process) signs what it
//!      │                                                acquires and decodes it in place
//!      │ pipe: batches of 64 records (32 KiB) ───────────▶ write() by the flusher thread,
//!      │ file mode: batches of 128 records ──────────────▶ ~10 ms later, while records wait;
//!      └ a lane half full ──▶ the reporting thread writes it itself
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

/// What [`Sub::new_losses`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Losses {
    /// Records lost or dropped since the last look.
    pub n: u64,
    /// Of them, those dropped as `ACLPROF_ON_FULL=drop` asked: counted, not a failure.
    pub chosen: u64,
    pub why: String,
}

/// Record counts, as `aclprofExtGetStats` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub reported: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub bytes: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.reported += o.reported;
        self.delivered += o.delivered;
        self.dropped += o.dropped;
        self.bytes += o.bytes;
    }
}

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

    #[inline]
    fn mem(&self, lane: usize) -> Option<&Mem> {
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
        // (No orphan check here: a forked child invalidates its routes, so it never pushes
        // to a subscription it inherited.)
        let _shared = (lane == 0).then(|| self.shared.lock().unwrap_or_else(|p| p.into_inner()));
        let l = &self.lanes[lane];
        if !l.enter(|| self.accepting()) {
            return false;
        }
        // SAFETY: the calling thread owns `lane` (claimed), or holds `shared` for lane 0.
        let p = unsafe { l.prod() };
        self.push_entered(lane, p, f, name, op_type);
        l.leave();
        true
    }

    #[inline(always)]
    fn push_entered(
        self: &Arc<Self>,
        lane: usize,
        p: &mut Prod,
        f: &OpFields,
        name: &[u8],
        op_type: &[u8],
    ) {
        let Some(m) = self.mem(lane) else {
            // No memory for the lane: the record is lost, and counted.
            self.lost.fetch_add(1, Ordering::Relaxed);
            self.reported_unplaced.fetch_add(1, Ordering::Relaxed);
            self.note_loss("a lane could not be allocated (out of memory)");
            return;
        };
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
        if p.head < m.cap {
            // The lane's first lap: fresh zero pages. Reading the old record first would map
            // the zero page and the write would then copy it: two page faults, not one.
            record::encode(slot, f, name, op_type);
        } else {
            record::encode_over(slot, f, name, op_type);
        }
        // A ring's reader signs the records it acquires, off the reporting thread
        // (docs/design.md, "The signature").
        if !matches!(self.dest, Dest::Ring(_)) {
            record::sign_fresh(slot);
        }
        m.publish(p);
        match &self.dest {
            Dest::Ring(r) => r.notify(),
            _ => self.after_publish(lane, p),
        }
    }

    /// Pipe and file mode: write full batches now; leave a partial one to the flusher.
    #[inline]
    fn after_publish(self: &Arc<Self>, lane: usize, p: &mut Prod) {
        // (Spliced records keep their slots until read: what counts is what is unsent.)
        if p.head - p.cached_tail >= self.inline_at
            && p.head - self.lanes[lane].sent_total.load(Ordering::Relaxed) >= self.inline_at
        {
            if let Some(mut c) = self.lanes[lane].try_cons() {
                self.drain(lane, &mut c, true, Wait::No);
            }
            if let Some(m) = self.mem(lane) {
                p.cached_tail = m.ctl().tail.load(Ordering::Acquire);
            }
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

    /// Writes what `lane` holds (only whole batches if `full_only`), oldest first. Returns
    /// true if the lane is empty afterwards. The caller holds the lane's consumer lock.
    fn drain(&self, lane: usize, c: &mut Cons, full_only: bool, wait: Wait) -> bool {
        let Some(m) = self.lanes[lane].used() else {
            return true;
        };
        // Closed: the destination may be gone (an unsubscribed pipe's fd is closed, and
        // its number may already be another file's), and closing drained everything.
        if self.finished() {
            return true;
        }
        self.reclaim_if_needed(m, c);
        loop {
            let (avail, mut n) = m.available(c, self.batch);
            if avail == 0 || (full_only && avail < self.batch) {
                return avail == 0;
            }
            // A batch with more behind it ends at a page of the lane, so that the next one
            // starts at one and goes into a pipe whole (`fd::piece`), not in three pieces.
            if n < avail && n > SLOTS_PER_PAGE {
                n -= (c.sent_slot + n) % SLOTS_PER_PAGE;
            }
            m.track_read(c.sent_slot, n);
            // SAFETY: records [sent, sent + n) are published and contiguous from
            // c.sent_slot; the producer does not reuse them until the tail moves past them.
            let bytes = unsafe {
                std::slice::from_raw_parts(m.slot(c.sent_slot), n as usize * RECORD_SIZE)
            };
            // Records taken off the lane, how many of them reached the destination (the rest
            // are lost), whether the fd is full with records still waiting, and (spliced
            // into a pipe) the pipe's total written after them.
            let mut spliced_to = None;
            let (taken, arrived, full) = if self.is_broken() {
                (n, 0, false)
            } else {
                match &self.dest {
                    Dest::Fd {
                        fd, raises, kind, ..
                    } => {
                        let kind = match kind {
                            Kind::Pipe { .. } => Kind::Pipe {
                                splice: self.splicing.load(Ordering::Relaxed),
                            },
                            Kind::Stream => Kind::Stream,
                        };
                        let (k, how, to) = self.write_fd(*fd, *raises, kind, bytes, wait);
                        spliced_to = to;
                        match how {
                            Written::All => (k, k, false),
                            Written::Full => (k, k, true),
                            Written::Broken => (n, k, false),
                        }
                    }
                    Dest::Files(files) => {
                        match files.lock().unwrap_or_else(|p| p.into_inner()).write(bytes) {
                            Ok(k) => {
                                // Past ACL_PROF_STORAGE_LIMIT: a cap the user set, counted
                                // (and noted in the result directory), not an error.
                                self.over_limit.fetch_add(n - k, Ordering::Relaxed);
                                (n, n, false)
                            }
                            Err(e) => {
                                self.set_broken(&format!("cannot write the profiling data: {e}"));
                                (n, 0, false)
                            }
                        }
                    }
                    // never drained here: the reader consumes ring lanes
                    Dest::Ring(_) => (n, n, false),
                }
            };
            if arrived < taken {
                self.lost.fetch_add(taken - arrived, Ordering::Relaxed);
            }
            m.mark_sent(c, taken);
            self.lanes[lane].sent_total.store(c.sent, Ordering::Release);
            match spliced_to.or_else(|| c.in_pipe.back().map(|e| e.0)) {
                _ if taken == 0 => {}
                // Spliced, or behind records that were: in the pipe's order, freed by
                // `reclaim` once read. Broken too: a reader that outslept the unsubscribe
                // timeout may read the pipe yet, and the pages are the pipe's until then.
                Some(end) => match c.in_pipe.back_mut() {
                    Some(last) if last.0 == end => last.1 += taken,
                    _ => c.in_pipe.push_back((end, taken)),
                },
                // Written by copy, or dropped with nothing ahead in the pipe: free at once.
                None => m.consume(c, c.sent - c.tail),
            }
            if full {
                return false; // not waiting: the rest stays in the lane
            }
        }
    }

    /// [`Sub::reclaim`], once the lane is half taken. Asking the pipe how far it was read
    /// takes the pipe's lock, which its reader and writers contend for; spliced records
    /// are at most a pipe's worth, so a lane with half its slots free has no need of theirs.
    /// Also where a pipe its reader made too large for the lanes stops being spliced into.
    fn reclaim_if_needed(&self, m: &Mem, c: &mut Cons) {
        if m.ctl().head.load(Ordering::Acquire) - c.tail >= self.lane_cap / 2 {
            if let Dest::Fd { fd, .. } = self.dest {
                if self.splicing.load(Ordering::Relaxed) && !lanes_hold_pipe(fd, self.lane_cap) {
                    self.splicing.store(false, Ordering::Relaxed);
                    log::info!(
                        "aclprof: {}: its pipe is now {} bytes, more than half a lane of {} \
                         records can hold with a batch beside it; records go in by write() \
                         from now on",
                        self.describe(),
                        fd::pipe_size(fd),
                        self.lane_cap
                    );
                }
            }
            self.reclaim(m, c);
        }
    }

    /// Frees the slots of spliced records the pipe's reader has read (the consumer lock is
    /// held). A pipe that cannot say how far it was read frees nothing: the slots wait.
    fn reclaim(&self, m: &Mem, c: &mut Cons) {
        let Some(&(first, _)) = c.in_pipe.front() else {
            return;
        };
        let Dest::Fd { fd, .. } = &self.dest else {
            return;
        };
        let Some(read) = fd::read_position(*fd) else {
            return;
        };
        if read < first {
            return;
        }
        while let Some(&(end, n)) = c.in_pipe.front() {
            if end > read {
                break;
            }
            c.in_pipe.pop_front();
            m.consume(c, n);
        }
    }

    /// Whole records to the fd, as many as it takes (waiting as `wait` says): how many
    /// went out, and whether that was all of them, the fd is full, or the subscription
    /// broke (its reader is gone, or did not drain in time).
    /// Also returns, if any of them went by `vmsplice()`, the fd's total written after the
    /// last that did (see `fd::read_position`).
    fn write_fd(
        &self,
        fd: c_int,
        raises: fd::Signals,
        kind: Kind,
        bytes: &[u8],
        wait: Wait,
    ) -> (u64, Written, Option<u64>) {
        let n = (bytes.len() / RECORD_SIZE) as u64;
        let mut done = 0u64;
        let mut end = None;
        let mut waited = Waited::start(wait);
        loop {
            match fd::write_records(fd, raises, &bytes[done as usize * RECORD_SIZE..], kind) {
                Ok(t) => {
                    done += (t.bytes / RECORD_SIZE) as u64;
                    end = t.spliced_to.or(end);
                    if done == n {
                        return (done, Written::All, end);
                    }
                }
                Err(fd::WriteError::Broken(why)) => {
                    self.set_broken(&why);
                    return (done, Written::Broken, end);
                }
                Err(fd::WriteError::Full) => {}
            }
            let give_up = match wait {
                Wait::No => return (done, Written::Full, end),
                Wait::Until(t) => Instant::now() >= t,
                Wait::Backpressure(t) => self.deadline_passed() || Instant::now() >= t,
            };
            if give_up {
                if !self.accepting() {
                    self.set_broken(
                        "the reader did not drain the pipe before the unsubscribe \
                         timeout (ACLPROF_UNSUBSCRIBE_TIMEOUT_MS)",
                    );
                    return (done, Written::Broken, end);
                }
                return (done, Written::Full, end);
            }
            waited.wait(|| fd::wait_writable(fd, 20));
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

    fn note_loss(&self, why: &str) {
        *self.lost_why.lock().unwrap_or_else(|p| p.into_inner()) = why.to_string();
    }

    /// Records lost or dropped since the last call, and why (for an error and a warning
    /// where the user looks: the next aclprofExtFlush or aclprofStop).
    pub fn new_losses(&self) -> Option<Losses> {
        let lost = self.lost_of(&self.counts());
        let before = self.losses_reported.swap(lost, Ordering::AcqRel);
        let chosen = self.chosen_drops.load(Ordering::Relaxed);
        let chosen_before = self.chosen_reported.swap(chosen, Ordering::AcqRel);
        (lost > before).then(|| {
            let n = lost - before;
            let chosen = (chosen - chosen_before).min(n);
            Losses {
                n,
                chosen,
                why: if chosen == n {
                    "full buffers under ACLPROF_ON_FULL=drop".into()
                } else {
                    self.loss_reason()
                },
            }
        })
    }

    /// Why records were lost, as far as this subscription knows.
    pub fn loss_reason(&self) -> String {
        let why = self
            .lost_why
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if why.is_empty() {
            "full buffers under ACLPROF_ON_FULL=drop, or a reader that stopped reading".into()
        } else {
            why
        }
    }

    /// File mode: records not written because ACL_PROF_STORAGE_LIMIT was reached.
    pub fn over_limit(&self) -> u64 {
        self.over_limit.load(Ordering::Relaxed)
    }

    /// Of the records `c` (this subscription's counts) says were dropped, those lost other
    /// than to the storage limit, which is reported on its own. Saturating: a late reporter
    /// may have raised the limit's count since `c` was taken.
    pub fn lost_of(&self, c: &Counts) -> u64 {
        c.dropped.saturating_sub(self.over_limit())
    }

    fn set_broken(&self, why: &str) {
        self.note_loss(why);
        if !self.broken.swap(true, Ordering::AcqRel) {
            log::error!(
                "aclprof: {} is broken: {why}; its records are counted as dropped",
                self.describe()
            );
        }
    }

    /// Records reported, delivered, dropped so far.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        let mut consumed = 0;
        for l in self.lanes.iter() {
            if let Some(m) = l.used() {
                let ctl = m.ctl();
                let d = ctl.dropped.load(Ordering::Relaxed);
                let h = ctl.head.load(Ordering::Acquire);
                c.reported += h + d;
                c.dropped += d;
                consumed += match self.dest {
                    Dest::Ring(_) => h,
                    _ => l.sent_total.load(Ordering::Acquire),
                };
            }
        }
        let unplaced = self.reported_unplaced.load(Ordering::Relaxed);
        c.reported += unplaced;
        let lost = self.lost.load(Ordering::Relaxed) + self.over_limit.load(Ordering::Relaxed);
        c.delivered = consumed - (lost - unplaced).min(consumed);
        c.dropped += lost;
        c.bytes = c.delivered * RECORD_SIZE as u64;
        c
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

/// Holds the fd write locks across `fork()` (see [`crate::fork`]).
pub(crate) fn fork_prepare_fds() -> crate::fork::Release {
    fd::fork_prepare()
}

/// Holds the flusher's locks across `fork()` (see [`crate::fork`]).
pub(crate) fn fork_prepare_flusher() -> crate::fork::Release {
    flusher::fork_prepare()
}

#[cfg(test)]
mod tests;
