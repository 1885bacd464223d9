//! File mode end to end through the C entry points: a multi-threaded, two-device run whose
//! op counts and durations in op_summary, op_statistic and the timeline agree exactly with
//! what was reported; strict parses of every file; start/stop/start/stop giving two
//! directories; re-export from raw data. The profiler is process-wide: the tests take
//! turns, each from a fresh state.

use aclprof::error::ACL_ERROR_INVALID_FILE;
use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::path::{Path, PathBuf};

mod common;
use common::{output, read_csv, us};

const THREADS_PER_DEVICE: u64 = 2;
const OPS_PER_THREAD: u64 = 500;
const TYPES: [&str; 3] = ["Conv2D", "Relu", "MatMulV2"];

fn dur_of(i: u64) -> u64 {
    1_000 + (i % 7) * 250
}

fn prof_dirs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("PROF_")
        })
        .collect();
    v.sort();
    v
}

/// Reported per device: (type -> (count, total ns)).
type Expect = BTreeMap<u32, BTreeMap<String, (u64, u64)>>;

fn run_threads(models: &[(u32, u32)]) -> Expect {
    let mut expect: Expect = BTreeMap::new();
    let mut hs = Vec::new();
    for &(model, dev) in models {
        for t in 0..THREADS_PER_DEVICE {
            hs.push(std::thread::spawn(move || {
                let mut at = aclprofExtNowNs();
                for i in 0..OPS_PER_THREAD {
                    let name = CString::new(format!("dev{dev}/t{t}/op{i}")).unwrap();
                    let ty = CString::new(TYPES[(i % 3) as usize]).unwrap();
                    let start = at + 2_000;
                    let end = start + dur_of(i);
                    assert_eq!(
                        unsafe {
                            aclprofExtReportOp(model, name.as_ptr(), ty.as_ptr(), start, end)
                        },
                        0
                    );
                    at = end;
                }
            }));
            for i in 0..OPS_PER_THREAD {
                let e = expect
                    .entry(dev)
                    .or_default()
                    .entry(TYPES[(i % 3) as usize].to_string())
                    .or_default();
                e.0 += 1;
                e.1 += dur_of(i);
            }
        }
    }
    for h in hs {
        h.join().unwrap();
    }
    expect
}

/// What two executions of ctests/data/tiny.json add on device 0.
fn add_two_tiny_runs(expect: &mut Expect) {
    for (ty, total) in [
        ("TransData", 7000),
        ("Conv2D", 40000),
        ("Relu", 4500),
        ("MaxPoolV3", 8000),
        ("MatMulV2", 12000),
    ] {
        let e = expect
            .entry(0)
            .or_default()
            .entry(ty.to_string())
            .or_default();
        e.0 += 2;
        e.1 += total;
    }
}

