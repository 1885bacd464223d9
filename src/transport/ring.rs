//! Shared-memory ring subscriptions: op records in a memfd or `/dev/shm` file, written in
//! place by the reporting threads and decoded in place by a reader in this or another
//! process with the standard accessors.
//!
//! ```text
//! offset   0  magic "ACLPRNG2", u32 version, u32 record size, u64 lane capacity (records)
//!         24  u32 lanes
//!         32  u32 producer pid, u32 flags (bit 0: producer closed)
//!         64  u32 doorbell (futex word), u32 readers waiting
//!        128  u32 reader pid, u32 reader state (0 none yet, 1 attached, 2 detached)
//!       4096  lanes x 192-byte lane control blocks: head @0, tail @64, dropped @128
//!             (records the lane's producer could not place: drop policy, reader gone)
//!   data_off  lanes x capacity x 512-byte records; lane l's record i is slot i % capacity
//! ```
//!
//! Each reporting thread owns one lane (lane 0 is shared, under a lock, by threads beyond
//! the others), so producers never contend: a record is built in its slot and published
//! with one release store, unsigned; the reader signs the records it acquires. Indices
//! only grow; `head - tail` records of a lane are readable.
//! One reader at a time: it acquires a contiguous batch of one lane (never wrapping, so the
//! accessors decode it in place) and releases it when done. A waiting reader sleeps on the
//! doorbell (a futex in the mapping); a producer rings it only when a reader waits. A full
//! lane waits (lossless) or drops (`ACLPROF_ON_FULL=drop`); a reader that detached or died
//! no longer holds producers back, and a reader can tell a producer that closed or died.
//! The pages of lanes nobody uses are never touched, so they cost no memory.

use super::lane::{LaneCtl, Mem, LANE_CTL_SIZE};
use crate::error::*;
use crate::formats::record::{self, RECORD_SIZE};
use memmap2::MmapRaw;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const MAGIC: &[u8; 8] = b"ACLPRNG2";
/// 3: records are signed by the reader when it acquires them, not by the producer.
pub const VERSION: u32 = 3;
pub const HEADER: usize = 4096;
const OFF_CAPACITY: usize = 16;
const OFF_LANES: usize = 24;
const OFF_PRODUCER_PID: usize = 32;
const OFF_FLAGS: usize = 36;
const OFF_DOORBELL: usize = 64;
const OFF_WAITERS: usize = 68;
const OFF_READER_PID: usize = 128;
const OFF_READER_STATE: usize = 132;
const FLAG_CLOSED: u32 = 1;
const READER_ATTACHED: u32 = 1;
const READER_DETACHED: u32 = 2;
/// Smallest and largest lane, in records.
pub const MIN_CAPACITY: u64 = 8;
pub const MAX_CAPACITY: u64 = 1 << 22;
/// Lanes per ring: one shared, the others owned by one reporting thread each.
pub const LANES: u32 = 8;
const MAX_LANES: u32 = 256;
/// Longest sleep of a waiting reader before it looks again (a safety net: producers ring
/// the doorbell when they see a waiter).
const WAIT_SLICE: Duration = Duration::from_millis(10);
/// Looks at the lanes this many times (yielding now and then) before sleeping.
const SPINS: u32 = 128;

fn data_offset(lanes: u32) -> usize {
    (HEADER + lanes as usize * LANE_CTL_SIZE).div_ceil(4096) * 4096
}

fn file_len(lanes: u32, cap: u64) -> u64 {
    data_offset(lanes) as u64 + lanes as u64 * cap * RECORD_SIZE as u64
}

/// A mapped ring (either side).
pub struct Ring {
    map: MmapRaw,
    file: File,
    capacity: u64,
    lanes: u32,
}

// SAFETY: all shared state in the mapping is accessed through atomics or through slots the
// head/tail protocol gives to exactly one side at a time.
unsafe impl Send for Ring {}
// SAFETY: as for `Send`.
unsafe impl Sync for Ring {}

