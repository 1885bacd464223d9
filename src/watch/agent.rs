//! The agent inside the watched process: marks the process watchable, answers a viewer's
//! request on the thread that next calls into the library, serves viewers from a thread of
//! its own, and taps every op into the ring each viewer reads.

use super::{
    dir_of, fdpass, marker, may_attach, private_dir, protocol, request, socket, start_time,
    ATTACH_SIGNAL, RING_RECORDS,
};
use crate::fork::{global, Mutex, Rank};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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
        let why = format!(
            "only uid {uid} (the process's user) or root may watch it; you are uid {peer_uid}"
        );
        let _ = w.write_all(protocol::refused(&why).as_bytes());
        return Ok(());
    }
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut r = BufReader::new(&conn);
    let mut hello = String::new();
    std::io::Read::take(&mut r, protocol::MAX_LINE)
        .read_line(&mut hello)
        .map_err(|e| e.to_string())?;
    if !protocol::is_attach(&hello) {
        let why = format!(
            "this process speaks protocol {} (aclprof {})",
            protocol::VERSION,
            env!("CARGO_PKG_VERSION")
        );
        let _ = w.write_all(protocol::refused(&why).as_bytes());
        return Ok(());
    }
    // A viewer whose process has ended leaves as soon as its session sees the connection
    // close: the next one waits for that rather than being refused.
    let until = Instant::now() + Duration::from_secs(5);
    while let Err(other) =
        VIEWER.compare_exchange(0, peer_pid.max(1), Ordering::AcqRel, Ordering::Acquire)
    {
        if crate::transport::ring::pid_alive(other as u32) || Instant::now() >= until {
            let why =
                format!("another viewer (pid {other}) is watching this process; one at a time");
            let _ = w.write_all(protocol::refused(&why).as_bytes());
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
    let line = protocol::ok(std::process::id(), RING_RECORDS);
    if let Err(e) = fdpass::send_fd(conn, line.as_bytes(), tap.ring.fd()) {
        tap.remove();
        return Err(format!("sending the ring: {e}"));
    }
    log::info!("aclprof: watcher attached (pid {peer_pid}, uid {peer_uid})");
    // Serve the viewer until it leaves: EOF, an error, or its process ending (the kernel
    // then closes its end). It may ask for the device memory pools' totals (MEMORY); any
    // other line is ignored, and a line is at most MAX_LINE bytes.
    let _ = conn.set_read_timeout(None);
    let mut lines = BufReader::new(conn);
    let mut last = Vec::new();
    loop {
        let mut line = String::new();
        match std::io::Read::take(&mut lines, protocol::MAX_LINE).read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if protocol::is_memory(&line) {
            // The last totals again if a program thread holds the pools this instant.
            if let Some(t) = crate::memory::try_totals() {
                last = t
                    .iter()
                    .map(|(d, p, t)| protocol::PoolTotals {
                        device: *d,
                        pool: p.label().to_string(),
                        allocated: t.allocated,
                        reserved: t.reserved,
                    })
                    .collect();
            }
            if (&*conn)
                .write_all(protocol::memory(&last).as_bytes())
                .is_err()
            {
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
