//! The process-wide profiling state machine (docs/design.md, "The state machine").
//!
//! ```text
//!            aclprofInit                 aclprofStart            aclprofStop
//!   Off ───────────────────▶ ApiCtrl{idle} ─────────▶ ApiCtrl{running} ─────▶ ApiCtrl{idle}
//!    ▲                          │  aclprofFinalize (stops a running session too)  │
//!    └──────────────────────────┴─────────────────────────────────────────────────┘
//!    │ first aclprofModelSubscribe            last aclprofModelUnSubscribe
//!    └──────────────────────────▶ Subscribe ───────────────────────────────────▶ Off
//! ```
//!
//! File mode (ApiCtrl) and subscription exclude each other (148047). All checks are pure
//! functions of [`Core`], so the legality table is unit-tested on fresh instances.

use crate::error::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::formats::acl_prof::ACL_PROF_MSPROFTX;
use crate::formats::prof_values::{AICORE_NONE as ACL_AICORE_NONE, DATA_TYPE_MASK};
/// Result path limit, bytes.
pub const MAX_PATH: usize = 4096;
pub const MAX_CONFIG_VALUE: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    ApiCtrl,
    Subscribe,
    /// Profiling driven from outside the API (`PROFILING_MODE=true`): every file-mode
    /// control call answers ACL_ERROR_PROF_ALREADY_RUN, as in CANN's CMD mode; subscriptions
    /// work beside it (see docs/compatibility.md).
    Cmd,
}

fn cmd_mode<T>(what: &str) -> Result<T> {
    err(
        ACL_ERROR_PROF_ALREADY_RUN,
        format!("{what}: profiling is driven by PROFILING_MODE/PROFILING_OPTIONS in this process"),
    )
}

/// What `aclprofCreateConfig` built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfConfig {
    pub id: u64,
    pub devices: Vec<u32>,
    pub aicore_metrics: u32,
    pub data_type: u64,
    /// The op names that start and end a step's forward-backward pass (`PROFILING_OPTIONS`
    /// `fp_point`/`bp_point`); steps are cut at each `fp_point` op.
    pub fp_point: Option<String>,
    pub bp_point: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Running {
    pub config: ProfConfig,
    pub dir_index: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DeviceSub {
    models: u32,
    time_info: bool,
    aicore_metrics: u32,
}

#[derive(Debug)]
pub struct Core {
    pub mode: Mode,
    pub result_path: Option<PathBuf>,
    pub running: Option<Running>,
    /// Config id of the last start in this process (never reset, like CANN's).
    last_started: Option<u64>,
    /// `aclprofSetConfig` values, by type.
    set_config: HashMap<i32, String>,
    /// PROF_ directory counter, never reset.
    pub start_index: u64,
    device_subs: HashMap<u32, DeviceSub>,
    /// Subscribed model -> its device.
    subscribed: HashMap<u32, u32>,
}

impl Default for Core {
    fn default() -> Self {
        Core {
            mode: Mode::Off,
            result_path: None,
            running: None,
            last_started: None,
            set_config: HashMap::new(),
            start_index: 0,
            device_subs: HashMap::new(),
            subscribed: HashMap::new(),
        }
    }
}

fn conflict<T>(what: &str) -> Result<T> {
    err(
        ACL_ERROR_PROF_API_CONFLICT,
        format!(
            "{what} is a file-mode call but models are subscribed; unsubscribe every model first \
             (file mode and subscription exclude each other)"
        ),
    )
}

fn not_inited<T>(what: &str) -> Result<T> {
    err(
        ACL_ERROR_PROF_NOT_RUN,
        format!("{what} needs aclprofInit first"),
    )
}

/// Validates a config passed to start/stop (CANN's warmup/stop precheck).
pub fn check_config(c: &ProfConfig) -> Result<()> {
    if c.data_type == 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "the config's dataTypeConfig is 0: nothing to profile",
        );
    }
    let bad = c.data_type & !DATA_TYPE_MASK;
    if bad != 0 {
        return err(
            ACL_ERROR_PROF_MODULES_UNSUPPORTED,
            format!("dataTypeConfig has unknown bits {bad:#x}; use the ACL_PROF_* macros"),
        );
    }
    Ok(())
}

