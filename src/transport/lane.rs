//! A lane: a single-producer ring of 512-byte records. Each reporting thread owns one lane
//! per subscription and writes its records in place; a consumer (the pipe or file writer,
//! or a ring's reader in any process) takes whole contiguous batches from the other end.
//!
//! The control block (head and tail, each on its own cache line) and the slots live either
//! on the heap (pipes, file mode) or in a ring's shared mapping.

use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard, TryLockError};
use std::cell::UnsafeCell;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use crate::formats::record::RECORD_SIZE;

/// At most this many records past its producer's head have their pages faulted in by the
/// flusher on a private lane's first lap (2 MiB): twice what a producer at ~100 k ops/s
/// writes between two of the flusher's passes (FLUSH_DELAY apart), so that it never
/// reaches pages not yet faulted in.
const PREFAULT_AHEAD: u64 = 4096;
/// A lane is prefaulted only once its producer wrote this many records (short-lived
/// subscriptions would pay for pages they never use).
const PREFAULT_AFTER: u64 = 64;
/// Slots per 4 KiB page: prefaulted ranges are whole pages.
const SLOTS_PER_PAGE: u64 = 4096 / RECORD_SIZE as u64;
/// Cleared where the kernel has no `MADV_POPULATE_WRITE` (before Linux 5.14).
static PREFAULT_WORKS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Head, tail and drop count of one lane. In a ring this is part of the file format
/// (`transport::ring`), so the layout is fixed: 192 bytes.
#[repr(C, align(64))]
pub struct LaneCtl {
    /// Records published (producer writes, Release).
    pub head: AtomicU64,
    _a: [u64; 7],
    /// Records consumed (consumer writes, Release).
    pub tail: AtomicU64,
    _b: [u64; 7],
    /// Records the producer could not place (drop policy, reader gone); producer writes.
    pub dropped: AtomicU64,
    _c: [u64; 7],
}
pub const LANE_CTL_SIZE: usize = 192;
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<LaneCtl>() == LANE_CTL_SIZE);

impl LaneCtl {
    pub(crate) fn new() -> Self {
        LaneCtl {
            head: AtomicU64::new(0),
            _a: [0; 7],
            tail: AtomicU64::new(0),
            _b: [0; 7],
            dropped: AtomicU64::new(0),
            _c: [0; 7],
        }
    }
}

/// Where a lane's control block and slots are.
pub struct Mem {
    ctl: *const LaneCtl,
    slots: *mut u8,
    pub cap: u64,
    /// Owns the storage of a private lane (None for a ring, whose mapping the subscription
    /// keeps alive).
    heap: Option<(Box<LaneCtl>, memmap2::MmapMut)>,
    /// Under loom: one tracked cell per slot, written where a producer writes the slot and
    /// read where a consumer reads it, so the model checker reports any access to a slot
    /// that the head/tail protocol does not order (see [`Mem::track_write`]).
    #[cfg(loom)]
    shadow: Box<[loom::cell::UnsafeCell<u64>]>,
}

// SAFETY: the pointers refer to storage owned by `heap` or by a mapping that outlives the
// lane; shared state is accessed through atomics or through slots the head/tail protocol
// gives to one side at a time.
unsafe impl Send for Mem {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mem {}

impl Mem {
    /// A private lane of `cap` records in an anonymous mapping: pages cost memory only once
    /// written, and all of it goes back to the system when the lane is dropped (a heap
    /// allocation this size may come from an arena that zeroes it all and keeps it).
    pub fn heap(cap: u64) -> std::io::Result<Mem> {
        let ctl = Box::new(LaneCtl::new());
        let mut slots = memmap2::MmapMut::map_anon(cap as usize * RECORD_SIZE)?;
        Ok(Mem {
            ctl: &*ctl,
            slots: slots.as_mut_ptr(),
            cap,
            heap: Some((ctl, slots)),
            #[cfg(loom)]
            shadow: Self::shadow(cap),
        })
    }

    /// # Safety
    /// `ctl` and `cap` records at `slots` must stay valid (mapped) as long as the lane.
    pub unsafe fn shared(ctl: *const LaneCtl, slots: *mut u8, cap: u64) -> Mem {
        Mem {
            ctl,
            slots,
            cap,
            heap: None,
            #[cfg(loom)]
            shadow: Self::shadow(cap),
        }
    }

    #[cfg(loom)]
    fn shadow(cap: u64) -> Box<[loom::cell::UnsafeCell<u64>]> {
        (0..cap).map(|_| loom::cell::UnsafeCell::new(0)).collect()
    }

    /// The producer is about to write slot `i` (nothing outside loom builds).
    #[inline(always)]
    pub fn track_write(&self, _i: u64) {
        #[cfg(loom)]
        // SAFETY: a tracked cell of our own; loom checks the access is exclusive.
        self.shadow[_i as usize].with_mut(|p| unsafe { *p += 1 });
    }

