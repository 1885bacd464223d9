//! Watching a live process: lets `aclprof top` and `aclprof capture` look at this process
//! while it runs, with no change to the program (docs/design.md, "Watching a live process"; the
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
//!
//! Here: the watch directory and its files, which both sides use; the agent inside the
//! watched process ([`agent`]); the lines the two sides exchange, encoded and parsed in one
//! place ([`protocol`]); and the passing of the ring's descriptor ([`fdpass`]). The viewer's
//! side lives in the command line, the only program that uses it.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

mod agent;
pub mod fdpass;
pub mod protocol;
pub use agent::{answer_now, start};

/// Records per lane of a watcher's ring (8 lanes of 512-byte records: 16 MiB at most).
pub const RING_RECORDS: u64 = 4096;
/// The signal that asks a process to listen for a viewer. `SIGURG`'s default action is to
/// ignore it, so a process that does not use the library (or a pid reused since) is not
/// harmed by one; a handler the program had is still called (docs/design.md).
pub const ATTACH_SIGNAL: i32 = libc::SIGURG;
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
pub fn marker(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.agent"))
}
pub fn request(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.attach"))
}
pub fn socket(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22):
/// with the pid, it names one process, not whichever reused the number.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: the fields follow the last ')'.
    s[s.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)
        .and_then(|f| f.parse().ok())
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
