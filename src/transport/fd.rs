//! The application's file descriptor: checks at subscribe time, and whole-record writes
//! that never raise `SIGPIPE` (or `SIGXFSZ`) in the host process.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM};
use crate::fork::{global, Mutex, MutexGuard, Rank};
use crate::formats::record::RECORD_SIZE;
use std::os::raw::c_int;

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

/// How records go into an fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A socket or a file: as much as it takes per `write()`.
    Stream,
    /// A pipe or FIFO: in pieces that fill its buffers ([`piece`]), whole pages by
    /// `vmsplice()` if `splice`.
    Pipe { splice: bool },
}

/// Checks that `fd` can take our records, and makes pipes and sockets non-blocking.
/// Returns what writes to it can raise, and how records go into it (a pipe or FIFO is
/// spliced into unless [`splice_pipes`] says no).
pub fn prepare_fd(fd: c_int) -> Result<(Signals, Kind)> {
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
    // SAFETY: `stat` is plain old data, for which all zeros is a valid value.
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
    let raises = match kind {
        libc::S_IFIFO | libc::S_IFSOCK => Signals::PIPE,
        libc::S_IFREG => Signals::FSIZE,
        _ => Signals::BOTH,
    };
    if kind != libc::S_IFIFO {
        return Ok((raises, Kind::Stream));
    }
    // Where the pipe's buffers start: it is seen empty here, usually (`read_position`).
    let _ = read_position(fd);
    Ok((
        raises,
        Kind::Pipe {
            splice: splice_pipes(),
        },
    ))
}

/// The bytes a pipe holds when full: `F_GETPIPE_SZ` (a reader may have raised it), or the
/// default 64 KiB if the pipe cannot say.
pub fn pipe_size(fd: c_int) -> u64 {
    // SAFETY: fcntl on an arbitrary integer is safe; an error is handled.
    let n = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    if n > 0 {
        n as u64
    } else {
        64 * 1024
    }
}

/// Why a write stopped.
#[derive(Debug)]
pub enum WriteError {
    /// The fd is full (non-blocking pipe or socket): try again later.
    Full,
    /// The fd cannot take records any more (reader gone, I/O error): the message says why.
    Broken(String),
}

/// What the library knows of one fd it writes to.
struct Written {
    fd: c_int,
    /// Bytes the library has put into the fd in all (see [`read_position`]).
    total: u64,
    /// `total` when the pipe was last seen empty: its buffers' pages start at multiples of
    /// [`PIPE_PAGE`] from here (see [`piece`]).
    base: u64,
}

global! {
    /// Writers of one fd take its stripe of these locks for a whole `write_records` call: a
    /// write can stop anywhere, and two subscriptions sharing the fd must not interleave inside
    /// a record. Each stripe also keeps, for each fd written through it, what [`Written`]
    /// says; one entry per fd number ever used.
    static FD_LOCKS: [Mutex<Vec<Written>>; 16] =
        [const { Mutex::new(Rank::FdStripes, Vec::new()) }; 16];
}

fn stripe(fd: c_int) -> MutexGuard<'static, Vec<Written>> {
    FD_LOCKS[fd.unsigned_abs() as usize % FD_LOCKS.len()].lock()
}

/// `fd`'s entry in its stripe's table.
fn written_of(table: &mut Vec<Written>, fd: c_int) -> &mut Written {
    let i = match table.iter().position(|e| e.fd == fd) {
        Some(i) => i,
        None => {
            table.push(Written {
                fd,
                total: 0,
                base: 0,
            });
            table.len() - 1
        }
    };
    &mut table[i]
}

/// The size of a pipe's buffers: one page each (docs/design.md, "A pipe's capacity").
pub const PIPE_PAGE: usize = 4096;

/// The next piece of a write of `len` bytes (whole records) that starts `at` bytes past a
/// pipe buffer's start, from memory `addr`: how many bytes, and whether they go by
/// `vmsplice()`. A pipe has a fixed number of buffers, one page each; a spliced piece takes
/// a buffer of its own however few bytes it carries, and a copied piece fills the pipe's
/// last buffer before taking a new one (Linux merges `len % PAGE_SIZE` bytes into it, then
/// takes whole pages). So: copy up to the next buffer's start, then splice whole pages of
/// memory that are whole buffers of the pipe (or copy them, if the memory is not
/// page-aligned there), then copy the rest. Every buffer but the last is then full, and a
/// pipe of S bytes holds S/512 records, whatever the pace of the writes.
pub fn piece(at: u64, addr: usize, len: usize, splice: bool) -> (usize, bool) {
    let into = (at % PIPE_PAGE as u64) as usize;
    if into != 0 {
        return (len.min(PIPE_PAGE - into), false);
    }
    if len < PIPE_PAGE {
        return (len, false);
    }
    (len / PIPE_PAGE * PIPE_PAGE, splice && addr % PIPE_PAGE == 0)
}

