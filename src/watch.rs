//! The watcher agent: lets `aclprof top` and `aclprof capture` look at this process while it
//! runs, with no change to the program (docs/design.md, "Watching a live process"; the
//! threat model is in docs/reliability.md).
//!
//! A process nobody watches carries no thread and no socket. At first use the library
//! leaves a marker, `<dir>/<pid>.agent`, where `<dir>` is `ACLPROF_WATCH_DIR` or
//! `/tmp/aclprof-<uid>` (created with mode 0700 and used only if it is a directory this user
//! owns that no one else may enter), and handles [`ATTACH_SIGNAL`]. A viewer asks as the
//! JVM's attach mechanism does: it creates `<dir>/<pid>.attach` and sends the signal. The
//! handler only sets a flag; the process's next call into the library (an op reported, or
//! any call that starts work) sees the flag and the request file, listens on
//! `<dir>/<pid>.sock` and starts one thread. A viewer connects and says `ATTACH 1`; the agent
//! checks the viewer's credentials (`SO_PEERCRED`: this user, or root), makes a shared-memory
//! ring with the drop policy (a slow viewer loses records, counted in the ring; the program
//! never waits for it), routes every op of every model to it besides their own
//! destinations, and passes the ring's fd over the socket (`SCM_RIGHTS`). When the viewer
//! closes the socket (or dies: the kernel closes it) the route is removed and the ring
//! closed, and once no viewer is left the thread ends and the socket is removed. One viewer
//! at a time (a second is told so); `ACLPROF_WATCH=0` turns all of it off.

use crate::error::*;
use crate::fork::{global, Mutex, Rank};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Records per lane of a watcher's ring (8 lanes of 512-byte records: 16 MiB at most).
pub const RING_RECORDS: u64 = 4096;
/// The protocol's version, in `ATTACH <v>` and the agent's `OK` line.
pub const PROTOCOL: u32 = 1;
/// The signal that asks a process to listen for a viewer. `SIGURG`'s default action is to
/// ignore it, so a process that does not use the library (or a pid reused since) is not
/// harmed by one; a handler the program had is still called (docs/design.md).
pub const ATTACH_SIGNAL: i32 = libc::SIGURG;
/// How long a started agent waits for its first viewer before it ends.
const FIRST_VIEWER: Duration = Duration::from_secs(10);

/// Whether this process handles attach requests (false again in a forked child).
static ARMED: AtomicBool = AtomicBool::new(false);
/// Set by the signal handler, cleared by the thread that answers.
static ASKED: AtomicBool = AtomicBool::new(false);
/// Whether the agent's thread runs (it listens on the socket while it does).
static RUNNING: AtomicBool = AtomicBool::new(false);
/// Connections being served now.
static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);
/// The handler that was installed for [`ATTACH_SIGNAL`] before ours (0: none to call), and
/// its flags.
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);
static PREVIOUS_FLAGS: AtomicI32 = AtomicI32::new(0);
global! {
    /// The marker and the socket of this process, removed at exit. A forked child has no
    /// agent thread and must not answer for its parent: it makes itself watchable at its
    /// next first use (its files are then its own).
    static FILES: Mutex<Option<(PathBuf, u32)>> =
        Mutex::reset_in_child(Rank::WatchFiles, None, |_| {
            ARMED.store(false, Ordering::Release);
            ASKED.store(false, Ordering::Release);
            RUNNING.store(false, Ordering::Release);
            CONNECTIONS.store(0, Ordering::Release);
            VIEWER.store(0, Ordering::Release);
        });
}
/// The pid of the viewer attached now (0: none).
static VIEWER: AtomicI32 = AtomicI32::new(0);

/// The directory of `uid`'s sockets.
pub fn dir_of(uid: u32) -> PathBuf {
    match std::env::var_os("ACLPROF_WATCH_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(format!("/tmp/aclprof-{uid}")),
    }
}