/// True if process `pid` exists and is not a zombie (dead, not yet reaped): the one rule for
/// "is that process alive", for a ring's other side as for the watcher's viewer.
pub(crate) fn pid_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    let exists = pid != 0
        && (unsafe { libc::kill(pid as i32, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
    if !exists {
        return false;
    }
    // /proc/<pid>/stat is "pid (comm) S ...": the state follows the last ')'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .map(str::trim_start)
                .and_then(|r| r.chars().next());
            !matches!(state, Some('Z') | Some('X'))
        }
        Err(_) => true,
    }
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a futex call on a live, aligned u32 (shared between processes: no PRIVATE flag).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            tsp,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

impl Ring {
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: off is a 4-aligned offset inside the header page of a live mapping.
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU32) }
    }
    fn ctl(&self, lane: u32) -> &LaneCtl {
        // SAFETY: lane < lanes; control blocks are 64-aligned inside the mapping.
        unsafe {
            &*(self
                .map
                .as_mut_ptr()
                .add(HEADER + lane as usize * LANE_CTL_SIZE) as *const LaneCtl)
        }
    }
    fn slots(&self, lane: u32) -> *mut u8 {
        // SAFETY: the lane's slots are inside the mapping.
        unsafe {
            self.map
                .as_mut_ptr()
                .add(data_offset(self.lanes) + lane as usize * self.capacity as usize * RECORD_SIZE)
        }
    }

    /// Creates a ring of `capacity` records per lane in a new memfd (`path` None, sealed
    /// against resizing) or a new file.
    pub fn create(path: Option<&Path>, capacity: u64) -> Result<Ring> {
        if !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "ring capacity {capacity} is outside {MIN_CAPACITY}..={MAX_CAPACITY} records"
                ),
            );
        }
        let file = match path {
            Some(p) => std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(p)
                .or_else(|e| {
                    err(
                        ACL_ERROR_INVALID_FILE,
                        format!("cannot create the ring file {}: {e}", p.display()),
                    )
                })?,
            None => {
                // SAFETY: memfd_create with a valid NUL-terminated name.
                let fd = unsafe {
                    libc::memfd_create(
                        c"aclprof-ring".as_ptr(),
                        libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
                    )
                };
                if fd < 0 {
                    return err(
                        ACL_ERROR_PROFILING_FAILURE,
                        format!("memfd_create failed: {}", std::io::Error::last_os_error()),
                    );
                }
                // SAFETY: fd was just created and is owned by nobody else.
                unsafe { File::from_raw_fd(fd) }
            }
        };
        let lanes = LANES;
        file.set_len(file_len(lanes, capacity)).or_else(|e| {
            err(
                ACL_ERROR_PROFILING_FAILURE,
                format!("cannot size the ring: {e}"),
            )
        })?;
        if path.is_none() {
            // Nobody can shrink the ring under a reader (SIGBUS) or grow it.
            // SAFETY: fcntl on our own fd.
            unsafe {
                libc::fcntl(
                    file.as_raw_fd(),
                    libc::F_ADD_SEALS,
                    libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
                )
            };
        }
        let map = MmapRaw::map_raw(&file).or_else(|e| {
            err(
                ACL_ERROR_PROFILING_FAILURE,
                format!("cannot map the ring: {e}"),
            )
        })?;
        let r = Ring {
            map,
            file,
            capacity,
            lanes,
        };
        // SAFETY: the header page is ours alone until the ring is published.
        unsafe {
            let p = r.map.as_mut_ptr();
            std::ptr::copy_nonoverlapping(MAGIC.as_ptr(), p, 8);
            std::ptr::write(p.add(8) as *mut u32, VERSION);
            std::ptr::write(p.add(12) as *mut u32, RECORD_SIZE as u32);
            std::ptr::write(p.add(OFF_CAPACITY) as *mut u64, capacity);
            std::ptr::write(p.add(OFF_LANES) as *mut u32, lanes);
        }
        r.u32_at(OFF_PRODUCER_PID)
            .store(std::process::id(), Ordering::Release);
        Ok(r)
    }

    /// Maps an existing ring (a reader), by path or by fd (the fd is duplicated).
    pub fn open(path: Option<&Path>, fd: Option<i32>) -> Result<Ring> {
        let file = match (fd, path) {
            (Some(fd), _) => {
                // SAFETY: dup of a caller-provided fd; failure is checked.
                let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
                if d < 0 {
                    return err(
                        ACL_ERROR_INVALID_PARAM,
                        format!("fd {fd} is not open: {}", std::io::Error::last_os_error()),
                    );
                }
                // SAFETY: d is a fresh fd we own.
                unsafe { File::from_raw_fd(d) }
            }
            (None, Some(p)) => std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .or_else(|e| {
                    err(
                        ACL_ERROR_INVALID_FILE,
                        format!("cannot open the ring {}: {e}", p.display()),
                    )
                })?,
            (None, None) => return err(ACL_ERROR_INVALID_PARAM, "give the ring's path or fd"),
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < HEADER as u64 {
            return err(ACL_ERROR_INVALID_FILE, "not an aclprof ring: too short");
        }
        let map = MmapRaw::map_raw(&file)
            .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("cannot map the ring: {e}")))?;
        // SAFETY: the mapping is at least one header long.
        let (magic, version, rs, cap, lanes) = unsafe {
            let p = map.as_mut_ptr();
            (
                std::slice::from_raw_parts(p, 8).to_vec(),
                std::ptr::read(p.add(8) as *const u32),
                std::ptr::read(p.add(12) as *const u32),
                std::ptr::read(p.add(OFF_CAPACITY) as *const u64),
                std::ptr::read(p.add(OFF_LANES) as *const u32),
            )
        };
        if magic != MAGIC
            || version != VERSION
            || rs as usize != RECORD_SIZE
            || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&cap)
            || !(1..=MAX_LANES).contains(&lanes)
            || len < file_len(lanes, cap)
        {
            return err(
                ACL_ERROR_INVALID_FILE,
                format!("not an aclprof ring of version {VERSION} (bad header)"),
            );
        }
        Ok(Ring {
            map,
            file,
            capacity: cap,
            lanes,
        })
    }

    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// Records dropped by producers, all lanes.
    pub fn dropped(&self) -> u64 {
        (0..self.lanes)
            .map(|l| self.ctl(l).dropped.load(Ordering::Relaxed))
            .sum()
    }

    // ---- producer side ----

    pub fn lane_count(&self) -> u32 {
        self.lanes
    }

    /// Lane `l`'s storage, for a producer.
    pub fn lane_mem(&self, l: u32) -> Mem {
        // SAFETY: the subscription keeps this ring (and so the mapping) alive as long as
        // its lanes.
        unsafe { Mem::shared(self.ctl(l), self.slots(l), self.capacity) }
    }

    /// True when no reader can consume any more: one attached and then detached or died.
    pub fn reader_gone(&self) -> bool {
        match self.u32_at(OFF_READER_STATE).load(Ordering::Acquire) {
            READER_DETACHED => true,
            READER_ATTACHED => !pid_alive(self.u32_at(OFF_READER_PID).load(Ordering::Acquire)),
            _ => false,
        }
    }

    /// Wakes a reader sleeping in `acquire`, if there is one. Called after every publish:
    /// one load of a line that changes only when a reader goes to sleep. The first producer
    /// to see the waiter takes the flag, so a sleep costs one wake-up, not one per record.
    #[inline]
    pub fn notify(&self) {
        let w = self.u32_at(OFF_WAITERS);
        if w.load(Ordering::Relaxed) != 0 && w.swap(0, Ordering::AcqRel) != 0 {
            self.ring_doorbell();
        }
    }

    #[cold]
    fn ring_doorbell(&self) {
        let d = self.u32_at(OFF_DOORBELL);
        d.fetch_add(1, Ordering::Release);
        futex(d, libc::FUTEX_WAKE, u32::MAX, None);
    }

    /// Marks the stream finished: the reader sees end of stream once it has read everything.
    pub fn close_producer(&self) {
        self.u32_at(OFF_FLAGS)
            .fetch_or(FLAG_CLOSED, Ordering::Release);
        self.ring_doorbell();
    }

    // ---- reader side ----

    /// Makes this handle the ring's one reader. A second reader while the first is attached
    /// and alive is refused: two readers would each see part of the stream.
    pub fn attach_reader(&self) -> Result<()> {
        let state = self.u32_at(OFF_READER_STATE);
        let pid = self.u32_at(OFF_READER_PID);
        let s = state.load(Ordering::Acquire);
        if s == READER_ATTACHED && pid_alive(pid.load(Ordering::Acquire)) {
            return err(
                ACL_ERROR_PROF_ALREADY_RUN,
                format!(
                    "the ring already has a reader (pid {}); a ring has one reader at a time: \
                     detach it first (aclprofExtRingDetach)",
                    pid.load(Ordering::Acquire)
                ),
            );
        }
        if state
            .compare_exchange(s, READER_ATTACHED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return err(
                ACL_ERROR_PROF_ALREADY_RUN,
                "another reader attached to the ring at the same moment",
            );
        }
        pid.store(std::process::id(), Ordering::Release);
        Ok(())
    }

    pub fn detach_reader(&self) {
        self.u32_at(OFF_READER_STATE)
            .store(READER_DETACHED, Ordering::Release);
    }

    /// The next lane (from `start`, round robin) with records: (lane, tail, available).
    fn ready_lane(&self, start: u32) -> Option<(u32, u64, u64)> {
        for k in 0..self.lanes {
            let l = (start + k) % self.lanes;
            let c = self.ctl(l);
            let t = c.tail.load(Ordering::Relaxed);
            let h = c.head.load(Ordering::Acquire);
            if h > t {
                return Some((l, t, h - t));
            }
        }
        None
    }

    /// Waits up to `timeout` for records; returns a contiguous batch of at most `max`
    /// records of one lane (pointer, bytes, lane), `Ok(None)` on timeout, or an error once
    /// the producer closed (or died) and everything was read. `start` is the lane to look
    /// at first (readers go round robin so no lane starves).
    pub fn acquire(
        &self,
        start: u32,
        max: u64,
        timeout: Duration,
    ) -> Result<Option<(*const u8, usize, u32)>> {
        let mut deadline = None;
        let mut spins = 0u32;
        loop {
            if let Some((l, t, avail)) = self.ready_lane(start) {
                let until_end = self.capacity - t % self.capacity;
                let n = avail.min(until_end).min(max.max(1));
                // SAFETY: slot t % capacity of lane l is inside the mapping.
                let p = unsafe {
                    self.slots(l)
                        .add((t % self.capacity) as usize * RECORD_SIZE)
                };
                // Producers leave a ring's records unsigned; the reader signs what it is
                // given (docs/design.md, "The signature").
                for k in 0..n as usize {
                    // SAFETY: the n slots from p are published (below head) and belong to
                    // this reader until it releases them: the producer does not touch them.
                    let rec = unsafe { &mut *(p.add(k * RECORD_SIZE) as *mut record::Record) };
                    record::sign_fresh(rec);
                }
                return Ok(Some((p as *const u8, n as usize * RECORD_SIZE, l)));
            }
            let closed = self.u32_at(OFF_FLAGS).load(Ordering::Acquire) & FLAG_CLOSED != 0;
            if closed || !pid_alive(self.u32_at(OFF_PRODUCER_PID).load(Ordering::Acquire)) {
                // Re-check: records published just before closing.
                if self.ready_lane(0).is_some() {
                    continue;
                }
                let why = if closed {
                    "the subscription ended"
                } else {
                    "the producing process died"
                };
                return err(
                    ACL_ERROR_PROF_NOT_RUN,
                    format!("end of the ring: {why} and every record was read"),
                );
            }
            let now = Instant::now();
            let deadline = *deadline.get_or_insert(now + timeout);
            if now >= deadline {
                return Ok(None);
            }
            // A producer at full speed publishes again within microseconds: look a few
            // more times before paying for a sleep and a wake-up.
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
                if spins % 16 == 0 {
                    std::thread::yield_now();
                }
                continue;
            }
            // Sleep on the doorbell: announce the wait, look once more, then sleep.
            let waiters = self.u32_at(OFF_WAITERS);
            let bell = self.u32_at(OFF_DOORBELL);
            let seen = bell.load(Ordering::Acquire);
            waiters.store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if self.ready_lane(0).is_none() {
                futex(
                    bell,
                    libc::FUTEX_WAIT,
                    seen,
                    Some((deadline - now).min(WAIT_SLICE)),
                );
            }
        }
    }

    /// Gives `bytes` (whole records from the last batch acquired from `lane`) back to the
    /// producers.
    pub fn release(&self, lane: u32, bytes: usize) -> Result<()> {
        if bytes % RECORD_SIZE != 0 || lane >= self.lanes {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("release {bytes} bytes: not whole records"),
            );
        }
        let c = self.ctl(lane);
        let t = c.tail.load(Ordering::Relaxed);
        let h = c.head.load(Ordering::Acquire);
        let n = (bytes / RECORD_SIZE) as u64;
        if n > h - t {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("release of {n} records, but only {} were acquired", h - t),
            );
        }
        c.tail.store(t + n, Ordering::Release);
        Ok(())
    }
}

