//! The synchronisation primitives of the data path's concurrent core (`transport::lane`,
//! `transport::barrier`, the subscription gate): std's, or loom's when the crate is built
//! with `--cfg loom` for the model checks (`scripts/loom`, docs/design.md, "The delivery
//! protocol"). Everything else uses std directly.

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8};
#[cfg(loom)]
pub use loom::sync::{Mutex, MutexGuard};
#[cfg(loom)]
pub use std::sync::TryLockError;

#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8};
#[cfg(not(loom))]
pub use std::sync::{Mutex, MutexGuard, TryLockError};

/// Gives the CPU to another thread while waiting for one (under loom: lets the model
/// schedule another thread, so a wait loop terminates).
#[inline]
pub fn pause() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::sleep(std::time::Duration::from_micros(20));
}