/// Creates (mode 0700) or checks `dir`: a real directory owned by `uid` that no one else
/// may enter. Anything else (a symlink, another user's directory planted in /tmp, loose
/// permissions) is refused.
pub fn private_dir(dir: &Path, uid: u32) -> std::result::Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !m.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    if m.uid() != uid {
        return Err(format!(
            "{}: owned by uid {}, not {uid}",
            dir.display(),
            m.uid()
        ));
    }
    if m.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{}: mode {:o}: others may enter it",
            dir.display(),
            m.permissions().mode() & 0o777
        ));
    }
    Ok(())
}

/// May a viewer running as `peer` attach to a process running as `me`? The same user, or
/// root.
pub fn may_attach(me: u32, peer: u32) -> bool {
    peer == me || peer == 0
}

/// The files of process `pid` in a watch directory: its marker, its request and its socket.
fn marker(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.agent"))
}
fn request(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.attach"))
}
fn socket(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22):
/// with the pid, it names one process, not whichever reused the number.
fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: the fields follow the last ')'.
    s[s.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)
        .and_then(|f| f.parse().ok())
}

/// Makes this process watchable, once per process (again in a forked child): leaves the
/// marker and handles [`ATTACH_SIGNAL`]. Quietly does nothing when `ACLPROF_WATCH=0`, or
/// logs once why it cannot. Then answers a request that came in since the last call.
pub fn start() {
    if !ARMED.load(Ordering::Acquire) && !ARMED.swap(true, Ordering::AcqRel) {
        arm();
    }
    if ASKED.load(Ordering::Relaxed) {
        answer();
    }
}

