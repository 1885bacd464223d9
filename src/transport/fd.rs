//! The application's file descriptor: checks at subscribe time, and whole-record writes
//! that never raise `SIGPIPE` in the host process.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM};
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

/// Why a write stopped.
#[derive(Debug)]
pub enum WriteError {
    /// The fd is full (non-blocking pipe or socket): try again later.
    Full,
    /// The fd cannot take records any more (reader gone, I/O error): the message says why.
    Broken(String),
}

/// Writers of one fd take its stripe of these locks for a whole batch: on a stream socket
/// or a regular file a write can be partial, and two subscriptions sharing the fd must not
/// interleave inside a batch. (Pipe writes of at most `PIPE_BUF` bytes are atomic anyway.)
static FD_LOCKS: [std::sync::Mutex<()>; 16] = [const { std::sync::Mutex::new(()) }; 16];

/// Holds every fd stripe across `fork()` (see [`crate::fork`]).
pub(crate) fn fork_prepare() -> crate::fork::Release {
    let held: Vec<_> = FD_LOCKS
        .iter()
        .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()))
        .collect();
    Box::new(move |_child| drop(held))
}

/// Writes a batch of whole records (at most `PIPE_BUF` bytes for pipes, so it is atomic:
/// all or nothing). Retries `EINTR`, finishes a partial write before anyone else writes to
/// the fd; never raises `SIGPIPE`.
pub fn write_once(fd: c_int, buf: &[u8]) -> std::result::Result<(), WriteError> {
    let _whole = FD_LOCKS[fd.unsigned_abs() as usize % FD_LOCKS.len()]
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let mut off = 0;
    while off < buf.len() {
        let rest = &buf[off..];
        let n = without_sigpipe(|| {
            // SAFETY: rest is a valid readable slice.
            unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) }
        });
        if n >= 0 {
            off += n as usize;
            continue;
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) if off == 0 => return Err(WriteError::Full),
            Some(libc::EAGAIN) => {
                // A regular file or socket took part of the batch: wait for the rest.
                wait_writable(fd, 50);
            }
            Some(libc::EPIPE) => {
                return Err(WriteError::Broken(
                    "the reader closed its end of the pipe (EPIPE)".into(),
                ))
            }
            _ => return Err(WriteError::Broken(format!("write() failed: {e}"))),
        }
    }
    Ok(())
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

/// True if the process ignores `SIGPIPE` (Rust programs and Python do, so do most servers):
/// then a write to a closed pipe only returns `EPIPE` and needs no masking. Asked of the
/// kernel once per 64 writes per thread, so a program that changes its disposition is seen
/// soon after.
fn sigpipe_ignored() -> bool {
    thread_local! {
        static CACHE: std::cell::Cell<(u32, bool)> = const { std::cell::Cell::new((0, false)) };
    }
    CACHE.with(|c| {
        let (n, ignored) = c.get();
        if n % 64 != 0 {
            c.set((n.wrapping_add(1), ignored));
            return ignored;
        }
        // SAFETY: querying (not changing) the disposition.
        let ignored = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
        };
        c.set((n.wrapping_add(1), ignored));
        ignored
    })
}

/// Runs `f` (one `write()`) so that a `SIGPIPE` it raises never reaches the application's
/// handler or kills it: unless the process ignores the signal, it is blocked on this thread
/// for the call and taken afterwards. The reporting thread may be an application thread:
/// its mask is restored.
fn without_sigpipe(f: impl FnOnce() -> isize) -> isize {
    if sigpipe_ignored() {
        return f();
    }
    // SAFETY: plain signal-mask manipulation of the current thread, restored below.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let n = f();
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPIPE) {
            let errno = *libc::__errno_location();
            let pending_before = libc::sigismember(&old, libc::SIGPIPE) == 1;
            if !pending_before {
                consume_sigpipe();
            }
            *libc::__errno_location() = errno;
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        n
    }
}

#[allow(dead_code)]
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
