//! How often, and how long, threads waited for readers: counted where they wait, read by
//! `aclprofExtGetWaits`.

use super::Wait;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// How often, and for how long, threads waited for a reader to make room, since the process
/// started (all subscriptions together), as `aclprofExtGetWaits` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    /// Report calls that found their lane full (`ACLPROF_ON_FULL=block`).
    pub report_waits: u64,
    pub report_wait_ns: u64,
    /// Unsubscribes, stops and flushes that found the fd full.
    pub flush_waits: u64,
    pub flush_wait_ns: u64,
}

/// [`Waits`], as (count, ns) for reports and for flushes. (Counters only, outside the
/// delivery protocol: std's atomics under loom too.)
static WAITS: [[std::sync::atomic::AtomicU64; 2]; 2] =
    [const { [const { std::sync::atomic::AtomicU64::new(0) }; 2] }; 2];

/// The waits so far.
pub fn waits() -> Waits {
    let w = |k: usize, i: usize| WAITS[k][i].load(Ordering::Relaxed);
    Waits {
        report_waits: w(0, 0),
        report_wait_ns: w(0, 1),
        flush_waits: w(1, 0),
        flush_wait_ns: w(1, 1),
    }
}

/// One thread's wait for a reader, counted in [`WAITS`] when it ends, if it waited at all.
pub(super) struct Waited {
    /// 0: a report call; 1: a flush (see [`Waits`]).
    kind: usize,
    since: Option<Instant>,
}

impl Waited {
    pub(super) fn new(kind: usize) -> Waited {
        Waited { kind, since: None }
    }

    /// For a write that waits as `wait` says.
    pub(super) fn start(wait: Wait) -> Waited {
        Waited::new(match wait {
            Wait::Backpressure(_) => 0,
            Wait::Until(_) | Wait::No => 1,
        })
    }

    /// Waits by calling `f` (a sleep or a poll).
    pub(super) fn wait(&mut self, f: impl FnOnce()) {
        self.since.get_or_insert_with(Instant::now);
        f()
    }
}

impl Drop for Waited {
    fn drop(&mut self) {
        if let Some(t) = self.since {
            let ns = t.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            WAITS[self.kind][0].fetch_add(1, Ordering::Relaxed);
            WAITS[self.kind][1].fetch_add(ns, Ordering::Relaxed);
        }
    }
}
