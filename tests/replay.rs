//! Real profiles replay exactly: every table and timeline in tests/data/real (written by real
//! Ascend runs; tests/data/real/SOURCES.md says where each came from) is loaded with
//! `aclprofExtSimModelLoad`, executed once under a pipe subscription and once in file mode,
//! and per op type the count and total duration of the input must equal the pipe's
//! records, op_summary, and op_statistic (which leaves communication out, as real runs do).
//! The expected figures are read from the input here, independently of the simulator.
//! One test function: the profiler is process-wide.

use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Read;
use std::path::{Path, PathBuf};

mod common;
use common::{output, profiled, read_csv, root, us};

/// Per op type: (count, total ns).
type PerType = BTreeMap<String, (u64, u64)>;

/// A decimal number of µs ("12.5", "1.35", "132.150000", "5e-05" ms handled by the caller)
/// to ns, rounding at the fourth decimal.
fn us_to_ns(s: &str) -> u64 {
    let s = s.trim().trim_matches('"').trim();
    let (a, b) = s.split_once('.').unwrap_or((s, ""));
    let digits: Vec<u64> = b
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(4)
        .map(|d| (d - b'0') as u64)
        .collect();
    let frac = digits[0] * 100 + digits[1] * 10 + digits[2] + u64::from(digits[3] >= 5);
    a.parse::<u64>().unwrap_or(0) * 1000 + frac
}

struct Expected {
    all: PerType,
    /// Without communication (op_statistic).
    computing: PerType,
    device: u32,
}

fn is_communication(task_type: &str, name: &str) -> bool {
    matches!(task_type, "COMMUNICATION" | "HCCL") || name.starts_with("hcom_")
}

fn add(e: &mut Expected, ty: &str, task_type: &str, name: &str, ns: u64) {
    let a = e.all.entry(ty.to_string()).or_default();
    a.0 += 1;
    a.1 += ns;
    if !is_communication(task_type, name) {
        let c = e.computing.entry(ty.to_string()).or_default();
        c.0 += 1;
        c.1 += ns;
    }
}

/// What the input says, read the way its own tools would.
fn expected(path: &Path) -> Expected {
    let mut e = Expected {
        all: PerType::new(),
        computing: PerType::new(),
        device: 0,
    };
    if path.extension().unwrap() == "db" {
        let c = aclprof::sim::open_read_only(path).unwrap();
        e.device = c
            .query_row("SELECT min(deviceId) FROM TASK", [], |r| r.get(0))
            .unwrap();
        for (ty, task_type, name, ns) in db_ops(path) {
            add(&mut e, &ty, &task_type, &name, ns);
        }
        return e;
    }
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().unwrap() == "json" {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = v
            .as_array()
            .or_else(|| v["traceEvents"].as_array())
            .unwrap();
        let hw: Vec<&serde_json::Value> = events
            .iter()
            .filter(|x| x["name"] == "process_name" && x["args"]["name"] == "Ascend Hardware")
            .map(|x| &x["pid"])
            .collect();
        for x in events {
            let tt = &x["args"]["Task Type"];
            if x["ph"] == "X" && hw.contains(&&x["pid"]) && tt.is_string() {
                let name = x["name"].as_str().unwrap();
                let dur = match &x["dur"] {
                    serde_json::Value::String(s) => us_to_ns(s),
                    n => us_to_ns(&n.to_string()),
                };
                add(&mut e, name, tt.as_str().unwrap(), name, dur);
            }
        }
        return e;
    }
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.trim_start_matches('\u{FEFF}').as_bytes());
    let h: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    let col = |names: &[&str]| names.iter().find_map(|n| h.iter().position(|x| x == n));
    let name = col(&["Op Name", "Name", "full_kernel_name", "full_op_name"]).unwrap();
    let ty = col(&["OP Type", "Type"]);
    let task_type = col(&["Task Type", "Accelerator Core"]);
    let dur_us = col(&["Task Duration(us)", "Duration(us)"]);
    let dur_ms = col(&["execution_time"]);
    let dev = col(&["Device_id"]);
    for r in rd.records() {
        let r = r.unwrap();
        let n = &r[name];
        let t = match ty {
            Some(c) => r[c].to_string(),
            // MindSpore's kernel names: "Default/.../GetNext-op6" is a GetNext.
            None => n
                .rsplit('/')
                .next()
                .unwrap()
                .split("-op")
                .next()
                .unwrap()
                .to_string(),
        };
        let ns = match (dur_us, dur_ms) {
            (Some(c), _) => us_to_ns(&r[c]),
            (None, Some(c)) => (r[c].parse::<f64>().unwrap() * 1e6).round() as u64,
            _ => panic!("{}: no duration column", path.display()),
        };
        if let Some(c) = dev {
            e.device = r[c].parse().unwrap();
        }
        add(&mut e, &t, task_type.map_or("", |c| &r[c]), n, ns);
    }
    e
}