/// Whether records go into pipes by `vmsplice()` (docs/design.md, "Pipes without a copy"):
/// on, unless ACLPROF_PIPE_SPLICE=0. Never under loom, whose models check the lane protocol
/// with the consumer freeing what it wrote at once.
pub fn splice_pipes() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    !cfg!(loom)
        && *ON.get_or_init(|| std::env::var("ACLPROF_PIPE_SPLICE").map_or(true, |v| v != "0"))
}

/// How many of the bytes the library wrote to the pipe `fd` its reader has read: all
/// written, less what the pipe still holds (`FIONREAD`). Bytes others put into the pipe
/// count as unread, so the answer errs low, never high. None if the pipe cannot say.
/// A pipe seen empty starts its next buffer with our next byte (see [`piece`]).
pub fn read_position(fd: c_int) -> Option<u64> {
    let mut table = stripe(fd);
    let w = written_of(&mut table, fd);
    let mut unread: c_int = 0;
    // SAFETY: FIONREAD stores an int through the pointer.
    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut unread) } != 0 || unread < 0 {
        return None;
    }
    // (Held across the ioctl: no write of ours lands between the two readings.)
    if unread == 0 {
        w.base = w.total;
    }
    Some(w.total.saturating_sub(unread as u64))
}

/// What [`write_records`] put into the fd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Bytes taken (a multiple of the record size).
    pub bytes: usize,
    /// The fd's total written after them.
    pub total: u64,
    /// The fd's total written after the last byte that went by `vmsplice()`, if any did.
    pub spliced_to: Option<u64>,
}

/// Writes as many of the whole records in `buf` as the fd takes now (0 bytes is
/// [`WriteError::Full`]). A write cut short inside a record (a socket; a pipe cuts only at
/// its pages, which hold whole records) is finished, waiting for room, before the fd's lock
/// is released, so nothing else is written to the fd in the middle of a record. Retries
/// `EINTR`; never raises `SIGPIPE`.
///
/// A pipe takes them in the pieces [`piece`] cuts; with `splice`, whole pages go by
/// `vmsplice()`, without a copy, and the caller must not write those slots again before
/// the reader has read them ([`read_position`], [`Taken::spliced_to`]).
pub fn write_records(
    fd: c_int,
    raises: Signals,
    buf: &[u8],
    kind: Kind,
) -> std::result::Result<Taken, WriteError> {
    let mut table = stripe(fd);
    let w = written_of(&mut table, fd);
    let mut off = 0;
    let mut spliced_to = None;
    while off < buf.len() {
        let rest = &buf[off..];
        let (len, by_splice) = match kind {
            Kind::Pipe { splice } => {
                piece(w.total - w.base, rest.as_ptr() as usize, rest.len(), splice)
            }
            Kind::Stream => (rest.len(), false),
        };
        let n = quietly_call(raises, || {
            if by_splice {
                let iov = libc::iovec {
                    iov_base: rest.as_ptr() as *mut libc::c_void,
                    iov_len: len,
                };
                // SAFETY: iov describes a valid readable slice; the pipe keeps references to
                // its pages, and the caller keeps the records there until they are read.
                unsafe { libc::vmsplice(fd, &iov, 1, libc::SPLICE_F_NONBLOCK) }
            } else {
                // SAFETY: rest[..len] is a valid readable slice.
                unsafe { libc::write(fd, rest.as_ptr().cast(), len) }
            }
        });
        if n >= 0 {
            off += n as usize;
            w.total += n as u64;
            if by_splice && n > 0 {
                spliced_to = Some(w.total);
            }
            continue;
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) if off == 0 => return Err(WriteError::Full),
            Some(libc::EAGAIN) if off % RECORD_SIZE == 0 => break,
            // Inside a record: wait for room for the rest of it.
            Some(libc::EAGAIN) => wait_writable(fd, 50),
            Some(libc::EPIPE) => {
                return Err(WriteError::Broken(
                    "the reader closed its end of the pipe (EPIPE)".into(),
                ))
            }
            _ => return Err(WriteError::Broken(format!("write() failed: {e}"))),
        }
    }
    Ok(Taken {
        bytes: off,
        total: w.total,
        spliced_to,
    })
}