/// `aclprofCreateConfig`'s checks (as CANN's; see docs/compatibility.md), given the
/// emulated device count.
pub fn new_config(
    devices: &[u32],
    aicore_metrics: u32,
    events_given: bool,
    data_type: u64,
    device_count: u32,
    id: u64,
) -> Result<ProfConfig> {
    if events_given {
        return err(ACL_ERROR_INVALID_PARAM, "aicoreEvents must be NULL");
    }
    if devices.len() > 64 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("deviceNums {} is more than 64", devices.len()),
        );
    }
    if devices.len() > device_count as usize {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("deviceNums {} is more than the {device_count} emulated device(s) (ACLPROF_DEVICE_COUNT)", devices.len()),
        );
    }
    for (i, d) in devices.iter().enumerate() {
        if *d >= device_count {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("device id {d} does not exist: there are {device_count} emulated device(s) (ACLPROF_DEVICE_COUNT)"),
            );
        }
        if devices[..i].contains(d) {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("device id {d} is listed twice"),
            );
        }
    }
    if devices.is_empty() && data_type & ACL_PROF_MSPROFTX == 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "a config without devices is only allowed for host-side msproftx (ACL_PROF_MSPROFTX)",
        );
    }
    Ok(ProfConfig {
        id,
        devices: devices.to_vec(),
        aicore_metrics,
        data_type,
        ..Default::default()
    })
}

/// Validates one `aclprofSetConfig` value as CANN does at the next start.
pub fn validate_set_config(ty: i32, v: &str) -> std::result::Result<(), String> {
    let int_in = |lo: u64, hi: u64| match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) && v.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
        _ => Err(format!("must be a whole number in {lo}..={hi}")),
    };
    let list = |allowed: &[&str]| {
        if v.split(',').all(|p| allowed.contains(&p.trim())) {
            Ok(())
        } else {
            Err(format!(
                "must be a comma-separated list of {}",
                allowed.join(", ")
            ))
        }
    };
    use crate::formats::prof_values::config_type::*;
    let r = match ty {
        STORAGE_LIMIT => match v.strip_suffix("MB") {
            Some(d) if !d.is_empty() && d.len() <= 10 && d.bytes().all(|b| b.is_ascii_digit()) => {
                match d.parse::<u64>() {
                    Ok(n) if (200..=u32::MAX as u64).contains(&n) => Ok(()),
                    _ => Err("must be 200MB..4294967295MB".to_string()),
                }
            }
            _ => Err("must be a number of megabytes followed by MB, e.g. 500MB".to_string()),
        },
        SYS_HARDWARE_MEM_FREQ | SYS_IO_FREQ | DVPP_FREQ | LOW_POWER_FREQ => int_in(1, 100),
        SYS_INTERCONNECTION_FREQ | HOST_SYS_USAGE_FREQ => int_in(1, 50),
        LLC_MODE => list(&["read", "write"]),
        HOST_SYS => list(&["cpu", "mem", "disk", "network", "osrt"]),
        HOST_SYS_USAGE => list(&["cpu", "mem"]),
        _ => Ok(()),
    };
    r.map_err(|why| format!("aclprofSetConfig type {ty} value {v:?} {why}"))
}

impl Core {
    /// `aclprofInit` after its argument checks: mode rules, then the directory.
    pub fn init(&mut self, path: &Path) -> Result<PathBuf> {
        match self.mode {
            Mode::ApiCtrl => {
                return err(
                    ACL_ERROR_REPEAT_INITIALIZE,
                    "aclprofInit was already called; call aclprofFinalize first",
                )
            }
            Mode::Subscribe => return conflict("aclprofInit"),
            Mode::Cmd => return cmd_mode("aclprofInit"),
            Mode::Off => {}
        }
        let dir = prepare_result_dir(path)?;
        self.mode = Mode::ApiCtrl;
        self.result_path = Some(dir.clone());
        Ok(dir)
    }