/// The ops of CANN's database, of its first device, as (type, task type, name, ns): compute
/// tasks, and communication ops (one row each in COMMUNICATION_OP, as kernel_details has
/// them).
fn db_ops(path: &Path) -> Vec<(String, String, String, u64)> {
    let c = aclprof::sim::open_read_only(path).unwrap();
    let dev = "(SELECT min(deviceId) FROM TASK)";
    let sql = format!(
        "SELECT o.value, k.value, n.value, t.endNs - t.startNs FROM TASK t \
         JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId \
         JOIN STRING_IDS n ON n.id = c.name JOIN STRING_IDS o ON o.id = c.opType \
         JOIN STRING_IDS k ON k.id = c.taskType WHERE t.deviceId = {dev} \
         UNION ALL \
         SELECT o.value, 'COMMUNICATION', n.value, p.endNs - p.startNs FROM COMMUNICATION_OP p \
         JOIN STRING_IDS n ON n.id = p.opName JOIN STRING_IDS o ON o.id = p.opType"
    );
    let mut stmt = c.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)? as u64))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("tests/data/real"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            [
                "kernel_details",
                "op_summary",
                "trace_view",
                "msprof_timeline",
            ]
            .iter()
            .any(|k| n.starts_with(k))
                || n.starts_with("aicore_intermediate_detail")
                || n.ends_with(".db")
        })
        .collect();
    v.sort();
    v
}

fn load(path: &Path) -> u32 {
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let mut id = 0;
    let rc = unsafe { aclprofExtSimModelLoad(c.as_ptr(), &mut id) };
    assert_eq!(rc, 0, "{} does not load", path.display());
    id
}

/// Runs the model once under a pipe subscription; what the pipe delivered, per type.
fn through_a_pipe(model: u32) -> PerType {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let reader = std::thread::spawn(move || {
        let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
        let mut all = Vec::new();
        f.read_to_end(&mut all).unwrap();
        all
    });
    let mut w = fds[1];
    let cfg =
        unsafe { aclprofCreateSubscribeConfig(1, aclprofAicoreMetrics(0xFF), (&raw mut w).cast()) };
    assert_eq!(aclprofModelSubscribe(model, cfg), 0);
    assert_eq!(aclprofExtSimModelExecute(model), 0);
    assert_eq!(aclprofModelUnSubscribe(model), 0);
    assert_eq!(aclprofDestroySubscribeConfig(cfg), 0);
    unsafe { libc::close(w) };
    let buf = reader.join().unwrap();
    let mut n = 0u32;
    let p = buf.as_ptr().cast();
    assert_eq!(unsafe { aclprofGetOpNum(p, buf.len(), &mut n) }, 0);
    let mut got = PerType::new();
    for i in 0..n {
        let mut len = 0usize;
        assert_eq!(unsafe { aclprofGetOpTypeLen(p, buf.len(), i, &mut len) }, 0);
        let mut ty = vec![0u8; len];
        assert_eq!(
            unsafe { aclprofGetOpType(p, buf.len(), i, ty.as_mut_ptr().cast(), len) },
            0
        );
        ty.pop();
        let e = got.entry(String::from_utf8(ty).unwrap()).or_default();
        e.0 += 1;
        e.1 += unsafe { aclprofGetOpDuration(p, buf.len(), i) };
    }
    got
}

/// The `aclprofAicoreMetrics` a fixture's PMU columns belong to (by its file name), so
/// file mode asks for the same group; ACL_AICORE_NONE for tables without PMU columns.
fn metric_of(what: &str) -> u32 {
    let groups = [
        ("arithutil", 0),
        ("pipeutil", 1),
        ("memoryl0", 3),
        ("memoryub", 5),
        ("memory_", 2),
        ("resconflict", 4),
        ("l2cache", 6),
    ];
    // torch_npu's level-2 database holds the PipeUtilization group's values.
    if what.ends_with("level2_910B_msinsight.db") {
        return 1;
    }
    groups
        .iter()
        .find(|(k, _)| what.contains(k))
        .map_or(0xFF, |g| g.1)
}

