//! Delivery of op records to a subscriber's pipe (contract items 5-7).
//!
//! ```text
//!  reporting threads ──push──▶ [shard 0][shard 1][shard 2][shard 3]   (one Sub per model)
//!   (no syscall)                      │ swap whole buffer (O(1) under the shard lock)
//!                                     ▼
//!                        writer thread "aclprof-pipe-<model>"
//!                         sign records, write() <= PIPE_BUF bytes of whole records
//! ```
//!
//! * Each reporting thread always uses the same shard, so its records stay in order and
//!   threads rarely share a lock. A shard holds at most `capacity / SHARDS` records; when it
//!   is full the reporter waits (`OnFull::Block`, lossless) or drops and counts
//!   (`OnFull::Drop`).
//! * The writer signs records (the CRC stays off the reporting thread), writes them in
//!   chunks of at most [`WRITE_CHUNK`] bytes, each a whole number of records, so a reader
//!   that reads multiples of the record size never sees a torn record. `EAGAIN` waits in
//!   `poll()` and retries; `EPIPE` marks the subscription broken (SIGPIPE is blocked on the
//!   writer thread, so it never kills the process) and its records are counted as dropped.
//! * Pipes and sockets are switched to `O_NONBLOCK`, so the writer never sleeps in `write()`
//!   and a bounded unsubscribe can give up on a reader that never drains.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM, ACL_ERROR_PROFILING_FAILURE};
use crate::record::{self, OpFields, RECORD_SIZE};
use crate::settings::OnFull;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::raw::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// Staging shards per subscription.
pub const SHARDS: usize = 4;
/// Largest `write()`: PIPE_BUF, so writes to a pipe are atomic; 8 records.
pub const WRITE_CHUNK: usize = 4096;
const _: () = assert!(WRITE_CHUNK % RECORD_SIZE == 0);
/// How long an idle writer sleeps before looking at its shards again (the time-based flush).
const IDLE_POLL: Duration = Duration::from_millis(2);
/// How long a blocked writer waits in one `poll()` before re-checking its deadline.
const POLL_SLICE_MS: c_int = 50;

const OPEN: u8 = 0;
const CLOSING: u8 = 1;
const BROKEN: u8 = 2;
const CLOSED: u8 = 3;

/// The application's `int *` given to `aclprofCreateSubscribeConfig`.
#[derive(Clone, Copy, Debug)]
pub struct UserFd(usize);

impl UserFd {
    /// # Safety
    /// `p` must point to an `int` that stays valid until the subscription using it ends
    /// (CANN's documented contract for the `fd` argument).
    pub unsafe fn new(p: *mut c_int) -> Self {
        UserFd(p as usize)
    }
    pub fn get(self) -> c_int {
        // SAFETY: guaranteed by the contract of `new`.
        unsafe { std::ptr::read_volatile(self.0 as *const c_int) }
    }
    pub fn set_closed(self) {
        // SAFETY: guaranteed by the contract of `new`.
        unsafe { std::ptr::write_volatile(self.0 as *mut c_int, -1) }
    }
}

#[derive(Default)]
struct ShardState {
    /// Whole records, unsigned, appended by reporters.
    buf: Vec<u8>,
    pushed: u64,
    dropped: u64,
    waiters: u32,
}

#[derive(Default)]
struct Shard {
    m: Mutex<ShardState>,
    cv: Condvar,
}

impl Shard {
    fn lock(&self) -> MutexGuard<'_, ShardState> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }
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

/// File mode's destination: one raw file of records per stream, so the export can merge
/// streams in time order with memory independent of the number of ops.
pub struct StreamFiles {
    dir: PathBuf,
    open: HashMap<u32, BufWriter<File>>,
    /// `ACL_PROF_STORAGE_LIMIT` in bytes; records beyond it are not written (and counted).
    limit: Option<u64>,
    written: u64,
    pub over_limit: bool,
}

impl StreamFiles {
    pub fn new(dir: PathBuf, limit: Option<u64>) -> Self {
        StreamFiles {
            dir,
            open: HashMap::new(),
            limit,
            written: 0,
            over_limit: false,
        }
    }

    /// The raw file of stream `s` in `dir`.
    pub fn path(dir: &std::path::Path, s: u32) -> PathBuf {
        dir.join(format!("aclprof_ops.stream_{s}.bin"))
    }

