//! `aclprof record`: runs an unmodified program with profiling turned on through CANN's
//! environment (PROFILING_MODE, PROFILING_OPTIONS) and names the result directories it
//! wrote.

use crate::error::{CliError, Result};
use crate::run_analyze;
use aclprof::analyze::{Format, Key, Query};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// PROF_* directories directly under `dir`.
fn prof_dirs(dir: &Path) -> Vec<PathBuf> {
    aclprof::formats::layout::entries_named(dir, "PROF_").unwrap_or_default()
}

/// What `record` turns on beside the defaults.
pub struct RecordSwitches<'a> {
    pub aic_metrics: Option<&'a str>,
    pub memory: bool,
    pub runtime_api: bool,
    pub host_sys: Option<&'a str>,
    pub host_sys_usage: Option<&'a str>,
}

/// `aclprof record`: the folders it makes for `output` go again if they hold nothing when it
/// ends (the program could not start, or wrote no result directory).
pub fn record(output: &Path, sw: &RecordSwitches, command: &[String]) -> Result<ExitCode> {
    // Deepest first: the folders create_dir_all is about to make.
    let made: Vec<PathBuf> = output
        .ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err())
        .map(Path::to_path_buf)
        .collect();
    let r = record_into(output, sw, command);
    for d in &made {
        // Fails, leaving it, when it is not empty.
        let _ = std::fs::remove_dir(d);
    }
    r
}

/// Makes the folder `dir` (and those above it), or says in one line why it cannot be.
pub fn make_output_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        if dir.exists() && !dir.is_dir() {
            CliError::usage(format!(
                "{}: exists and is not a folder; give a folder for the results",
                dir.display()
            ))
        } else {
            CliError::io(dir, e)
        }
    })
}

fn record_into(output: &Path, sw: &RecordSwitches, command: &[String]) -> Result<ExitCode> {
    make_output_dir(output)?;
    let out = std::fs::canonicalize(output).map_err(|e| CliError::io(output, e))?;
    let before = prof_dirs(&out);
    let out_text = out.to_str().ok_or_else(|| {
        CliError::usage(format!(
            "{}: the output path must be UTF-8 (it is passed in PROFILING_OPTIONS, JSON)",
            out.display()
        ))
    })?;
    let mut options =
        serde_json::json!({"output": out_text, "task_trace": "on", "training_trace": "on"});
    if let Some(m) = sw.aic_metrics {
        options["aic_metrics"] = m.into();
    }
    if sw.memory {
        options["task_memory"] = "on".into();
        options["sys_hardware_mem_freq"] = "50".into();
    }
    if sw.runtime_api {
        options["runtime_api"] = "on".into();
    }
    if let Some(items) = sw.host_sys {
        options["host_sys"] = items.into();
    }
    if let Some(items) = sw.host_sys_usage {
        options["host_sys_usage"] = items.into();
    }
    // Checked here: the program would only log a bad option and run unprofiled.
    let text = options.to_string();
    aclprof::init::env_mode_config(&text, 1, aclprof::init::Unknown::Refuse)?;
    aclprof::init::env_mode_settings(&text, aclprof::init::Unknown::Refuse)?;
    // The program finds this build's library first (beside this binary, or lib/ beside bin/).
    let mut libs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        libs.push(dir.join("../lib"));
        libs.push(dir);
    }
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        // (An empty entry would mean the working directory to the loader.)
        libs.extend(std::env::split_paths(&old).filter(|p| !p.as_os_str().is_empty()));
    }
    let ld =
        std::env::join_paths(libs).map_err(|e| CliError::process_caused_by(e.to_string(), e))?;
    // Marks the result directories this run writes: other processes (a cluster's other
    // ranks) may write theirs into the same folder meanwhile.
    let token = format!(
        "{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("ACLPROF_RECORD", &token)
        .env("PROFILING_MODE", "true")
        .env("PROFILING_OPTIONS", options.to_string())
        .env("LD_LIBRARY_PATH", ld)
        // The export when the program exits shows its progress where this command would.
        .env(
            "ACLPROF_PROGRESS",
            if std::io::stderr().is_terminal() {
                "1"
            } else {
                "0"
            },
        )
        .status()
        .map_err(|e| CliError::process_caused_by(format!("cannot run {:?}: {e}", command[0]), e))?;
    let new: Vec<PathBuf> = prof_dirs(&out)
        .into_iter()
        .filter(|p| !before.contains(p) && recorded_by(p, &token))
        .collect();
    // The program's own exit status, as a shell gives it (128 + the signal that ended it).
    let code = {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => c,
            (None, Some(sig)) => 128 + sig,
            _ => 1,
        }
    };
    if new.is_empty() {
        eprintln!(
            "aclprof: {} wrote no result directory: is it linked against aclprof (libascendcl \
             or libaclprof) and does it run a model? ({status})",
            command[0]
        );
        // A program that failed says why with its own code; one that succeeded without
        // profiling anything is ours to fail.
        return Ok(ExitCode::from(if code == 0 {
            1
        } else {
            code.clamp(1, 255) as u8
        }));
    }
    let q = Query {
        by: Some(Key::Type),
        ..Default::default()
    };
    for d in &new {
        outln!("{}", d.display());
        out!("{}", run_analyze(d, &q, Format::Table)?);
    }
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// Whether result directory `dir` was written by the run `record` marked with `token`.
fn recorded_by(dir: &Path, token: &str) -> bool {
    std::fs::read(dir.join(aclprof::formats::layout::SESSION_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["record"] == token)
}
