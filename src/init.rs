//! The library's first use: settings from the environment, then environment-variable
//! profiling if `PROFILING_MODE=true` asks for it (`PROFILING_OPTIONS` holds the result
//! directory and the switches). Every C entry point that can start work calls [`ensure`];
//! the modules below only read [`crate::settings`].

use crate::error::*;
use crate::formats::acl_prof::{
    ACL_PROF_ACL_API, ACL_PROF_AICPU, ACL_PROF_HCCL_TRACE, ACL_PROF_L2CACHE, ACL_PROF_MSPROFTX,
    ACL_PROF_RUNTIME_API, ACL_PROF_TASK_MEMORY, ACL_PROF_TASK_TIME, ACL_PROF_TRAINING_TRACE,
};
use crate::state::ProfConfig;
use std::collections::HashMap;

/// The process-wide settings, after the first-use work. A thread that arrives while
/// another starts environment-variable profiling waits for it, so no op reported from the
/// first calls is missed.
pub fn ensure() -> &'static crate::settings::Settings {
    static ENV_MODE: std::sync::Once = std::sync::Once::new();
    let s = crate::settings::get();
    ENV_MODE.call_once(|| {
        // A panic must not poison the Once (every later call would then panic).
        let _ = std::panic::catch_unwind(start_env_mode);
    });
    crate::watch::start();
    s
}

/// `PROFILING_OPTIONS` keys (the ones TensorFlow/GE users write) -> ACL_PROF_* bits.
/// `task_time` is newer CANN's name for `task_trace` (npu_bridge's default options use it).
const ENV_SWITCHES: [(&str, u64); 9] = [
    ("task_trace", ACL_PROF_ACL_API | ACL_PROF_TASK_TIME),
    ("task_time", ACL_PROF_ACL_API | ACL_PROF_TASK_TIME),
    ("training_trace", ACL_PROF_TRAINING_TRACE),
    ("aicpu", ACL_PROF_AICPU),
    ("l2", ACL_PROF_L2CACHE),
    ("hccl", ACL_PROF_HCCL_TRACE),
    ("msproftx", ACL_PROF_MSPROFTX),
    ("runtime_api", ACL_PROF_RUNTIME_API),
    ("task_memory", ACL_PROF_TASK_MEMORY),
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

/// Whether switch `key` is on, None for a value it does not take: "on" or "off", and for the
/// task switches also CANN's levels "l0" and "l1" (both on).
fn switch_value(key: &str, v: &serde_json::Value) -> Option<bool> {
    match v.as_str()? {
        "on" => Some(true),
        "off" => Some(false),
        "l0" | "l1" if key.starts_with("task_t") => Some(true),
        _ => None,
    }
}

/// Keys of `PROFILING_OPTIONS` that are not switches: those of [`ENV_SETTINGS`] are used
/// (see [`env_mode_settings`]); the others ask for data the emulated device has none of
/// (hardware sampling, ...) and are accepted and ignored.
const ENV_ACCEPTED: [&str; 13] = [
    "storage_limit",
    "ge_api",
    "sys_hardware_mem_freq",
    "llc_profiling",
    "sys_io_sampling_freq",
    "sys_interconnection_freq",
    "dvpp_freq",
    "host_sys",
    "host_sys_usage",
    "host_sys_usage_freq",
    "instr_profiling_freq",
    "op_attr",
    "aic_metrics_freq",
];

/// `PROFILING_OPTIONS` keys that are `aclprofSetConfig` values: (key, config type).
const ENV_SETTINGS: [(&str, i32); 4] = {
    use crate::formats::prof_values::config_type as ct;
    [
        ("sys_hardware_mem_freq", ct::SYS_HARDWARE_MEM_FREQ),
        ("host_sys", ct::HOST_SYS),
        ("host_sys_usage", ct::HOST_SYS_USAGE),
        ("host_sys_usage_freq", ct::HOST_SYS_USAGE_FREQ),
    ]
};

/// The `aclprofSetConfig` values `PROFILING_OPTIONS` gives (`host_sys`, memory and host
/// frequencies, ...), each checked as aclprofSetConfig checks it; a bad one is refused or
/// (environment variable) logged and left out.
pub fn env_mode_settings(options: &str, unknown: Unknown) -> Result<HashMap<i32, String>> {
    let v: serde_json::Value = serde_json::from_str(options).unwrap_or_default();
    let mut out = HashMap::new();
    for (key, ty) in ENV_SETTINGS {
        let Some(val) = v.get(key) else { continue };
        // CANN's options give numbers as strings or numbers.
        let text = match val {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            other => other.to_string(),
        };
        match crate::state::validate_set_config(ty, &text) {
            Ok(()) => {
                out.insert(ty, text);
            }
            Err(why) => {
                let why = format!("PROFILING_OPTIONS {key}: {why}");
                match unknown {
                    Unknown::Refuse => return err(ACL_ERROR_INVALID_PARAM, why),
                    Unknown::Warn => log::warn!("aclprof: {why}; ignored"),
                }
            }
        }
    }
    Ok(out)
}

/// How `PROFILING_OPTIONS`-style JSON treats keys it does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// Log each one and go on (the environment variable: a typo must not stop the program).
    Warn,
    /// Refuse the options, naming the key (`aclprofExtOptionsStart`, which returns errors).
    Refuse,
}