/// A database's PMU values (TASK_PMU_INFO) by name, each as op_summary shows it (times, in
/// ns there, as µs with 3 decimals), sorted.
fn db_pmu(p: &Path) -> BTreeMap<String, Vec<String>> {
    let c = aclprof::sim::open_read_only(p).unwrap();
    let mut st = c
        .prepare("SELECT s.value, p.value FROM TASK_PMU_INFO p JOIN STRING_IDS s ON s.id = p.name")
        .unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut rows = st.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let name: String = r.get(0).unwrap();
        let v: f64 = r.get(1).unwrap();
        let text = if name.ends_with("_time") {
            format!("{:.3}", v / 1000.0)
        } else {
            format!("{v}")
        };
        out.entry(name).or_default().push(text);
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// A replayed database's PMU values reach op_summary (under its column names, times in µs)
/// and our database (under CANN's names, in ns). Returns how many columns were compared.
fn check_db_pmu(what: &str, input: &Path, dir: &Path, ours: &Path) -> usize {
    let theirs = db_pmu(input);
    assert!(theirs.len() >= 20, "{what}: PMU names {theirs:?}");
    let (oh, orows) = read_csv(&output(dir, "op_summary_"));
    let from = oh.iter().position(|h| h == "Context ID").unwrap() + 1;
    let mut compared = 0;
    for c in &oh[from..] {
        let (name, _) = aclprof::formats::db_schema::pmu_db_name(c);
        let mut got: Vec<String> = orows
            .iter()
            .map(|r| r[c].clone())
            .filter(|v| v != "N/A")
            .collect();
        got.sort();
        match theirs.get(&name) {
            Some(want) => {
                // op_summary writes what the replay read: the same text.
                let want: Vec<String> = want
                    .iter()
                    .map(|v| v.parse::<f64>().map_or(v.clone(), |x| format!("{x}")))
                    .collect();
                let got: Vec<String> = got
                    .iter()
                    .map(|v| v.parse::<f64>().map_or(v.clone(), |x| format!("{x}")))
                    .collect();
                assert_eq!(got, want, "{what}: op_summary {c} (their {name})");
                compared += 1;
            }
            None => assert!(got.is_empty(), "{what}: {c} is not in the database"),
        }
    }
    // Ours under CANN's names and units, for every column op_summary shows.
    let mine = db_pmu(ours);
    for (name, values) in &mine {
        assert_eq!(
            Some(values),
            theirs.get(name),
            "{what}: our TASK_PMU_INFO {name}"
        );
    }
    assert_eq!(mine.len(), compared, "{what}: our TASK_PMU_INFO names");
    compared
}

/// A real table's header (trimmed) and rows as header -> cell. Real tables can have short
/// rows: a missing cell is blank.
fn read_lenient(input: &Path) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(input)
        .unwrap();
    let h: Vec<String> = rd
        .headers()
        .unwrap()
        .iter()
        .map(|x| x.trim().to_string())
        .collect();
    let rows = rd
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            h.iter()
                .enumerate()
                .map(|(i, c)| (c.clone(), rec.get(i).unwrap_or("").to_string()))
                .collect()
        })
        .collect();
    (h, rows)
}

/// The input's PMU columns carried into op_summary value for value (as written; a blank
/// becomes N/A). Returns how many columns were compared.
fn check_pmu(what: &str, input: &Path, dir: &Path) -> usize {
    let (ih, irows) = read_lenient(input);
    let (oh, orows) = read_csv(&output(dir, "op_summary_"));
    let from = oh.iter().position(|h| h == "Context ID").unwrap() + 1;
    let mut compared = 0;
    for c in &oh[from..] {
        if !ih.contains(c) {
            assert!(
                orows.iter().all(|r| r[c] == "N/A"),
                "{what}: {c} not in the input"
            );
            continue;
        }
        let norm = |v: &str| {
            if v.trim().is_empty() {
                "N/A".to_string()
            } else {
                v.trim().to_string()
            }
        };
        let mut want: Vec<String> = irows.iter().map(|r| norm(&r[c])).collect();
        let mut got: Vec<String> = orows.iter().map(|r| r[c].clone()).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{what}: PMU column {c}");
        compared += 1;
    }
    compared
}

