//! `fork()`: a child starts with profiling state of its own.
//!
//! Python's `multiprocessing` and pre-forking servers fork processes whose other threads may
//! be inside the library. Before a fork, the forking thread takes every global lock of the
//! library (in the order the code nests them), so none is held by a thread that will not
//! exist in the child. The parent then simply releases them. The child resets what it
//! inherited before releasing: it is not initialised, has no subscriptions and no file-mode
//! session, its statistics start from zero, and the parent's subscriptions are orphaned:
//! the child never writes the parent's records, never closes its fds, and never exports its
//! session. Loaded models, configs and other handles stay valid, so a child can subscribe a
//! model it inherited anew. See docs/design.md ("Fork").
//!
//! This module is only the mechanism, at the bottom of the crate: each module that holds
//! global state exports a `fork_prepare`, and the top (the `init` module) hands the list,
//! in lock order, to [`watch`], so no module imports upward to reach them.

use std::cell::RefCell;

/// What a module holds across a fork: called once with `true` in the child (reset, then
/// release) or `false` in the parent (release).
pub type Release = Box<dyn FnOnce(bool)>;

/// Takes one module's locks before a fork; what it returns releases them after.
pub type Prepare = fn() -> Vec<Release>;

static PREPARES: std::sync::OnceLock<&'static [Prepare]> = std::sync::OnceLock::new();

thread_local! {
    static HELD: RefCell<Vec<Release>> = const { RefCell::new(Vec::new()) };
}

extern "C" fn prepare() {
    crate::panic::guard_void("aclprof fork handler", || {
        let held: Vec<Release> = PREPARES
            .get()
            .iter()
            .flat_map(|ps| ps.iter())
            .flat_map(|p| p())
            .collect();
        HELD.with(|h| *h.borrow_mut() = held);
    });
}

fn release(child: bool) {
    crate::panic::guard_void("aclprof fork handler", || {
        let held = HELD.with(|h| std::mem::take(&mut *h.borrow_mut()));
        for r in held.into_iter().rev() {
            r(child);
        }
    });
}

extern "C" fn in_parent() {
    release(false);
}

extern "C" fn in_child() {
    release(true);
}

/// Registers the handlers, which run `prepares` in order before a fork (once per process;
/// the library's first use calls this).
pub fn watch(prepares: &'static [Prepare]) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = PREPARES.set(prepares);
        // SAFETY: registers plain extern "C" functions that never unwind.
        unsafe { libc::pthread_atfork(Some(prepare), Some(in_parent), Some(in_child)) };
    });
}