fn arm() {
    if std::env::var("ACLPROF_WATCH").is_ok_and(|v| v.trim() == "0") {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let dir = dir_of(uid);
    if let Err(e) = private_dir(&dir, uid) {
        log::warn!("aclprof: aclprof top cannot watch this process: {e}");
        return;
    }
    let pid = std::process::id();
    let path = marker(&dir, pid);
    // Files left by an earlier process with our pid (pids are reused) are stale.
    let _ = std::fs::remove_file(socket(&dir, pid));
    let _ = std::fs::remove_file(request(&dir, pid));
    let written = std::fs::write(&path, format!("{}\n", start_time(pid).unwrap_or(0)));
    if let Err(e) = written {
        log::warn!(
            "aclprof: aclprof top cannot watch this process: {}: {e}",
            path.display()
        );
        return;
    }
    let first = FILES.lock().replace((dir, pid)).is_none();
    if first {
        // SAFETY: registers a plain extern "C" function (once: a forked child inherits it).
        unsafe { libc::atexit(remove_files) };
    }
    crate::hotpath::on_asked(answer);
    if let Err(e) = install_handler() {
        log::warn!("aclprof: aclprof top cannot watch this process: signal handler: {e}");
    }
}

/// Installs [`on_signal`] for [`ATTACH_SIGNAL`], keeping the program's handler to call.
fn install_handler() -> std::io::Result<()> {
    // SAFETY: sigaction with valid, zero-initialised structures; the handler only does
    // async-signal-safe work (atomics, and the program's own handler).
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(ATTACH_SIGNAL, std::ptr::null(), &mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let ours = on_signal as *const () as usize;
        if old.sa_sigaction == ours {
            return Ok(()); // (a forked child: inherited)
        }
        if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            PREVIOUS_FLAGS.store(old.sa_flags, Ordering::Relaxed);
            PREVIOUS.store(old.sa_sigaction, Ordering::Release);
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = ours;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(ATTACH_SIGNAL, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

extern "C" fn on_signal(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    ASKED.store(true, Ordering::Release);
    crate::hotpath::poke();
    let prev = PREVIOUS.load(Ordering::Acquire);
    if prev != 0 {
        // SAFETY: the program installed this handler for this signal, with these flags.
        unsafe {
            if PREVIOUS_FLAGS.load(Ordering::Relaxed) & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(prev);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(i32) = std::mem::transmute(prev);
                f(sig);
            }
        }
    }
}

/// Answers a request as if [`ATTACH_SIGNAL`] had come (for a program that handles the
/// signal itself): nothing happens unless a viewer asked.
pub fn answer_now() {
    ASKED.store(true, Ordering::Release);
    answer();
}

/// Answers a request: if a viewer of this user asked (its request file is there), listens
/// on the socket and starts the agent's thread. Runs on whichever thread called into the
/// library first after the signal: a few system calls, once per attach.
fn answer() {
    if !ASKED.swap(false, Ordering::AcqRel) {
        return;
    }
    let Some((dir, pid)) = FILES.lock().clone() else {
        return;
    };
    // A signal that no viewer sent (the program's own use of it) has no request file.
    if std::fs::remove_file(request(&dir, pid)).is_err() {
        return;
    }
    if RUNNING.swap(true, Ordering::AcqRel) {
        return; // listening already
    }
    let path = socket(&dir, pid);
    let _ = std::fs::remove_file(&path);
    let listener = match UnixListener::bind(&path) {
        Ok(l) => l,
        Err(e) => {
            log::warn!(
                "aclprof: aclprof top cannot watch this process: {}: {e}",
                path.display()
            );
            RUNNING.store(false, Ordering::Release);
            return;
        }
    };
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    // The tap is made here, before this call returns to the program: every op it reports
    // from now on is in the ring the first viewer gets, however long it takes to connect.
    let first = match Tap::make() {
        Ok(t) => Some(t),
        Err(e) => {
            log::warn!("aclprof: aclprof top cannot watch this process: {e}");
            None
        }
    };
    let first = std::sync::Arc::new(std::sync::Mutex::new(first));
    let kept = first.clone();
    let spawned = std::thread::Builder::new()
        .name("aclprof-watch".into())
        .spawn(move || {
            serve(&listener, uid, &first);
            // No viewer came for it (or none was let in).
            if let Some(t) = first.lock().unwrap_or_else(|p| p.into_inner()).take() {
                t.remove();
            }
            let _ = std::fs::remove_file(&path);
            RUNNING.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        log::warn!("aclprof: aclprof top cannot watch this process: no thread: {e}");
        if let Some(t) = kept.lock().unwrap_or_else(|p| p.into_inner()).take() {
            t.remove();
        }
        RUNNING.store(false, Ordering::Release);
    }
}

/// A ring every op of the process goes to, besides its own destinations, while a viewer
/// reads it (the ring drops what the viewer misses, counted in it).
struct Tap {
    ring: std::sync::Arc<crate::transport::ring::Ring>,
    sub: std::sync::Arc<crate::transport::Sub>,
}

/// The tap made when the process answered, for the first viewer let in.
type FirstTap = std::sync::Arc<std::sync::Mutex<Option<Tap>>>;

impl Tap {
    fn make() -> std::result::Result<Tap, String> {
        let ring = std::sync::Arc::new(
            crate::transport::ring::Ring::create(None, RING_RECORDS).map_err(|e| e.msg)?,
        );
        let sub = crate::transport::Sub::start(
            0,
            u32::MAX,
            crate::transport::Dest::Ring(ring.clone()),
            0,
            crate::settings::OnFull::Drop,
        )
        .map_err(|e| e.msg)?;
        crate::hotpath::set_tap(Some(sub.clone()));
        Ok(Tap { ring, sub })
    }

    /// Stops routing ops to the ring; what it delivered and dropped.
    fn remove(self) -> crate::transport::Counts {
        crate::hotpath::set_tap(None);
        self.sub.close(Duration::from_millis(200))
    }
}

extern "C" fn remove_files() {
    crate::panic::guard_void("aclprof watcher exit", || {
        if let Some((dir, pid)) = FILES.lock().take() {
            if pid == std::process::id() {
                for p in [marker(&dir, pid), socket(&dir, pid), request(&dir, pid)] {
                    let _ = std::fs::remove_file(p);
                }
            }
        }
    })
}

/// Accepts viewers until none is left: after the first has come and gone, or when none
/// came in [`FIRST_VIEWER`].
fn serve(listener: &UnixListener, uid: u32, first: &FirstTap) {
    let started = Instant::now();
    let mut served = false;
    loop {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, 100) };
        if ready > 0 {
            let Ok((conn, _)) = listener.accept() else {
                continue;
            };
            served = true;
            CONNECTIONS.fetch_add(1, Ordering::AcqRel);
            // Each connection in a thread of its own, so a second viewer is answered (and
            // told another is watching) while the first is attached.
            let first = first.clone();
            let spawned = std::thread::Builder::new()
                .name("aclprof-viewer".into())
                .spawn(move || {
                    let r = crate::panic::guard("aclprof watcher", Ok(()), || {
                        viewer(conn, uid, &first)
                    });
                    if let Err(e) = r {
                        log::warn!("aclprof: watcher: {e}");
                    }
                    CONNECTIONS.fetch_sub(1, Ordering::AcqRel);
                });
            if spawned.is_err() {
                CONNECTIONS.fetch_sub(1, Ordering::AcqRel);
            }
            continue;
        }
        let idle = CONNECTIONS.load(Ordering::Acquire) == 0;
        if idle && (served || started.elapsed() >= FIRST_VIEWER) {
            return;
        }
    }
}

/// The peer's uid and pid (SO_PEERCRED).
fn peer(s: &UnixStream) -> std::io::Result<(u32, i32)> {
    let mut c = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: c and len are valid for the call; the fd is the stream's.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut c as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((c.uid, c.pid))
}

/// A message header over one buffer (`iov`) with room for one fd's control message in
/// `ctl` (sized by [`fd_space`]).
fn one_fd_msg(iov: &mut libc::iovec, ctl: &mut [u8]) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.as_mut_ptr().cast();
    msg.msg_controllen = ctl.len() as _;
    msg
}

/// The control buffer's size for one fd.
fn fd_space() -> usize {
    // SAFETY: CMSG_SPACE is a pure computation.
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize }
}

