//! `aclprof capture` on a running C program (ctests/watch_target.c): a capture has exactly
//! the ops the program ran while it was attached, in a result directory every reader takes;
//! a second capture of the same process is refused; a killed capture leaves the program
//! running and a directory that `aclprof export` completes.

use super::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What a capture says once it is attached.
const CAPTURING: &str = "aclprof: capturing process ";

/// The result directories under `out`.
fn dirs_in(out: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Raw records in a result directory's stream files.
fn raw_records(dir: &Path) -> u64 {
    let data = dir.join("device_0/data");
    std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum::<u64>()
        / 512
}

#[test]
fn capture_records_a_running_program() {
    const EXECUTIONS: u64 = 4;
    const OPS: u64 = 125;
    let work = fresh_dir("capture-work");
    let sockets = fresh_dir("capture-sockets");
    let out = fresh_dir("capture-out");
    let target = WatchTarget::start(&work, &sockets, EXECUTIONS, OPS, &[("RANK_ID", "7")]);
    let pid = target.pid.to_string();
    let capture = |out: &Path, secs: &str| {
        let mut c = Command::new(common::aclprof_bin());
        c.args(["capture", &pid, "--duration", secs, "-o"])
            .arg(out)
            .env("ACLPROF_WATCH_DIR", &sockets)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    // A capture, once it says it is capturing, and its stderr.
    let capturing = |out: &Path, secs: &str| started(&mut capture(out, secs), CAPTURING);

    // Ops run before the capture are not in it; a run while it records is, whole.
    target.go();
    let (first, _) = capturing(&out, "600");
    // Two captures of one process do not overlap: the second is refused, in one line.
    refused_as_second_viewer(&capture(&fresh_dir("capture-second"), "1").output().unwrap());
    target.go();
    target.go();

    // The program stops: the capture ends with it, with every op of the two runs.
    let (ok, text) = target.stop();
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "ran {} executions of {OPS} ops; the subscription received {}",
            3 * EXECUTIONS,
            3 * EXECUTIONS * OPS
        )),
        "{text}"
    );
    let done = first.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&done.stdout);
    assert!(done.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "process {pid}: {} ops captured; the process ended",
            2 * EXECUTIONS * OPS
        )),
        "{said}"
    );
    let dirs = dirs_in(&out);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = &dirs[0];
    assert!(dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .contains(&format!("_{pid:0>8}")));
    assert_eq!(op_summary_rows(dir) as u64, 2 * EXECUTIONS * OPS);
    assert!(!dir.join("host/data/aclprof_lost_ops").exists());
    let info = std::fs::read_to_string(dir.join("device_0/info.json.0")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["rank_id"], 7, "the program's RANK_ID: {info}");
    assert_eq!(info["pid"], pid.as_str());
    let analyzed = Command::new(common::aclprof_bin())
        .arg("analyze")
        .arg(dir)
        .args(["--aggregate-by", "type", "--format", "json", "-t", "0"])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&analyzed.stdout).unwrap();
    let conv = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["Type"] == "Conv2D")
        .unwrap_or_else(|| panic!("{j}"));
    assert_eq!(conv["Count"], 53 * 2 * EXECUTIONS, "{j}");
}

#[test]
fn a_killed_capture_leaves_what_export_completes() {
    const EXECUTIONS: u64 = 4;
    const OPS: u64 = 125;
    let work = fresh_dir("capture-killed-work");
    let sockets = fresh_dir("capture-killed-sockets");
    let out = fresh_dir("capture-killed-out");
    let target = WatchTarget::start(&work, &sockets, EXECUTIONS, OPS, &[]);
    let pid = target.pid.to_string();
    let (mut c, _) = started(
        Command::new(common::aclprof_bin())
            .args(["capture", &pid, "--duration", "600", "-o"])
            .arg(&out)
            .env("ACLPROF_WATCH_DIR", &sockets)
            .stdout(Stdio::null()),
        CAPTURING,
    );
    target.go();
    let dir = &dirs_in(&out)[0];
    // The capture writes as it reads: wait until it has every op, then kill it.
    let t0 = Instant::now();
    while raw_records(dir) < EXECUTIONS * OPS {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the capture never wrote"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    c.kill().unwrap();
    let _ = c.wait();
    // The program goes on: another run, then it stops with every op its subscription took.
    target.go();
    let (ok, text) = target.stop();
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "the subscription received {}",
            2 * EXECUTIONS * OPS
        )),
        "{text}"
    );
    let exported = Command::new(common::aclprof_bin())
        .arg("export")
        .arg(dir)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{exported:?}");
    assert_eq!(op_summary_rows(dir) as u64, EXECUTIONS * OPS);
}
