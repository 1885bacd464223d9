//! The viewer's side of watching a live process (`aclprof top`, `capture`, `top --serve`):
//! asks a process's agent to listen, connects, and maps the ring it is given. Only the
//! command line watches, so this is here and not in the library the watched program loads;
//! the watch directory, the protocol's lines and the descriptor passing are the library's
//! (`aclprof::watch`), shared with the agent.

use aclprof::error::*;
use aclprof::watch::{
    dir_of, fdpass, marker, protocol, request, socket, start_time, ATTACH_SIGNAL,
};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use protocol::PoolTotals;

/// The viewer's side: a connection to the agent of process `pid`.
pub struct Attached {
    /// Keeps the tap open; dropping it detaches.
    conn: UnixStream,
    pub reader: aclprof::transport::ring::Reader,
}

impl Attached {
    /// The watched process's device memory pools now (its agent answers from its own
    /// thread; the program never waits for it), or None if it did not answer in time.
    pub fn memory(&self) -> Option<Vec<PoolTotals>> {
        let _ = self.conn.set_read_timeout(Some(Duration::from_secs(2)));
        (&self.conn)
            .write_all(format!("{}\n", protocol::MEMORY).as_bytes())
            .ok()?;
        let mut line = String::new();
        // (One byte at a time: nothing past this line may be taken from the socket.)
        let mut b = [0u8; 1];
        while !line.ends_with('\n') && line.len() < 1 << 20 {
            match std::io::Read::read(&mut &self.conn, &mut b) {
                Ok(1) => line.push(b[0] as char),
                _ => return None,
            }
        }
        protocol::parse_memory(&line)
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
    if (&conn).write_all(protocol::attach().as_bytes()).is_err() {
        return Err(Try::Again); // (the agent was ending)
    }
    let (line, fd) = match fdpass::recv_fd(&conn) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(Try::Again),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Err(Try::Again),
        Err(e) => return Err(fail(format!("process {pid}: {e}"))),
    };
    // A descriptor that came with anything but OK is closed as it is dropped.
    let fd = match (protocol::parse_answer(&line), fd) {
        (Ok(()), Some(fd)) => fd,
        (Ok(()), None) => return Err(fail(format!("process {pid} sent no ring"))),
        (Err(why), _) => return Err(fail(format!("process {pid} refused: {why}"))),
    };
    // The ring holds its own descriptor; this one closes at the end of the scope.
    let opened = aclprof::transport::ring::Ring::open(None, Some(fd.as_raw_fd()));
    let reader = opened.and_then(aclprof::transport::ring::Reader::attach);
    let reader = reader.map_err(Try::Fail)?;
    Ok(Attached { conn, reader })
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