fn check_dir(dir: &Path, expect: &Expect) {
    let name = dir.file_name().unwrap().to_str().unwrap();
    // PROF_<6>_<17>_<pid 8><8 letters A-R>
    let parts: Vec<&str> = name.split('_').collect();
    assert_eq!(parts.len(), 4, "{name}");
    assert!(
        parts[1].len() == 6 && parts[1].bytes().all(|b| b.is_ascii_digit()),
        "{name}"
    );
    assert!(
        parts[2].len() == 17 && parts[2].bytes().all(|b| b.is_ascii_digit()),
        "{name}"
    );
    assert_eq!(parts[3].len(), 16, "{name}");
    assert_eq!(parts[3][..8].parse::<u32>().unwrap(), std::process::id());
    assert!(
        parts[3][8..].bytes().all(|b| (b'A'..=b'R').contains(&b)),
        "{name}"
    );

    for &dev in expect.keys() {
        let info: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("device_{dev}/info.json.{dev}"))).unwrap(),
        )
        .unwrap();
        assert_eq!(info["pid"], std::process::id().to_string());
        assert_eq!(info["rank_id"], dev);
        assert!(info["DeviceInfo"][0]["ai_core_num"].as_u64().unwrap() > 0);
        for f in [
            format!("start_info.{dev}"),
            format!("end_info.{dev}"),
            "sample.json".into(),
        ] {
            let _: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("device_{dev}/{f}"))).unwrap(),
            )
            .unwrap();
        }
    }
    let host: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("host/info.json")).unwrap())
            .unwrap();
    assert_eq!(host["pid"], std::process::id().to_string());
    assert!(dir.join("analyze").is_dir());

    // op_summary: the documented header; every reported op once, exact durations.
    let (h, rows) = read_csv(&output(dir, "op_summary_"));
    assert_eq!(h, aclprof::formats::op_summary::OP_SUMMARY_HEADER.to_vec());
    let mut got: Expect = BTreeMap::new();
    let mut last_start: HashMap<u32, u64> = HashMap::new();
    let mut type_of: HashMap<String, String> = HashMap::new();
    for r in &rows {
        type_of.insert(r["Op Name"].clone(), r["OP Type"].clone());
        let dev: u32 = r["Device_id"].parse().unwrap();
        assert!(
            r["Task Start Time(us)"].ends_with('\t'),
            "start time ends with a TAB"
        );
        let start = us(&r["Task Start Time(us)"]);
        assert!(
            start >= *last_start.get(&dev).unwrap_or(&0),
            "rows sorted by start within a device"
        );
        last_start.insert(dev, start);
        let e = got
            .entry(dev)
            .or_default()
            .entry(r["OP Type"].clone())
            .or_default();
        e.0 += 1;
        e.1 += us(&r["Task Duration(us)"]);
        for c in ["Model ID", "Task ID", "Stream ID", "Task Wait Time(us)"] {
            assert!(
                r[c].parse::<f64>().is_ok_and(|v| v >= 0.0),
                "{c} = {:?}",
                r[c]
            );
        }
        // Unknown shapes are blank (msprof-analyze parses "N/A" as a shape), the rest N/A.
        assert_eq!(
            (r["Input Shapes"].as_str(), r["Output Shapes"].as_str()),
            ("", "")
        );
        assert_eq!(r["Input Data Types"], "N/A");
    }
    assert_eq!(&got, expect, "op_summary agrees with what was reported");

    // op_statistic: counts and totals per type.
    let (_, stat) = read_csv(&output(dir, "op_statistic_"));
    let mut got: Expect = BTreeMap::new();
    for r in &stat {
        let dev: u32 = r["Device_id"].parse().unwrap();
        got.entry(dev).or_default().insert(
            r["OP Type"].clone(),
            (r["Count"].parse().unwrap(), us(&r["Total Time(us)"])),
        );
    }
    assert_eq!(&got, expect, "op_statistic agrees");
    let ratio: f64 = stat
        .iter()
        .filter(|r| r["Device_id"] == "0")
        .map(|r| r["Ratio(%)"].parse::<f64>().unwrap())
        .sum();
    assert!((ratio - 100.0).abs() < 0.01, "ratios add to 100: {ratio}");

    // Timeline: strict JSON array; per device one slice per op on Ascend Hardware; named
    // processes and streams; no overlapping slices on any thread.
    let tl: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(output(dir, "msprof_")).unwrap()).unwrap();
    let events = tl.as_array().expect("a bare JSON array");
    let mut pnames: HashMap<u64, String> = HashMap::new();
    let mut tnames: HashMap<(u64, u64), String> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match e["name"].as_str().unwrap() {
            "process_name" => {
                pnames.insert(pid, e["args"]["name"].as_str().unwrap().to_string());
            }
            "thread_name" => {
                tnames.insert((pid, tid), e["args"]["name"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    let mut slices: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    let mut hw: Expect = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = us(e["ts"].as_str().expect("ts is a string"));
        let dur = (e["dur"].as_f64().unwrap() * 1000.0).round() as u64;
        slices.entry((pid, tid)).or_default().push((ts, ts + dur));
        if pnames.get(&pid).map(String::as_str) == Some("Ascend Hardware") {
            assert!(
                tnames[&(pid, tid)].starts_with("Stream "),
                "stream threads are named"
            );
            let dev = (pid & 31) as u32;
            let ty = &type_of[e["name"].as_str().unwrap()];
            let x = hw.entry(dev).or_default().entry(ty.clone()).or_default();
            x.0 += 1;
            x.1 += dur;
        }
    }
    assert_eq!(&hw, expect, "the timeline agrees");
    for (k, mut v) in slices {
        v.sort();
        for w in v.windows(2) {
            assert!(w[1].0 >= w[0].1, "overlapping slices on {k:?}: {w:?}");
        }
    }
    let names: Vec<&str> = pnames.values().map(String::as_str).collect();
    for p in [
        "Ascend Hardware",
        "Overlap Analysis",
        "CANN",
        "MsprofTx",
        "Step Trace",
    ] {
        assert!(names.contains(&p), "process {p} in {names:?}");
    }
    // api_statistic (ACL_PROF_ACL_API): the simulated executions.
    let (_, api) = read_csv(&output(dir, "api_statistic_"));
    assert_eq!(api.len(), 1);
    assert_eq!(api[0]["API Name"], "aclmdlExecute");
    assert_eq!(api[0]["Count"], "2");
    let (_, steps) = read_csv(&output(dir, "step_trace_"));
    assert_eq!(steps.len(), 1);
    let (h, tx) = read_csv(&output(dir, "msprof_tx_"));
    assert_eq!(h[0], "pid");
    assert!(
        !tx.is_empty()
            && tx
                .iter()
                .all(|r| r["Start_time(us)"].parse::<f64>().is_ok())
    );
    check_db(dir, tx.len());
}

/// The database beside the text files holds the same run: a TASK and COMPUTE_TASK_INFO row
/// per op_summary row with the same name, type and duration; the API calls; the msproftx
/// events; Overlap Analysis; the schema version; and its tables have the columns of a
/// real CANN database's.
fn check_db(dir: &Path, tx_events: usize) {
    let dbs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.starts_with("msprof_") && n.ends_with(".db")
        })
        .collect();
    assert_eq!(dbs.len(), 1, "one msprof_<stamp>.db in {}", dir.display());
    let stamp = output(dir, "op_summary_")
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()[11..25]
        .to_string();
    assert_eq!(
        dbs[0].file_name().unwrap().to_str().unwrap(),
        format!("msprof_{stamp}.db")
    );
    let c = rusqlite::Connection::open(&dbs[0]).unwrap();
    let one = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };

    let (_, summary) = read_csv(&output(dir, "op_summary_"));
    let mut want: Vec<(String, String, String, u64)> = summary
        .iter()
        .map(|r| {
            let ty = r["Task Type"].clone();
            (
                r["Op Name"].clone(),
                r["OP Type"].clone(),
                ty,
                us(&r["Task Duration(us)"]),
            )
        })
        .collect();
    let mut stmt = c
        .prepare(
            "SELECT n.value, o.value, k.value, t.endNs - t.startNs FROM TASK t \
             JOIN COMPUTE_TASK_INFO i ON i.globalTaskId = t.globalTaskId \
             JOIN STRING_IDS n ON n.id = i.name JOIN STRING_IDS o ON o.id = i.opType \
             JOIN STRING_IDS k ON k.id = i.taskType",
        )
        .unwrap();
    let mut got: Vec<(String, String, String, u64)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)? as u64))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "TASK + COMPUTE_TASK_INFO == op_summary");
    assert_eq!(one("SELECT count(*) FROM TASK") as usize, summary.len());
    // Every text column is an id into STRING_IDS; no id is dangling.
    assert_eq!(
        one("SELECT count(*) FROM COMPUTE_TASK_INFO WHERE inputShapes NOT IN (SELECT id FROM STRING_IDS) \
             OR taskType NOT IN (SELECT id FROM STRING_IDS)"),
        0
    );
    assert_eq!(
        one("SELECT count(*) FROM CANN_API"),
        2,
        "the two aclmdlExecute calls"
    );
    assert_eq!(
        one("SELECT count(*) FROM CANN_API a JOIN STRING_IDS s ON s.id = a.name WHERE s.value = 'aclmdlExecute' \
             AND a.type = 20000 AND a.globalTid >> 32 > 0"),
        2
    );
    assert_eq!(one("SELECT count(*) FROM MSTX_EVENTS") as usize, tx_events);
    assert!(
        one("SELECT count(*) FROM OVERLAP_ANALYSIS WHERE type = 0") > 0,
        "computing pieces"
    );
    assert_eq!(
        c.query_row(
            "SELECT value FROM META_DATA WHERE name = 'SCHEMA_VERSION'",
            [],
            |r| r.get::<_, String>(0)
        )
        .unwrap(),
        "1.2.0"
    );
    let (start, end) = c
        .query_row(
            "SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )
        .unwrap();
    assert!(
        start > 0 && one("SELECT max(endNs) FROM TASK") <= end,
        "the session spans its tasks"
    );
    same_columns_as_cann(&c);
}

