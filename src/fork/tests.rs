//! The fork protocol over every registered lock: a child forked while another thread holds
//! or hammers a lock takes that lock and exits. The locks come from the registry, not from
//! a list here; `tests/layers.rs` checks that no lock static exists outside it.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn every_rank_has_one_registered_lock() {
    assert_eq!(duplicate(), None, "two locks claim one rank");
    for r in Rank::ALL {
        let l = registered(r).unwrap_or_else(|| panic!("no lock of rank {r:?} is registered"));
        assert_eq!(l.rank(), r);
    }
    for (i, r) in Rank::ALL.iter().enumerate() {
        assert_eq!(*r as usize, i, "Rank::ALL lists the ranks in order");
    }
}

/// Forks `n` children; each takes `lock` (and releases it) under a watchdog, then exits.
/// Returns how many did not exit with 0 (a hang ends in SIGALRM).
fn fork_children(lock: &'static dyn Global, n: usize) -> usize {
    let mut failed = 0;
    for _ in 0..n {
        // SAFETY: the child only takes and releases one lock (its fork handler made it
        // free), then calls _exit; nothing else of the parent's threads is used.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: alarm and _exit are async-signal-safe.
            unsafe { libc::alarm(30) };
            let release = lock.hold();
            release(false);
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        let w = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(w, pid);
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            failed += 1;
        }
    }
    failed
}

/// Another thread holds `lock` for a while, again and again (`hold`), or takes and releases
/// it without pause (hammers), while this thread forks. The holder waits for the first fork
/// to have begun before letting go, so at least one fork meets the lock held.
fn forks_while_in_use(lock: &'static dyn Global, hold: Duration) -> usize {
    let stop = Arc::new(AtomicBool::new(false));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let holder = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut first = true;
            while !stop.load(Ordering::Relaxed) {
                let release = lock.hold();
                if first {
                    held_tx.send(()).unwrap();
                    first = false;
                }
                std::thread::sleep(hold);
                release(false);
            }
        })
    };
    held_rx.recv().unwrap();
    let failed = fork_children(lock, 4);
    stop.store(true, Ordering::Relaxed);
    holder.join().unwrap();
    failed
}

#[test]
fn a_child_takes_every_lock_another_thread_held_or_hammered() {
    for r in Rank::ALL {
        let lock = registered(r).unwrap();
        assert_eq!(
            forks_while_in_use(lock, Duration::from_millis(5)),
            0,
            "{r:?}: a child forked while another thread held it failed or hung"
        );
        assert_eq!(
            forks_while_in_use(lock, Duration::ZERO),
            0,
            "{r:?}: a child forked while another thread hammered it failed or hung"
        );
    }
}

#[test]
#[cfg(debug_assertions)]
fn a_nesting_against_the_order_is_refused() {
    static OUTER: Mutex<()> = Mutex::new(Rank::Configs, ());
    static INNER: Mutex<()> = Mutex::new(Rank::Core, ());
    {
        let _a = OUTER.lock();
        let _b = INNER.lock(); // in order
    }
    let r = std::panic::catch_unwind(|| {
        let _b = INNER.lock();
        let _a = OUTER.lock();
    });
    let msg = r.expect_err("taking an outer lock inside an inner one panics");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("Configs taken while holding Core"), "{msg}");
    // try_lock cannot deadlock: noted, not refused.
    let _b = INNER.lock();
    assert!(OUTER.try_lock().is_some());
}
