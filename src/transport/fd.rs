//! The application's file descriptor: checks at subscribe time, and whole-record writes
//! that never raise `SIGPIPE` (or `SIGXFSZ`) in the host process.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM};
use crate::record::RECORD_SIZE;
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

/// Checks that `fd` can take our records, and makes pipes and sockets non-blocking.
/// Returns what writes to it can raise, and whether records go into it by `vmsplice()` (a
/// pipe or FIFO, and [`splice_pipes`]).
pub fn prepare_fd(fd: c_int) -> Result<(Signals, bool)> {
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
    let raises = match kind {
        libc::S_IFIFO | libc::S_IFSOCK => Signals::PIPE,
        libc::S_IFREG => Signals::FSIZE,
        _ => Signals::BOTH,
    };
    Ok((raises, kind == libc::S_IFIFO && splice_pipes()))
}

/// Why a write stopped.
#[derive(Debug)]
pub enum WriteError {
    /// The fd is full (non-blocking pipe or socket): try again later.
    Full,
    /// The fd cannot take records any more (reader gone, I/O error): the message says why.
    Broken(String),
}

/// Writers of one fd take its stripe of these locks for a whole `write_records` call: a
/// write can stop anywhere, and two subscriptions sharing the fd must not interleave inside
/// a record. Each stripe also counts, for each fd written through it, the bytes the library
/// has put into that fd in all (see [`read_position`]); one entry per fd number ever used.
static FD_LOCKS: [std::sync::Mutex<Vec<(c_int, u64)>>; 16] =
    [const { std::sync::Mutex::new(Vec::new()) }; 16];

fn stripe(fd: c_int) -> std::sync::MutexGuard<'static, Vec<(c_int, u64)>> {
    FD_LOCKS[fd.unsigned_abs() as usize % FD_LOCKS.len()]
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The bytes written to `fd` so far, in its stripe's table.
fn written_of(table: &mut Vec<(c_int, u64)>, fd: c_int) -> &mut u64 {
    let i = match table.iter().position(|e| e.0 == fd) {
        Some(i) => i,
        None => {
            table.push((fd, 0));
            table.len() - 1
        }
    };
    &mut table[i].1
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
pub fn read_position(fd: c_int) -> Option<u64> {
    let mut table = stripe(fd);
    let written = *written_of(&mut table, fd);
    let mut unread: c_int = 0;
    // SAFETY: FIONREAD stores an int through the pointer.
    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut unread) } != 0 || unread < 0 {
        return None;
    }
    // (Held across the ioctl: no write of ours lands between the two readings.)
    drop(table);
    Some(written.saturating_sub(unread as u64))
}

/// Holds every fd stripe across `fork()` (see [`crate::fork`]).
pub(crate) fn fork_prepare() -> crate::fork::Release {
    let held: Vec<_> = FD_LOCKS
        .iter()
        .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()))
        .collect();
    Box::new(move |_child| drop(held))
}

/// Writes as many of the whole records in `buf` as the fd takes now, and returns how many
/// bytes that was (a multiple of the record size; 0 is [`WriteError::Full`]). A write cut
/// short inside a record (a socket; a pipe cuts only at its 4 KiB pages, which hold whole
/// records) is finished, waiting for room, before the fd's lock is released, so nothing else
/// is written to the fd in the middle of a record. Retries `EINTR`; never raises `SIGPIPE`.
///
/// With `splice` (a pipe) the records are not copied: `vmsplice()` hands the pipe their
/// pages, and the caller must not write those slots again before the reader has read them
/// ([`read_position`]). Returns the bytes taken and the fd's total written after them.
pub fn write_records(
    fd: c_int,
    raises: Signals,
    buf: &[u8],
    splice: bool,
) -> std::result::Result<(usize, u64), WriteError> {
    let mut table = stripe(fd);
    let written = written_of(&mut table, fd);
    let mut off = 0;
    while off < buf.len() {
        let rest = &buf[off..];
        let n = quietly_call(raises, || {
            if splice {
                let iov = libc::iovec {
                    iov_base: rest.as_ptr() as *mut libc::c_void,
                    iov_len: rest.len(),
                };
                // SAFETY: iov describes a valid readable slice; the pipe keeps references to
                // its pages, and the caller keeps the records there until they are read.
                unsafe { libc::vmsplice(fd, &iov, 1, libc::SPLICE_F_NONBLOCK) }
            } else {
                // SAFETY: rest is a valid readable slice.
                unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) }
            }
        });
        if n >= 0 {
            off += n as usize;
            *written += n as u64;
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
    Ok((off, *written))
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
