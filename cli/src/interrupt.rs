//! Outputs written under a temporary name beside where they go, then renamed into place
//! together, so a page and its timeline appear whole or not at all; and removed if the
//! command is interrupted (SIGINT, SIGTERM, SIGHUP) before that.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Staging paths not yet renamed into place.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

fn remove(p: &Path) {
    if p.is_dir() {
        let _ = std::fs::remove_dir_all(p);
    } else {
        let _ = std::fs::remove_file(p);
    }
}

/// From now on, an interrupting signal removes what is staged and ends the command with
/// 128 + the signal's number, as the shell reports it. Call before starting threads: they
/// inherit the blocked signals, which one thread of its own waits for. (Not for a command
/// that starts a program: it would inherit them blocked.)
pub fn clean_up_when_interrupted() {
    // SAFETY: plain signal-set calls on a local set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let _ = std::thread::Builder::new()
        .name("aclprof-signals".into())
        .spawn(move || {
            let mut sig = 0;
            // SAFETY: waits for one of the signals blocked above.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                // Never between two renames of one set of outputs; held until exit.
                let _g = COMMITTING.lock().unwrap_or_else(|p| p.into_inner());
                for p in pending().drain(..) {
                    remove(&p);
                }
                std::process::exit(128 + sig);
            }
        });
}

/// A file or directory being written under a temporary name beside `target`; removed when
/// dropped unless [`Staged::finish`] moved it into place.
pub struct Staged {
    path: PathBuf,
    done: bool,
}

impl Staged {
    pub fn beside(target: &Path) -> Staged {
        let name = target
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let path = target.with_file_name(format!(".{name}.partial-{}", std::process::id()));
        remove(&path);
        pending().push(path.clone());
        Staged { path, done: false }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Puts it in place of `target`, which it replaces whole (a directory's files that the
    /// new one does not have go with it).
    pub fn finish(mut self, target: &Path) -> std::io::Result<()> {
        if self.path.is_dir() && target.is_dir() {
            std::fs::remove_dir_all(target)?;
        }
        std::fs::rename(&self.path, target)?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        pending().retain(|p| p != &self.path);
        if !self.done {
            remove(&self.path);
        }
    }
}

/// Held while outputs are renamed into place: the signal thread takes it before it cleans
/// up, so an interruption comes before a set of outputs is renamed or after all of it is.
static COMMITTING: Mutex<()> = Mutex::new(());

/// Outputs that appear together: each is written under a temporary name beside its target
/// and all are renamed into place at [`Outputs::commit`], in the order they were staged
/// (a timeline before the page that loads it).
#[derive(Default)]
pub struct Outputs {
    staged: Vec<(Staged, PathBuf)>,
}

impl Outputs {
    /// Where to write what becomes `target` at commit.
    pub fn stage(&mut self, target: &Path) -> PathBuf {
        let s = Staged::beside(target);
        let p = s.path().to_path_buf();
        self.add(s, target);
        p
    }

    /// Adds `s`, already written, to become `target` at commit.
    pub fn add(&mut self, s: Staged, target: &Path) {
        self.staged.push((s, target.to_path_buf()));
    }

    /// The targets, in the order they were staged.
    pub fn targets(&self) -> impl Iterator<Item = &Path> {
        self.staged.iter().map(|(_, t)| t.as_path())
    }

    /// Writes `bytes` to become `target` at commit.
    pub fn write(&mut self, target: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let p = self.stage(target);
        std::fs::write(p, bytes)
    }

    /// Whether `target` is among the outputs.
    pub fn has(&self, target: &Path) -> bool {
        self.staged.iter().any(|(_, t)| t == target)
    }

    /// Renames every output into place, then removes `stale` (what an earlier run of the
    /// same command wrote and this one does not), all before an interruption takes effect.
    pub fn commit(self, stale: &[PathBuf]) -> std::io::Result<()> {
        let _g = COMMITTING.lock().unwrap_or_else(|p| p.into_inner());
        for (s, target) in self.staged {
            s.finish(&target)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", target.display())))?;
        }
        for p in stale {
            remove(p);
        }
        Ok(())
    }
}