/// Sends `line` and `fd` in one message.
fn send_fd(s: &UnixStream, line: &[u8], fd: i32) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: line.as_ptr() as *mut libc::c_void,
        iov_len: line.len(),
    };
    let mut ctl = vec![0u8; fd_space()];
    let msg = one_fd_msg(&mut iov, &mut ctl);
    // SAFETY: msg points at live buffers for the duration of sendmsg; the control header
    // is written inside `ctl`, which fd_space sized for one fd.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
        if libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Serves one viewer: checks it, taps every op into a ring it reads, and removes the tap
/// when it leaves.
fn viewer(conn: UnixStream, uid: u32, first: &FirstTap) -> std::result::Result<(), String> {
    let (peer_uid, peer_pid) = peer(&conn).map_err(|e| format!("SO_PEERCRED: {e}"))?;
    let mut w = &conn;
    if !may_attach(uid, peer_uid) {
        log::warn!(
            "aclprof: refused a watcher (pid {peer_pid}, uid {peer_uid}): only uid {uid} or \
             root may watch this process"
        );
        let _ = writeln!(
            w,
            "REFUSED only uid {uid} (the process's user) or root may watch it; you are uid \
             {peer_uid}"
        );
        return Ok(());
    }
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut r = BufReader::new(&conn);
    let mut hello = String::new();
    r.read_line(&mut hello).map_err(|e| e.to_string())?;
    if hello.trim() != format!("ATTACH {PROTOCOL}") {
        let _ = writeln!(
            w,
            "REFUSED this process speaks protocol {PROTOCOL} (aclprof {})",
            env!("CARGO_PKG_VERSION")
        );
        return Ok(());
    }
    // A viewer whose process has ended leaves as soon as its session sees the connection
    // close: the next one waits for that rather than being refused.
    let until = Instant::now() + Duration::from_secs(5);
    while let Err(other) =
        VIEWER.compare_exchange(0, peer_pid.max(1), Ordering::AcqRel, Ordering::Acquire)
    {
        if crate::transport::ring::pid_alive(other as u32) || Instant::now() >= until {
            let _ = writeln!(
                w,
                "REFUSED another viewer (pid {other}) is watching this process; one at a time"
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let made = first.lock().unwrap_or_else(|p| p.into_inner()).take();
    let r = session(&conn, peer_uid, peer_pid, made);
    VIEWER.store(0, Ordering::Release);
    r
}

/// One viewer's session, from its ring (the one made when the process answered, for the
/// first viewer, else a new one) to its leaving.
fn session(
    conn: &UnixStream,
    peer_uid: u32,
    peer_pid: i32,
    made: Option<Tap>,
) -> std::result::Result<(), String> {
    // Ops go to the ring before the viewer has it: everything after its attach returns is
    // in the ring.
    let tap = match made {
        Some(t) => t,
        None => Tap::make()?,
    };
    let line = format!("OK {PROTOCOL} {} {RING_RECORDS}\n", std::process::id());
    if let Err(e) = send_fd(conn, line.as_bytes(), tap.ring.fd()) {
        tap.remove();
        return Err(format!("sending the ring: {e}"));
    }
    log::info!("aclprof: watcher attached (pid {peer_pid}, uid {peer_uid})");
    // Serve the viewer until it leaves: EOF, an error, or its process ending (the kernel
    // then closes its end). It may ask for the device memory pools' totals ("MEMORY"); any
    // other line is ignored, and a line is at most 64 bytes.
    let _ = conn.set_read_timeout(None);
    let mut lines = BufReader::new(conn);
    let mut last = String::new();
    loop {
        let mut line = String::new();
        match std::io::Read::take(&mut lines, 64).read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.trim() == "MEMORY" {
            if let Some(t) = crate::memory::try_totals() {
                last = t
                    .iter()
                    .map(|(d, p, t)| format!(" {d}:{}:{}:{}", p.label(), t.allocated, t.reserved))
                    .collect();
            }
            if writeln!(&*conn, "MEMORY{last}").is_err() {
                break;
            }
        }
    }
    let sub = tap.sub.clone();
    let c = tap.remove();
    log::info!(
        "aclprof: watcher left (pid {peer_pid}): {} ops shown, {} dropped",
        c.delivered,
        sub.lost_of(&c)
    );
    Ok(())
}

/// The viewer's side: a connection to the agent of process `pid`.
pub struct Attached {
    /// Keeps the tap open; dropping it detaches.
    conn: UnixStream,
    pub reader: crate::transport::ring::Reader,
}

/// One device memory pool's totals, as the watched process has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolTotals {
    pub device: u32,
    /// `operator`, `application` or `model`.
    pub pool: String,
    pub allocated: u64,
    pub reserved: u64,
}

impl Attached {
    /// The watched process's device memory pools now (its agent answers from its own
    /// thread; the program never waits for it), or None if it did not answer in time.
    pub fn memory(&self) -> Option<Vec<PoolTotals>> {
        let _ = self.conn.set_read_timeout(Some(Duration::from_secs(2)));
        (&self.conn).write_all(b"MEMORY\n").ok()?;
        let mut line = String::new();
        // (One byte at a time: nothing past this line may be taken from the socket.)
        let mut b = [0u8; 1];
        while !line.ends_with('\n') && line.len() < 1 << 20 {
            match std::io::Read::read(&mut &self.conn, &mut b) {
                Ok(1) => line.push(b[0] as char),
                _ => return None,
            }
        }
        let rest = line.trim_end().strip_prefix("MEMORY")?;
        Some(
            rest.split_whitespace()
                .filter_map(|e| {
                    let mut f = e.split(':');
                    Some(PoolTotals {
                        device: f.next()?.parse().ok()?,
                        pool: f.next()?.to_string(),
                        allocated: f.next()?.parse().ok()?,
                        reserved: f.next()?.parse().ok()?,
                    })
                })
                .collect(),
        )
    }
}

/// The watch directory of process `pid`'s user.
fn dir_of_process(pid: u32) -> Result<PathBuf> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).or_else(|_| {
        err(
            ACL_ERROR_INVALID_PARAM,
            format!("no process {pid} (or it is not visible here)"),
        )
    })?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse::<u32>().ok())
        .unwrap_or(u32::MAX);
    Ok(dir_of(uid))
}