/// Waits up to `ms` for `fd` to take more bytes.
pub fn wait_writable(fd: c_int, ms: c_int) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: p is a valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// The signals a `write()` can raise, as a set: `SIGPIPE` (a pipe or socket whose reader
/// is gone) and `SIGXFSZ` (a regular file hit `RLIMIT_FSIZE`). Both kill a process by
/// default. A write raises only the one its kind of file can: masking a signal that
/// cannot come costs two system calls per write for nothing (Rust and Python programs
/// ignore `SIGPIPE` but not `SIGXFSZ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signals(u8);

impl Signals {
    pub const PIPE: Signals = Signals(1);
    pub const FSIZE: Signals = Signals(2);
    pub const BOTH: Signals = Signals(3);
    const ALL: [(Signals, libc::c_int); 2] = [
        (Signals::PIPE, libc::SIGPIPE),
        (Signals::FSIZE, libc::SIGXFSZ),
    ];

    fn each(self) -> impl Iterator<Item = libc::c_int> {
        Self::ALL
            .into_iter()
            .filter(move |(s, _)| self.0 & s.0 != 0)
            .map(|(_, sig)| sig)
    }
}

thread_local! {
    /// Set on the library's own threads, which block both signals for good.
    static OWN_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// For a library thread: blocks the write signals for the thread's life, so its writes
/// need no masking (a signal left pending there is never delivered).
pub(crate) fn block_write_signals_for_good() {
    // SAFETY: signal-mask manipulation of the current, library-owned thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in Signals::BOTH.each() {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    OWN_THREAD.with(|t| t.set(true));
}

/// The write signals the process ignores (then a write only fails with `EPIPE` or `EFBIG`
/// and needs no masking). Asked of the kernel once per 64 calls per thread, so a program
/// that changes its dispositions is seen soon after.
fn ignored() -> Signals {
    thread_local! {
        static CACHE: std::cell::Cell<(u32, u8)> = const { std::cell::Cell::new((0, 0)) };
    }
    CACHE.with(|c| {
        let (n, ignored) = c.get();
        if n % 64 != 0 {
            c.set((n.wrapping_add(1), ignored));
            return Signals(ignored);
        }
        let mut now = 0;
        for (s, sig) in Signals::ALL {
            // SAFETY: querying (not changing) the disposition.
            let ign = unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            };
            if ign {
                now |= s.0;
            }
        }
        c.set((n.wrapping_add(1), now));
        Signals(now)
    })
}

/// Runs `f` (writes that can raise `raises`) so that a `SIGPIPE` or `SIGXFSZ` it raises
/// never reaches the application's handler or kills it: unless the process ignores them,
/// they are blocked on this thread for the call and any they raised are taken afterwards.
/// The caller may be an application thread: its mask and `errno` are restored.
pub(crate) fn quietly<R>(raises: Signals, f: impl FnOnce() -> R) -> R {
    masked(raises, f, |_, _| true)
}

/// [`quietly`] for one system call that returns -1 on failure: a signal is looked for only
/// after a failure that raises one (`EPIPE` raises `SIGPIPE`, `EFBIG` `SIGXFSZ`; a call that
/// succeeds raised neither), which spares a `sigpending()` per write.
fn quietly_call(raises: Signals, f: impl FnOnce() -> isize) -> isize {
    masked(raises, f, |&r, errno| {
        r < 0 && (errno == libc::EPIPE || errno == libc::EFBIG)
    })
}

