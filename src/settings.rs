//! Configuration by environment, read once at first use (the table is in docs/reference.md).
//!
//! Invalid values are reported (one `log` line, and kept for `aclGetRecentErrMsg` of the
//! thread that first touched the library) and the default is kept.

use std::sync::LazyLock;
use std::time::Duration;

/// What a full staging buffer does to the reporting thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFull {
    /// Wait until the writer makes room (lossless backpressure). The default.
    Block,
    /// Drop the new record and count it.
    Drop,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub device_count: u32,
    pub log_level: log::LevelFilter,
    /// True if `ACLPROF_LOG` was set (even to `off`): then loss notices follow it too.
    pub log_explicit: bool,
    pub on_full: OnFull,
    pub buffer_records: usize,
    pub unsubscribe_timeout: Duration,
    /// `RANK_ID` (or `RANK`): the rank result directories record in `info.json`.
    pub rank: Option<u32>,
    /// `ACLPROF_PROGRESS=1`: the export at the end of a `PROFILING_MODE` run shows a
    /// progress bar on stderr, if that is a terminal (`aclprof record` sets it).
    pub progress: bool,
    /// `ACLPROF_RECORD`: the token `aclprof record` gives the program it runs, written into
    /// each result directory's session so that record finds its own.
    pub record: Option<String>,
    /// Problems found while reading the environment, logged once the logger is up.
    pub problems: Vec<String>,
}

pub const DEFAULT_DEVICE_COUNT: u32 = 1;
/// Maximum device count: CANN's `MSVP_MAX_DEV_NUM`.
pub const MAX_DEVICES: u32 = 64;
/// 64 Ki records = 32 MiB per subscription at most, 16 Ki (8 MiB, >16 ms at 1 M ops/s) per
/// staging shard. See `delivery.rs`.
pub const DEFAULT_BUFFER_RECORDS: usize = 65536;
pub const MIN_BUFFER_RECORDS: usize = 64;
pub const MAX_BUFFER_RECORDS: usize = 1 << 24;
pub const DEFAULT_UNSUBSCRIBE_TIMEOUT_MS: u64 = 30_000;

impl Settings {
    /// Reads the settings from an environment lookup function (a closure so tests need not
    /// touch the process environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Settings {
        let mut problems = Vec::new();
        let mut num = |name: &str, default: u64, min: u64, max: u64| -> u64 {
            match get(name) {
                None => default,
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if (min..=max).contains(&n) => n,
                    _ => {
                        problems.push(format!(
                            "{name}={v:?} is not a whole number in {min}..={max}; using {default}"
                        ));
                        default
                    }
                },
            }
        };
        let device_count = num(
            "ACLPROF_DEVICE_COUNT",
            DEFAULT_DEVICE_COUNT.into(),
            1,
            MAX_DEVICES.into(),
        ) as u32;
        let buffer_records = num(
            "ACLPROF_BUFFER_RECORDS",
            DEFAULT_BUFFER_RECORDS as u64,
            MIN_BUFFER_RECORDS as u64,
            MAX_BUFFER_RECORDS as u64,
        ) as usize;
        let timeout_ms = num(
            "ACLPROF_UNSUBSCRIBE_TIMEOUT_MS",
            DEFAULT_UNSUBSCRIBE_TIMEOUT_MS,
            0,
            24 * 3600 * 1000,
        );
        let on_full = match get("ACLPROF_ON_FULL").as_deref().map(str::trim) {
            None | Some("block") => OnFull::Block,
            Some("drop") => OnFull::Drop,
            Some(v) => {
                problems.push(format!(
                    "ACLPROF_ON_FULL={v:?} is not `block` or `drop`; using block"
                ));
                OnFull::Block
            }
        };
        let log_level = match get("ACLPROF_LOG").as_deref().map(str::trim) {
            None | Some("off") | Some("") => log::LevelFilter::Off,
            Some(v) => match v.parse::<log::LevelFilter>() {
                Ok(l) => l,
                Err(_) => {
                    problems.push(format!(
                        "ACLPROF_LOG={v:?} is not one of off, error, warn, info, debug, trace; using off"
                    ));
                    log::LevelFilter::Off
                }
            },
        };
        // The rank of a distributed job: CANN's RANK_ID, else torchrun's RANK.
        let rank = ["RANK_ID", "RANK"].into_iter().find_map(|name| {
            let v = get(name)?;
            match v.trim().parse::<u32>() {
                Ok(r) if r < 1 << 24 => Some(r),
                _ => {
                    problems.push(format!(
                        "{name}={v:?} is not a rank (a whole number below 16777216); ignored"
                    ));
                    None
                }
            }
        });
        Settings {
            device_count,
            rank,
            log_level,
            log_explicit: get("ACLPROF_LOG").is_some(),
            progress: get("ACLPROF_PROGRESS").is_some_and(|v| v.trim() == "1"),
            record: get("ACLPROF_RECORD").filter(|v| !v.is_empty()),
            on_full,
            buffer_records,
            unsubscribe_timeout: Duration::from_millis(timeout_ms),
            problems,
        }
    }
}