/// How long a viewer waits for the process to answer its request.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why one try at attaching failed: worth another try (the agent is not listening yet, or
/// was ending), or final.
enum Try {
    Again,
    Fail(Error),
}

/// Attaches to process `pid`: asks it to listen (request file, then [`ATTACH_SIGNAL`]) unless
/// it does already, then connects and takes the ring.
pub fn attach(pid: u32) -> Result<Attached> {
    let dir = dir_of_process(pid)?;
    let path = socket(&dir, pid);
    match std::fs::metadata(marker(&dir, pid)) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "permission denied: only the process's user or root may watch it ({})",
                    dir.display()
                ),
            )
        }
        Err(_) => {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "process {pid} does not use aclprof, has not called it yet, or runs with \
                     ACLPROF_WATCH=0 (no {})",
                    marker(&dir, pid).display()
                ),
            )
        }
    }
    let until = Instant::now() + ANSWER_TIMEOUT;
    let mut asked: Option<Instant> = None;
    loop {
        match connect(pid, &path) {
            Ok(a) => return Ok(a),
            Err(Try::Fail(e)) => return Err(e),
            Err(Try::Again) => {}
        }
        if Instant::now() >= until {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "process {pid} did not answer in {} s: it answers at its next call into \
                     aclprof (an op it reports, or an acl call), unless it replaced aclprof's \
                     SIGURG handler",
                    ANSWER_TIMEOUT.as_secs()
                ),
            );
        }
        // Ask (again each second: a request can cross an agent that is ending).
        if asked.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            ask(&dir, pid)?;
            asked = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Leaves the request file and sends the signal.