/// Parses `PROFILING_OPTIONS`: the result root and the config to profile every emulated
/// device with. Switches take "on" or "off".
pub fn env_mode_config(
    options: &str,
    device_count: u32,
    unknown: Unknown,
) -> Result<(std::path::PathBuf, ProfConfig)> {
    let v: serde_json::Value = serde_json::from_str(options).or_else(|e| {
        err(
            ACL_ERROR_INVALID_PARAM,
            format!("PROFILING_OPTIONS is not JSON: {e}"),
        )
    })?;
    let Some(map) = v.as_object() else {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "PROFILING_OPTIONS is not a JSON object",
        );
    };
    for (k, val) in map {
        let switch = ENV_SWITCHES.iter().any(|(s, _)| s == k);
        let text = ["output", "fp_point", "bp_point", "aic_metrics"].contains(&k.as_str());
        let known = switch || text || ENV_ACCEPTED.contains(&k.as_str());
        let why = if !known {
            Some(format!("PROFILING_OPTIONS has an unknown key {k:?}"))
        } else if switch && switch_value(k, val).is_none() {
            Some(format!(
                "PROFILING_OPTIONS {k:?} must be \"on\" or \"off\", not {val}"
            ))
        } else if text && !val.is_string() {
            Some(format!(
                "PROFILING_OPTIONS {k:?} must be a string, not {val}"
            ))
        } else if k == "aic_metrics"
            && val
                .as_str()
                .is_some_and(|m| !m.is_empty() && aicore_metric(m).is_none())
        {
            Some(format!(
                "PROFILING_OPTIONS aic_metrics {val} is not a metric name"
            ))
        } else {
            None
        };
        match (why, unknown) {
            (Some(why), Unknown::Refuse) => return err(ACL_ERROR_INVALID_PARAM, why),
            (Some(why), Unknown::Warn) => log::warn!("aclprof: {why}; ignored"),
            (None, _) => {}
        }
    }
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
    let on = |k: &str| v.get(k).and_then(|x| switch_value(k, x)) == Some(true);
    let mut data_type = ENV_SWITCHES
        .iter()
        .filter(|(k, _)| on(k))
        .fold(0, |a, (_, b)| a | b);
    let mut metric = crate::formats::prof_values::AICORE_NONE;
    if let Some(m) = v
        .get("aic_metrics")
        .and_then(|x| x.as_str())
        .filter(|m| !m.is_empty())
    {
        // (An unknown name was refused or warned about above.)
        if let Some(i) = aicore_metric(m) {
            metric = i;
            data_type |= 0x4;
        }
    }
    if data_type == 0 {
        data_type = ACL_PROF_ACL_API | ACL_PROF_TASK_TIME; // nothing switched on: collect what the op summary needs
    }
    let id = crate::profiler::next_config_id();
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
    match std::env::var("PROFILING_MODE").as_deref() {
        Ok("true") => {}
        Ok("" | "false") | Err(std::env::VarError::NotPresent) => return,
        Ok(other) => {
            log::warn!(
                "aclprof: PROFILING_MODE={other:?} is not \"true\": environment-variable \
                 profiling stays off"
            );
            return;
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            log::warn!("aclprof: PROFILING_MODE is not \"true\": profiling stays off");
            return;
        }
    }
    let options = std::env::var("PROFILING_OPTIONS").unwrap_or_default();
    let r = env_mode_config(&options, crate::settings::get().device_count, Unknown::Warn).and_then(
        |(root, config)| {
            let settings = env_mode_settings(&options, Unknown::Warn)?;
            crate::profiler::start_env_session(&root, &config, &settings)
        },
    );
    match r {
        Ok(()) => export_at_exit(),
        Err(e) => {
            log::error!(
                "aclprof: PROFILING_MODE=true but profiling could not start: {}",
                e.msg
            );
            crate::error::set_last(format!("PROFILING_MODE: {}", e.msg));
        }
    }
}

/// Starts profiling every model as `PROFILING_MODE=true` with these `PROFILING_OPTIONS`
/// would, refusing unknown keys: what framework adapters (aclprof.tensorflow) call.
/// Exported at [`options_stop`] or at process exit.
pub fn options_start(options: &str) -> Result<()> {
    let (root, config) = env_mode_config(
        options,
        crate::settings::get().device_count,
        Unknown::Refuse,
    )?;
    let settings = env_mode_settings(options, Unknown::Refuse)?;
    crate::profiler::start_env_session(&root, &config, &settings)?;
    export_at_exit();
    Ok(())
}

