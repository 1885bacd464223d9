//! The `aclprof` command line as users run it (the built binary): `analyze` of a simulated
//! ResNet-50 run agrees exactly with the run's op_summary and op_statistic, from the result
//! directory, a file of raw records and standard input; `export` rewrites a directory;
//! `timeline` writes the Perfetto trace, whose op slices are op_summary's.
//! One test function: the profiler is process-wide.

use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "../../tests/common/mod.rs"]
mod common;
use common::{output, profiled, read_csv, root, us};

const EXECUTIONS: u64 = 3;

/// `aclprof` run with `args` (and `stdin`, else an empty one): exit code, stdout, stderr.
fn aclprof_code(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aclprof"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that does not read its input may have exited already.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn aclprof(args: &[&str], stdin: Option<&[u8]>) -> (bool, String, String) {
    let (code, out, err) = aclprof_code(args, stdin.unwrap_or_default());
    (code == 0, out, err)
}

/// CSV output of `aclprof analyze` as (first column -> row).
fn csv_rows(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let h: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            let m: BTreeMap<String, String> = h
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect();
            (rec[0].to_string(), m)
        })
        .collect()
}

/// Per type (count, total ns) from `aclprof analyze SOURCE --aggregate-by type` plus `extra`.
fn per_type(source: &str, extra: &[&str], stdin: Option<&[u8]>) -> BTreeMap<String, (u64, u64)> {
    let mut args = vec![
        "analyze",
        source,
        "--aggregate-by",
        "type",
        "-t",
        "0",
        "--format",
        "csv",
    ];
    args.extend(extra);
    let (ok, out, err) = aclprof(&args, stdin);
    assert!(ok, "{args:?}: {err}");
    csv_rows(&out)
        .into_iter()
        .map(|(k, r)| (k, (r["Count"].parse().unwrap(), us(&r["Sum(us)"]))))
        .collect()
}

/// `aclprof analyze` plus `args`, as JSON.
fn analyze_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["analyze"];
    all.extend(args);
    all.extend(["--format", "json"]);
    let (ok, out, err) = aclprof(&all, None);
    assert!(ok, "{all:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// Decodes a Perfetto trace as written by aclprof: (track name, slice durations in ns).
fn pftrace_slices(mut b: &[u8]) -> Vec<(String, Vec<u64>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let (mut v, mut s) = (0u64, 0);
        loop {
            let x = b[0];
            *b = &b[1..];
            v |= ((x & 0x7f) as u64) << s;
            s += 7;
            if x & 0x80 == 0 {
                return v;
            }
        }
    }
    /// (field, varint value or bytes) of one message.
    fn fields(mut b: &[u8]) -> Vec<(u64, u64, &[u8])> {
        let mut v = Vec::new();
        while !b.is_empty() {
            let k = varint(&mut b);
            match k & 7 {
                0 => v.push((k >> 3, varint(&mut b), &[][..])),
                2 => {
                    let n = varint(&mut b) as usize;
                    v.push((k >> 3, 0, &b[..n]));
                    b = &b[n..];
                }
                w => panic!("wire type {w}"),
            }
        }
        v
    }
    fn get<'a>(f: &[(u64, u64, &'a [u8])], n: u64) -> Option<(u64, &'a [u8])> {
        f.iter().find(|x| x.0 == n).map(|x| (x.1, x.2))
    }
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut open: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut durs: HashMap<u64, Vec<u64>> = HashMap::new();
    while !b.is_empty() {
        assert_eq!(varint(&mut b), 1 << 3 | 2, "a TracePacket");
        let n = varint(&mut b) as usize;
        let pkt = fields(&b[..n]);
        b = &b[n..];
        if let Some((_, td)) = get(&pkt, 60) {
            let td = fields(td);
            if let Some((_, name)) = get(&td, 2) {
                let uuid = get(&td, 1).unwrap().0;
                names.insert(uuid, String::from_utf8(name.to_vec()).unwrap());
            }
        }
        if let Some((_, te)) = get(&pkt, 11) {
            let te = fields(te);
            let ts = get(&pkt, 8).unwrap().0;
            let track = get(&te, 11).unwrap().0;
            match get(&te, 9).unwrap().0 {
                1 => open.entry(track).or_default().push(ts),
                2 => {
                    let start = open.get_mut(&track).unwrap().pop().unwrap();
                    durs.entry(track).or_default().push(ts - start);
                }
                t => panic!("event type {t}"),
            }
        }
    }
    assert!(open.values().all(Vec::is_empty), "every slice ends");
    durs.into_iter()
        .map(|(t, d)| (names[&t].clone(), d))
        .collect()
}