    fn file_mode_precheck(&self, what: &str) -> Result<()> {
        match self.mode {
            Mode::Off => not_inited(what),
            Mode::Subscribe => conflict(what),
            Mode::Cmd => cmd_mode(what),
            Mode::ApiCtrl => Ok(()),
        }
    }

    /// `aclprofStart`. Ok(true) when a new session started, Ok(false) for a repeated start.
    pub fn start(&mut self, c: &ProfConfig) -> Result<bool> {
        check_config(c)?;
        self.file_mode_precheck("aclprofStart")?;
        if let Some(r) = &self.running {
            // Only the config object that started is "the same config", as aclprofStop
            // has it: one of equal content would start fine and then fail to stop
            // (docs/design.md, "The state machine").
            if r.config.id == c.id {
                return Ok(false);
            }
            return err(
                ACL_ERROR_PROF_ALREADY_RUN,
                "profiling is already running with another config object; aclprofStop it \
                 first (a config of equal content is another object)",
            );
        }
        for (ty, v) in &self.set_config {
            if let Err(why) = validate_set_config(*ty, v) {
                return err(ACL_ERROR_PROFILING_FAILURE, why);
            }
        }
        self.start_index += 1;
        self.running = Some(Running {
            config: c.clone(),
            dir_index: self.start_index,
        });
        self.last_started = Some(c.id);
        Ok(true)
    }

    /// `aclprofStop`: returns the session that ended.
    pub fn stop(&mut self, c: &ProfConfig) -> Result<Running> {
        check_config(c)?;
        self.file_mode_precheck("aclprofStop")?;
        match self.last_started {
            None => {
                return err(
                    ACL_ERROR_PROFILING_FAILURE,
                    "aclprofStop without any aclprofStart",
                )
            }
            Some(id) if id != c.id => {
                return err(
                    ACL_ERROR_INVALID_PROFILING_CONFIG,
                    "aclprofStop must get the same config object that was passed to aclprofStart",
                )
            }
            _ => {}
        }
        self.running.take().map_or_else(
            || {
                err(
                    ACL_ERROR_PROF_NOT_RUN,
                    "profiling is not running (already stopped?)",
                )
            },
            Ok,
        )
    }

    /// `aclprofFinalize`: stops a running session (returned) and leaves file mode.
    pub fn finalize(&mut self) -> Result<Option<Running>> {
        self.file_mode_precheck("aclprofFinalize")?;
        self.mode = Mode::Off;
        self.result_path = None;
        self.set_config.clear();
        Ok(self.running.take())
    }

    /// The `aclprofSetConfig` values in force.
    pub fn config_values(&self) -> HashMap<i32, String> {
        self.set_config.clone()
    }

    /// Enters CMD mode with a running session (environment-variable profiling).
    pub fn start_cmd(&mut self, c: &ProfConfig, root: PathBuf) -> u64 {
        self.mode = Mode::Cmd;
        self.result_path = Some(root);
        self.start_index += 1;
        self.running = Some(Running {
            config: c.clone(),
            dir_index: self.start_index,
        });
        self.start_index
    }

    /// Leaves CMD mode (at process exit), returning the session that ran.
    pub fn end_cmd(&mut self) -> Option<Running> {
        if self.mode != Mode::Cmd {
            return None;
        }
        self.mode = if self.subscribed.is_empty() {
            Mode::Off
        } else {
            Mode::Subscribe
        };
        self.running.take()
    }

    /// Undoes a start whose result directory could not be created.
    pub fn abort_start(&mut self) {
        self.running = None;
    }

    pub fn set_config(&mut self, ty: i32, value: String) {
        if value.is_empty() {
            self.set_config.remove(&ty);
        } else {
            self.set_config.insert(ty, value);
        }
    }