/// The columns of a table in a database, in order.
fn columns(c: &rusqlite::Connection, table: &str) -> Vec<String> {
    let mut s = c.prepare(&format!("PRAGMA table_info({table})")).unwrap();
    s.query_map([], |r| r.get::<_, String>(1))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Each table we write has the columns of the same table in a real database
/// (tests/data/real/SOURCES.md), in order, except where CANN's newest published schema
/// (1.2.0, which we follow; docs/compatibility.md) renamed or appended columns.
fn same_columns_as_cann(ours: &rusqlite::Connection) {
    // As every reader of a user's database opens it: nothing is written beside it (a plain
    // read-only connection to a WAL database would leave -shm and -wal files).
    let real = |f: &str| {
        aclprof::sim::open_read_only(&common::root().join("tests/data/real").join(f)).unwrap()
    };
    let torch = real("ascend_pytorch_profiler_level2_910B_msinsight.db");
    let insight = real("msprof_full_db_msinsight.db");
    // (table, renamed (old, new), appended) since the real files' schema 1.0.0.
    type Change<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);
    let newer: &[Change] = &[
        (
            "COMPUTE_TASK_INFO",
            &[("blockDim", "blockNum"), ("mixBlockDim", "mixBlockNum")],
            &["opState", "hf32Eligible", "gridDim", "blockDim"],
        ),
        ("COMMUNICATION_OP", &[], &["deviceId", "rankSize"]),
        ("COMMUNICATION_TASK_INFO", &[], &["isMaster", "bandwidth"]),
    ];
    let mut tables: Vec<String> = ours
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut unmatched = Vec::new();
    for t in tables.drain(..) {
        // MSTX_EVENTS and OVERLAP_ANALYSIS are only in Insight's fixture, which adds its
        // own `depth` column to MSTX_EVENTS.
        let (mut want, from) = match columns(&torch, &t) {
            v if !v.is_empty() => (v, "torch_npu"),
            _ => (
                columns(&insight, &t)
                    .into_iter()
                    .filter(|c| c != "depth")
                    .collect(),
                "Insight's fixture",
            ),
        };
        if want.is_empty() {
            unmatched.push(t);
            continue;
        }
        if let Some((_, renamed, appended)) = newer.iter().find(|n| n.0 == t) {
            for c in want.iter_mut() {
                if let Some((_, new)) = renamed.iter().find(|r| r.0 == c.as_str()) {
                    *c = new.to_string();
                }
            }
            want.extend(appended.iter().map(|c| c.to_string()));
        }
        assert_eq!(columns(ours, &t), want, "{t}: the columns of {from}'s");
    }
    // Only CANN's 2026 Overlap Analysis enumeration is in no real file yet (Insight's
    // fixture has an OVERLAP_ANALYSIS of its own, with the columns CANN's got).
    assert_eq!(unmatched, ["ENUM_OVERLAP_ANALYSIS_TYPE"]);
}