/// A reader's handle: the ring and which lane its current batch came from.
pub struct Reader {
    pub ring: Ring,
    cur: std::sync::Mutex<(u32, usize)>,
    detached: std::sync::atomic::AtomicBool,
    /// Bumped by every release and the detach: what an acquiring thread holds
    /// ([`crate::accessor::hold`]) is held until this moves on.
    releases: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Reader {
    pub fn attach(ring: Ring) -> Result<Reader> {
        ring.attach_reader()?;
        Ok(Reader {
            ring,
            cur: std::sync::Mutex::new((0, 0)),
            detached: std::sync::atomic::AtomicBool::new(false),
            releases: Default::default(),
        })
    }

    pub fn acquire(&self, max: u64, timeout: Duration) -> Result<Option<(*const u8, usize)>> {
        let mut cur = self.cur.lock().unwrap_or_else(|p| p.into_inner());
        let got = self.ring.acquire(cur.0, max, timeout)?;
        Ok(got.map(|(p, len, lane)| {
            // Next time, start after this lane unless it is left with more to read.
            *cur = (lane, len);
            // SAFETY: the acquired records, in the mapping, which outlives this reader.
            let batch = unsafe { std::slice::from_raw_parts(p, len) };
            crate::accessor::hold(batch, self.releases.clone());
            (p, len)
        }))
    }

    pub fn release(&self, bytes: usize) -> Result<()> {
        let mut cur = self.cur.lock().unwrap_or_else(|p| p.into_inner());
        if bytes > cur.1 {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "release of {bytes} bytes, but the last batch acquired holds {}",
                    cur.1
                ),
            );
        }
        // Before the slots go back to the producer: from here no thread's hold covers them.
        self.releases.fetch_add(1, Ordering::AcqRel);
        self.ring.release(cur.0, bytes)?;
        cur.1 -= bytes;
        if cur.1 == 0 {
            cur.0 = (cur.0 + 1) % self.ring.lanes;
        }
        Ok(())
    }

    pub fn detach(&self) {
        self.releases.fetch_add(1, Ordering::AcqRel);
        self.detached.store(true, Ordering::Release);
        self.ring.detach_reader();
    }

    pub fn is_detached(&self) -> bool {
        self.detached.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u64) -> [u8; RECORD_SIZE] {
        let mut r = [0u8; RECORD_SIZE];
        record::encode(
            &mut r,
            &record::OpFields {
                op_index: i,
                start: i,
                end: i + 1,
                ..Default::default()
            },
            b"op",
            b"T",
        );
        // Unsigned, as a producer leaves it: the reader signs it when it acquires it.
        r
    }

    /// Publishes `recs` into lane `l` as a producer would.
    fn produce(w: &Ring, l: u32, from: u64, n: u64) {
        let m = w.lane_mem(l);
        for i in from..from + n {
            let h = m.ctl().head.load(Ordering::Relaxed);
            let r = rec(i);
            // SAFETY: slot `h % cap` is a record inside the mapping, which `r` does not overlap.
            unsafe { std::ptr::copy_nonoverlapping(r.as_ptr(), m.slot(h % m.cap), RECORD_SIZE) };
            m.ctl().head.store(h + 1, Ordering::Release);
        }
        w.notify();
    }

    #[test]
    fn a_ring_of_another_version_is_refused() {
        let w = Ring::create(None, 8).unwrap();
        assert!(Ring::open(None, Some(w.fd())).is_ok());
        // A reader of version 2 would hand out this version's records unsigned.
        w.u32_at(8).store(VERSION - 1, Ordering::Relaxed);
        let e = Ring::open(None, Some(w.fd())).err().unwrap();
        assert_eq!(e.code, ACL_ERROR_INVALID_FILE);
        assert!(e.msg.contains("version"), "{}", e.msg);
    }

    #[test]
    fn acquire_release_wraps_without_copies_and_visits_every_lane() {
        let w = Ring::create(None, 8).unwrap();
        let r = Reader::attach(Ring::open(None, Some(w.fd())).unwrap()).unwrap();
        let mut next = [1u64, 1001];
        for round in 0..5 {
            produce(&w, 1, 1 + round * 6, 6);
            produce(&w, 3, 1001 + round * 6, 6);
            let mut got = 0;
            while got < 12 {
                let (p, len) = r.acquire(100, Duration::from_millis(10)).unwrap().unwrap();
                // SAFETY: `acquire` gives a span of `len` readable bytes inside the mapping.
                let s = unsafe { std::slice::from_raw_parts(p, len) };
                for one in s.chunks_exact(RECORD_SIZE) {
                    assert_eq!(record::get_u32(one, 0), record::signature_of(one));
                    let i = record::View(one.try_into().unwrap()).op_index();
                    let k = usize::from(i > 1000);
                    assert_eq!(i, next[k]);
                    next[k] += 1;
                }
                got += len / RECORD_SIZE;
                r.release(len).unwrap();
            }
        }
        assert!(r.acquire(1, Duration::from_millis(1)).unwrap().is_none());
        w.close_producer();
        assert_eq!(
            r.acquire(1, Duration::from_millis(1)).unwrap_err().code,
            ACL_ERROR_PROF_NOT_RUN
        );
    }

    /// The acquiring thread does not hash a batch again until it releases it; other
    /// threads, and the same thread after the release, verify every record.
    #[test]
    fn an_acquired_batch_is_hashed_once_by_its_reader() {
        let w = Ring::create(None, 8).unwrap();
        let r = Reader::attach(Ring::open(None, Some(w.fd())).unwrap()).unwrap();
        produce(&w, 1, 1, 4);
        let (p, len) = r.acquire(100, Duration::from_millis(10)).unwrap().unwrap();
        // SAFETY: `acquire` gives a span of `len` readable bytes inside the mapping.
        let s = unsafe { std::slice::from_raw_parts(p, len) };
        assert_eq!(crate::accessor::op_num(s).unwrap(), 4);
        // A byte of record 2 changed after the acquire signed it (as only a producer
        // breaking the protocol could): this thread, which signed it, does not look again.
        // SAFETY: the span holds the four records just produced, in the writable mapping.
        unsafe { *(p as *mut u8).add(2 * RECORD_SIZE + 300) = 1 };
        assert_eq!(crate::accessor::op_num(s).unwrap(), 4);
        assert!(crate::accessor::record(s, 2).is_ok());
        // Another thread holds nothing: it verifies, and finds the record changed.
        let (pa, la) = (p as usize, len);
        let elsewhere = std::thread::spawn(move || {
            // SAFETY: `acquire` gives a span of `la` readable bytes inside the mapping.
            let s = unsafe { std::slice::from_raw_parts(pa as *const u8, la) };
            crate::accessor::op_num(s).unwrap_err().msg
        });
        assert!(elsewhere.join().unwrap().contains("record 2"));
        // Released, the slots are the producer's again: this thread verifies too.
        r.release(len).unwrap();
        let e = crate::accessor::op_num(s).unwrap_err();
        assert!(e.msg.contains("record 2"), "{}", e.msg);
    }

    #[test]
    fn one_reader_at_a_time_and_a_waiting_reader_is_woken() {
        let w = Ring::create(None, 8).unwrap();
        let a = Reader::attach(Ring::open(None, Some(w.fd())).unwrap()).unwrap();
        let second = Reader::attach(Ring::open(None, Some(w.fd())).unwrap());
        assert_eq!(second.err().unwrap().code, ACL_ERROR_PROF_ALREADY_RUN);
        a.detach();
        assert!(w.reader_gone());
        let b = Reader::attach(Ring::open(None, Some(w.fd())).unwrap()).unwrap();
        assert!(!w.reader_gone());
        let h = std::thread::spawn(move || {
            let got = b.acquire(8, Duration::from_secs(30)).unwrap();
            got.map(|g| g.1)
        });
        std::thread::sleep(Duration::from_millis(100));
        produce(&w, 2, 1, 1);
        // The waiting reader gets the record. (It also looks again every few milliseconds,
        // so this checks delivery, not how fast the doorbell rang: that is the machine's.)
        assert_eq!(h.join().unwrap(), Some(RECORD_SIZE));
    }

    #[test]
    fn sealed_and_checked() {
        let w = Ring::create(None, 8).unwrap();
        assert!(w.file.set_len(4096).is_err(), "a memfd ring cannot shrink");
        assert!(Ring::create(None, 4).is_err());
        assert!(Ring::open(Some(Path::new("/proc/self/status")), None).is_err());
    }
}
