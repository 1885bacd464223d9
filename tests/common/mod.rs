//! Helpers shared by the integration tests: the repository, commands, result directories.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository: the workspace's root (the command line's tests run in cli/).
pub fn root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .unwrap_or(&here)
        .to_path_buf()
}

/// The `aclprof` command line: cargo's own build of it in the command line's tests; in the
/// library's tests, built once (same profile, same target directory) by `cargo build -p
/// aclprof-cli`, since a crate's tests cannot depend on another crate's binary.
pub fn aclprof_bin() -> PathBuf {
    if let Some(exe) = option_env!("CARGO_BIN_EXE_aclprof") {
        return PathBuf::from(exe);
    }
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let mut c = Command::new(env!("CARGO"));
            c.args(["build", "--quiet", "-p", "aclprof-cli", "--bin", "aclprof"])
                .current_dir(root())
                .env("CARGO_TARGET_DIR", dir.parent().unwrap());
            if dir.file_name().is_some_and(|n| n == "release") {
                c.arg("--release");
            }
            run(&mut c);
            let bin = dir.join("aclprof");
            assert!(bin.exists(), "no aclprof in {}", dir.display());
            bin
        })
        .clone()
}

/// Runs `cmd`, panicking with its output if it fails.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// The one `<prefix><14-digit timestamp>.csv` (or `.json` for msprof_) file of a result
/// directory's mindstudio_profiler_output/.
pub fn output(dir: &Path, prefix: &str) -> PathBuf {
    let out = dir.join("mindstudio_profiler_output");
    let found: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            let rest = n.strip_prefix(prefix).unwrap_or("");
            let ext = if prefix == "msprof_" { ".json" } else { ".csv" };
            rest.len() == 14 + ext.len()
                && rest.ends_with(ext)
                && rest[..14].bytes().all(|b| b.is_ascii_digit())
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one {prefix}<ts14> in {}",
        out.display()
    );
    found[0].clone()
}

/// A CSV file's header and rows (strict: every row as long as the header).
pub fn read_csv(p: &Path) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut r = csv::ReaderBuilder::new()
        .flexible(false)
        .from_path(p)
        .unwrap();
    let h: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|rec| {
            let rec = rec.expect("well-formed CSV row");
            h.iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect()
        })
        .collect();
    (h, rows)
}

/// A time in µs as written in the result files, in ns.
pub fn us(s: &str) -> u64 {
    let s = s.trim_end_matches('\t');
    let (a, b) = s.split_once('.').unwrap_or((s, "0"));
    let frac = format!("{b:0<3}");
    a.parse::<u64>().unwrap() * 1000 + frac[..3].parse::<u64>().unwrap()
}

/// Runs `body` between `aclprofStart` and `aclprofStop` of an ACL_PROF_TASK_TIME config for
/// one device with the given `aclprofAicoreMetrics` (after `aclprofInit`).
pub fn profiled<T>(dev: u32, metric: u32, body: impl FnOnce() -> T) -> T {
    use aclprof::ffi::prof::*;
    let mut devs = [dev];
    let cfg = unsafe {
        aclprofCreateConfig(
            devs.as_mut_ptr(),
            1,
            aclprofAicoreMetrics(metric),
            std::ptr::null(),
            ACL_PROF_TASK_TIME,
        )
    };
    assert_eq!(aclprofStart(cfg), 0, "aclprofStart");
    let r = body();
    assert_eq!(aclprofStop(cfg), 0, "aclprofStop");
    assert_eq!(aclprofDestroyConfig(cfg), 0);
    r
}
