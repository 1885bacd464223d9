//! The `aclprof` command line as users run it (the built binary): `analyze` of a simulated
//! ResNet-50 run agrees exactly with the run's op_summary and op_statistic, from the result
//! directory, a file of raw records and standard input; `export` rewrites a directory.
//! One test function: the profiler is process-wide.

use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{output, profiled, read_csv, root, us};

const EXECUTIONS: u64 = 3;

fn aclprof(args: &[&str], stdin: Option<&[u8]>) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aclprof"));
    c.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(data) = stdin {
        child.stdin.take().unwrap().write_all(data).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
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

    let _ = std::fs::remove_dir_all(&out);
}