static SETTINGS: LazyLock<Settings> = LazyLock::new(|| {
    let s = Settings::from_lookup(|k| std::env::var(k).ok());
    crate::logging::init(s.log_level, s.log_explicit);
    for p in &s.problems {
        log::error!("aclprof configuration: {p}");
    }
    s
});

/// The process-wide settings (read from the environment on first call).
pub fn get() -> &'static Settings {
    &SETTINGS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> Settings {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let s = with(&[]);
        assert_eq!(s.device_count, 1);
        assert_eq!(s.on_full, OnFull::Block);
        assert!(s.buffer_records >= 10_000);
        assert_eq!(s.unsubscribe_timeout, Duration::from_secs(30));
        assert_eq!(s.log_level, log::LevelFilter::Off);
        assert_eq!(s.rank, None);
        assert!(s.problems.is_empty());
    }

    #[test]
    fn valid_values_are_taken() {
        let s = with(&[
            ("ACLPROF_DEVICE_COUNT", "8"),
            ("ACLPROF_ON_FULL", "drop"),
            ("ACLPROF_BUFFER_RECORDS", "128"),
            ("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", "250"),
            ("ACLPROF_LOG", "debug"),
        ]);
        assert_eq!(s.device_count, 8);
        assert_eq!(s.on_full, OnFull::Drop);
        assert_eq!(s.buffer_records, 128);
        assert_eq!(s.unsubscribe_timeout, Duration::from_millis(250));
        assert_eq!(s.log_level, log::LevelFilter::Debug);
    }

    #[test]
    fn rank_comes_from_rank_id_then_torchrun_rank() {
        assert_eq!(with(&[("RANK_ID", "5"), ("RANK", "2")]).rank, Some(5));
        assert_eq!(with(&[("RANK", " 2 ")]).rank, Some(2));
        let s = with(&[("RANK_ID", "-1"), ("RANK", "3")]);
        assert_eq!(s.rank, Some(3));
        assert!(s.problems[0].contains("RANK_ID"), "{:?}", s.problems);
    }

    #[test]
    fn invalid_values_keep_the_default_and_are_reported() {
        let s = with(&[
            ("ACLPROF_DEVICE_COUNT", "0"),
            ("ACLPROF_ON_FULL", "sometimes"),
            ("ACLPROF_BUFFER_RECORDS", "lots"),
            ("ACLPROF_LOG", "loud"),
        ]);
        assert_eq!(s.device_count, 1);
        assert_eq!(s.on_full, OnFull::Block);
        assert_eq!(s.buffer_records, DEFAULT_BUFFER_RECORDS);
        assert_eq!(s.log_level, log::LevelFilter::Off);
        assert_eq!(s.problems.len(), 4, "{:?}", s.problems);
    }
}