/// Export never deletes or writes through a symbolic link it did not create: a linked
/// output folder is refused, and so is a link planted among the output files; whatever
/// they point to is untouched.
fn export_never_goes_through_links(dir: &Path, dirc: &CString) {
    let out = dir.join("mindstudio_profiler_output");
    let victim = dir.with_extension("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let precious = victim.join("op_summary_keep.csv");
    std::fs::write(&precious, "precious\n").unwrap();
    let real = dir.join("output.real");
    std::fs::rename(&out, &real).unwrap();
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    assert_eq!(
        unsafe { aclprofExtExport(dirc.as_ptr()) },
        ACL_ERROR_INVALID_FILE
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        1,
        "nothing written there"
    );
    std::fs::remove_file(&out).unwrap();
    std::fs::rename(&real, &out).unwrap();
    // A link among the output files, named like one of them.
    let readme = out.join("README.txt");
    std::fs::remove_file(&readme).unwrap();
    std::os::unix::fs::symlink(&precious, &readme).unwrap();
    assert_eq!(
        unsafe { aclprofExtExport(dirc.as_ptr()) },
        ACL_ERROR_INVALID_FILE
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    std::fs::remove_file(&readme).unwrap();
    std::fs::remove_dir_all(&victim).unwrap();
    assert_eq!(unsafe { aclprofExtExport(dirc.as_ptr()) }, 0, "clean again");
}

/// The tests share the process's profiler: they run one at a time, each from the state a
/// fresh process has ([`aclprof::profiler::reset`]), in a result folder of its own that
/// aclprofInit has been given. Returns the lock, the folder and its C string.
fn fresh(name: &str) -> (std::sync::MutexGuard<'static, ()>, PathBuf, CString) {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    aclprof::profiler::reset();
    std::env::set_var("ACLPROF_DEVICE_COUNT", "2");
    let root = std::env::temp_dir().join(format!("aclprof-filemode-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let rootc = CString::new(root.to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { aclprofInit(rootc.as_ptr(), root.to_str().unwrap().len()) },
        0
    );
    (guard, root, rootc)
}

/// A model on each device, and a config for both that records ops, API calls, msproftx and
/// steps.
fn models_and_config() -> ((u32, u32), *mut aclprofConfig) {
    let (mut m0, mut m1) = (0, 0);
    unsafe {
        assert_eq!(aclprofExtModelLoad(c"m0".as_ptr(), 0, &mut m0), 0);
        assert_eq!(aclprofExtModelLoad(c"m1".as_ptr(), 1, &mut m1), 0);
    }
    let mut devs = [0u32, 1];
    let bits = ACL_PROF_TASK_TIME | ACL_PROF_ACL_API | ACL_PROF_MSPROFTX | ACL_PROF_TRAINING_TRACE;
    let cfg = unsafe {
        aclprofCreateConfig(
            devs.as_mut_ptr(),
            2,
            aclprofAicoreMetrics(0xFF),
            std::ptr::null(),
            bits,
        )
    };
    assert!(!cfg.is_null());
    ((m0, m1), cfg)
}

fn load_tiny() -> u32 {
    let tiny = CString::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/ctests/data/tiny.json"
    ))
    .unwrap();
    let mut sim = 0;
    assert_eq!(
        unsafe { aclprofExtSimModelLoad(tiny.as_ptr(), &mut sim) },
        0
    );
    sim
}

/// One session: threads reporting on both devices, the simulator twice inside a step, an
/// msproftx mark and range. Returns its directory and what was reported.
fn record_session(root: &Path) -> (PathBuf, Expect, *mut aclprofConfig, (u32, u32)) {
    let (models, cfg) = models_and_config();
    assert_eq!(aclprofStart(cfg), 0);
    let mut expect = run_threads(&[(models.0, 0), (models.1, 1)]);
    let sim = load_tiny();
    let step = aclprofCreateStepInfo();
    assert_eq!(
        aclprofGetStepTimestamp(step, aclprofStepTag(0), std::ptr::null_mut()),
        0
    );
    for _ in 0..2 {
        assert_eq!(aclprofExtSimModelExecute(sim), 0);
    }
    assert_eq!(
        aclprofGetStepTimestamp(step, aclprofStepTag(1), std::ptr::null_mut()),
        0
    );
    aclprofDestroyStepInfo(step);
    add_two_tiny_runs(&mut expect);
    let stamp = aclprofCreateStamp();
    assert!(!stamp.is_null());
    unsafe { assert_eq!(aclprofSetStampTraceMessage(stamp, c"warmup".as_ptr(), 6), 0) };
    assert_eq!(aclprofMark(stamp), 0);
    let mut range = 0;
    unsafe { assert_eq!(aclprofRangeStart(stamp, &mut range), 0) };
    assert_eq!(aclprofRangeStop(range), 0);
    aclprofDestroyStamp(stamp);
    assert_eq!(aclprofStop(cfg), 0);
    let dirs = prof_dirs(root);
    assert_eq!(dirs.len(), 1);
    (dirs[0].clone(), expect, cfg, models)
}

fn finish(cfg: *mut aclprofConfig, root: &Path) {
    assert_eq!(aclprofFinalize(), 0);
    aclprofDestroyConfig(cfg);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_session_writes_every_op_reported_on_every_device() {
    let (_serial, root, _) = fresh("session");
    let (dir, expect, cfg, _) = record_session(&root);
    check_dir(&dir, &expect);
    finish(cfg, &root);
}

#[test]
fn re_export_from_raw_data_gives_the_same_and_never_follows_links() {
    let (_serial, root, rootc) = fresh("reexport");
    let (dir, expect, cfg, _) = record_session(&root);
    // What a crashed process leaves behind, exported again.
    let d = CString::new(dir.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { aclprofExtExport(d.as_ptr()) }, 0);
    check_dir(&dir, &expect);
    assert_ne!(
        unsafe { aclprofExtExport(rootc.as_ptr()) },
        0,
        "not a result directory"
    );
    export_never_goes_through_links(&dir, &d);
    finish(cfg, &root);
}

#[test]
fn each_start_writes_a_directory_of_its_own_ops() {
    let (_serial, root, _) = fresh("restart");
    let (first, _, cfg, (m0, m1)) = record_session(&root);
    assert_eq!(aclprofStart(cfg), 0);
    let mut expect2 = run_threads(&[(m0, 0), (m1, 1)]);
    let sim = load_tiny();
    for _ in 0..2 {
        assert_eq!(aclprofExtSimModelExecute(sim), 0);
    }
    let step = aclprofCreateStepInfo();
    assert_eq!(
        aclprofGetStepTimestamp(step, aclprofStepTag(0), std::ptr::null_mut()),
        0
    );
    assert_eq!(
        aclprofGetStepTimestamp(step, aclprofStepTag(1), std::ptr::null_mut()),
        0
    );
    aclprofDestroyStepInfo(step);
    let stamp = aclprofCreateStamp();
    assert_eq!(aclprofMark(stamp), 0);
    aclprofDestroyStamp(stamp);
    add_two_tiny_runs(&mut expect2);
    // The directory being recorded is not exported from under the session.
    let recording = prof_dirs(&root).into_iter().find(|p| *p != first).unwrap();
    let rc = CString::new(recording.to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { aclprofExtExport(rc.as_ptr()) },
        aclprof::error::ACL_ERROR_PROF_ALREADY_RUN
    );
    assert_eq!(aclprofStop(cfg), 0);
    let dirs = prof_dirs(&root);
    assert_eq!(dirs.len(), 2, "one directory per start");
    assert!(dirs[1]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("PROF_000002_"));
    check_dir(&dirs[1], &expect2);
    finish(cfg, &root);
}

/// Every file under `dir` with its size.
fn sizes(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), m.len());
            }
        }
    }
    out
}

