//! No panic crosses into C: every exported function runs its body under [`guard`], and so
//! do the library's own C callbacks (the exit handler of environment-variable profiling).

use crate::error;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; if it panics, logs the panic and returns `fallback` instead of unwinding into C.
#[inline(always)]
pub fn guard<R>(func: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let line = format!("{func}: internal error (panic: {what}); please report it");
            log::error!("{line}");
            error::set_last(line);
            fallback
        }
    }
}

/// [`guard`] for code that returns nothing (exit handlers).
pub fn guard_void(func: &str, f: impl FnOnce()) {
    guard(func, (), f)
}