/// Stops what [`options_start`] (or `PROFILING_MODE`) started and exports it.
pub fn options_stop() -> Result<()> {
    crate::profiler::end_env_session().unwrap_or_else(|| {
        err(
            crate::error::ACL_ERROR_PROF_NOT_RUN,
            "no profiling started from PROFILING_OPTIONS is running",
        )
    })
}

/// Registers the exit handler that exports a session still running at exit, once.
fn export_at_exit() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain extern "C" function.
    REGISTERED.call_once(|| unsafe {
        libc::atexit(end_env_mode);
    });
}

/// At process exit: stop environment-variable profiling and export its result directory.
extern "C" fn end_env_mode() {
    crate::panic::guard_void("aclprof exit handler", || {
        if let Some(Err(e)) = crate::profiler::end_env_session() {
            log::error!(
                "aclprof: exporting the PROFILING_MODE results failed: {}",
                e.msg
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str, u: Unknown) -> std::result::Result<ProfConfig, String> {
        env_mode_config(s, 2, u).map(|(_, c)| c).map_err(|e| e.msg)
    }

    #[test]
    fn switches_metrics_and_points() {
        let c = parse(
            r#"{"output":"/tmp/x","task_trace":"on","training_trace":"on","hccl":"off",
                "aic_metrics":"PipeUtilization","fp_point":"a","bp_point":"b","storage_limit":"200MB"}"#,
            Unknown::Refuse,
        )
        .unwrap();
        assert_eq!(c.data_type, 0x1 | 0x2 | 0x40 | 0x4);
        assert_eq!(c.aicore_metrics, 1);
        assert_eq!(
            (c.fp_point.as_deref(), c.bp_point.as_deref()),
            (Some("a"), Some("b"))
        );
        assert_eq!(c.devices, vec![0, 1]);
    }

    #[test]
    fn unknown_keys_refused_by_name_or_warned() {
        let s = r#"{"output":"/tmp/x","task_trace":"on","trainig_trace":"on"}"#;
        let e = parse(s, Unknown::Refuse).unwrap_err();
        assert!(e.contains("\"trainig_trace\""), "{e}");
        assert_eq!(parse(s, Unknown::Warn).unwrap().data_type, 0x1 | 0x2);
        let e = parse(r#"{"output":"/tmp/x","aicpu":true}"#, Unknown::Refuse).unwrap_err();
        assert!(e.contains("\"aicpu\" must be \"on\" or \"off\""), "{e}");
        let e = parse(r#"{"output":"/tmp/x","hccl":"l1"}"#, Unknown::Refuse).unwrap_err();
        assert!(e.contains("\"hccl\" must be"), "{e}");
    }

    #[test]
    fn bad_metric_names_and_non_string_values_refused_or_warned() {
        for (s, says) in [
            (
                r#"{"output":"/tmp/x","aic_metrics":"Pipe"}"#,
                "\"Pipe\" is not a metric name",
            ),
            (
                r#"{"output":"/tmp/x","aic_metrics":1}"#,
                "\"aic_metrics\" must be a string",
            ),
            (
                r#"{"output":"/tmp/x","fp_point":["a"]}"#,
                "\"fp_point\" must be a string",
            ),
        ] {
            let e = parse(s, Unknown::Refuse).unwrap_err();
            assert!(e.contains(says), "{e}");
            // The environment variable: a typo must not stop profiling.
            let c = parse(s, Unknown::Warn).unwrap();
            assert_eq!(
                (c.aicore_metrics, c.data_type),
                (crate::formats::prof_values::AICORE_NONE, 0x1 | 0x2)
            );
            assert_eq!(c.fp_point, None);
        }
    }

    #[test]
    fn task_time_is_task_trace_and_takes_levels() {
        // npu_bridge's default options say task_time; CANN also takes the levels l0 and l1.
        for s in [
            r#"{"output":"/tmp/x","task_time":"on","training_trace":"on"}"#,
            r#"{"output":"/tmp/x","task_time":"l1","training_trace":"on"}"#,
            r#"{"output":"/tmp/x","task_trace":"l0","training_trace":"on"}"#,
        ] {
            assert_eq!(
                parse(s, Unknown::Refuse).unwrap().data_type,
                0x1 | 0x2 | 0x40,
                "{s}"
            );
        }
        let off = r#"{"output":"/tmp/x","task_time":"off","training_trace":"on"}"#;
        assert_eq!(parse(off, Unknown::Refuse).unwrap().data_type, 0x40);
    }

    #[test]
    fn bad_json_and_missing_output() {
        assert!(parse("{", Unknown::Warn).unwrap_err().contains("not JSON"));
        assert!(parse("[1]", Unknown::Warn)
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(parse(r#"{"task_trace":"on"}"#, Unknown::Refuse)
            .unwrap_err()
            .contains("needs \"output\""));
    }
}