#[test]
fn ops_outside_a_session_are_recorded_nowhere() {
    let (_serial, root, _) = fresh("outside");
    let (_, _, cfg, (m0, _)) = record_session(&root);
    let before = sizes(&root);
    assert_eq!(
        unsafe { aclprofExtReportOp(m0, c"late".as_ptr(), c"Add".as_ptr(), 1, 2) },
        0
    );
    assert_eq!(aclprofExtFlush(), 0);
    assert_eq!(sizes(&root), before, "nothing was written after the stop");
    finish(cfg, &root);
}

#[test]
fn a_result_path_that_is_no_longer_a_directory_fails_start_cleanly() {
    let (_serial, root, _) = fresh("notadir");
    let (_, cfg) = models_and_config();
    // CANN's error and a message; nothing crashes; finalize still works.
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::write(&root, b"not a directory").unwrap();
    assert_eq!(aclprofStart(cfg), ACL_ERROR_INVALID_FILE);
    let msg = unsafe { std::ffi::CStr::from_ptr(aclprof::ffi::base::aclGetRecentErrMsg()) }
        .to_string_lossy()
        .into_owned();
    assert!(msg.contains("cannot create"), "{msg}");
    assert_eq!(aclprofStop(cfg), 100043, "nothing is running");
    assert_eq!(aclprofFinalize(), 0);
    aclprofDestroyConfig(cfg);
    let _ = std::fs::remove_file(&root);
}