/// Runs `f` with `raises` blocked on this thread (unless the process ignores them); takes
/// what it raised if `may_have_raised(result, errno)`.
fn masked<R>(
    raises: Signals,
    f: impl FnOnce() -> R,
    may_have_raised: impl Fn(&R, i32) -> bool,
) -> R {
    if OWN_THREAD.with(|t| t.get()) {
        return f();
    }
    let raises = Signals(raises.0 & !ignored().0);
    if raises.0 == 0 {
        return f();
    }
    // SAFETY: plain signal-mask manipulation of the current thread, restored below.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in raises.each() {
            libc::sigaddset(&mut set, s);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let r = f();
        let errno = *libc::__errno_location();
        if may_have_raised(&r, errno) {
            for sig in raises.each() {
                // A signal the thread already blocked is the application's business.
                if libc::sigismember(&old, sig) != 1 {
                    take_pending(sig);
                }
            }
        }
        *libc::__errno_location() = errno;
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

/// Takes `sig` if it is pending on this thread (it is blocked here), so it can never be
/// delivered later.
fn take_pending(sig: libc::c_int) {
    // SAFETY: a zero timeout makes sigtimedwait a non-blocking poll of a blocked signal.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        if libc::sigismember(&pending, sig) == 1 {
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&set, std::ptr::null_mut(), &ts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux's pipe, as far as its buffers go: `write()` merges `len % PAGE_SIZE` bytes
    /// into the last buffer if that was written (not spliced) and has room, then takes a new
    /// buffer per page; `vmsplice()` takes a buffer per page it touches. Each buffer is
    /// (bytes, mergeable).
    #[derive(Default)]
    struct PipeModel(Vec<(usize, bool)>);

    impl PipeModel {
        fn write(&mut self, mut len: usize) {
            let chars = len % PIPE_PAGE;
            if chars != 0 {
                if let Some(last) = self.0.last_mut() {
                    if last.1 && last.0 + chars <= PIPE_PAGE {
                        last.0 += chars;
                        len -= chars;
                    }
                }
            }
            while len > 0 {
                let n = len.min(PIPE_PAGE);
                self.0.push((n, true));
                len -= n;
            }
        }

        fn splice(&mut self, addr: usize, len: usize) {
            let (mut a, end) = (addr, addr + len);
            while a < end {
                let n = (a / PIPE_PAGE + 1) * PIPE_PAGE - a;
                self.0.push((n.min(end - a), false));
                a += n;
            }
        }
    }

    /// Batches of any size from lanes at any slot, in any order: with the pieces `piece`
    /// cuts, every buffer of the pipe but the last is full, so a pipe of S bytes holds
    /// S/512 records however the writes came.
    #[test]
    fn pieces_fill_every_pipe_buffer_but_the_last() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..2000 {
            let mut pipe = PipeModel::default();
            let mut at = 0u64;
            // Lanes write from slots that keep their own phase in memory.
            let mut lane_slot = [0u64; 3];
            for _ in 0..rnd(40) + 1 {
                let lane = rnd(3) as usize;
                let records = if round % 2 == 0 {
                    rnd(4) + 1
                } else {
                    rnd(70) + 1
                };
                let addr = (1 << 20) + (lane_slot[lane] as usize % 64) * RECORD_SIZE;
                lane_slot[lane] += records;
                let (mut off, len) = (0, records as usize * RECORD_SIZE);
                while off < len {
                    let (n, by_splice) = piece(at, addr + off, len - off, true);
                    assert!(n > 0 && n % RECORD_SIZE == 0);
                    if by_splice {
                        assert_eq!((addr + off) % PIPE_PAGE, 0);
                        pipe.splice(addr + off, n);
                    } else {
                        pipe.write(n);
                    }
                    off += n;
                    at += n as u64;
                }
            }
            let bufs = &pipe.0;
            assert!(
                bufs[..bufs.len() - 1].iter().all(|b| b.0 == PIPE_PAGE),
                "round {round}: {bufs:?}"
            );
            assert_eq!(bufs.len() as u64, at.div_ceil(PIPE_PAGE as u64));
        }
    }

    #[test]
    fn pieces_splice_only_whole_aligned_pages() {
        let p = PIPE_PAGE;
        // Into a buffer: copy up to its end.
        assert_eq!(piece(512, 0, 64 * 512, true), (p - 512, false));
        // At a buffer's start, page-aligned memory: whole pages by vmsplice, the rest copied.
        assert_eq!(piece(0, 8 * p, 64 * 512 + 1024, true), (8 * p, true));
        assert_eq!(piece(0, 8 * p, 1024, true), (1024, false));
        // Memory out of step with the pipe: whole pages, copied.
        assert_eq!(piece(0, 8 * p + 512, 64 * 512, true), (8 * p, false));
        // Not a pipe written by vmsplice: the same cuts, copied.
        assert_eq!(piece(0, 8 * p, 64 * 512, false), (8 * p, false));
    }
}