fn ask(dir: &Path, pid: u32) -> Result<()> {
    let denied = |what: String| {
        err(
            ACL_ERROR_INVALID_PARAM,
            format!("permission denied: only the process's user or root may watch it ({what})"),
        )
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(request(dir, pid))
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return denied(dir.display().to_string())
        }
        Err(e) => {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("{}: {e}", request(dir, pid).display()),
            )
        }
    }
    // SAFETY: kill with a valid signal number.
    if unsafe { libc::kill(pid as i32, ATTACH_SIGNAL) } != 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EPERM) => denied(format!("signal: {e}")),
            _ => err(ACL_ERROR_INVALID_PARAM, format!("process {pid}: {e}")),
        };
    }
    Ok(())
}

/// One try: connects to the socket and takes the ring.
fn connect(pid: u32, path: &Path) -> std::result::Result<Attached, Try> {
    let fail = |m: String| Try::Fail(Error::new(ACL_ERROR_INVALID_PARAM, m));
    let conn = UnixStream::connect(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => fail(format!(
            "permission denied: only the process's user or root may watch it ({})",
            path.display()
        )),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => Try::Again,
        _ => fail(format!("{}: {e}", path.display())),
    })?;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    if (&conn)
        .write_all(format!("ATTACH {PROTOCOL}\n").as_bytes())
        .is_err()
    {
        return Err(Try::Again); // (the agent was ending)
    }
    let (line, fd) = match recv_fd(&conn) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(Try::Again),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Err(Try::Again),
        Err(e) => return Err(fail(format!("process {pid}: {e}"))),
    };
    let line = line.trim_end().to_string();
    // A descriptor that came with anything but OK is closed as it is dropped.
    let Some(fd) = fd.filter(|_| line.starts_with("OK ")) else {
        let why = line.strip_prefix("REFUSED ").unwrap_or(&line);
        return Err(fail(format!("process {pid} refused: {why}")));
    };
    // The ring holds its own descriptor; this one closes at the end of the scope.
    let opened = crate::transport::ring::Ring::open(None, Some(fd.as_raw_fd()));
    let reader = opened.and_then(crate::transport::ring::Reader::attach);
    let reader = reader.map_err(Try::Fail)?;
    Ok(Attached { conn, reader })
}
/// Receives one message: its text and the fd it carries, if any (owned: closed when dropped).
fn recv_fd(s: &UnixStream) -> std::io::Result<(String, Option<std::os::fd::OwnedFd>)> {
    let mut data = [0u8; 512];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut ctl = vec![0u8; fd_space()];
    let mut msg = one_fd_msg(&mut iov, &mut ctl);
    // SAFETY: msg points at live buffers for the duration of recvmsg; the control data is
    // read only inside what the kernel filled in.
    unsafe {
        let n = libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the process closed the connection",
            ));
        }
        let mut fd = None;
        let c = libc::CMSG_FIRSTHDR(&msg);
        if !c.is_null() && (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS
        {
            let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>());
            // SAFETY: SCM_RIGHTS gave this process a new descriptor, owned by no one else.
            fd = Some(<std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw));
        }
        Ok((
            String::from_utf8_lossy(&data[..n as usize]).into_owned(),
            fd,
        ))
    }
}