    /// Writes whole records; returns how many were written (the rest is over the limit),
    /// or an I/O error.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<u64> {
        let mut n = 0;
        for rec in buf.chunks_exact(RECORD_SIZE) {
            if self
                .limit
                .is_some_and(|l| self.written + RECORD_SIZE as u64 > l)
            {
                self.over_limit = true;
                continue;
            }
            let s = record::get_u32(rec, record::OFF_STREAM_ID);
            let f = match self.open.entry(s) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(Self::path(&self.dir, s))?;
                    v.insert(BufWriter::with_capacity(64 * 1024, file))
                }
            };
            f.write_all(rec)?;
            self.written += RECORD_SIZE as u64;
            n += 1;
        }
        for f in self.open.values_mut() {
            f.flush()?;
        }
        Ok(n)
    }
}

/// Where a subscription's writer thread puts records.
pub enum Dest {
    /// The application's fd (a pipe, FIFO, socket or file; it passed [`prepare_fd`]) and
    /// the `int` it came from, which unsubscribe sets to -1.
    Fd { fd: c_int, user: UserFd },
    /// File mode: per-stream raw files.
    Files(Mutex<StreamFiles>),
    /// A shared-memory ring.
    Ring(std::sync::Arc<crate::ring::Ring>),
}

/// One model's pipe subscription, or one device's file-mode recording.
pub struct Sub {
    pub model_id: u32,
    pub device: u32,
    dest: Dest,
    shards: Box<[CachePadded<Shard>]>,
    shard_bytes: usize,
    policy: OnFull,
    state: AtomicU8,
    deadline: Mutex<Option<Instant>>,
    delivered: AtomicU64,
    writer_dropped: AtomicU64,
    bytes: AtomicU64,
    progress: (Mutex<()>, Condvar),
    writer: Mutex<Option<JoinHandle<()>>>,
    writer_thread: OnceLock<Thread>,
}

/// Records pushed at a subscription that had already been retired (a reporter raced with
/// unsubscribe); counted as reported and dropped.
static LATE_DROPS: AtomicU64 = AtomicU64::new(0);

/// Checks that `fd` can take our records, and makes pipes and sockets non-blocking.
pub fn prepare_fd(fd: c_int) -> Result<()> {
    if fd < 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "the subscribe config's fd is {fd}; pass &pipefd[1], the write end of an open pipe"
            ),
        );
    }
    // SAFETY: fcntl/fstat on an arbitrary integer are safe; errors are reported.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "the subscribe config's fd {fd} is not an open file descriptor ({})",
                std::io::Error::last_os_error()
            ),
        );
    }
    if flags & libc::O_ACCMODE == libc::O_RDONLY {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("fd {fd} is open read-only: pass the write end of the pipe (&fd[1]), not the read end"),
        );
    }
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("fstat({fd}) failed: {}", std::io::Error::last_os_error()),
        );
    }
    let kind = st.st_mode & libc::S_IFMT;
    if (kind == libc::S_IFIFO || kind == libc::S_IFSOCK) && flags & libc::O_NONBLOCK == 0 {
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } != 0 {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "cannot make fd {fd} non-blocking: {}",
                    std::io::Error::last_os_error()
                ),
            );
        }
    }
    Ok(())
}

/// The shard for a new reporting thread: threads are spread round-robin.
pub fn next_shard() -> usize {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    (NEXT.fetch_add(1, Ordering::Relaxed) as usize) % SHARDS
}

