//! The library's first use: settings from the environment, then environment-variable
//! profiling if `PROFILING_MODE=true` asks for it (`PROFILING_OPTIONS` holds the result
//! directory and the switches). Every C entry point that can start work calls [`ensure`];
//! the modules below only read [`crate::settings`].

use crate::error::*;
use crate::state::{self, ProfConfig};
use std::sync::atomic::{AtomicBool, Ordering};

static ENV_MODE_CHECKED: AtomicBool = AtomicBool::new(false);

/// The process-wide settings, after the first-use work.
pub fn ensure() -> &'static crate::settings::Settings {
    let s = crate::settings::get();
    crate::fork::watch();
    if !ENV_MODE_CHECKED.load(Ordering::Acquire) && !ENV_MODE_CHECKED.swap(true, Ordering::AcqRel) {
        start_env_mode();
    }
    s
}

/// `PROFILING_OPTIONS` keys (the ones TensorFlow/GE users write) -> ACL_PROF_* bits.
const ENV_SWITCHES: [(&str, u64); 8] = [
    ("task_trace", 0x1 | 0x2),
    ("training_trace", 0x40),
    ("aicpu", 0x8),
    ("l2", 0x10),
    ("hccl", 0x20),
    ("msproftx", 0x80),
    ("runtime_api", 0x100),
    ("task_memory", 0x1000),
];

/// The `aclprofAicoreMetrics` value of an `aic_metrics` name.
fn aicore_metric(name: &str) -> Option<u32> {
    const NAMES: [&str; 9] = [
        "ArithmeticUtilization",
        "PipeUtilization",
        "Memory",
        "MemoryL0",
        "ResourceConflictRatio",
        "MemoryUB",
        "L2Cache",
        "PipelineExecuteUtilization",
        "MemoryAccess",
    ];
    NAMES.iter().position(|n| *n == name).map(|i| i as u32)
}

/// Parses `PROFILING_OPTIONS`: the result root and the config to profile every emulated
/// device with.
pub fn env_mode_config(
    options: &str,
    device_count: u32,
) -> Result<(std::path::PathBuf, ProfConfig)> {
    let v: serde_json::Value = serde_json::from_str(options).or_else(|e| {
        err(
            ACL_ERROR_INVALID_PARAM,
            format!("PROFILING_OPTIONS is not JSON: {e}"),
        )
    })?;
    let Some(output) = v
        .get("output")
        .and_then(|o| o.as_str())
        .filter(|o| !o.is_empty())
    else {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "PROFILING_OPTIONS needs \"output\": the result directory",
        );
    };
    let on = |k: &str| v.get(k).and_then(|x| x.as_str()) == Some("on");
    let mut data_type = ENV_SWITCHES
        .iter()
        .filter(|(k, _)| on(k))
        .fold(0, |a, (_, b)| a | b);
    let mut metric = state::ACL_AICORE_NONE;
    if let Some(m) = v
        .get("aic_metrics")
        .and_then(|x| x.as_str())
        .filter(|m| !m.is_empty())
    {
        match aicore_metric(m) {
            Some(i) => {
                metric = i;
                data_type |= 0x4;
            }
            None => {
                return err(
                    ACL_ERROR_INVALID_PARAM,
                    format!("PROFILING_OPTIONS aic_metrics {m:?} is not a metric name"),
                )
            }
        }
    }
    if data_type == 0 {
        data_type = 0x1 | 0x2; // nothing switched on: collect what the op summary needs
    }
    let id = crate::api::next_config_id();
    let point = |k: &str| {
        v.get(k)
            .and_then(|x| x.as_str())
            .filter(|p| !p.is_empty())
            .map(str::to_string)
    };
    let config = ProfConfig {
        id,
        devices: (0..device_count).collect(),
        aicore_metrics: metric,
        data_type,
        fp_point: point("fp_point"),
        bp_point: point("bp_point"),
    };
    Ok((std::path::PathBuf::from(output), config))
}

/// Environment-variable profiling: with `PROFILING_MODE=true`, profile every model from the
/// first reported op and write the result directory at process exit.
fn start_env_mode() {
    if std::env::var("PROFILING_MODE").as_deref() != Ok("true") {
        return;
    }
    let options = std::env::var("PROFILING_OPTIONS").unwrap_or_default();
    let r = env_mode_config(&options, crate::settings::get().device_count)
        .and_then(|(root, config)| crate::api::start_env_session(&root, &config));
    match r {
        // SAFETY: registers a plain extern "C" function.
        Ok(()) => unsafe {
            libc::atexit(end_env_mode);
        },
        Err(e) => {
            log::error!(
                "aclprof: PROFILING_MODE=true but profiling could not start: {}",
                e.msg
            );
            crate::error::set_last(format!("PROFILING_MODE: {}", e.msg));
        }
    }
}

/// At process exit: stop environment-variable profiling and export its result directory.
extern "C" fn end_env_mode() {
    crate::panic::guard_void("aclprof exit handler", || {
        if let Some(Err(e)) = crate::api::end_env_session() {
            log::error!(
                "aclprof: exporting the PROFILING_MODE results failed: {}",
                e.msg
            );
        }
    });
}
