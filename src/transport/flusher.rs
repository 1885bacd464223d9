//! The flusher: one library thread that writes partial batches about 10 ms after a
//! reporting thread leaves them. It sleeps on a condition variable while nothing waits to
//! be written, so idle subscriptions cost nothing; it runs only while records wait.
//!
//! A subscription stays on the list while its lanes keep filling; after two passes that
//! found nothing to write, the flusher lets it go. Reporters publish a record and then read
//! `armed` with no fence, so letting go is careful: the flusher clears `armed`, runs
//! `membarrier()` (a full barrier on every thread of the process), and looks at the lanes
//! once more: a reporter either published before that barrier (the flusher sees the
//! record) or reads `armed` after it (and arms again). The pair of fences is
//! `super::barrier`'s.

use super::Sub;
use crate::error::{err, Result, ACL_ERROR_PROFILING_FAILURE};
use crate::fork::{global, Mutex, Rank};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar};
use std::time::Instant;

struct Queue {
    /// When each subscription is due, and how many passes in a row found it empty.
    due: Vec<(Instant, Arc<Sub>, u32)>,
}

/// Empty passes before the flusher lets a subscription go.
const IDLE_PASSES: u32 = 2;

global! {
    /// What is due. In a forked child the list is the parent's (those subscriptions are
    /// orphaned), and there is no flusher thread until one is needed.
    static QUEUE: Mutex<Queue> = Mutex::reset_in_child(Rank::FlusherQueue, Queue { due: Vec::new() }, |q| {
        std::mem::forget(std::mem::take(&mut q.due));
        RUNNING_IN.store(0, Ordering::Release);
    });
}
static WAKE: Condvar = Condvar::new();
/// The process whose flusher thread is running (0: none); a forked child starts its own.
static RUNNING_IN: AtomicU32 = AtomicU32::new(0);
global! {
    static START: Mutex<()> = Mutex::new(Rank::FlusherStart, ());
}

pub fn ensure_started() -> Result<()> {
    let pid = std::process::id();
    if RUNNING_IN.load(Ordering::Acquire) == pid {
        return Ok(());
    }
    let _one = START.lock();
    if RUNNING_IN.load(Ordering::Acquire) == pid {
        return Ok(());
    }
    // Registration belongs to the process (a forked child must register again), and comes
    // before the process's first subscription, which this precedes.
    super::barrier::register();
    if cfg!(loom) {
        // The models run the flusher's passes themselves (`pass`, `take_due`).
        RUNNING_IN.store(pid, Ordering::Release);
        return Ok(());
    }
    match std::thread::Builder::new()
        .name("aclprof-flush".into())
        .spawn(run)
    {
        Ok(_) => {
            RUNNING_IN.store(pid, Ordering::Release);
            Ok(())
        }
        Err(e) => err(
            ACL_ERROR_PROFILING_FAILURE,
            format!("cannot start the aclprof flusher thread: {e}"),
        ),
    }
}

/// Puts `sub` on the list, due one flush delay from now.
pub fn schedule(sub: Arc<Sub>) {
    schedule_with(sub, 0);
}

#[cfg(loom)]
loom::lazy_static! {
    /// Under loom: the list, for the model's flusher thread (`take_due`).
    static ref LOOM_DUE: crate::sync::Mutex<Vec<(Arc<Sub>, u32)>> =
        crate::sync::Mutex::new(Vec::new());
}

/// Under loom: takes everything on the list, as one wake-up of the flusher does.
#[cfg(all(loom, test))]
pub(super) fn take_due() -> Vec<(Arc<Sub>, u32)> {
    std::mem::take(&mut *LOOM_DUE.lock().unwrap())
}

#[cfg(loom)]
fn schedule_with(sub: Arc<Sub>, idle: u32) {
    LOOM_DUE.lock().unwrap().push((sub, idle));
}

#[cfg(not(loom))]
fn schedule_with(sub: Arc<Sub>, idle: u32) {
    let mut q = QUEUE.lock();
    let was_empty = q.due.is_empty();
    q.due.push((Instant::now() + super::FLUSH_DELAY, sub, idle));
    drop(q);
    if was_empty {
        WAKE.notify_one();
    }
}

fn run() {
    super::fd::block_write_signals_for_good();
    loop {
        let due: Vec<(Arc<Sub>, u32)> = {
            let mut q = QUEUE.lock();
            loop {
                let now = Instant::now();
                match q.due.iter().map(|(t, _, _)| *t).min() {
                    None => q = q.wait(&WAKE, None),
                    Some(t) if t > now => q = q.wait(&WAKE, Some(t - now)),
                    Some(_) => break,
                }
            }
            let now = Instant::now();
            let (ready, later): (Vec<_>, Vec<_>) = q.due.drain(..).partition(|(t, _, _)| *t <= now);
            q.due = later;
            ready.into_iter().map(|(_, s, idle)| (s, idle)).collect()
        };
        pass(due);
    }
}

/// One pass over the subscriptions that are due: each is written, kept on the list while
/// busy, or let go (with the heavy fence and a last look, see the module comment).
pub(super) fn pass(due: Vec<(Arc<Sub>, u32)>) {
    let mut going_idle = Vec::new();
    for (s, idle) in due {
        let (empty, wrote) = s.flush_now();
        if !empty || wrote || idle + 1 < IDLE_PASSES {
            // Still busy (or a full pipe left records): keep it on the list.
            schedule_with(s, if wrote || !empty { 0 } else { idle + 1 });
        } else {
            s.armed.store(false, Ordering::SeqCst);
            going_idle.push(s);
        }
    }
    if going_idle.is_empty() {
        return;
    }
    super::barrier::heavy();
    for s in going_idle {
        // A record published just before `armed` was cleared: look once more.
        let (empty, wrote) = s.flush_now();
        if (!empty || wrote) && !s.armed.swap(true, Ordering::AcqRel) {
            schedule(s);
        }
    }
}