    /// `aclprofModelSubscribe`'s rules, given the model's device (None = not loaded).
    pub fn check_subscribe(
        &self,
        model: u32,
        device: Option<u32>,
        time_info: bool,
        aicore_metrics: u32,
    ) -> Result<u32> {
        if self.mode == Mode::ApiCtrl {
            return err(
                ACL_ERROR_PROF_API_CONFLICT,
                "aclprofModelSubscribe is not allowed between aclprofInit and aclprofFinalize \
                 (file mode and subscription exclude each other)",
            );
        }
        let Some(device) = device else {
            return err(
                ACL_ERROR_INVALID_MODEL_ID,
                format!("model {model} is not loaded"),
            );
        };
        if !time_info && aicore_metrics == ACL_AICORE_NONE {
            return err(
                ACL_ERROR_INVALID_PARAM,
                "the subscribe config asks for nothing: timeInfoSwitch is 0 and aicoreMetrics is ACL_AICORE_NONE",
            );
        }
        if self.subscribed.contains_key(&model) {
            return err(
                ACL_ERROR_PROF_REPEAT_SUBSCRIBE,
                format!("model {model} is already subscribed"),
            );
        }
        if let Some(d) = self.device_subs.get(&device) {
            if d.time_info != time_info || d.aicore_metrics != aicore_metrics {
                return err(
                    ACL_ERROR_INVALID_PROFILING_CONFIG,
                    format!("models on device {device} must all be subscribed with the same timeInfoSwitch and aicoreMetrics"),
                );
            }
        }
        Ok(device)
    }

    pub fn add_subscription(
        &mut self,
        model: u32,
        device: u32,
        time_info: bool,
        aicore_metrics: u32,
    ) {
        self.subscribed.insert(model, device);
        self.device_subs
            .entry(device)
            .or_insert(DeviceSub {
                models: 0,
                time_info,
                aicore_metrics,
            })
            .models += 1;
        if self.mode != Mode::Cmd {
            self.mode = Mode::Subscribe;
        }
    }

    /// `aclprofModelUnSubscribe`'s rules and bookkeeping; the caller then flushes and closes.
    pub fn remove_subscription(&mut self, model: u32) -> Result<()> {
        if self.mode == Mode::ApiCtrl {
            return err(
                ACL_ERROR_PROF_API_CONFLICT,
                "aclprofModelUnSubscribe is not allowed between aclprofInit and aclprofFinalize",
            );
        }
        let Some(device) = self.subscribed.remove(&model) else {
            return err(
                ACL_ERROR_INVALID_MODEL_ID,
                format!("model {model} is not subscribed"),
            );
        };
        if let Some(d) = self.device_subs.get_mut(&device) {
            d.models -= 1;
            if d.models == 0 {
                self.device_subs.remove(&device);
            }
        }
        if self.subscribed.is_empty() && self.mode == Mode::Subscribe {
            self.mode = Mode::Off;
        }
        Ok(())
    }
}

