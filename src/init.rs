//! The library's first use: settings from the environment, then environment-variable
//! profiling if `PROFILING_MODE=true` asks for it. Every C entry point that can start work
//! calls [`ensure`]; the modules below only read [`crate::settings`].

use std::sync::atomic::{AtomicBool, Ordering};

static ENV_MODE_CHECKED: AtomicBool = AtomicBool::new(false);

/// The process-wide settings, after the first-use work.
pub fn ensure() -> &'static crate::settings::Settings {
    let s = crate::settings::get();
    if !ENV_MODE_CHECKED.load(Ordering::Acquire) && !ENV_MODE_CHECKED.swap(true, Ordering::AcqRel) {
        crate::api::start_env_mode();
    }
    s
}