/// Process `pid`'s command line, its arguments joined by spaces ("" if it cannot be read).
pub fn command_of(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// A process that can be watched: its pid and command line.
pub struct Watchable {
    pub pid: u32,
    pub command: String,
}

/// The processes of `uid` (root: of every user whose directory it can read) that can be
/// watched. Markers of processes that ended are removed.
pub fn list(uid: u32) -> Vec<Watchable> {
    let mut dirs = vec![dir_of(uid)];
    if uid == 0 && std::env::var_os("ACLPROF_WATCH_DIR").is_none() {
        if let Ok(rd) = std::fs::read_dir("/tmp") {
            for e in rd.flatten() {
                let n = e.file_name();
                if n.to_string_lossy().starts_with("aclprof-") && e.path() != dirs[0] {
                    dirs.push(e.path());
                }
            }
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_suffix(".agent")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            // A marker whose process ended (or whose pid another process has now) is stale:
            // it goes, with the files beside it.
            let started = std::fs::read_to_string(e.path())
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok());
            if start_time(pid).is_none() || started != start_time(pid) {
                for p in [e.path(), socket(&d, pid), request(&d, pid)] {
                    let _ = std::fs::remove_file(p);
                }
                continue;
            }
            let command = command_of(pid);
            out.push(Watchable { pid, command });
        }
    }
    out.sort_by_key(|w| w.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_user_or_root_may_attach() {
        assert!(may_attach(1000, 1000));
        assert!(may_attach(1000, 0));
        assert!(!may_attach(1000, 1001));
        assert!(!may_attach(0, 1000));
    }

    #[test]
    fn the_socket_directory_must_be_private_and_ours() {
        let base = std::env::temp_dir().join(format!("aclprof-watch-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let d = base.join("new");
        private_dir(&d, me).unwrap();
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(private_dir(&d, me)
            .unwrap_err()
            .contains("others may enter"));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(private_dir(&d, me + 1)
            .unwrap_err()
            .contains("owned by uid"));
        let link = base.join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(private_dir(&link, me)
            .unwrap_err()
            .contains("not a directory"));
        let _ = std::fs::remove_dir_all(&base);
    }
}
