//! The flusher: one library thread that writes partial batches about a millisecond after a
//! reporting thread leaves them. It sleeps on a condition variable while nothing waits to
//! be written, so idle subscriptions cost nothing; it runs only while records wait.
//!
//! Reporters publish a record and then read `armed` with no fence. Before the flusher looks
//! at the lanes of a subscription it clears `armed` and runs `membarrier()`, which executes
//! a full barrier on every thread of the process: a reporter either published before that
//! barrier (the flusher sees the record) or reads `armed` after it (and arms again). Where
//! `membarrier` is missing, the flusher looks once more after every pass that wrote
//! something.

use super::Sub;
use crate::error::{err, Result, ACL_ERROR_PROFILING_FAILURE};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

struct Queue {
    due: Vec<(Instant, Arc<Sub>)>,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue { due: Vec::new() });
static WAKE: Condvar = Condvar::new();
static STARTED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integers and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
}

pub fn ensure_started() -> Result<()> {
    let r = STARTED.get_or_init(|| {
        let barrier = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
        std::thread::Builder::new()
            .name("aclprof-flush".into())
            .spawn(move || run(barrier))
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    match r {
        Ok(()) => Ok(()),
        Err(e) => err(
            ACL_ERROR_PROFILING_FAILURE,
            format!("cannot start the aclprof flusher thread: {e}"),
        ),
    }
}

/// Puts `sub` on the list, due one flush delay from now.
pub fn schedule(sub: Arc<Sub>) {
    let mut q = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
    let was_empty = q.due.is_empty();
    q.due.push((Instant::now() + super::FLUSH_DELAY, sub));
    drop(q);
    if was_empty {
        WAKE.notify_one();
    }
}

fn run(barrier: bool) {
    loop {
        let due: Vec<Arc<Sub>> = {
            let mut q = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                let now = Instant::now();
                match q.due.iter().map(|(t, _)| *t).min() {
                    None => q = WAKE.wait(q).unwrap_or_else(|p| p.into_inner()),
                    Some(t) if t > now => {
                        q = WAKE
                            .wait_timeout(q, t - now)
                            .unwrap_or_else(|p| p.into_inner())
                            .0
                    }
                    Some(_) => break,
                }
            }
            let now = Instant::now();
            let (ready, later): (Vec<_>, Vec<_>) = q.due.drain(..).partition(|(t, _)| *t <= now);
            q.due = later;
            ready.into_iter().map(|(_, s)| s).collect()
        };
        for s in &due {
            s.armed.store(false, Ordering::SeqCst);
        }
        let fenced = barrier && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
        if !fenced {
            std::sync::atomic::fence(Ordering::SeqCst);
        }
        for s in due {
            let (empty, wrote) = s.flush_now();
            // Records left (a full pipe, a lane being written) or, without a barrier, a
            // record that may have been missed: look again after another delay.
            if (!empty || (!fenced && wrote)) && !s.armed.swap(true, Ordering::AcqRel) {
                schedule(s);
            }
        }
    }
}
