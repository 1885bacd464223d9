//! The `PROFILING_OPTIONS` JSON of environment-variable profiling, and the values of
//! `aclprofSetConfig`, on arbitrary text: a config or a clear error, never a crash.
//! Run: `scripts/fuzz` (or `cargo fuzz run profiling_options`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((root, config)) = aclprof::init::env_mode_config(text, 4, aclprof::init::Unknown::Refuse) {
        assert!(!root.as_os_str().is_empty(), "a config always names its result directory");
        assert_eq!(config.devices, vec![0, 1, 2, 3]);
        assert!(config.data_type != 0);
    }
    for ty in 0..20 {
        let _ = aclprof::state::validate_set_config(ty, text);
    }
});
