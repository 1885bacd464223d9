//! Shared-memory ring subscriptions (issue 5): op records in a memfd or `/dev/shm` file that
//! a reader in this or another process decodes in place with the standard accessors.
//!
//! ```text
//! offset   0  magic "ACLPRNG1", u32 version, u32 record size, u64 capacity (records)
//!         32  u32 producer pid, u32 flags (bit 0: producer closed)
//!         64  u64 head: records published (producer writes, Release)
//!        128  u64 tail: records consumed (reader writes, Release)
//!        192  u32 reader pid (0: none attached), u32 reader detached flag
//!        256  u64 records dropped by the producer (drop policy, dead reader)
//!       4096  capacity x 512-byte records; record i lives in slot i % capacity
//! ```
//!
//! Indices only grow; `head - tail` records are readable. One producer (the subscription's
//! writer thread: reporting threads stage records exactly as for a pipe) and one reader.
//! The reader acquires a contiguous batch (up to the end of the ring: a batch never wraps,
//! so the accessors decode it in place) and releases it when done. A full ring waits
//! (lossless) or drops (`ACLPROF_ON_FULL=drop`); a reader that detached or died no longer
//! holds the producer back, and a reader can tell a producer that closed or died.

use crate::error::*;
use crate::record::RECORD_SIZE;
use memmap2::MmapRaw;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const MAGIC: &[u8; 8] = b"ACLPRNG1";
pub const VERSION: u32 = 1;
pub const HEADER: usize = 4096;
const OFF_CAPACITY: usize = 16;
const OFF_PRODUCER_PID: usize = 32;
const OFF_FLAGS: usize = 36;
const OFF_HEAD: usize = 64;
const OFF_TAIL: usize = 128;
const OFF_READER_PID: usize = 192;
const OFF_READER_GONE: usize = 196;
const OFF_DROPPED: usize = 256;
const FLAG_CLOSED: u32 = 1;
/// Smallest and largest ring, in records.
pub const MIN_CAPACITY: u64 = 8;
pub const MAX_CAPACITY: u64 = 1 << 22;

/// A mapped ring (either side).
pub struct Ring {
    map: MmapRaw,
    _file: File,
    capacity: u64,
}

// SAFETY: all shared state in the mapping is accessed through atomics or through slots the
// head/tail protocol gives to exactly one side at a time.
unsafe impl Send for Ring {}
unsafe impl Sync for Ring {}