/// The overall rows of `aclprof diff BASE NEW --format json`, by name.
fn overall_of_diff(base: &str, new: &str) -> BTreeMap<String, serde_json::Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aclprof"))
        .args(["diff", base, new, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // `compare` is another name for it, with the same output.
    let same = std::process::Command::new(env!("CARGO_BIN_EXE_aclprof"))
        .args(["compare", base, new, "--format", "json"])
        .output()
        .unwrap();
    assert!(same.status.success() && same.stdout == out.stdout);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["Section"] == "overall")
        .map(|r| (r["Name"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

fn simulated_run(out: &Path) -> PathBuf {
    let model_path = CString::new(root().join("models/resnet50.json").to_str().unwrap()).unwrap();
    let mut model = 0u32;
    assert_eq!(
        unsafe { aclprofExtSimModelLoad(model_path.as_ptr(), &mut model) },
        0
    );
    let outc = CString::new(out.to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { aclprofInit(outc.as_ptr(), out.to_str().unwrap().len()) },
        0
    );
    profiled(0, 0xFF, || {
        for _ in 0..EXECUTIONS {
            assert_eq!(aclprofExtSimModelExecute(model), 0);
        }
    });
    assert_eq!(aclprofFinalize(), 0);
    assert_eq!(aclprofExtModelUnload(model), 0);
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    dirs[0].clone()
}

#[test]
fn analyze_agrees_with_the_result_files() {
    let out = std::env::temp_dir().join(format!("aclprof-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let prof = simulated_run(&out);
    let p = prof.to_str().unwrap();

    // What the export wrote.
    let (_, stat) = read_csv(&output(&prof, "op_statistic_"));
    let want: BTreeMap<String, (u64, u64)> = stat
        .iter()
        .map(|r| {
            (
                r["OP Type"].clone(),
                (r["Count"].parse().unwrap(), us(&r["Total Time(us)"])),
            )
        })
        .collect();
    let (_, summary) = read_csv(&output(&prof, "op_summary_"));
    assert_eq!(summary.len() as u64, 125 * EXECUTIONS);

    assert_eq!(
        per_type(p, &[], None),
        want,
        "per type, from the result directory"
    );
    let folder = out.to_str().unwrap();
    assert_eq!(
        per_type(folder, &[], None),
        want,
        "per type, from the folder"
    );

    // A file of raw records (what a subscription writes) and standard input: the device's
    // stream files back to back.
    let mut raw = Vec::new();
    for f in aclprof::filemode::export::stream_files(&prof.join("device_0/data")).unwrap() {
        raw.extend(std::fs::read(f).unwrap());
    }
    let raw_path = out.join("records.bin");
    std::fs::write(&raw_path, &raw).unwrap();
    let raw_file = raw_path.to_str().unwrap();
    assert_eq!(
        per_type(raw_file, &[], None),
        want,
        "per type, from a record file"
    );
    assert_eq!(per_type("-", &[], Some(&raw)), want, "per type, from stdin");
    // Every command that offers - reads it (report and diff read their input more than
    // once); timeline and export, which need a result directory, say so instead of
    // suggesting it.
    let page = out.join("stdin.html");
    let (ok, said, err) = aclprof(&["report", "-", "-o", page.to_str().unwrap()], Some(&raw));
    assert!(ok && page.is_file(), "report - : {err}");
    let ops = raw.len() / 512;
    assert!(said.contains(&format!(": {ops} ops")), "report - : {said}");
    let (ok, said, err) = aclprof(&["diff", "-", raw_file, "--format", "json"], Some(&raw));
    assert!(ok, "diff - FILE: {err}");
    assert!(said.contains("\"base\": \"stdin\""), "diff - FILE: {said}");
    let (ok, _, err) = aclprof(&["diff", "-", "-"], Some(&raw));
    assert!(
        !ok && err.contains("standard input can be read once"),
        "{err}"
    );
    for cmd in ["timeline", "export"] {
        let (ok, _, err) = aclprof(&[cmd, "-"], Some(&raw));
        assert!(
            !ok && err.contains("op records alone are read by analyze"),
            "{cmd} -: {err}"
        );
        let empty = out.join(format!("empty-{cmd}"));
        std::fs::create_dir_all(&empty).unwrap();
        let (ok, _, err) = aclprof(&[cmd, empty.to_str().unwrap()], None);
        assert!(
            !ok && !err.contains("standard input"),
            "{cmd} EMPTY offers only what it takes: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // diff takes every kind of input; the same run as a result directory, a record file
    // and the export's database differs in nothing, and the overall split of the directory
    // is step_trace_time.csv's.
    // (The database sits beside mindstudio_profiler_output/, as CANN puts it.)
    let db = prof.join(
        output(&prof, "msprof_")
            .with_extension("db")
            .file_name()
            .unwrap(),
    );
    for other in [raw_file, db.to_str().unwrap()] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_aclprof"))
            .args(["diff", p, other, "--format", "json", "-t", "0"])
            .args(["--fail-above", "0"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = j["rows"].as_array().unwrap();
        let types: BTreeMap<String, (u64, u64)> = rows
            .iter()
            .filter(|r| r["Section"] == "type")
            .map(|r| {
                assert_eq!(r["Diff(us)"], 0.0, "{other}: {r}");
                let n = r["New Count"].as_u64().unwrap();
                (
                    r["Name"].as_str().unwrap().to_string(),
                    (n, (r["New(us)"].as_f64().unwrap() * 1000.0).round() as u64),
                )
            })
            .collect();
        assert_eq!(types, want, "diff per type, {other}");
        assert!(rows.iter().all(|r| r["Diff(us)"] == 0.0), "{other}: {j}");
    }
    let (_, steps) = read_csv(&prof.join("mindstudio_profiler_output/step_trace_time.csv"));
    let sum = |k: &str| -> f64 { steps.iter().map(|r| r[k].parse::<f64>().unwrap()).sum() };
    let j = overall_of_diff(p, p);
    let overall = |k: &str| j[k]["Base(us)"].as_f64().unwrap();
    assert!(
        (overall("Computing time") - sum("Computing")).abs() < 1e-6,
        "{j:?}"
    );
    assert!((overall("Free time") - sum("Free")).abs() < 1e-6, "{j:?}");
    assert!((overall("E2E time") - sum("Stage")).abs() < 1e-6, "{j:?}");
    // One damaged record is skipped and said so, in the singular.
    let mut damaged = raw.clone();
    damaged[100] ^= 0xff;
    let (ok, table, err) = aclprof(&["analyze", "-"], Some(&damaged));
    assert!(ok, "{err}");
    assert!(table.contains("; 1 corrupt record skipped"), "{table}");

    // Single ops: the top 5 are op_summary's 5 longest, with their durations.
    let mut durs: Vec<u64> = summary
        .iter()
        .map(|r| us(&r["Task Duration(us)"]))
        .collect();
    durs.sort_unstable_by(|a, b| b.cmp(a));
    let j = analyze_json(&[p, "-t", "5"]);
    let got: Vec<u64> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["Duration(us)"].as_f64().unwrap() * 1000.0).round() as u64)
        .collect();
    assert_eq!(got, durs[..5], "the five longest ops");
    assert_eq!(j["ops"], 125 * EXECUTIONS);
    // One op of each execution under one name: the Start column tells them apart.
    let j = analyze_json(&[p, "-t", "0", "--name", "^resnet50/conv1/Conv2D$"]);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len() as u64, EXECUTIONS, "{j}");
    let mut starts: Vec<f64> = rows
        .iter()
        .map(|r| r["Start(us)"].as_f64().unwrap())
        .collect();
    starts.sort_by(f64::total_cmp);
    starts.dedup();
    assert_eq!(starts.len() as u64, EXECUTIONS, "distinct starts: {j}");
    // ...in op_summary's clock (epoch µs), so an op found in one is found in the other.
    let mut want_starts: Vec<u64> = summary
        .iter()
        .filter(|r| r["Op Name"] == "resnet50/conv1/Conv2D")
        .map(|r| us(&r["Task Start Time(us)"]))
        .collect();
    want_starts.sort_unstable();
    let (ok, csv, err) = aclprof(
        &[
            "analyze",
            p,
            "-t",
            "0",
            "--name",
            "^resnet50/conv1/Conv2D$",
            "--format",
            "csv",
        ],
        None,
    );
    assert!(ok, "{err}");
    let mut lines = csv.lines();
    let at = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "Start(us)")
        .unwrap();
    let mut got_starts: Vec<u64> = lines.map(|l| us(l.split(',').nth(at).unwrap())).collect();
    got_starts.sort_unstable();
    assert_eq!(got_starts, want_starts, "Start(us) as op_summary gives it");

    // Filters: --type, --name, --min-time.
    let conv: Vec<_> = per_type(p, &["--type", "Conv2D"], None)
        .into_iter()
        .collect();
    assert_eq!(conv, [("Conv2D".to_string(), want["Conv2D"])]);
    let in_block = |r: &&HashMap<String, String>| r["Op Name"].contains("layer1/block1/");
    let want_named = summary.iter().filter(in_block).count() as u64;
    assert!(want_named > 0);
    assert_eq!(
        analyze_json(&[p, "--name", "layer1/block1/"])["ops"],
        want_named
    );
    let min = (durs[9] as f64 / 1000.0).to_string();
    let long = durs.iter().filter(|&&d| d >= durs[9]).count() as u64;
    assert_eq!(analyze_json(&[p, "--min-time", &min])["ops"], long);

    // The table a person reads.
    let (ok, table, _) = aclprof(&["analyze", p, "--aggregate-by", "type", "-t", "3"], None);
    assert!(ok);
    assert!(table.starts_with("Type "), "{table}");
    assert!(
        table.contains(&format!(
            "3 of {} groups; {} ops",
            want.len(),
            125 * EXECUTIONS
        )),
        "{table}"
    );

    // Errors: one line, non-zero exit.
    let (ok, _, err) = aclprof(&["analyze", "/nonexistent/aclprof"], None);
    assert!(
        !ok && err.starts_with("aclprof: ") && err.lines().count() == 1,
        "{err}"
    );
    let (ok, _, err) = aclprof(&["analyze", p, "--name", "("], None);
    assert!(!ok && err.contains("--name"), "{err}");
    let (ok, _, err) = aclprof(
        &["analyze", raw_path.to_str().unwrap(), "--step", "1"],
        None,
    );
    assert!(!ok && err.contains("--step"), "{err}");
    // "-" is standard input for the command only: the library never reads its host's.
    let mut report: *mut std::os::raw::c_char = std::ptr::null_mut();
    assert_eq!(
        unsafe { aclprofExtAnalyze(c"-".as_ptr(), std::ptr::null(), &mut report) },
        aclprof::error::ACL_ERROR_INVALID_PARAM
    );
    assert!(report.is_null());
    // A reader that goes away early (`| head`) ends the command quietly: no panic message.
    let mut c = Command::new(env!("CARGO_BIN_EXE_aclprof"))
        .args(["analyze", p, "-t", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(c.stdout.take());
    let o = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked") && o.status.code() != Some(101),
        "{err}"
    );
    // `record` checks its options before it runs the program, which would only log them.
    let (ok, _, err) = aclprof(
        &[
            "record",
            "-o",
            out.to_str().unwrap(),
            "--aic-metrics",
            "Pipe",
            "--",
            "true",
        ],
        None,
    );
    assert!(
        !ok && err.contains("\"Pipe\" is not a metric name"),
        "{err}"
    );

    // export: rewrites mindstudio_profiler_output/ from the raw data.
    let before = output(&prof, "op_summary_");
    std::fs::remove_file(&before).unwrap();
    let (ok, said, err) = aclprof(&["export", p], None);
    assert!(ok, "{err}");
    assert!(
        said.contains(&format!("{} ops exported", 125 * EXECUTIONS)),
        "{said}"
    );
    let (_, again) = read_csv(&output(&prof, "op_summary_"));
    assert_eq!(again.len(), summary.len());

    // docs/cli.md's order, report then timeline: the timeline keeps the export's names, so
    // the report's links still lead somewhere.
    let page = prof.join("report.html");
    let (ok, _, err) = aclprof(&["report", p, "-o", page.to_str().unwrap()], None);
    assert!(ok, "{err}");
    let links = |html: &str| -> Vec<String> {
        html.split("href=\"")
            .skip(1)
            .filter_map(|h| h.split('"').next())
            .filter(|h| h.contains("mindstudio_profiler_output/"))
            .map(str::to_string)
            .collect()
    };
    let linked = links(&std::fs::read_to_string(&page).unwrap());
    assert!(linked.iter().any(|h| h.ends_with(".pftrace")), "{linked:?}");

    // (Stamps have one-second resolution: a second later, a fresh stamp would differ.)
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // timeline: both files, and the Perfetto trace has every op with its exact duration.
    let (ok, said, err) = aclprof(&["timeline", folder], None);
    assert!(ok, "{err}");
    for h in &linked {
        assert!(
            prof.join(h).is_file(),
            "the report's link {h} is broken after timeline"
        );
    }
    let files: Vec<&str> = said.lines().filter_map(|l| l.split('\t').next()).collect();
    assert!(
        files.len() == 2 && files.iter().all(|f| Path::new(f).is_file()),
        "{said}"
    );
    let tracks = pftrace_slices(&std::fs::read(files[0]).unwrap());
    let mut got: Vec<u64> = tracks
        .iter()
        .filter(|(name, _)| name.starts_with("Stream "))
        .flat_map(|(_, d)| d.iter().copied())
        .collect();
    let mut want_durs: Vec<u64> = summary
        .iter()
        .map(|r| us(&r["Task Duration(us)"]))
        .collect();
    got.sort_unstable();
    want_durs.sort_unstable();
    assert_eq!(
        got, want_durs,
        "op slices in the .pftrace == op_summary's durations"
    );

    // Progress: a bar on a terminal (through `script`, which gives the command a pty), then
    // its line cleared; nothing at all on stderr when it is not a terminal.
    for args in [vec!["export", p], vec!["analyze", p], vec!["timeline", p]] {
        let line = format!("{} {}", env!("CARGO_BIN_EXE_aclprof"), args.join(" "));
        let o = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{args:?}: {shown}");
        let bar = format!(
            "{}: [",
            if args[0] == "analyze" {
                "reading"
            } else {
                "exporting"
            }
        );
        let done = format!("100%  {n}/{n} ops\r\x1b[K", n = 125 * EXECUTIONS);
        assert!(
            shown.contains(&bar) && shown.contains(&done),
            "{args:?}: {shown:?}"
        );
        let (ok, _, err) = aclprof(&args, None);
        assert!(ok && err.is_empty(), "{args:?} piped: {err:?}");
    }

    let _ = std::fs::remove_dir_all(&out);
}

/// A real CANN database (torch_npu's export, tests/data/real) is read like records:
/// `analyze` per type equals the database's own per-type counts and nanoseconds, and
/// `report` makes a page of it.
#[test]
fn analyze_and_report_read_a_real_database() {
    let db = root().join("tests/data/real/ascend_pytorch_profiler_level2_910B_msinsight.db");
    let c = aclprof::sim::open_read_only(&db).unwrap();
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut stmt = c
        .prepare(
            "SELECT o.value, t.endNs - t.startNs FROM TASK t \
             JOIN COMPUTE_TASK_INFO i ON i.globalTaskId = t.globalTaskId \
             JOIN STRING_IDS o ON o.id = i.opType \
             UNION ALL SELECT o.value, p.endNs - p.startNs FROM COMMUNICATION_OP p \
             JOIN STRING_IDS o ON o.id = p.opType",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .unwrap();
    for r in rows {
        let (ty, ns) = r.unwrap();
        let e = want.entry(ty).or_default();
        e.0 += 1;
        e.1 += ns;
    }
    assert!(want.len() > 5, "{want:?}");
    let path = db.to_str().unwrap();
    let (ok, out, err) = aclprof(
        &[
            "analyze",
            path,
            "--aggregate-by",
            "type",
            "-t",
            "0",
            "--format",
            "json",
        ],
        None,
    );
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got: BTreeMap<String, (u64, u64)> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let ns = (r["Sum(us)"].as_f64().unwrap() * 1000.0).round() as u64;
            (
                r["Type"].as_str().unwrap().to_string(),
                (r["Count"].as_u64().unwrap(), ns),
            )
        })
        .collect();
    assert_eq!(got, want, "analyze of the database, per type");
    let page = root().join("target/cli-db-report.html");
    let (ok, said, err) = aclprof(&["report", path, "-o", page.to_str().unwrap()], None);
    let ops: u64 = want.values().map(|v| v.0).sum();
    assert!(ok && said.contains(&format!("{ops} ops")), "{said}{err}");

    // export and timeline make a result directory of it, whose files say the same.
    let out = root().join("target/cli-db-export");
    let _ = std::fs::remove_dir_all(&out);
    let (ok, said, err) = aclprof(&["export", path, "-o", out.to_str().unwrap()], None);
    assert!(
        ok && said.contains(&format!("{ops} ops exported")),
        "{said}{err}"
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    let (_, rows) = read_csv(&output(&dirs[0], "op_summary_"));
    let mut got: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in &rows {
        let e = got.entry(r["OP Type"].clone()).or_default();
        e.0 += 1;
        e.1 += us(&r["Task Duration(us)"]);
    }
    assert_eq!(got, want, "op_summary of the exported database, per type");
    // Its epoch times, task types, shapes and PMU values, as the database has them.
    let first: i64 = c
        .query_row(
            "SELECT min(s) FROM (SELECT t.startNs s FROM TASK t JOIN COMPUTE_TASK_INFO i \
             ON i.globalTaskId = t.globalTaskId UNION ALL SELECT startNs FROM COMMUNICATION_OP)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let starts: Vec<u64> = rows.iter().map(|r| us(&r["Task Start Time(us)"])).collect();
    assert_eq!(starts.iter().min().copied(), Some(first as u64));
    assert!(rows.iter().any(|r| r["Task Type"] == "AI_VECTOR_CORE"));
    assert!(rows.iter().any(|r| r["Input Shapes"] == "\"32,3,224,224\""));
    assert!(rows
        .iter()
        .any(|r| r.get("aic_mac_ratio").is_some_and(|v| v != "N/A")));
    let (ok, said, err) = aclprof(&["timeline", path, "-o", out.to_str().unwrap()], None);
    assert!(
        ok && said.contains(".pftrace") && said.contains(".json"),
        "{said}{err}"
    );
    let tl = said
        .lines()
        .find(|l| l.contains(".json"))
        .unwrap()
        .split('\t')
        .next()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(tl).unwrap()).unwrap();
    let slices = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["Task Type"].is_string())
        .count();
    assert_eq!(slices as u64, ops, "a slice per task in the timeline");
    // Ordering by a cost no op carries says so, once, and still lists the ops.
    let (ok, said, err) = aclprof(&["analyze", path, "--order-by", "memory", "-t", "2"], None);
    assert!(ok && said.lines().count() == 5, "{said}{err}");
    assert_eq!(
        err.matches("none of these ops carries its bytes").count(),
        1,
        "{err}"
    );
    let (ok, _, err) = aclprof(&["analyze", path, "--order-by", "time", "-t", "2"], None);
    assert!(ok && err.is_empty(), "{err}");
    // -o belongs to databases; a result directory is exported in place.
    let (ok, _, err) = aclprof(&["export", dirs[0].to_str().unwrap(), "-o", "/tmp/x"], None);
    assert!(!ok && err.contains("-o is for a database"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Input with no valid op record is an error of one line that says what the input looks
/// like, for `analyze` and `report` alike: an empty file, random bytes, a file shorter than a
/// record, plain text, empty standard input, a CSV table, a JSON timeline, a result
/// directory nothing was recorded into.
#[test]
fn input_without_records_is_one_clear_error() {
    let dir = root().join("target/cli-no-records");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("PROF_000001_20260101000000000_00000001AAAAAAAA/host"))
        .unwrap();
    let mut noise = vec![0u8; 100 * 1024];
    let mut x = 0x9e3779b97f4a7c15u64;
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let files = [
        ("empty.bin", b"".to_vec(), "is empty"),
        ("noise.bin", noise, "failed the signature check"),
        (
            "short.bin",
            b"hi\n".to_vec(),
            "is 3 bytes long, shorter than one op record",
        ),
        (
            "notes.txt",
            b"some notes\n".repeat(100),
            "is text, not op records",
        ),
        (
            "op_summary_1.csv",
            b"Device_id,Op Name,OP Type\n0,conv1,Conv2D\n".to_vec(),
            "is a CSV table",
        ),
        ("msprof_1.json", b"[{\"ph\": \"X\"}]".to_vec(), "is JSON"),
    ];
    // A page that is never written: every input here is refused.
    let page = dir.join("never.html");
    let page = page.to_str().unwrap();
    for (name, bytes, says) in &files {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let p = p.to_str().unwrap();
        for args in [vec!["analyze", p], vec!["report", p, "-o", page]] {
            let (code, out, err) = aclprof_code(&args, b"");
            assert!(
                code == 1 && err.lines().count() == 1 && err.contains(says) && out.is_empty(),
                "{args:?}: {code} {err}"
            );
        }
    }
    for args in [
        vec!["analyze", "-"],
        vec!["report", "-", "-o", page],
        vec!["diff", "-", "-"],
    ] {
        let (code, _, err) = aclprof_code(&args, b"");
        assert!(
            code == 1 && err.lines().count() == 1 && !err.contains("aclprof-"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("standard input is empty") || err.contains("can be read once"),
            "{args:?}: {err}"
        );
    }
    let (code, _, err) = aclprof_code(&["report", "-", "-o", page], b"hi\n");
    assert!(
        code == 1 && err.starts_with("aclprof: standard input is 3 bytes long"),
        "{err}"
    );
    let prof = dir.to_str().unwrap();
    let pq = dir.join("dataset");
    for args in [
        vec!["analyze", prof],
        vec!["export", prof],
        vec!["timeline", prof],
        vec![
            "export",
            "--format",
            "parquet",
            prof,
            "-o",
            pq.to_str().unwrap(),
        ],
    ] {
        let (code, _, err) = aclprof_code(&args, b"");
        assert!(
            code == 1 && err.lines().count() == 1 && err.contains("no "),
            "{args:?}: {code} {err}"
        );
    }
    assert!(!pq.exists(), "no empty dataset left behind");
    assert!(
        !dir.join("PROF_000001_20260101000000000_00000001AAAAAAAA/mindstudio_profiler_output")
            .exists(),
        "nothing exported"
    );
    // export and timeline take the same inputs, and say what is wrong with others.
    let file = dir.join("empty.bin");
    for cmd in ["export", "timeline"] {
        let (code, _, err) = aclprof_code(&[cmd, file.to_str().unwrap()], b"");
        assert!(
            code == 1
                && err.lines().count() == 1
                && err.contains("op records alone are read by analyze, report and diff"),
            "{cmd}: {err}"
        );
        let (code, _, err) = aclprof_code(&[cmd, "/nonexistent/aclprof"], b"");
        assert!(
            code == 1 && err.lines().count() == 1 && !err.contains("aclprof_session"),
            "{cmd}: {err}"
        );
    }
}

/// `record` exits with the program's own code, whether or not it profiled anything.
#[test]
fn record_exits_with_the_programs_code() {
    let out = root().join("target/cli-record-code");
    let _ = std::fs::remove_dir_all(&out);
    let o = out.to_str().unwrap();
    let (code, _, err) = aclprof_code(&["record", "-o", o, "--", "sh", "-c", "exit 7"], b"");
    assert!(
        code == 7 && err.contains("wrote no result directory"),
        "{code} {err}"
    );
    let (code, _, err) = aclprof_code(&["record", "-o", o, "--", "true"], b"");
    assert!(
        code == 1 && err.contains("wrote no result directory"),
        "{code} {err}"
    );
    // Nothing recorded, nothing left: not the folder, nor the folders made for it.
    let deep = out.join("a/b");
    let (code, _, err) = aclprof_code(
        &[
            "record",
            "-o",
            deep.to_str().unwrap(),
            "--",
            "/nonexistent/program",
        ],
        b"",
    );
    assert!(code == 1 && err.contains("cannot run"), "{code} {err}");
    assert!(!out.exists(), "{} was left behind", out.display());
}

/// A failed write of the output (a full disk) is one line and exit 1, not a panic; `top`'s
/// JSON is JSON in every mode.
#[test]
fn a_failed_write_is_one_line_and_json_is_json() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let db = root().join("tests/data/real/msprof_full_db_msinsight.db");
    for args in [
        vec!["analyze", db.to_str().unwrap()],
        vec!["analyze", "--help"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_aclprof"))
            .args(&args)
            .current_dir(std::env::temp_dir())
            .stdout(full.try_clone().unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.lines().count() == 1 && err.contains("cannot write the output"),
            "{args:?}: {err}"
        );
    }
    let (ok, out, _) = aclprof(&["top", "--format", "json"], None);
    assert!(ok);
    assert!(
        serde_json::from_str::<serde_json::Value>(&out)
            .unwrap()
            .is_array(),
        "{out}"
    );
}

/// A fresh folder `aclprof-NAME-PID` under the temp dir, with `in/` holding a copy of the
/// real CANN database (tests/data/real) as `in/DB`: (the folder, the copy).
fn with_real_db(name: &str, db: &str) -> (PathBuf, PathBuf) {
    let src = root().join("tests/data/real/msprof_full_db_msinsight.db");
    let dir = std::env::temp_dir().join(format!("aclprof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let copy = dir.join("in").join(db);
    std::fs::copy(&src, &copy).unwrap();
    (dir, copy)
}

/// A real CANN database in WAL mode is only ever read: `analyze`, `export --format parquet`
/// and `report` leave nothing beside it (no `-shm`, no `-wal`), and read it on a read-only
/// file system too (a read-only bind mount, where the machine allows one).
#[test]
fn a_database_is_read_without_writing_beside_it() {
    let (dir, db) = with_real_db("ro-db", "msprof_1.db");
    let input = dir.join("in");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let read_all = |db: &Path, pass: &str| {
        let d = db.to_str().unwrap();
        let out = out.join(pass);
        let (ok, stdout, stderr) = aclprof(&["analyze", d, "--format", "csv"], None);
        assert!(ok && stdout.lines().count() > 1, "analyze {d}: {stderr}");
        let pq = out.join("p");
        let (ok, _, stderr) = aclprof(
            &[
                "export",
                d,
                "--format",
                "parquet",
                "-o",
                pq.to_str().unwrap(),
            ],
            None,
        );
        assert!(ok, "export {d}: {stderr}");
        let page = out.join("r.html");
        let (ok, _, stderr) = aclprof(&["report", d, "-o", page.to_str().unwrap()], None);
        assert!(ok, "report {d}: {stderr}");
    };
    read_all(&db, "writable");
    let mut beside: Vec<String> = std::fs::read_dir(&input)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    beside.sort();
    assert_eq!(beside, ["msprof_1.db"], "nothing written beside the input");

    let ro = dir.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["--bind", "-o", "ro"])
        .arg(&input)
        .arg(&ro)
        .status()
        .is_ok_and(|s| s.success())
        && std::fs::write(ro.join("probe"), b"").is_err();
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    if mounted {
        let _unmount = Unmount(&ro);
        read_all(&ro.join("msprof_1.db"), "read-only");
    } else {
        eprintln!("no read-only bind mount here: the read-only file system case was not run");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A capture that attaches to nothing (a process that does not use aclprof) fails with one
/// line and leaves no output directory behind.
#[test]
fn a_failed_capture_leaves_nothing_behind() {
    let mut other = Command::new("sleep").arg("30").spawn().unwrap();
    let dir = std::env::temp_dir().join(format!("aclprof-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let pid = other.id().to_string();
    let (ok, _, err) = aclprof(
        &["capture", &pid, "-d", "1", "-o", dir.to_str().unwrap()],
        None,
    );
    let _ = other.kill();
    let _ = other.wait();
    assert!(!ok, "capture of a process without aclprof fails");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!dir.exists(), "{} was left behind", dir.display());
}

/// Options agree with their help: `top --format` lists and takes table and json only, and
/// `analyze --pipeline` refuses a format it would otherwise ignore.
#[test]
fn formats_are_what_help_says() {
    let (ok, _, err) = aclprof(&["top", "--format", "xml"], None);
    assert!(!ok && err.contains("one of: table, json"), "{err}");
    let (ok, _, err) = aclprof(&["top", "--format", "csv", "--once"], None);
    assert!(!ok && err.contains("one of: table, json"), "{err}");
    let (ok, _, err) = aclprof(&["analyze", "-", "--pipeline", "--format", "csv"], None);
    assert!(
        !ok && err.contains("--pipeline writes a table or JSON"),
        "{err}"
    );
    // Options that would be ignored together are refused together.
    for (args, says) in [
        (
            vec!["top", "1", "--once", "--serve", "0"],
            "cannot be used with",
        ),
        (
            vec!["top", "1", "--serve", "0", "--format", "json"],
            "cannot be used with",
        ),
        (
            vec!["analyze", "-", "--aggregate", "mean"],
            "--aggregate-by",
        ),
        (
            vec!["analyze", "-", "--min-time", "100", "--max-time", "1"],
            "no op could be kept",
        ),
    ] {
        let (ok, _, err) = aclprof(&args, Some(b""));
        assert!(!ok && err.contains(says), "{args:?}: {err}");
    }
}

/// Exporting a database writes into the current directory (never beside the database), and
/// exporting it again replaces that result directory: analysis of the output counts the
/// database's ops once.
#[test]
fn exporting_a_database_twice_replaces_the_first() {
    let (dir, db) = with_real_db("reexport", "msprof_9.db");
    let (input, work) = (dir.join("in"), dir.join("work"));
    std::fs::create_dir_all(&work).unwrap();
    let export = || {
        let out = Command::new(env!("CARGO_BIN_EXE_aclprof"))
            .arg("export")
            .arg(&db)
            .current_dir(&work)
            .env("ACLPROF_DEVICE_COUNT", "8") // its ops ran on device 2
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ops_of = |p: &Path| analyze_json(&[p.to_str().unwrap()])["ops"].clone();
    let once = ops_of(&db);
    export();
    export();
    let made = work.join("msprof_9_aclprof");
    let profs: Vec<_> = std::fs::read_dir(&made)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        profs.len(),
        1,
        "one result directory after two exports: {profs:?}"
    );
    assert_eq!(
        ops_of(&made),
        once,
        "the output holds the database's ops once"
    );
    let beside: Vec<_> = std::fs::read_dir(&input)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        beside.len(),
        1,
        "nothing written beside the database: {beside:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Help a user can scan: the top level gives each command one short line, and every
/// positional argument of every command is described.
#[test]
fn help_lists_commands_in_a_line_and_describes_every_argument() {
    let (ok, top, err) = aclprof(&["--help"], None);
    assert!(ok, "{err}");
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 8, "{top}");
    for l in top.lines().filter(|l| l.starts_with("  ")) {
        assert!(l.len() <= 100, "one short line per command: {l:?}");
    }
    for c in &commands {
        let (ok, help, err) = aclprof(&[c, "--help"], None);
        assert!(ok, "{c}: {err}");
        let args: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("Arguments:"))
            .skip(1)
            .take_while(|l| !l.is_empty() && !l.starts_with("Options:"))
            .collect();
        assert!(!args.is_empty(), "{c} has positional arguments: {help}");
        for (i, l) in args.iter().enumerate() {
            if l.trim_start().starts_with(['<', '[']) {
                let described = l.trim().split_once("  ").is_some()
                    || args.get(i + 1).is_some_and(|n| {
                        !n.trim().is_empty() && !n.trim_start().starts_with(['<', '['])
                    });
                assert!(described, "{c}: argument {l:?} has no description:\n{help}");
            }
        }
    }
}

/// A report's page and timeline appear whole or not at all: a rewrite leaves only its own
/// timeline files, and an interrupted report leaves neither half a timeline nor anything
/// under a temporary name.
#[test]
fn a_report_is_whole_or_absent() {
    let (dir, src) = with_real_db("whole", "msprof_1.db");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let run = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_aclprof"));
        c.args(args)
            .current_dir(&dir)
            .env("ACLPROF_DEVICE_COUNT", "8")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    };
    let made = run(&["export", src.to_str().unwrap()]).output().unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let prof = std::fs::read_dir(dir.join("msprof_1_aclprof"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let prof = prof.to_str().unwrap();
    // What an earlier, larger report left.
    let tl = out.join("r.timeline");
    std::fs::create_dir_all(&tl).unwrap();
    std::fs::write(tl.join("chunk-99.js"), "stale").unwrap();
    std::fs::write(out.join("r-rank-7.html"), "stale").unwrap();
    std::fs::create_dir_all(out.join("r-rank-7.timeline")).unwrap();
    std::fs::write(out.join("r-rank-70x.html"), "not the page's").unwrap();
    let page = out.join("r.html");
    let r = run(&["report", prof, "-o", page.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let index = std::fs::read_to_string(tl.join("index.js")).unwrap();
    let chunks: usize = index
        .split("\"chunks\":")
        .nth(1)
        .and_then(|s| s.split([',', '}']).next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&tl)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut want: Vec<String> = (0..chunks).map(|i| format!("chunk-{i}.js")).collect();
    want.push("index.js".into());
    want.sort();
    assert_eq!(files, want, "only this report's timeline files");
    assert!(
        !out.join("r-rank-7.html").exists(),
        "an earlier report's rank page goes"
    );
    assert!(!out.join("r-rank-7.timeline").exists());
    assert!(
        out.join("r-rank-70x.html").exists(),
        "what is not the page's stays"
    );
    // Interrupted at whatever point it has reached (several points): exit 130 (or done),
    // and never half.
    for delay_ms in [10, 60, 150, 300, 600] {
        let page = out.join(format!("s{delay_ms}.html"));
        let mut child = run(&["report", prof, "-o", page.to_str().unwrap()])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        // SAFETY: signals the child just spawned, which has not been waited for.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = child.wait().unwrap();
        // Done, or interrupted (130); or, on a loaded machine, killed by the signal's default
        // action before the command set its handler, which it does before writing anything.
        use std::os::unix::process::ExitStatusExt;
        let early = status.signal() == Some(libc::SIGINT);
        assert!(
            status.success() || status.code() == Some(130) || early,
            "{status:?}"
        );
        assert!(
            !early || !page.exists(),
            "killed before its handler, nothing is written"
        );
        assert_eq!(
            page.exists(),
            out.join(format!("s{delay_ms}.timeline")).exists(),
            "page and timeline together"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-"))
        .collect();
    assert!(left.is_empty(), "nothing under a temporary name: {left:?}");
    // A site rewritten for fewer runs keeps only its own pages, and what the user put in
    // its folder.
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::os::unix::fs::symlink(prof, runs.join("a")).unwrap();
    std::fs::copy(&src, runs.join("b.db")).unwrap();
    let site = dir.join("site");
    let listing = |d: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    for expect_runs in [2, 1] {
        let r = run(&[
            "report",
            runs.to_str().unwrap(),
            "-o",
            site.to_str().unwrap(),
        ])
        .output()
        .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let pages: Vec<String> = listing(&site)
            .into_iter()
            .filter(|n| n.starts_with("run-") && n.ends_with(".html"))
            .collect();
        assert_eq!(pages.len(), expect_runs, "{pages:?}");
        assert_eq!(listing(&site.join("diff")).len(), expect_runs - 1);
        std::fs::remove_file(runs.join("b.db")).ok();
        std::fs::write(site.join("notes.html"), "mine").unwrap();
    }
    assert!(
        site.join("notes.html").exists(),
        "a file the site did not write stays"
    );
    assert!(site.join("index.html").exists());
    // Where a report is not written: over its input, into a pipe, into a folder of other
    // files, inside its input; and it is written through a symbolic link.
    let input = dir.join("records.bin");
    std::fs::write(&input, vec![0u8; 512]).unwrap();
    let fifo = dir.join("fifo.html");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let others = dir.join("others");
    std::fs::create_dir_all(&others).unwrap();
    std::fs::write(others.join("mine.txt"), "mine").unwrap();
    let inside = format!("{prof}/site");
    let input_s = input.to_str().unwrap();
    for (what, args, says) in [
        (
            "its input",
            ["report", input_s, "-o", input_s],
            "is the report's input",
        ),
        (
            "a pipe",
            ["report", prof, "-o", fifo.to_str().unwrap()],
            "not a regular file",
        ),
        (
            "a folder of others",
            ["report", prof, "-o", others.to_str().unwrap()],
            "holds other files",
        ),
        (
            "inside its input",
            ["report", prof, "-o", &inside],
            "inside the report's input",
        ),
    ] {
        let r = run(&args).output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            r.status.code() == Some(1) && err.lines().count() == 1 && err.contains(says),
            "{what}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(&input).unwrap(),
        vec![0u8; 512],
        "the input is untouched"
    );
    assert!(!std::path::Path::new(&inside).exists());
    assert_eq!(std::fs::read_dir(&others).unwrap().count(), 1);
    let real = out.join("real.html");
    let link = out.join("link.html");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let r = run(&["report", prof, "-o", link.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real).unwrap().contains("<html"));
    let _ = std::fs::remove_dir_all(&dir);
}