    /// The consumer is about to sign and read `n` slots from `i` (nothing outside loom
    /// builds).
    #[inline(always)]
    pub fn track_consume(&self, _i: u64, _n: u64) {
        #[cfg(loom)]
        for k in _i.._i + _n {
            // SAFETY: as above; loom checks that nothing races with this write.
            self.shadow[k as usize].with_mut(|p| unsafe { *p += 1 });
        }
    }

    #[inline]
    pub fn ctl(&self) -> &LaneCtl {
        // SAFETY: valid for the lane's life (see the constructors).
        unsafe { &*self.ctl }
    }

    /// On a private lane's first lap, once it has [`PREFAULT_AFTER`] records, faults in the
    /// pages of the slots the producer will likely write before the next pass (twice what
    /// it wrote since the last one, at most [`PREFAULT_AHEAD`]), writable and with their
    /// contents untouched (so it is safe while the producer writes), so that the producer,
    /// a reporting thread, does not take those faults itself. `done` is how many slots from
    /// the start were faulted in (the whole lane once its first lap is over), `seen` the
    /// head at the last pass (both the consumer's). Called by the flusher thread.
    pub fn prefault(&self, done: &mut u64, seen: &mut u64) {
        if self.heap.is_none() || *done >= self.cap || !PREFAULT_WORKS.load(Ordering::Relaxed) {
            return;
        }
        let head = self.ctl().head.load(Ordering::Relaxed);
        if head >= self.cap {
            *done = self.cap; // every slot has been written: nothing more to do
            return;
        }
        let wrote = head.saturating_sub(*seen);
        *seen = head;
        if head < PREFAULT_AFTER || wrote == 0 {
            return;
        }
        let ahead = (2 * wrote).min(PREFAULT_AHEAD);
        let from = (*done).max(head / SLOTS_PER_PAGE * SLOTS_PER_PAGE);
        let to = (head + ahead)
            .div_ceil(SLOTS_PER_PAGE)
            .saturating_mul(SLOTS_PER_PAGE)
            .min(self.cap);
        if to <= from {
            return;
        }
        // SAFETY: [from, to) are slots of this mapping, page-aligned (the mapping is, and
        // both ends are whole pages of slots); MADV_POPULATE_WRITE changes no contents.
        let r = unsafe {
            libc::madvise(
                self.slot(from).cast(),
                ((to - from) as usize) * RECORD_SIZE,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if r == 0 {
            *done = to;
        } else if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            PREFAULT_WORKS.store(false, Ordering::Relaxed);
        }
    }

    /// Slot `i` (< cap).
    #[inline]
    pub fn slot(&self, i: u64) -> *mut u8 {
        debug_assert!(i < self.cap);
        // SAFETY: i < cap, so the slot is inside the storage.
        unsafe { self.slots.add(i as usize * RECORD_SIZE) }
    }

    // The single-producer, single-consumer protocol. The producer writes a slot, then
    // publishes it by storing `head` (Release); the consumer loads `head` (Acquire), reads
    // the slots below it, then frees them by storing `tail` (Release); the producer loads
    // `tail` (Acquire) before it writes a slot again. So a slot belongs to one side at a
    // time, and records leave in the order they were published.

    /// Producer: whether slot `p.slot` is free (reloading the consumer's tail only when
    /// the cached one says the lane is full).
    #[inline]
    pub fn has_room(&self, p: &mut Prod) -> bool {
        if p.head - p.cached_tail >= self.cap {
            p.cached_tail = self.ctl().tail.load(Ordering::Acquire);
        }
        p.head - p.cached_tail < self.cap
    }

    /// Producer: publishes the record written in slot `p.slot`.
    #[inline]
    pub fn publish(&self, p: &mut Prod) {
        p.head += 1;
        p.slot = if p.slot + 1 == self.cap {
            0
        } else {
            p.slot + 1
        };
        self.ctl().head.store(p.head, Ordering::Release);
    }

    /// Consumer: how many published records wait to be written out, and how many of them
    /// (at most `max`) are contiguous from slot `c.sent_slot`.
    #[inline]
    pub fn available(&self, c: &Cons, max: u64) -> (u64, u64) {
        let avail = self.ctl().head.load(Ordering::Acquire) - c.sent;
        (avail, avail.min(max).min(self.cap - c.sent_slot))
    }

    /// Consumer: the `n` oldest unsent records were written out (their slots stay taken
    /// until [`Mem::consume`]).
    #[inline]
    pub fn mark_sent(&self, c: &mut Cons, n: u64) {
        c.sent += n;
        c.sent_slot = (c.sent_slot + n) % self.cap;
    }

    /// Consumer: frees the `n` oldest records (read or written out).
    #[inline]
    pub fn consume(&self, c: &mut Cons, n: u64) {
        c.tail += n;
        c.slot = (c.slot + n) % self.cap;
        self.ctl().tail.store(c.tail, Ordering::Release);
    }
}

/// The producer's private view (touched only by the lane's owner).
#[derive(Default)]
pub struct Prod {
    pub head: u64,
    pub slot: u64,
    pub cached_tail: u64,
}

/// The consumer's private view (under the consumer lock).
#[derive(Default)]
pub struct Cons {
    /// The oldest slot not yet free for the producer (`tail`), and its index.
    pub tail: u64,
    pub slot: u64,
    /// The oldest record not yet written out, and its slot. Equal to `tail` but for records
    /// spliced into a pipe that its reader has not read yet (their slots stay taken).
    pub sent: u64,
    pub sent_slot: u64,
    /// Records signed so far (see `Sub::sign`).
    pub signed: u64,
    /// Spliced records not yet freed, oldest first: the pipe's total written after them
    /// ([`super::fd::read_position`]) and how many (records dropped behind them share their
    /// entry), in one entry per `vmsplice()`: at most a lane's records. Freed as the reader
    /// reads them, asked once the lane is half taken.
    pub in_pipe: std::collections::VecDeque<(u64, u64)>,
    /// Slots from the start whose pages the flusher faulted in, and the producer's head at
    /// that pass ([`Mem::prefault`]).
    pub prefaulted: u64,
    pub prefault_seen: u64,
}

pub struct Lane {
    /// The storage; `None` inside if it could not be allocated.
    mem: OnceLock<Option<Mem>>,
    owned: AtomicBool,
    /// Set by the producer for the whole of a push (see [`Lane::enter`]).
    busy: AtomicBool,
    prod: UnsafeCell<Prod>,
    /// Under loom: written whenever a thread takes `prod`, so the model checker reports two
    /// producers whose use of the lane the ownership protocol does not order.
    #[cfg(loom)]
    prod_shadow: loom::cell::UnsafeCell<u64>,
    cons: Mutex<Cons>,
    /// Records written out of this lane so far (`Cons::sent`, for the counts, which must not
    /// wait for the consumer lock).
    pub sent_total: AtomicU64,
}

// SAFETY: `prod` is only touched by the thread that owns the lane (claimed through
// `owned`, or the shared lane under its subscription's lock); everything else is atomic or
// behind a mutex.
unsafe impl Sync for Lane {}

impl Lane {
    pub fn new(mem: Option<Mem>) -> Lane {
        let l = Lane {
            mem: OnceLock::new(),
            owned: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            prod: UnsafeCell::new(Prod::default()),
            #[cfg(loom)]
            prod_shadow: loom::cell::UnsafeCell::new(0),
            cons: Mutex::new(Cons::default()),
            sent_total: AtomicU64::new(0),
        };
        if let Some(m) = mem {
            let _ = l.mem.set(Some(m));
        }
        l
    }

