//! Asymmetric fences: a cheap one for the reporting thread, which runs on every op, and an
//! expensive one for the rare side (the flusher letting a subscription go idle, an
//! unsubscribe closing one). Together they order a store before a load on both sides, as
//! two `SeqCst` fences would: each side stores its flag, fences, and loads the other's, so
//! at least one of them sees the other's store.
//!
//! The light fence is a compiler fence; the heavy one runs `membarrier()`, which makes
//! every running thread of the process execute a full barrier. Where `membarrier` cannot be
//! registered (kernels before 4.14, seccomp), both are `SeqCst` fences. Under loom both are
//! `SeqCst` fences, which is what the pair guarantees.

use crate::sync::fence;
use std::sync::atomic::{compiler_fence, Ordering};

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Whether this process registered for `membarrier` (set before any subscription exists,
/// by [`register`]; a forked child registers again before its first subscription).
static HEAVY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integers and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
}

/// Registers the process for the heavy fence. Called before the process's first
/// subscription starts, so every reporting thread that can reach one sees the outcome.
pub fn register() {
    let ok = !cfg!(loom) && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
    HEAVY.store(ok, Ordering::Release);
}

/// The reporting thread's side: between its store and its load.
#[inline(always)]
pub fn light() {
    if HEAVY.load(Ordering::Relaxed) {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The rare side: between its store and its load.
pub fn heavy() {
    if HEAVY.load(Ordering::Relaxed) && !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
        // Registered, yet refused: the kernel documents no such case once registration
        // succeeded. Say so, and fence for real on both sides from now on.
        HEAVY.store(false, Ordering::Relaxed);
        log::error!("aclprof: membarrier() failed after registration; using full fences");
    }
    fence(Ordering::SeqCst);
}