/// A replayed table's input and output shapes, data types and formats reach op_summary
/// row for row (as multisets: "N/A" or blank shapes are blank, other unknowns N/A).
/// Returns how many rows had known shapes.
fn check_tensors(what: &str, input: &Path, dir: &Path) -> usize {
    const COLS: [&str; 6] = [
        "Input Shapes",
        "Input Data Types",
        "Input Formats",
        "Output Shapes",
        "Output Data Types",
        "Output Formats",
    ];
    if input.extension().is_some_and(|x| x != "csv") {
        return 0;
    }
    let (h, irows) = read_lenient(input);
    let at: Vec<Option<usize>> = COLS.iter().map(|c| h.iter().position(|x| x == c)).collect();
    if at.iter().all(Option::is_none) {
        return 0;
    }
    let norm = |k: usize, v: &str| {
        let v = v.trim();
        match (k % 3 == 0, v.is_empty() || v == "N/A") {
            (true, true) => String::new(),
            (false, true) => "N/A".to_string(),
            _ => v.to_string(),
        }
    };
    let mut want: Vec<Vec<String>> = irows
        .iter()
        .map(|r| {
            (0..6)
                .map(|k| norm(k, at[k].map_or("", |_| r[COLS[k]].as_str())))
                .collect()
        })
        .collect();
    let (_, rows) = read_csv(&output(dir, "op_summary_"));
    let mut got: Vec<Vec<String>> = rows
        .iter()
        .map(|r| (0..6).map(|k| r[COLS[k]].clone()).collect())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "{what}: the tensors' shapes, types and formats");
    got.iter().filter(|r| !r[0].is_empty()).count()
}

/// Communication is on the HCCL track and in its own part of Overlap Analysis; the step
/// trace adds up.
fn check_communication(what: &str, e: &Expected, dir: &Path) {
    let count = |t: &PerType| t.values().map(|v| v.0).sum::<u64>();
    let comm_ops = count(&e.all) - count(&e.computing);
    let tl: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(output(dir, "msprof_")).unwrap()).unwrap();
    let events = tl.as_array().unwrap();
    let pid_of = |name: &str| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|x| x["name"] == "process_name" && x["args"]["name"] == name)
            .map(|x| &x["pid"])
            .collect()
    };
    let slices = |name: &str| -> Vec<&serde_json::Value> {
        let pids = pid_of(name);
        events
            .iter()
            .filter(|x| x["ph"] == "X" && pids.contains(&&x["pid"]))
            .collect()
    };
    assert_eq!(
        slices("HCCL").len() as u64,
        comm_ops,
        "{what}: ops on the HCCL track"
    );
    assert_eq!(
        slices("Ascend Hardware").len() as u64,
        count(&e.computing),
        "{what}: ops on Ascend Hardware streams"
    );
    let overlap: BTreeMap<String, u64> =
        slices("Overlap Analysis")
            .iter()
            .fold(BTreeMap::new(), |mut m, x| {
                *m.entry(x["name"].as_str().unwrap().to_string())
                    .or_default() += us(&x["dur"].to_string());
                m
            });
    let (_, steps) = read_csv(&dir.join("mindstudio_profiler_output/step_trace_time.csv"));
    assert_eq!(steps.len(), 1, "{what}: no steps, one row");
    let r = &steps[0];
    let f = |k: &str| us(&r[k]);
    assert_eq!(r["Device_id"], e.device.to_string(), "{what}");
    assert_eq!(f("Communication") > 0, comm_ops > 0, "{what}: {r:?}");
    assert_eq!(
        f("Overlapped") + f("Communication(Not Overlapped)"),
        f("Communication"),
        "{what}"
    );
    assert_eq!(
        f("Computing") + f("Communication(Not Overlapped)") + f("Free"),
        f("Stage"),
        "{what}: {r:?}"
    );
    for (k, track) in [
        ("Computing", "Computing"),
        ("Communication", "Communication"),
        (
            "Communication(Not Overlapped)",
            "Communication(Not Overlapped)",
        ),
        ("Free", "Free"),
    ] {
        let t = overlap.get(track).copied().unwrap_or(0);
        // The timeline rounds each slice to 1 ns; the step trace sums exact intervals.
        assert!(
            t.abs_diff(f(k)) <= overlap.len() as u64 * 1000,
            "{what}: {k} {t} vs {r:?}"
        );
    }
}