/// `mkdir -p` with mode 0750, then the checks CANN makes; every failure is 500005, as in
/// CANN.
pub(crate) fn prepare_result_dir(path: &Path) -> Result<PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(e) => {
                return err(
                    ACL_ERROR_PROFILING_FAILURE,
                    format!("cannot resolve relative path {}: {e}", path.display()),
                )
            }
        }
    };
    if abs.as_os_str().len() > MAX_PATH {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("the absolute result path is longer than {MAX_PATH} bytes"),
        );
    }
    let fail = |what: &str, e: std::io::Error| {
        err(
            ACL_ERROR_PROFILING_FAILURE,
            format!("result path {}: {what}: {e}", abs.display()),
        )
    };
    {
        use std::os::unix::fs::DirBuilderExt;
        if let Err(e) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(&abs)
        {
            return fail("cannot create the directory", e);
        }
    }
    let canon = match std::fs::canonicalize(&abs) {
        Ok(c) => c,
        Err(e) => return fail("cannot resolve", e),
    };
    if !canon.is_dir() {
        return fail(
            "not a directory",
            std::io::Error::from(std::io::ErrorKind::NotADirectory),
        );
    }
    let c = std::ffi::CString::new(canon.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return fail("not writable", std::io::Error::last_os_error());
    }
    Ok(canon)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(id: u64) -> ProfConfig {
        ProfConfig {
            id,
            devices: vec![0],
            aicore_metrics: 1,
            data_type: 0x2,
            ..Default::default()
        }
    }
    fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "aclprof-state-{}-{}",
            std::process::id(),
            rand_u64()
        ));
        d
    }
    fn rand_u64() -> u64 {
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(0u8)
    }
    fn code<T: std::fmt::Debug>(r: Result<T>) -> Code {
        match r {
            Ok(_) => 0,
            Err(e) => e.code,
        }
    }

    /// Every call in every state (docs/design.md, "The state machine"), in executable form.
    #[test]
    fn legality_table() {
        let d = tmp();
        // fresh process (Off)
        let mut c = Core::default();
        assert_eq!(code(c.start(&cfg(1))), 100043);
        assert_eq!(code(c.stop(&cfg(1))), 100043);
        assert_eq!(code(c.finalize()), 100043);
        assert_eq!(code(c.remove_subscription(1)), 100011);
        assert_eq!(
            code(c.check_subscribe(1, Some(0), true, ACL_AICORE_NONE)),
            0
        );
        // after init
        assert_eq!(code(c.init(&d)), 0);
        assert_eq!(code(c.init(&d)), 100002);
        assert_eq!(code(c.stop(&cfg(1))), 500005, "stop before any start");
        assert_eq!(
            code(c.check_subscribe(1, Some(0), true, ACL_AICORE_NONE)),
            148047
        );
        assert_eq!(code(c.remove_subscription(1)), 148047);
        // after start
        assert_eq!(code(c.start(&cfg(1))), 0);
        assert!(
            !c.start(&cfg(1)).unwrap(),
            "repeated start with the same config is 0"
        );
        let mut other = cfg(2);
        other.data_type = 0x1;
        assert_eq!(
            code(c.start(&other)),
            100042,
            "different config while running"
        );
        let twin = ProfConfig {
            id: 3,
            ..c.running.as_ref().unwrap().config.clone()
        };
        assert_eq!(
            code(c.start(&twin)),
            100042,
            "another object of equal content is another config, for Start as for Stop"
        );
        assert_eq!(code(c.stop(&twin)), 100010);
        assert_eq!(code(c.init(&d)), 100002);
        assert_eq!(
            code(c.stop(&cfg(2))),
            100010,
            "stop with another config object"
        );
        assert_eq!(
            code(c.check_subscribe(1, Some(0), true, ACL_AICORE_NONE)),
            148047
        );
        // after stop
        assert_eq!(code(c.stop(&cfg(1))), 0);
        assert_eq!(code(c.stop(&cfg(1))), 100043, "double stop");
        assert_eq!(code(c.stop(&cfg(2))), 100010);
        assert_eq!(code(c.init(&d)), 100002);
        assert!(c.start(&cfg(1)).unwrap(), "start after stop: a new session");
        assert_eq!(c.running.as_ref().unwrap().dir_index, 2);
        assert_eq!(code(c.stop(&cfg(1))), 0);
        // finalize; then everything is Off again
        assert_eq!(code(c.start(&cfg(1))), 0);
        assert!(
            c.finalize().unwrap().is_some(),
            "finalize stops a running session"
        );
        assert_eq!(code(c.finalize()), 100043);
        assert_eq!(code(c.start(&cfg(1))), 100043);
        assert_eq!(code(c.stop(&cfg(1))), 100043);
        assert_eq!(code(c.init(&d)), 0, "init after finalize");
        assert_eq!(code(c.finalize()), 0);
        // subscribed
        assert_eq!(
            code(c.check_subscribe(1, None, true, ACL_AICORE_NONE)),
            100011,
            "model not loaded"
        );
        c.add_subscription(1, 0, true, ACL_AICORE_NONE);
        assert_eq!(
            code(c.check_subscribe(1, Some(0), true, ACL_AICORE_NONE)),
            148046
        );
        assert_eq!(code(c.init(&d)), 148047);
        assert_eq!(code(c.start(&cfg(1))), 148047);
        assert_eq!(code(c.stop(&cfg(1))), 148047);
        assert_eq!(code(c.finalize()), 148047);
        assert_eq!(code(c.check_subscribe(2, Some(0), true, 1)), 100010);
        assert_eq!(
            code(c.check_subscribe(2, Some(0), true, ACL_AICORE_NONE)),
            0
        );
        assert_eq!(code(c.remove_subscription(2)), 100011);
        assert_eq!(code(c.remove_subscription(1)), 0);
        assert_eq!(c.mode, Mode::Off);
        assert_eq!(code(c.remove_subscription(1)), 100011);
        // CMD mode (PROFILING_MODE=true): every file-mode control call is 100042;
        // subscriptions work beside it, and outlive it.
        c.start_cmd(&cfg(9), d.clone());
        assert_eq!(code(c.init(&d)), 100042);
        assert_eq!(code(c.start(&cfg(1))), 100042);
        assert_eq!(code(c.stop(&cfg(1))), 100042);
        assert_eq!(code(c.finalize()), 100042);
        assert_eq!(code(c.remove_subscription(1)), 100011, "not subscribed");
        assert_eq!(
            code(c.check_subscribe(1, Some(0), true, ACL_AICORE_NONE)),
            0
        );
        c.add_subscription(1, 0, true, ACL_AICORE_NONE);
        assert_eq!(c.mode, Mode::Cmd);
        assert_eq!(code(c.init(&d)), 100042, "still CMD mode while subscribed");
        c.add_subscription(2, 0, true, ACL_AICORE_NONE);
        assert_eq!(code(c.remove_subscription(2)), 0);
        assert_eq!(c.mode, Mode::Cmd);
        assert!(c.end_cmd().is_some());
        assert_eq!(
            c.mode,
            Mode::Subscribe,
            "the subscription outlives CMD mode"
        );
        assert_eq!(code(c.init(&d)), 148047);
        assert_eq!(code(c.remove_subscription(1)), 0);
        assert_eq!(c.mode, Mode::Off);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn config_checks() {
        assert!(new_config(&[0], 0, false, 2, 1, 1).is_ok());
        assert_eq!(code(new_config(&[0], 0, true, 2, 1, 1)), 100000);
        assert_eq!(code(new_config(&[1], 0, false, 2, 1, 1)), 100000);
        assert_eq!(code(new_config(&[0, 0], 0, false, 2, 2, 1)), 100000);
        assert_eq!(code(new_config(&[0, 1], 0, false, 2, 1, 1)), 100000);
        assert_eq!(
            code(new_config(&(0..65).collect::<Vec<_>>(), 0, false, 2, 64, 1)),
            100000
        );
        assert_eq!(code(new_config(&[], 0, false, 2, 1, 1)), 100000);
        assert!(new_config(&[], 0, false, ACL_PROF_MSPROFTX, 1, 1).is_ok());
        assert_eq!(
            code(check_config(&ProfConfig {
                data_type: 0,
                ..cfg(1)
            })),
            100000
        );
        assert_eq!(
            code(check_config(&ProfConfig {
                data_type: 0x400,
                ..cfg(1)
            })),
            200007
        );
        assert_eq!(
            code(check_config(&ProfConfig {
                data_type: 0x4_0000_0000,
                ..cfg(1)
            })),
            0
        );
    }

    #[test]
    fn set_config_values_are_checked_at_start() {
        let d = tmp();
        let mut c = Core::default();
        c.init(&d).unwrap();
        c.set_config(1, "100MB".into());
        assert_eq!(code(c.start(&cfg(1))), 500005);
        c.set_config(1, "500MB".into());
        c.set_config(3, "101".into());
        assert_eq!(code(c.start(&cfg(1))), 500005);
        c.set_config(3, "".into());
        c.set_config(8, "cpu,mem".into());
        assert_eq!(code(c.start(&cfg(1))), 0);
        let _ = std::fs::remove_dir_all(&d);
        assert!(validate_set_config(4, "read").is_ok());
        assert!(validate_set_config(9, "disk").is_err());
    }

    #[test]
    fn unwritable_result_dir_is_500005() {
        let mut c = Core::default();
        let e = c.init(Path::new("/proc/aclprof-cannot-exist")).unwrap_err();
        assert_eq!(e.code, 500005);
        assert!(e.msg.contains("cannot create"), "{}", e.msg);
        assert_eq!(c.mode, Mode::Off);
    }
}