    /// The lane's storage, mapping `cap` records on first use; `None` if that failed (the
    /// failure is logged once).
    #[inline]
    pub fn mem(&self, cap: u64) -> Option<&Mem> {
        self.mem
            .get_or_init(|| {
                Mem::heap(cap)
                    .map_err(|e| {
                        log::error!("aclprof: cannot map a lane of {cap} records: {e}");
                    })
                    .ok()
            })
            .as_ref()
    }

    /// The storage, if the lane was ever used.
    pub fn used(&self) -> Option<&Mem> {
        self.mem.get().and_then(Option::as_ref)
    }

    /// Takes the lane for the calling thread; false if another thread has it.
    pub fn try_own(&self) -> bool {
        !self.owned.load(Ordering::Relaxed)
            && self
                .owned
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    pub fn disown(&self) {
        self.owned.store(false, Ordering::Release);
    }

    // The gate: a producer pushes only while its subscription accepts records, and
    // closing waits until no push is under way. The producer stores `busy`, fences
    // (light), and loads the subscription's state; the closer stores the state (closing),
    // fences (heavy), and loads every lane's `busy`. Of two stores each followed by a fence and a load of the
    // other's flag, at least one is seen: either the producer sees the subscription
    // closing and pushes nothing, or the closer sees the producer busy and waits for it.
    // So once the closer has seen every lane idle, nothing more is ever published.

    /// Producer: starts a push; false (and nothing to undo) if `accepting` (one load of
    /// the subscription's state) says it is closing.
    #[inline(always)]
    pub fn enter(&self, accepting: impl FnOnce() -> bool) -> bool {
        self.busy.store(true, Ordering::Relaxed);
        super::barrier::light();
        if accepting() {
            return true;
        }
        self.busy.store(false, Ordering::Release);
        false
    }

    /// Producer: ends a push that [`Lane::enter`] started.
    #[inline]
    pub fn leave(&self) {
        self.busy.store(false, Ordering::Release);
    }

    /// Closer (after marking the subscription closing and [`super::barrier::heavy`]): waits until no
    /// push is under way in this lane, at most until `until`. False if one still is (a
    /// reporting thread stopped inside a push, say by a debugger).
    pub fn wait_idle(&self, until: std::time::Instant) -> bool {
        while self.busy.load(Ordering::Acquire) {
            if std::time::Instant::now() >= until {
                return false;
            }
            crate::sync::pause();
        }
        true
    }

    /// # Safety
    /// The caller owns the lane (see `try_own`) or holds the lock that guards a shared lane,
    /// and holds no other reference from this function.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub unsafe fn prod(&self) -> &mut Prod {
        #[cfg(loom)]
        // SAFETY: a tracked cell of our own; loom checks the access is exclusive.
        self.prod_shadow.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: the caller has the producer side to itself (this function's contract).
        unsafe { &mut *self.prod.get() }
    }

    pub fn cons(&self) -> MutexGuard<'_, Cons> {
        self.cons.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn try_cons(&self) -> Option<MutexGuard<'_, Cons>> {
        match self.cons.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which of the first `pages` pages at `p` are resident.
    fn resident(p: *mut u8, pages: usize) -> Vec<bool> {
        let mut v = vec![0u8; pages];
        // SAFETY: p is a page-aligned mapping of at least `pages` pages; v has one byte each.
        let r = unsafe { libc::mincore(p.cast(), pages * 4096, v.as_mut_ptr()) };
        assert_eq!(r, 0);
        v.iter().map(|b| b & 1 == 1).collect()
    }

    #[test]
    fn the_flusher_faults_in_whole_pages_ahead_of_the_producer_and_stops_at_the_end() {
        if !PREFAULT_WORKS.load(Ordering::Relaxed) {
            return;
        }
        let m = Mem::heap(1024).unwrap();
        let pages = 1024 / SLOTS_PER_PAGE as usize;
        assert!(
            resident(m.slot(0), pages).iter().all(|r| !r),
            "nothing touched yet"
        );
        let (mut done, mut seen) = (0, 0);
        // A producer that wrote little so far: nothing.
        m.ctl().head.store(PREFAULT_AFTER - 1, Ordering::Relaxed);
        m.prefault(&mut done, &mut seen);
        assert_eq!(done, 0);
        // 100 records since the last pass: twice that ahead, from the head's page (the
        // producer wrote the slots behind it), in whole pages.
        m.ctl()
            .head
            .store(PREFAULT_AFTER - 1 + 100, Ordering::Relaxed);
        m.prefault(&mut done, &mut seen);
        if !PREFAULT_WORKS.load(Ordering::Relaxed) {
            return; // a kernel before 5.14
        }
        assert_eq!((done, seen), (368, 163));
        let r = resident(m.slot(0), pages);
        assert!(r[..160 / 8].iter().all(|&x| !x));
        assert!(r[160 / 8..368 / 8].iter().all(|&x| x) && r[368 / 8..].iter().all(|&x| !x));
        // Nothing written since: nothing more.
        m.prefault(&mut done, &mut seen);
        assert_eq!(done, 368);
        // Contents untouched: still zeros.
        // SAFETY: the first slot is inside the mapping.
        assert!(
            // SAFETY: the lane maps `cap` >= 1 records, so slot 0 is RECORD_SIZE readable bytes.
            unsafe { std::slice::from_raw_parts(m.slot(0), RECORD_SIZE) }
                .iter()
                .all(|&b| b == 0)
        );
        // 237 more: 474 ahead of 400, in whole pages.
        m.ctl().head.store(400, Ordering::Relaxed);
        m.prefault(&mut done, &mut seen);
        assert_eq!(done, 880);
        m.ctl().head.store(1000, Ordering::Relaxed);
        m.prefault(&mut done, &mut seen);
        assert_eq!(done, 1024, "never past the lane");
        // Slots behind the head were written by the producer: only those ahead are done.
        let r = resident(m.slot(0), pages);
        assert!(r[1000 / SLOTS_PER_PAGE as usize..].iter().all(|&x| x));
        // A lane whose first lap ended between two passes: done, and nothing faulted in.
        let m = Mem::heap(1024).unwrap();
        let (mut done, mut seen) = (0, 0);
        m.ctl().head.store(1500, Ordering::Relaxed);
        m.prefault(&mut done, &mut seen);
        assert_eq!(done, 1024);
        assert!(resident(m.slot(0), pages).iter().all(|r| !r));
    }
}