/// True if process `pid` exists and is not a zombie (dead, not yet reaped).
fn pid_alive(pid: u32) -> bool {
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

impl Ring {
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: off is a 4-aligned offset inside the header page of a live mapping.
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU32) }
    }
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: off is an 8-aligned offset inside the header page of a live mapping.
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU64) }
    }

    /// Creates a ring of `capacity` records in a new memfd (`path` None) or a new file.
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
                let fd = unsafe { libc::memfd_create(c"aclprof-ring".as_ptr(), 0) };
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
        let len = HEADER as u64 + capacity * RECORD_SIZE as u64;
        file.set_len(len).or_else(|e| {
            err(
                ACL_ERROR_PROFILING_FAILURE,
                format!("cannot size the ring: {e}"),
            )
        })?;
        let map = MmapRaw::map_raw(&file).or_else(|e| {
            err(
                ACL_ERROR_PROFILING_FAILURE,
                format!("cannot map the ring: {e}"),
            )
        })?;
        let r = Ring {
            map,
            _file: file,
            capacity,
        };
        // SAFETY: the header page is ours alone until the ring is published.
        unsafe {
            let p = r.map.as_mut_ptr();
            std::ptr::copy_nonoverlapping(MAGIC.as_ptr(), p, 8);
            std::ptr::write(p.add(8) as *mut u32, VERSION);
            std::ptr::write(p.add(12) as *mut u32, RECORD_SIZE as u32);
            std::ptr::write(p.add(OFF_CAPACITY) as *mut u64, capacity);
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
                let d = unsafe { libc::dup(fd) };
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
        let (magic, rs, cap) = unsafe {
            let p = map.as_mut_ptr();
            (
                std::slice::from_raw_parts(p, 8).to_vec(),
                std::ptr::read(p.add(12) as *const u32),
                std::ptr::read(p.add(OFF_CAPACITY) as *const u64),
            )
        };
        if magic != MAGIC
            || rs as usize != RECORD_SIZE
            || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&cap)
            || len < HEADER as u64 + cap * RECORD_SIZE as u64
        {
            return err(ACL_ERROR_INVALID_FILE, "not an aclprof ring (bad header)");
        }
        Ok(Ring {
            map,
            _file: file,
            capacity: cap,
        })
    }

    pub fn fd(&self) -> i32 {
        self._file.as_raw_fd()
    }
    fn slot(&self, index: u64) -> *mut u8 {
        // SAFETY: the slot offset is inside the mapping.
        unsafe {
            self.map
                .as_mut_ptr()
                .add(HEADER + (index % self.capacity) as usize * RECORD_SIZE)
        }
    }
    pub fn dropped(&self) -> u64 {
        self.u64_at(OFF_DROPPED).load(Ordering::Relaxed)
    }

    // ---- producer side ----

    /// True when no reader can consume any more: one attached and then detached or died.
    fn reader_gone(&self) -> bool {
        if self.u32_at(OFF_READER_GONE).load(Ordering::Acquire) != 0 {
            return true;
        }
        let pid = self.u32_at(OFF_READER_PID).load(Ordering::Acquire);
        pid != 0 && !pid_alive(pid)
    }

    /// Copies whole signed records into the ring. When it is full: waits for the reader
    /// (`block`, until `give_up()` says so: it is asked again while waiting) or drops.
    /// Returns (written, dropped).
    pub fn produce(&self, recs: &[u8], block: bool, give_up: impl Fn() -> bool) -> (u64, u64) {
        let head = self.u64_at(OFF_HEAD);
        let tail = self.u64_at(OFF_TAIL);
        let mut h = head.load(Ordering::Relaxed);
        let (mut written, mut dropped) = (0, 0);
        let mut cached_tail = tail.load(Ordering::Acquire);
        for rec in recs.chunks_exact(RECORD_SIZE) {
            while h - cached_tail >= self.capacity {
                head.store(h, Ordering::Release); // let the reader see what we have
                cached_tail = tail.load(Ordering::Acquire);
                if h - cached_tail < self.capacity {
                    break;
                }
                if !block || self.reader_gone() || give_up() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            if h - cached_tail >= self.capacity {
                dropped += 1;
                continue;
            }
            // SAFETY: slot h is free (h - tail < capacity) and only the producer writes it.
            unsafe { std::ptr::copy_nonoverlapping(rec.as_ptr(), self.slot(h), RECORD_SIZE) };
            h += 1;
            written += 1;
        }
        head.store(h, Ordering::Release);
        if dropped > 0 {
            self.u64_at(OFF_DROPPED)
                .fetch_add(dropped, Ordering::Relaxed);
        }
        (written, dropped)
    }

    /// Marks the stream finished: the reader sees end of stream once it has read everything.
    pub fn close_producer(&self) {
        self.u32_at(OFF_FLAGS)
            .fetch_or(FLAG_CLOSED, Ordering::Release);
    }

    // ---- reader side ----

    pub fn attach_reader(&self) {
        self.u32_at(OFF_READER_GONE).store(0, Ordering::Release);
        self.u32_at(OFF_READER_PID)
            .store(std::process::id(), Ordering::Release);
    }

    pub fn detach_reader(&self) {
        self.u32_at(OFF_READER_GONE).store(1, Ordering::Release);
    }

    /// Waits up to `timeout` for records; returns the byte range (offset from the data
    /// start, length) of a contiguous batch of at most `max` records, `Ok(None)` on
    /// timeout, or an error once the producer closed (or died) and everything was read.
    pub fn acquire(&self, max: u64, timeout: Duration) -> Result<Option<(*const u8, usize)>> {
        let deadline = Instant::now() + timeout;
        let t = self.u64_at(OFF_TAIL).load(Ordering::Relaxed);
        loop {
            let h = self.u64_at(OFF_HEAD).load(Ordering::Acquire);
            if h > t {
                let until_end = self.capacity - t % self.capacity;
                let n = (h - t).min(until_end).min(max.max(1));
                return Ok(Some((self.slot(t) as *const u8, n as usize * RECORD_SIZE)));
            }
            let closed = self.u32_at(OFF_FLAGS).load(Ordering::Acquire) & FLAG_CLOSED != 0;
            if closed || !pid_alive(self.u32_at(OFF_PRODUCER_PID).load(Ordering::Acquire)) {
                // Re-check: records published just before closing.
                if self.u64_at(OFF_HEAD).load(Ordering::Acquire) > t {
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
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Gives `bytes` (whole records, from the last acquire) back to the producer.
    pub fn release(&self, bytes: usize) -> Result<()> {
        if bytes % RECORD_SIZE != 0 {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("release {bytes} bytes: not whole records"),
            );
        }
        let tail = self.u64_at(OFF_TAIL);
        let t = tail.load(Ordering::Relaxed);
        let h = self.u64_at(OFF_HEAD).load(Ordering::Acquire);
        let n = (bytes / RECORD_SIZE) as u64;
        if n > h - t {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("release of {n} records, but only {} were acquired", h - t),
            );
        }
        tail.store(t + n, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;

    fn signed(rec: &[u8]) -> bool {
        record::get_u32(rec, 0) == record::signature_of(rec)
    }

    fn rec(i: u64) -> Vec<u8> {
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
        record::sign(&mut r);
        r.to_vec()
    }

    #[test]
    fn produce_acquire_release_wraps_without_copies() {
        let w = Ring::create(None, 8).unwrap();
        let r = Ring::open(None, Some(w.fd())).unwrap();
        r.attach_reader();
        let mut next = 1u64;
        for round in 0..5 {
            let batch: Vec<u8> = (0..6).flat_map(|k| rec(round * 6 + k + 1)).collect();
            assert_eq!(w.produce(&batch, false, || false), (6, 0));
            let mut got = 0;
            while got < 6 {
                let (p, len) = r.acquire(100, Duration::from_millis(10)).unwrap().unwrap();
                let s = unsafe { std::slice::from_raw_parts(p, len) };
                for one in s.chunks_exact(RECORD_SIZE) {
                    assert!(signed(one));
                    assert_eq!(record::View(one).op_index(), next);
                    next += 1;
                }
                got += len / RECORD_SIZE;
                r.release(len).unwrap();
            }
        }
        assert!(
            r.acquire(1, Duration::from_millis(1)).unwrap().is_none(),
            "timeout: nothing there"
        );
        w.close_producer();
        assert_eq!(
            r.acquire(1, Duration::from_millis(1)).unwrap_err().code,
            ACL_ERROR_PROF_NOT_RUN
        );
    }

    #[test]
    fn zombies_are_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(200)); // exited, not reaped: a zombie
        assert!(
            !pid_alive(pid),
            "{:?}",
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
        );
        child.wait().unwrap();
        assert!(pid_alive(std::process::id()));
    }

    #[test]
    fn full_ring_drops_or_gives_up_on_a_gone_reader() {
        let w = Ring::create(None, 8).unwrap();
        let batch: Vec<u8> = (0..12).flat_map(rec).collect();
        assert_eq!(w.produce(&batch, false, || false), (8, 4), "drop policy");
        assert_eq!(w.dropped(), 4);
        let r = Ring::open(None, Some(w.fd())).unwrap();
        r.attach_reader();
        r.detach_reader();
        let t = Instant::now();
        assert_eq!(
            w.produce(&batch, true, || false),
            (0, 12),
            "a detached reader does not block"
        );
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(r.release(3).is_err());
        assert!(Ring::create(None, 4).is_err());
        assert!(Ring::open(Some(Path::new("/proc/self/status")), None).is_err());
    }
}