impl Sub {
    /// Creates the subscription (or file-mode sink: `model_id` is then unused) and starts
    /// its writer thread.
    pub fn start(
        model_id: u32,
        device: u32,
        dest: Dest,
        capacity: usize,
        policy: OnFull,
    ) -> Result<std::sync::Arc<Sub>> {
        let per_shard = capacity.div_ceil(SHARDS).max(WRITE_CHUNK / RECORD_SIZE);
        let sub = std::sync::Arc::new(Sub {
            model_id,
            device,
            dest,
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Shard::default()))
                .collect(),
            shard_bytes: per_shard * RECORD_SIZE,
            policy,
            state: AtomicU8::new(OPEN),
            deadline: Mutex::new(None),
            delivered: AtomicU64::new(0),
            writer_dropped: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            progress: (Mutex::new(()), Condvar::new()),
            writer: Mutex::new(None),
            writer_thread: OnceLock::new(),
        });
        let s2 = sub.clone();
        let name = if matches!(sub.dest, Dest::Files(_)) {
            format!("aclprof-file-{device}")
        } else {
            format!("aclprof-pipe-{model_id}")
        };
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || s2.writer_main())
            .or_else(|e| {
                err(
                    ACL_ERROR_PROFILING_FAILURE,
                    format!("cannot start the pipe writer thread: {e}"),
                )
            })?;
        let _ = sub.writer_thread.set(h.thread().clone());
        *sub.writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
        Ok(sub)
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

    /// The application's `int` holding the fd, for subscriptions that write to one.
    pub fn user_fd(&self) -> Option<UserFd> {
        match self.dest {
            Dest::Fd { user, .. } => Some(user),
            _ => None,
        }
    }

    pub fn is_broken(&self) -> bool {
        self.state.load(Ordering::Acquire) == BROKEN
    }

    fn wake_writer(&self) {
        if let Some(t) = self.writer_thread.get() {
            t.unpark();
        }
    }

    /// Stages one record in `shard` (the reporting thread's, see [`next_shard`]). Called on
    /// the reporting thread: no system call unless the shard is full and the policy is to
    /// wait.
    #[inline]
    pub fn push(&self, shard: usize, f: &OpFields, name: &[u8], op_type: &[u8]) {
        let shard = &self.shards[shard % SHARDS];
        let mut g = shard.lock();
        loop {
            match self.state.load(Ordering::Acquire) {
                OPEN => {}
                CLOSED => {
                    LATE_DROPS.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                _ => {
                    g.dropped += 1;
                    return;
                }
            }
            let len = g.buf.len();
            if len < self.shard_bytes {
                if g.buf.capacity() == 0 {
                    g.buf.reserve_exact(self.shard_bytes);
                }
                g.buf.resize(len + RECORD_SIZE, 0);
                let rec: &mut record::Record =
                    (&mut g.buf[len..len + RECORD_SIZE]).try_into().unwrap();
                record::encode(rec, f, name, op_type);
                g.pushed += 1;
                return;
            }
            match self.policy {
                OnFull::Drop => {
                    g.dropped += 1;
                    return;
                }
                OnFull::Block => {
                    g.waiters += 1;
                    self.wake_writer();
                    g = shard
                        .cv
                        .wait_timeout(g, Duration::from_millis(20))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    g.waiters -= 1;
                }
            }
        }
    }

    fn writer_main(&self) {
        block_sigpipe();
        let mut spare: Vec<Vec<u8>> = (0..SHARDS).map(|_| Vec::new()).collect();
        loop {
            let closing = self.state.load(Ordering::Acquire) != OPEN;
            let mut got = false;
            for (i, shard) in self.shards.iter().enumerate() {
                let mut g = shard.lock();
                if g.buf.is_empty() {
                    continue;
                }
                std::mem::swap(&mut g.buf, &mut spare[i]);
                if g.waiters > 0 {
                    shard.cv.notify_all();
                }
                drop(g);
                got = true;
                self.deliver(&mut spare[i]);
                spare[i].clear();
            }
            if got {
                let _g = self.progress.0.lock();
                self.progress.1.notify_all();
            } else if closing {
                return;
            } else {
                std::thread::park_timeout(IDLE_POLL);
            }
        }
    }

    /// Signs and hands over a batch of staged records; what does not arrive is dropped.
    fn deliver(&self, buf: &mut [u8]) {
        for rec in buf.chunks_exact_mut(RECORD_SIZE) {
            record::sign(rec);
        }
        let total = (buf.len() / RECORD_SIZE) as u64;
        let written = if self.is_broken() {
            0
        } else {
            match &self.dest {
                Dest::Fd { fd, .. } => self.write_fd(*fd, buf),
                Dest::Files(files) => {
                    match files.lock().unwrap_or_else(|p| p.into_inner()).write(buf) {
                        Ok(n) => n,
                        Err(e) => {
                            self.set_broken(&format!("cannot write the profiling data: {e}"));
                            0
                        }
                    }
                }
                Dest::Ring(ring) => {
                    let block = self.policy == OnFull::Block;
                    ring.produce(buf, block, || self.deadline_passed()).0
                }
            }
        };
        self.delivered.fetch_add(written, Ordering::Relaxed);
        self.bytes
            .fetch_add(written * RECORD_SIZE as u64, Ordering::Relaxed);
        self.writer_dropped
            .fetch_add(total - written, Ordering::Relaxed);
    }

    /// Writes whole records to `fd` in chunks of at most [`WRITE_CHUNK`] bytes; returns how
    /// many records were written before the fd failed (which breaks the subscription).
    fn write_fd(&self, fd: c_int, buf: &[u8]) -> u64 {
        let mut done = 0;
        for chunk in buf.chunks(WRITE_CHUNK) {
            if let Err(why) = self.write_chunk(fd, chunk) {
                self.set_broken(&why);
                break;
            }
            done += (chunk.len() / RECORD_SIZE) as u64;
        }
        done
    }

    /// True once an unsubscribe's wait for the reader has run out.
    fn deadline_passed(&self) -> bool {
        self.deadline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|d| Instant::now() >= d)
    }

    /// True if file mode hit ACL_PROF_STORAGE_LIMIT.
    pub fn over_storage_limit(&self) -> bool {
        match &self.dest {
            Dest::Files(f) => f.lock().unwrap_or_else(|p| p.into_inner()).over_limit,
            _ => false,
        }
    }

    fn set_broken(&self, why: &str) {
        let prev = self.state.swap(BROKEN, Ordering::AcqRel);
        if prev != BROKEN {
            log::error!(
                "aclprof: {} is broken: {why}; its records are counted as dropped",
                self.describe()
            );
            for s in self.shards.iter() {
                let _g = s.lock();
                s.cv.notify_all();
            }
        }
    }

    fn write_chunk(&self, fd: c_int, chunk: &[u8]) -> std::result::Result<(), String> {
        let mut off = 0;
        while off < chunk.len() {
            let rest = &chunk[off..];
            // SAFETY: rest is a valid readable slice.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if n >= 0 {
                off += n as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => {
                    if self.deadline_passed() {
                        return Err(
                            "the reader did not drain the pipe before the unsubscribe timeout \
                                    (ACLPROF_UNSUBSCRIBE_TIMEOUT_MS)"
                                .into(),
                        );
                    }
                    let mut p = libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    // SAFETY: p is a valid pollfd.
                    unsafe { libc::poll(&mut p, 1, POLL_SLICE_MS) };
                }
                Some(libc::EPIPE) => {
                    consume_sigpipe();
                    return Err("the reader closed its end of the pipe (EPIPE)".into());
                }
                _ => return Err(format!("write() failed: {e}")),
            }
        }
        Ok(())
    }

    /// Records staged, delivered, dropped so far.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for s in self.shards.iter() {
            let g = s.lock();
            c.reported += g.pushed + g.dropped;
            c.dropped += g.dropped;
        }
        c.delivered = self.delivered.load(Ordering::Relaxed);
        c.dropped += self.writer_dropped.load(Ordering::Relaxed);
        c.bytes = self.bytes.load(Ordering::Relaxed);
        c
    }

    /// Waits until every record staged before the call has been written or dropped, or
    /// until `deadline`. Returns false on timeout.
    pub fn flush(&self, deadline: Instant) -> bool {
        let target: u64 = self.shards.iter().map(|s| s.lock().pushed).sum();
        self.wake_writer();
        let mut g = self.progress.0.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let done = self.delivered.load(Ordering::Relaxed)
                + self.writer_dropped.load(Ordering::Relaxed);
            if done >= target || self.state.load(Ordering::Acquire) != OPEN && self.writer_done() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            self.wake_writer();
            g = self
                .progress
                .1
                .wait_timeout(g, (deadline - now).min(Duration::from_millis(10)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn writer_done(&self) -> bool {
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_none_or(|h| h.is_finished())
    }

    /// Unsubscribe: writes everything staged, waiting at most `timeout` for the reader, then
    /// stops the writer. Records still unwritten after the timeout are counted as dropped.
    /// Returns the final counts. Does not close the fd (the caller decides: it may be shared).
    pub fn close(&self, timeout: Duration) -> Counts {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + timeout);
        let _ = self
            .state
            .compare_exchange(OPEN, CLOSING, Ordering::AcqRel, Ordering::Acquire);
        // Every push that got its shard lock before this point has staged its record.
        for s in self.shards.iter() {
            let _g = s.lock();
            s.cv.notify_all();
        }
        self.wake_writer();
        let h = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = h {
            let _ = h.join();
        }
        for s in self.shards.iter() {
            let mut g = s.lock();
            // Anything left (broken pipe: the writer stopped writing) is dropped.
            let left = (g.buf.len() / RECORD_SIZE) as u64;
            g.buf = Vec::new();
            drop(g);
            self.writer_dropped.fetch_add(left, Ordering::Relaxed);
        }
        if let Dest::Ring(r) = &self.dest {
            r.close_producer();
        }
        let c = self.counts();
        self.state.store(CLOSED, Ordering::Release);
        for s in self.shards.iter() {
            let _g = s.lock();
        }
        c
    }
}

pub fn late_drops() -> u64 {
    LATE_DROPS.load(Ordering::Relaxed)
}

fn block_sigpipe() {
    // SAFETY: plain signal-mask manipulation on the current (library-owned) thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Takes the SIGPIPE that the failed write left pending on this thread (it is blocked here),
/// so it can never be delivered later.
fn consume_sigpipe() {
    // SAFETY: as above; a zero timeout makes sigtimedwait a non-blocking poll.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        libc::sigtimedwait(&set, std::ptr::null_mut(), &ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    fn pipe() -> (std::fs::File, c_int) {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (unsafe { std::fs::File::from_raw_fd(fds[0]) }, fds[1])
    }

    /// A subscription writing to `w` (its user fd slot lives for the whole test run).
    fn started(w: c_int, capacity: usize, policy: OnFull) -> std::sync::Arc<Sub> {
        prepare_fd(w).unwrap();
        let slot: &'static mut c_int = Box::leak(Box::new(w));
        let dest = Dest::Fd {
            fd: w,
            user: unsafe { UserFd::new(slot) },
        };
        Sub::start(9, 0, dest, capacity, policy).unwrap()
    }

    fn op(i: u64) -> OpFields {
        OpFields {
            model_id: 9,
            op_index: i,
            start: i * 10,
            end: i * 10 + 5,
            ..Default::default()
        }
    }

    #[test]
    fn delivers_whole_signed_records_in_order() {
        let (mut r, w) = pipe();
        let sub = started(w, 1024, OnFull::Block);
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            r.read_to_end(&mut all).unwrap();
            all
        });
        for i in 1..=1000 {
            sub.push(0, &op(i), b"n", b"t");
        }
        let c = sub.close(Duration::from_secs(5));
        unsafe { libc::close(w) };
        let all = reader.join().unwrap();
        assert_eq!(
            c,
            Counts {
                reported: 1000,
                delivered: 1000,
                dropped: 0,
                bytes: 512_000
            }
        );
        assert_eq!(crate::accessor::op_num(&all).unwrap(), 1000);
        for i in 0..1000u32 {
            assert_eq!(
                crate::accessor::record(&all, i).unwrap().op_index(),
                i as u64 + 1
            );
        }
    }

    #[test]
    fn storage_limit_stops_writing_and_says_so() {
        let dir = std::env::temp_dir().join(format!("aclprof-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = StreamFiles::new(dir.clone(), Some(3 * RECORD_SIZE as u64));
        let mut buf = Vec::new();
        for i in 1..=5 {
            let mut r = [0u8; RECORD_SIZE];
            record::encode(&mut r, &op(i), b"n", b"t");
            buf.extend_from_slice(&r);
        }
        assert_eq!(f.write(&buf).unwrap(), 3);
        assert!(f.over_limit);
        let bytes = std::fs::metadata(StreamFiles::path(&dir, 0)).unwrap().len();
        assert_eq!(bytes, 3 * RECORD_SIZE as u64);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_fds_are_explained() {
        assert_eq!(prepare_fd(-1).unwrap_err().code, ACL_ERROR_INVALID_PARAM);
        assert!(prepare_fd(987_654)
            .unwrap_err()
            .msg
            .contains("not an open file descriptor"));
        let (r, w) = pipe();
        use std::os::fd::AsRawFd;
        assert!(prepare_fd(r.as_raw_fd())
            .unwrap_err()
            .msg
            .contains("read-only"));
        unsafe { libc::close(w) };
    }

    #[test]
    fn closed_reader_breaks_the_subscription_without_sigpipe() {
        let (r, w) = pipe();
        drop(r);
        let sub = started(w, 1024, OnFull::Block);
        for i in 1..=100 {
            sub.push(0, &op(i), b"n", b"t");
        }
        assert!(sub.flush(Instant::now() + Duration::from_secs(5)));
        assert!(sub.is_broken());
        let c = sub.close(Duration::from_secs(5));
        assert_eq!(c.reported, 100);
        assert_eq!(c.delivered, 0);
        assert_eq!(c.dropped, 100);
        unsafe { libc::close(w) };
    }

    #[test]
    fn drop_policy_counts_exactly_and_timeout_bounds_close() {
        let (r, w) = pipe(); // nobody reads r
        let sub = started(w, 256, OnFull::Drop);
        for i in 1..=5000 {
            sub.push(0, &op(i), b"n", b"t");
        }
        let t = Instant::now();
        let c = sub.close(Duration::from_millis(200));
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "close took {:?}",
            t.elapsed()
        );
        assert_eq!(c.reported, 5000);
        assert_eq!(c.delivered + c.dropped, 5000, "{c:?}");
        assert!(c.dropped > 0 && c.delivered > 0, "{c:?}");
        assert_eq!(c.bytes, c.delivered * RECORD_SIZE as u64);
        drop(r);
        unsafe { libc::close(w) };
    }
}