fn newest_dir(root: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v.pop().unwrap()
}

#[test]
fn real_profiles_replay_exactly() {
    std::env::set_var("ACLPROF_DEVICE_COUNT", "8");
    let files = fixtures();
    assert!(files.len() >= 20, "the fixtures are there: {files:?}");
    let cases: Vec<(String, Expected, u32, &PathBuf)> = files
        .iter()
        .map(|p| {
            let what = p.file_name().unwrap().to_str().unwrap().to_string();
            let e = expected(p);
            assert!(!e.all.is_empty(), "{what}: the input has ops");
            (what, e, load(p), p)
        })
        .collect();

    // Subscriptions (which CANN allows only outside aclprofInit/aclprofFinalize).
    for (what, e, model, _) in &cases {
        assert_eq!(through_a_pipe(*model), e.all, "{what}: the pipe's records");
    }

    // File mode.
    let out = std::env::temp_dir().join(format!("aclprof-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let outc = CString::new(out.to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { aclprofInit(outc.as_ptr(), out.to_str().unwrap().len()) },
        0
    );
    let mut pmu_compared = 0;
    let mut db_pmu_compared = 0;
    let mut shapes_compared = 0;
    for (what, e, model, input) in &cases {
        let metric = metric_of(what);
        profiled(e.device, metric, || {
            assert_eq!(aclprofExtSimModelExecute(*model), 0, "{what}");
        });
        let dir = newest_dir(&out);

        let (_, rows) = read_csv(&output(&dir, "op_summary_"));
        let mut got = PerType::new();
        for r in &rows {
            let g = got.entry(r["OP Type"].clone()).or_default();
            g.0 += 1;
            g.1 += us(&r["Task Duration(us)"]);
        }
        for (k, v) in &e.all {
            assert_eq!(got.get(k), Some(v), "{what}: op_summary, {k}");
        }
        assert_eq!(got, e.all, "{what}: op_summary");

        shapes_compared += check_tensors(what, input, &dir);
        // The database the export wrote holds the same ops.
        let dbs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "db"))
            .collect();
        assert_eq!(dbs.len(), 1, "{what}: one msprof_*.db in {}", dir.display());
        let mut in_db = PerType::new();
        for (ty, _, _, ns) in db_ops(&dbs[0]) {
            let g = in_db.entry(ty).or_default();
            g.0 += 1;
            g.1 += ns;
        }
        assert_eq!(in_db, e.all, "{what}: our msprof_*.db");
        if input.extension().is_some_and(|x| x == "db") && metric != 0xFF {
            db_pmu_compared += check_db_pmu(what, input, &dir, &dbs[0]);
        }
        if input.extension().is_some_and(|x| x == "db") {
            // A replayed database's input shapes, types and formats reach ours.
            let tensors = |p: &Path| -> Vec<String> {
                let c = aclprof::sim::open_read_only(p).unwrap();
                let mut st = c
                    .prepare(
                        "SELECT coalesce(a.value, '') || '|' || coalesce(b.value, '') || '|' || \
                         coalesce(f.value, '') FROM COMPUTE_TASK_INFO c \
                         LEFT JOIN STRING_IDS a ON a.id = c.inputShapes \
                         LEFT JOIN STRING_IDS b ON b.id = c.inputDataTypes \
                         LEFT JOIN STRING_IDS f ON f.id = c.outputFormats",
                    )
                    .unwrap();
                let mut v: Vec<String> = st
                    .query_map([], |r| r.get::<_, String>(0))
                    .unwrap()
                    .map(|x| x.unwrap().replace("N/A", ""))
                    .collect();
                v.sort();
                v
            };
            let theirs = tensors(input);
            assert!(
                theirs.iter().any(|t| !t.starts_with('|')),
                "{what}: shapes known"
            );
            assert_eq!(
                tensors(&dbs[0]),
                theirs,
                "{what}: tensors in our msprof_*.db"
            );
        }

        // One row per type and core type (CANN's grouping: a type whose ops ran as
        // different task types has a row for each).
        let (_, stat) = read_csv(&output(&dir, "op_statistic_"));
        let mut got = PerType::new();
        let mut cores = std::collections::BTreeSet::new();
        for r in &stat {
            assert!(
                cores.insert((r["OP Type"].clone(), r["Core Type"].clone())),
                "{what}: one op_statistic row per type and core type"
            );
            let e = got.entry(r["OP Type"].clone()).or_default();
            e.0 += r["Count"].parse::<u64>().unwrap();
            e.1 += us(&r["Total Time(us)"]);
        }
        assert_eq!(
            got, e.computing,
            "{what}: op_statistic, communication left out"
        );
        if metric != 0xFF && input.extension().is_none_or(|x| x != "db") {
            pmu_compared += check_pmu(what, input, &dir);
        }
        check_communication(what, e, &dir);
    }
    assert!(
        pmu_compared >= 100,
        "the PMU columns were compared: {pmu_compared}"
    );
    assert!(
        db_pmu_compared >= 20,
        "a real database's PMU columns were compared: {db_pmu_compared}"
    );
    assert!(
        shapes_compared >= 100,
        "rows with known shapes were compared: {shapes_compared}"
    );
    // A task type is text from outside: quoted in op_summary, escaped in the timeline.
    let odd = std::env::temp_dir().join(format!("aclprof-odd-{}.csv", std::process::id()));
    std::fs::write(
        &odd,
        "Name,Type,Accelerator Core,Start Time(us),Duration(us)\n\
         a,Mul,\"Write \"\"Value\"\", 2\",100.000,1.5\n",
    )
    .unwrap();
    let model = load(&odd);
    profiled(0, 0xFF, || assert_eq!(aclprofExtSimModelExecute(model), 0));
    let dir = newest_dir(&out);
    let (_, rows) = read_csv(&output(&dir, "op_summary_"));
    assert_eq!(rows[0]["Task Type"], "Write \"Value\", 2");
    let tl: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(output(&dir, "msprof_")).unwrap())
            .expect("the timeline is JSON");
    assert!(tl
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["args"]["Task Type"] == "Write \"Value\", 2"));
    assert_eq!(aclprofExtModelUnload(model), 0);
    let _ = std::fs::remove_file(&odd);

    assert_eq!(aclprofFinalize(), 0);
    for (_, _, model, _) in &cases {
        assert_eq!(aclprofExtModelUnload(*model), 0);
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// The operator memory of CANN's own database, replayed by `export` of the database: every
/// NPU_OP_MEM row again in ours (allocate or release, size, time, totals, component, name),
/// and memory_record and operator_memory written from them.
#[test]
fn a_database_s_operator_memory_is_replayed_without_loss() {
    let db = root().join("tests/data/real/msprof_full_db_msinsight.db");
    let out = std::env::temp_dir().join(format!("aclprof-replay-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // (The database's tasks are on device 2.)
    let o = std::process::Command::new(common::aclprof_bin())
        .arg("export")
        .arg(&db)
        .arg("-o")
        .arg(&out)
        .env("ACLPROF_DEVICE_COUNT", "4")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // (name, type, size, time, total allocated, total reserved, component, device)
    type Row = (String, i64, i64, i64, i64, i64, String, i64);
    let rows = |p: &Path| -> Vec<Row> {
        let c = aclprof::sim::open_read_only(p).unwrap();
        let mut st = c
            .prepare(
                "SELECT n.value, m.type, m.size, m.timestampNs, m.totalAllocate, m.totalReserve, \
                 c.value, m.deviceId FROM NPU_OP_MEM m JOIN STRING_IDS n ON m.operatorName = n.id \
                 JOIN STRING_IDS c ON m.component = c.id ORDER BY m.timestampNs, m.rowid",
            )
            .unwrap();
        st.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let theirs = rows(&db);
    let ours_db = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .unwrap();
    let ours = rows(&ours_db);
    assert_eq!(theirs.len(), 494);
    assert_eq!(ours, theirs);
    let (_, record) = read_csv(&output(&dir, "memory_record_"));
    assert_eq!(record.len(), theirs.len());
    let (_, paired) = read_csv(&output(&dir, "operator_memory_"));
    let allocations = theirs.iter().filter(|r| r.1 == 5).count();
    assert_eq!(paired.len(), allocations);
    let _ = std::fs::remove_dir_all(&out);
}
