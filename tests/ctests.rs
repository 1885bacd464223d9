//! Compiles the C tests in ctests/ against the committed headers in include/ and the
//! library cargo just built, runs them, and asserts they pass. Also compiles each header
//! alone, as C99 and as C++, with -Wall -Wextra -Werror -pedantic, included twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{output, read_csv, root, run, us};

/// target/<profile>/, where cargo puts libaclprof.so (and scripts/build-lib its other names).
/// `cargo test` builds the library only as an rlib, so the first test to need the shared
/// library builds it with scripts/build-lib (same profile, same target directory).
fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let mut c = Command::new(root().join("scripts/build-lib"));
            c.env("CARGO_TARGET_DIR", dir.parent().unwrap());
            if dir.file_name().is_some_and(|n| n == "release") {
                c.arg("--release");
            }
            run(&mut c);
            assert!(
                dir.join("libaclprof.so").exists(),
                "no libaclprof.so in {}",
                dir.display()
            );
            dir
        })
        .clone()
}

fn out_dir() -> PathBuf {
    let d = lib_dir().join("ctests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An empty directory `name` under out_dir(), for a test's results.
fn fresh_dir(name: &str) -> PathBuf {
    let d = out_dir().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const WARN: &[&str] = &["-Wall", "-Wextra", "-Werror", "-pedantic"];

/// Builds ctests/<name>.c, linked with `-l<lib>`.
fn build(name: &str, lib: &str) -> PathBuf {
    build_c(&root().join("ctests").join(format!("{name}.c")), lib)
}

fn build_c(src: &Path, lib: &str) -> PathBuf {
    build_c_with(src, lib, &[], "")
}

/// Builds a C test with extra compiler flags, as `<name><suffix>`: once per test process,
/// so that a test never rewrites a program another test is running ("text file busy").
fn build_c_with(src: &Path, lib: &str, flags: &[&str], suffix: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    let stem = src.file_stem().unwrap().to_string_lossy();
    let exe = out_dir().join(format!("{stem}{suffix}"));
    let how = format!("{} -l{lib} {}", src.display(), flags.join(" "));
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    match built.iter_mut().find(|(e, _)| *e == exe) {
        Some((_, h)) if *h == how => return exe,
        Some((_, h)) => *h = how,
        None => built.push((exe.clone(), how)),
    }
    let mut c = Command::new("gcc");
    c.args(["-std=c99", "-g", "-O1"]).args(WARN).args(flags);
    c.arg("-I")
        .arg(root().join("include"))
        .arg("-I")
        .arg(root().join("ctests"));
    c.arg("-o").arg(&exe).arg(src);
    c.arg("-L")
        .arg(lib_dir())
        .arg(format!("-l{lib}"))
        .arg("-lpthread");
    c.arg(format!("-Wl,-rpath,{}", lib_dir().display()));
    run(&mut c);
    exe
}

fn data(f: &str) -> PathBuf {
    root().join("ctests/data").join(f)
}

fn exec(exe: &Path, args: &[&Path], env: &[(&str, &str)]) -> String {
    let mut c = Command::new(exe);
    // The program's temporary directories go under target/, emptied on the next run.
    let tmp = fresh_dir(&format!(
        "{}-tmp",
        exe.file_name().unwrap().to_string_lossy()
    ));
    c.args(args).env_remove("ACLPROF_LOG").env("TMPDIR", tmp);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = run(&mut c);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn documented_subscription_flow_linked_as_msprofiler() {
    let exe = build("subscribe_flow", "msprofiler");
    let out = exec(&exe, &[&data("tiny.json")], &[]);
    assert!(out.contains("PASSED test_documented_flow"), "{out}");
}

/// Ops registered once and reported by id, or with their strings' lengths: decoded as
/// aclprofExtReportOp's, exactly once and in order, bad ids refused, ids kept in a child.
#[test]
fn registered_ops_decode_as_named_ones() {
    let exe = build("registered_ops", "aclprof");
    let out = exec(&exe, &[], &[]);
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
    assert_eq!(out.matches("PASSED").count(), 5, "{out}");
}

/// Per op type: (count, total ns) of `executions` runs of a model description.
fn expected_per_type(model: &Path, executions: u64) -> BTreeMap<String, (u64, u64)> {
    let m = aclprof::sim::parse_file(model).unwrap();
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for op in &m.ops {
        let e = want.entry(op.op_type.clone()).or_default();
        e.0 += executions;
        e.1 += executions * op.duration_ns;
    }
    want
}

/// A program written like CANN's resnet50 sample (acl/acl.h runtime and model calls, then
/// profiling by subscription and by file mode), linked with -lascendcl, as CANN programs
/// are: every op reaches the subscriber, and op_summary and op_statistic hold exactly the
/// model's ops.
#[test]
fn cann_resnet50_sample_links_with_ascendcl() {
    let exe = build_c(&root().join("examples/cann_resnet50_sample.c"), "ascendcl");
    let out_dir = fresh_dir("cann_sample_prof");
    let om = root().join("models/resnet50.om");
    assert!(
        !om.exists(),
        "the .om path stands for the description beside it"
    );
    let out = exec(&exe, &[&om, &out_dir, Path::new("3")], &[]);
    let model = root().join("models/resnet50.json");
    let ops = aclprof::sim::parse_file(&model).unwrap().ops.len();
    assert!(
        out.contains(&format!("subscription: {} ops from 3 executions", 3 * ops)),
        "{out}"
    );
    assert!(out.contains("top-1 class 0 of 1000"), "{out}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("PROF_")
        })
        .collect();
    assert_eq!(dirs.len(), 1, "one result directory: {dirs:?}");
    let want = expected_per_type(&model, 3);

    let (_, rows) = common::read_csv(&common::output(&dirs[0], "op_summary_"));
    let mut got: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in &rows {
        assert_eq!(r["Device_id"], "0");
        let e = got.entry(r["OP Type"].clone()).or_default();
        e.0 += 1;
        e.1 += common::us(&r["Task Duration(us)"]);
    }
    assert_eq!(got, want, "op_summary holds exactly the executed ops");

    let (_, rows) = common::read_csv(&common::output(&dirs[0], "op_statistic_"));
    let got: BTreeMap<String, (u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["OP Type"].clone(),
                (
                    r["Count"].parse().unwrap(),
                    common::us(&r["Total Time(us)"]),
                ),
            )
        })
        .collect();
    assert_eq!(got, want, "op_statistic agrees");
}

#[test]
fn abi_conformance() {
    let exe = build("abi_conformance", "aclprof");
    let out = exec(&exe, &[], &[]);
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
    // C++ checks function-pointer types exactly: compile the same file as C++ too.
    let mut c = Command::new("g++");
    c.args(["-x", "c++", "-std=c++11", "-fsyntax-only"])
        .args(WARN);
    c.arg("-I")
        .arg(root().join("include"))
        .arg("-I")
        .arg(root().join("ctests"));
    c.arg(root().join("ctests/abi_conformance.c"));
    run(&mut c);
}

#[test]
fn error_paths() {
    let exe = build("error_paths", "aclprof");
    let out = exec(&exe, &[], &[("ACLPROF_DEVICE_COUNT", "2")]);
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
}

/// The unsubscribe bound for faults.c's block mode, whose readers stall for good: an
/// unsubscribe must give up on them well within the 5 s its test allows. (Its slow but
/// live reader runs in "slow" mode, with the default 30 s: a loaded machine once made it
/// miss a 500 ms bound, and no bound short enough to test the stall is safe for it.)
const FAULTS_BLOCK_TIMEOUT_MS: &str = "500";

#[test]
fn faults() {
    let exe = build("faults", "aclprof");
    let out = exec(
        &exe,
        &[Path::new("block")],
        &[("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", FAULTS_BLOCK_TIMEOUT_MS)],
    );
    assert!(!out.contains("FAILED") && out.contains("PASSED"), "{out}");
    let out = exec(&exe, &[Path::new("slow")], &[]);
    assert!(!out.contains("FAILED") && out.contains("PASSED"), "{out}");
    let out = exec(
        &exe,
        &[Path::new("drop")],
        &[
            ("ACLPROF_ON_FULL", "drop"),
            ("ACLPROF_BUFFER_RECORDS", "256"),
            ("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", "300"),
        ],
    );
    assert!(!out.contains("FAILED") && out.contains("PASSED"), "{out}");
}

#[test]
fn headers_compile_alone_as_c99_and_cxx_twice_included() {
    let dir = out_dir();
    for h in ["acl/acl_base.h", "acl/acl_prof.h", "acl/acl_prof_ext.h"] {
        for (lang, std, compiler) in [("c", "-std=c99", "gcc"), ("c++", "-std=c++11", "g++")] {
            let src = dir.join(format!("alone.{}", if lang == "c" { "c" } else { "cpp" }));
            std::fs::write(
                &src,
                format!("#include \"{h}\"\n#include \"{h}\"\nint main(void) {{ return 0; }}\n"),
            )
            .unwrap();
            let mut c = Command::new(compiler);
            c.arg(std)
                .args(WARN)
                .arg("-I")
                .arg(root().join("include"))
                .arg("-fsyntax-only")
                .arg(&src);
            run(&mut c);
        }
    }
}

/// A CANN program may name any of CANN's error codes: all of them compile, as C and as C++,
/// with CANN's values.
#[test]
fn every_cann_error_code_compiles_with_its_value() {
    for (std, compiler) in [("-std=c11", "gcc"), ("-std=c++11", "g++")] {
        let mut c = Command::new(compiler);
        c.arg(std)
            .args(WARN)
            .arg("-I")
            .arg(root().join("include"))
            .arg("-fsyntax-only");
        if compiler == "g++" {
            c.args(["-x", "c++"]);
        }
        run(c.arg(root().join("ctests/error_codes.c")));
    }
}

/// The README's first command runs this example; check its table adds up.
#[test]
fn main_example_prints_the_op_table() {
    let exe = build_c(&root().join("examples/resnet50_profile.c"), "aclprof");
    let out = exec(
        &exe,
        &[&root().join("models/resnet50.json"), Path::new("3")],
        &[],
    );
    assert!(out.contains("3 executions, 375 ops decoded"), "{out}");
    assert!(out.contains("dropped 0"), "{out}");
    let conv = out
        .lines()
        .find(|l| l.starts_with("Conv2D"))
        .expect("a Conv2D row");
    assert_eq!(conv.split_whitespace().nth(1), Some("159"), "{conv}");
    let total = out
        .lines()
        .find(|l| l.starts_with("total"))
        .expect("a total row");
    assert_eq!(total.split_whitespace().nth(1), Some("375"), "{total}");
    // The README shows this table (10 executions, the default) from its header down: the
    // simulated times are exact, so those lines are what the example prints.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let shown: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("Op Type"))
        .take_while(|l| *l != "...")
        .collect();
    assert!(shown.len() >= 3, "the README's sample table");
    let out = exec(&exe, &[&root().join("models/resnet50.json")], &[]);
    for l in &shown {
        assert!(
            out.lines().any(|o| o == *l),
            "README line {l:?} is not printed:\n{out}"
        );
    }
    // A count that is not a positive number is a usage error, not "0 executions".
    for bad in ["abc", "0", "-3", "5x"] {
        let o = Command::new(&exe)
            .arg(root().join("models/resnet50.json"))
            .arg(bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.code() == Some(2) && err.starts_with("usage: ") && o.stdout.is_empty(),
            "{bad}: {:?} {err}",
            o.status
        );
    }
}

/// Data rows in a result directory's op_summary.
fn op_summary_rows(prof: &Path) -> usize {
    let summary = std::fs::read_dir(prof.join("mindstudio_profiler_output"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("op_summary_")
        })
        .expect("an op_summary");
    std::fs::read_to_string(summary).unwrap().lines().count() - 1
}

/// PROFILING_MODE=true profiles an application that never calls the profiling API; the
/// result directory is written at exit; the control calls answer 100042 meanwhile.
#[test]
fn environment_variable_mode() {
    let exe = build("env_mode_app", "aclprof");
    let out = fresh_dir("env-mode-results");
    let opts = format!(
        r#"{{"output": "{}", "task_trace": "on", "training_trace": "on", "aic_metrics": "PipeUtilization",
            "fp_point": "trans_TransData_0", "bp_point": "pool1/MaxPool", "l2": "on"}}"#,
        out.display()
    );
    let env = [
        ("PROFILING_MODE", "true"),
        ("PROFILING_OPTIONS", opts.as_str()),
    ];
    let stdout = exec(
        &exe,
        &[&data("tiny.json"), Path::new("3"), Path::new("probe")],
        &env,
    );
    assert!(stdout.contains("PASSED"), "{stdout}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let rows = op_summary_rows(&dirs[0]);
    assert_eq!(rows, 15, "3 executions x 5 ops");
    // fp_point/bp_point: one step per execution, cut at the fp_point op.
    let (_, steps) = read_csv(&dirs[0].join("mindstudio_profiler_output/step_trace_time.csv"));
    let ids: Vec<&str> = steps.iter().map(|r| r["Step"].as_str()).collect();
    assert_eq!(ids, ["1", "2", "3"]);
    for r in &steps {
        // tiny.json: 35.75 µs of ops (5 µs waits among them, 1 µs between executions).
        assert_eq!(r["Communication"], "0.000");
        let (comp, free, stage) = (us(&r["Computing"]), us(&r["Free"]), us(&r["Stage"]));
        assert_eq!(comp, 35_750, "{r:?}");
        assert_eq!(comp + free, stage, "{r:?}");
    }
    // `analyze --step` selects those steps, numbered the same; another is an error naming them.
    let analyze_step = |step: &str| {
        let o = Command::new(common::aclprof_bin())
            .args([
                "analyze",
                dirs[0].to_str().unwrap(),
                "--step",
                step,
                "-t",
                "0",
            ])
            .args(["--format", "csv"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(if o.status.success() {
            &o.stdout
        } else {
            &o.stderr
        });
        (o.status.success(), text.into_owned())
    };
    for step in ["1", "2", "3"] {
        let (ok, out) = analyze_step(step);
        assert!(ok, "--step {step}: {out}");
        assert_eq!(
            out.lines().count(),
            1 + 5,
            "--step {step}: the 5 ops of one execution\n{out}"
        );
    }
    for step in ["0", "4"] {
        let (ok, err) = analyze_step(step);
        assert!(
            !ok && err.contains("its steps are 1, 2, 3"),
            "--step {step}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let (_, trace) = read_csv(&output(&dirs[0], "step_trace_"));
    assert_eq!(trace.len(), 3, "{trace:?}");
    for r in &trace {
        // From the TransData op's start to the MaxPool op's end: 3.5 + 1 + 20 + 2.25 + 1 + 4 µs.
        let fp_to_bp = us(&r["FP to BP Time(us)"]);
        assert!(
            r["FP Start(us)"] != "N/A" && r["BP End(us)"] != "N/A",
            "{r:?}"
        );
        assert_eq!(fp_to_bp, 31_750, "{r:?}");
    }
    // The PMU columns of PipeUtilization, N/A on an emulated device; L2 listed as not collected.
    let (header, summary) = read_csv(&output(&dirs[0], "op_summary_"));
    assert!(
        header.iter().any(|h| h == "aic_mac_ratio") && header.iter().any(|h| h == "aiv_vec_ratio")
    );
    assert!(summary.iter().all(|r| r["aic_mac_ratio"] == "N/A"));
    let readme =
        std::fs::read_to_string(dirs[0].join("mindstudio_profiler_output/README.txt")).unwrap();
    assert!(
        readme.contains("Not collected") && readme.contains("ACL_PROF_L2CACHE"),
        "{readme}"
    );
    // Without PROFILING_MODE nothing is written.
    let _ = std::fs::remove_dir_all(&out);
    exec(
        &exe,
        &[&data("tiny.json"), Path::new("1")],
        &[("PROFILING_OPTIONS", opts.as_str())],
    );
    assert!(!out.exists());
}

/// `aclprof record -o DIR -- PROGRAM ARGS` profiles a program that never calls the profiling
/// API and prints the per-type summary of what it recorded.
#[test]
fn aclprof_record_profiles_an_unmodified_program() {
    let exe = build("env_mode_app", "aclprof");
    let out = fresh_dir("record-results");
    let o = Command::new(common::aclprof_bin())
        .arg("record")
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .arg(data("tiny.json"))
        .arg("3")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("PASSED"), "the program ran: {stdout}");
    // tiny.json: 5 ops of 5 types, 35.75 µs per execution.
    assert!(
        stdout.contains("5 of 5 groups; 15 ops, 107.250 us in all"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Conv2D") && stdout.contains("PROF_"),
        "{stdout}"
    );
    assert_eq!(
        op_summary_rows(
            &std::fs::read_dir(&out)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path()
        ),
        15
    );
    // On a terminal, the export as the program exits shows its progress.
    let line = format!(
        "{} record -o {} -- {} {} 3",
        common::aclprof_bin().display(),
        out.display(),
        exe.display(),
        data("tiny.json").display()
    );
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success()
            && shown.contains("aclprof: exporting: [")
            && shown.contains("100%  15/15 ops"),
        "{shown:?}"
    );
    // A program that records nothing: a clear error, non-zero exit.
    let o = Command::new(common::aclprof_bin())
        .args(["record", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrote no result directory"));
}

/// `aclprof record` on programs that subscribe: the subscription gets every op, and so does
/// the result directory `record` writes (docs/compatibility.md, "PROFILING_MODE and
/// subscriptions"). The CANN-style sample's own file mode is refused with 100042, as under
/// msprof, and its executions go into record's directory.
/// Other processes (a cluster's other ranks) write result directories into the same folder
/// while `record` runs: it reports its own only.
#[test]
fn record_keeps_to_its_own_result_directories() {
    let out = fresh_dir("record-shared-folder");
    let exe = build_c(&root().join("examples/resnet50_profile.c"), "aclprof");
    let foreign = out.join("PROF_000001_20260101000000000_00000001AAAAAAAA");
    // The program makes another process's (empty) result directory first, then profiles.
    let o = Command::new(common::aclprof_bin())
        .args(["record", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "mkdir \"$0\" && exec \"$1\" \"$2\" 2"])
        .arg(&foreign)
        .arg(&exe)
        .arg(root().join("models/resnet50.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let listed: Vec<&str> = stdout.lines().filter(|l| l.contains("/PROF_")).collect();
    assert_eq!(listed.len(), 1, "{stdout}");
    assert!(!listed[0].contains("AAAAAAAA"), "{stdout}");
    assert!(foreign.is_dir());
}

#[test]
fn record_profiles_programs_that_subscribe() {
    let record = |name: &str, exe: &Path, args: &[&Path]| {
        let out = fresh_dir(name);
        let o = Command::new(common::aclprof_bin())
            .args(["record", "-o"])
            .arg(&out)
            .arg("--")
            .arg(exe)
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {stdout}{stderr}");
        let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        (stdout, op_summary_rows(&dirs[0]))
    };
    let model = root().join("models/resnet50.json");
    let exe = build_c(&root().join("examples/resnet50_profile.c"), "aclprof");
    let (out, rows) = record("record-subscriber", &exe, &[&model, Path::new("3")]);
    assert!(
        out.contains("3 executions, 375 ops decoded") && out.contains("dropped 0"),
        "{out}"
    );
    assert_eq!(rows, 375, "record's directory has every op too");
    assert!(
        out.contains("9 of 9 groups; 375 ops"),
        "record's summary: {out}"
    );

    let exe = build_c(&root().join("examples/cann_resnet50_sample.c"), "ascendcl");
    let om = root().join("models/resnet50.om");
    let scratch = fresh_dir("record-sample-own-dir");
    let (out, rows) = record("record-sample", &exe, &[&om, &scratch, Path::new("3")]);
    assert!(
        out.contains("subscription: 375 ops from 3 executions"),
        "{out}"
    );
    assert!(
        out.contains("file mode: profiled from outside this program"),
        "{out}"
    );
    assert_eq!(
        rows,
        2 * 375,
        "both loops' ops: the subscribed one and the file-mode one"
    );
    assert_eq!(
        std::fs::read_dir(&scratch).unwrap().count(),
        0,
        "the sample wrote nothing itself"
    );
}

/// A process killed before aclprofStop leaves its raw data; aclprofExtExport turns it into
/// the usual result files.
#[test]
fn killed_process_is_exported_afterwards() {
    let exe = build("killed_app", "aclprof");
    let out = fresh_dir("killed-results");
    let status = Command::new(&exe)
        .arg(&out)
        .arg(data("tiny.json"))
        .arg("4")
        .env_remove("ACLPROF_LOG")
        .status()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(9),
        "the app died by SIGKILL ({status})"
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    let d = std::ffi::CString::new(dirs[0].to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { aclprof::ffi::ext::aclprofExtExport(d.as_ptr()) },
        0
    );
    let rows = op_summary_rows(&dirs[0]);
    assert_eq!(
        rows, 20,
        "4 executions x 5 ops reached disk before the kill"
    );
}

#[test]
fn shared_memory_ring() {
    let exe = build("ring", "aclprof");
    let out = exec(&exe, &[&data("tiny.json"), Path::new("live")], &[]);
    assert!(
        out.contains("PASSED test_second_process_reads_every_op") && !out.contains("FAILED"),
        "{out}"
    );
    let out = exec(
        &exe,
        &[&data("tiny.json")],
        &[("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", "500")],
    );
    assert!(
        out.contains("PASSED test_kills_at_random_points") && !out.contains("FAILED"),
        "{out}"
    );
    let out = exec(
        &exe,
        &[&data("tiny.json"), Path::new("drop")],
        &[
            ("ACLPROF_ON_FULL", "drop"),
            ("ACLPROF_BUFFER_RECORDS", "256"),
        ],
    );
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
}

/// Children forked while threads report: no hang, fresh state, nothing written twice; 300
/// children forked under op metadata, ring, report, memory, runtime and file-mode traffic,
/// each making a call of each kind (none may hang); and under PROFILING_MODE a child's exit
/// neither crashes nor exports (the parent exports once).
#[test]
fn fork_children_start_fresh() {
    let exe = build("fork", "aclprof");
    let out = exec(&exe, &[], &[]);
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
    let out = exec(&exe, &[Path::new("traffic"), Path::new("150")], &[]);
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
    let results = fresh_dir("fork-env-results");
    let opts = format!(
        r#"{{"output": "{}", "task_trace": "on"}}"#,
        results.display()
    );
    let out = exec(
        &exe,
        &[Path::new("envmode")],
        &[
            ("PROFILING_MODE", "true"),
            ("PROFILING_OPTIONS", opts.as_str()),
        ],
    );
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one session, exported by the parent: {dirs:?}"
    );
    assert_eq!(
        op_summary_rows(&dirs[0]),
        100,
        "the parent's ops, not the child's"
    );
}

/// File mode under RLIMIT_FSIZE: no SIGXFSZ death; the loss makes flush and stop fail, is
/// counted in README.txt, and is printed as a warning although ACLPROF_LOG is unset.
#[test]
fn file_size_limit_loss_is_never_silent() {
    let exe = build("file_faults", "aclprof");
    let dir = fresh_dir("file-faults-results");
    let mut c = Command::new(&exe);
    c.arg("fsize").arg(&dir).env_remove("ACLPROF_LOG");
    let out = run(&mut c);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("PASSED") && !stdout.contains("FAILED"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("[aclprof WARN]") && stderr.contains("lost"),
        "a warning without ACLPROF_LOG: {stderr}"
    );
}

/// 3000 short-lived threads (a few at a time) under RLIMIT_NOFILE 256: stop exports them all.
#[test]
fn short_lived_threads_hold_no_descriptors() {
    let exe = build("file_faults", "aclprof");
    let dir = fresh_dir("short-lived-results");
    let out = exec(&exe, &[Path::new("threads"), &dir], &[]);
    assert!(out.contains("PASSED") && !out.contains("FAILED"), "{out}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(op_summary_rows(&dirs[0]), 30_000);
}

/// How the C tests are built with AddressSanitizer and UndefinedBehaviorSanitizer.
const SANITIZE: [&str; 3] = [
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
];
/// The library is not instrumented; leaks of its process-lifetime state are not bugs.
const SANITIZE_ENV: [(&str, &str); 2] = [
    ("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0"),
    ("UBSAN_OPTIONS", "print_stacktrace=1"),
];

/// The C tests that exercise the accessors, the subscription flow, rings, pipe faults and
/// file-mode faults again, built with AddressSanitizer and UndefinedBehaviorSanitizer: a
/// read or write out of bounds, a use after free or undefined behaviour on the C side of
/// the boundary (the tests' buffers, the records the library hands out) stops the test.
#[test]
fn c_tests_under_address_and_undefined_behaviour_sanitizers() {
    let ctest = |name: &str| {
        build_c_with(
            &root().join("ctests").join(format!("{name}.c")),
            "aclprof",
            &SANITIZE,
            "-asan",
        )
    };
    for (name, args, extra) in [
        ("error_paths", vec![], vec![("ACLPROF_DEVICE_COUNT", "2")]),
        ("subscribe_flow", vec![data("tiny.json")], vec![]),
        ("registered_ops", vec![], vec![]),
        (
            "ring",
            vec![data("tiny.json"), PathBuf::from("live")],
            vec![],
        ),
        (
            "ring",
            vec![data("tiny.json")],
            vec![("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", "500")],
        ),
        (
            "faults",
            vec![PathBuf::from("block")],
            vec![("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", FAULTS_BLOCK_TIMEOUT_MS)],
        ),
        ("faults", vec![PathBuf::from("slow")], vec![]),
    ] {
        let exe = ctest(name);
        let args: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
        let env: Vec<(&str, &str)> = SANITIZE_ENV.iter().chain(extra.iter()).copied().collect();
        let out = exec(&exe, &args, &env);
        assert!(
            out.contains("PASSED") && !out.contains("FAILED"),
            "{name}: {out}"
        );
    }
}

/// Fault injection (ctests/inject/shim.c, LD_PRELOAD): writes or opens of the raw-data files
/// (or writes of the host event log, or of the memory log) fail with ENOSPC, EIO, EFBIG or
/// EMFILE after some writes. Whatever the fault, every reported op is either in op_summary
/// or counted as lost_ops, every lost host or memory event is counted, and flush and stop
/// say so.
#[test]
fn injected_write_faults_lose_nothing_uncounted() {
    let shim = out_dir().join("libinject.so");
    run(Command::new("gcc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&shim)
        .arg(root().join("ctests/inject/shim.c"))
        .arg("-ldl"));
    let app = build_c(&root().join("ctests/inject/app.c"), "aclprof");
    for (errno, after, open, path) in [
        ("28", "0", false, false), // ENOSPC from the first write
        ("28", "5", false, false), // ENOSPC later
        ("5", "20", false, false), // EIO
        ("27", "3", false, false), // EFBIG
        ("24", "0", true, false),  // EMFILE opening the raw file
        ("28", "0", false, true),  // ENOSPC on the host event log
        ("28", "0", false, true),  // ENOSPC on the memory log
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (errno, after, open, host))| {
        let path = match (host, i) {
            (false, _) => None,
            (true, 5) => Some("aclprof_host"),
            (true, _) => Some("aclprof_mem"),
        };
        (errno, after, open, path)
    }) {
        let host = path.is_some();
        // (The directory's name must not hold the path's text the shim looks for.)
        let dir = fresh_dir(&format!(
            "inject-{errno}-{after}-{open}-{}",
            path.map_or(0, str::len)
        ));
        let shim_s = shim.to_str().unwrap();
        let mut env = vec![
            ("LD_PRELOAD", shim_s),
            ("INJECT_ERRNO", errno),
            ("INJECT_AFTER", after),
        ];
        if open {
            env.push(("INJECT_OPEN", "1"));
        }
        if let Some(p) = path {
            env.push(("INJECT_PATH", p));
        }
        let out = exec(&app, &[&dir], &env);
        let case = format!("errno {errno} after {after} open {open} path {path:?}");
        assert_eq!(
            out.trim(),
            "flush 500005 stop 500005",
            "{case}: flush and stop report the loss"
        );
        let prof: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(prof.len(), 1, "{case}");
        let readme =
            std::fs::read_to_string(prof[0].join("mindstudio_profiler_output/README.txt")).unwrap();
        let figure = |key: &str| -> usize {
            readme
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("{case}: no {key} in README.txt:\n{readme}"))
                .parse()
                .unwrap()
        };
        let (lost, lost_host) = (figure("lost_ops: "), figure("lost_host_events: "));
        let rows = op_summary_rows(&prof[0]);
        assert_eq!(rows + lost, 4000, "{case}: {rows} exported + {lost} lost");
        if host {
            assert_eq!(
                (lost, lost_host),
                (0, 100),
                "{case}: every mark (host log) or memory event (memory log) counted as lost"
            );
        } else {
            assert!(lost > 0 && lost_host == 0, "{case}");
        }
        // memory_record has a row per memory event that reached the memory log.
        let out_dir = prof[0].join("mindstudio_profiler_output");
        let mem_rows: usize = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("memory_record_")
            })
            .map(|p| std::fs::read_to_string(p).unwrap().lines().count() - 1)
            .sum();
        let expected = if path == Some("aclprof_mem") { 0 } else { 100 };
        assert_eq!(mem_rows, expected, "{case}: memory_record rows");
    }
}

/// ctests/churn.c: reporters that number their ops per thread, beside subscriptions, models
/// and file-mode sessions that come and go. Every record reaches each subscription exactly
/// once or is counted as dropped, each thread's records in order and (lossless policies)
/// without gaps; reported = delivered + dropped, and readers read exactly what was
/// delivered; in file mode every result directory's raw records equal its op_summary rows.
/// Built plainly and with AddressSanitizer and UndefinedBehaviorSanitizer.
#[test]
fn every_record_exactly_once_under_churn() {
    let src = root().join("ctests/churn.c");
    let c11_san: Vec<&str> = std::iter::once("-std=c11").chain(SANITIZE).collect();
    let builds = [
        (build_c_with(&src, "aclprof", &["-std=c11"], ""), &[][..]),
        (
            build_c_with(&src, "aclprof", &c11_san, "-asan"),
            &SANITIZE_ENV[..],
        ),
    ];
    for (exe, env) in &builds {
        // Each mode sets its own ACLPROF_* variables (ctests/churn.c).
        for (mode, rounds) in [
            ("pipe", "100"),
            ("ring", "100"),
            ("drop", "100"),
            ("stall", "20"),
            ("load", "100"),
            ("file-serial", "25"),
            ("file-race", "25"),
        ] {
            let dir = fresh_dir(&format!("churn-{mode}"));
            let out = exec(exe, &[Path::new(mode), Path::new(rounds), &dir], env);
            assert!(
                out.contains(&format!("PASSED {mode}")) && !out.contains("FAILED"),
                "{}: {out}",
                exe.display()
            );
            if mode == "drop" || mode == "stall" {
                assert!(
                    !out.contains("dropped 0\n"),
                    "{mode} dropped nothing: {out}"
                );
            }
        }
    }
    // Pipes are written with vmsplice() unless ACLPROF_PIPE_SPLICE=0: the write() path too.
    for (mode, rounds) in [("pipe", "100"), ("drop", "100"), ("stall", "20")] {
        let dir = fresh_dir(&format!("churn-{mode}-write"));
        let out = exec(
            &builds[0].0,
            &[Path::new(mode), Path::new(rounds), &dir],
            &[("ACLPROF_PIPE_SPLICE", "0")],
        );
        assert!(
            out.contains(&format!("PASSED {mode}")) && !out.contains("FAILED"),
            "{mode} with write(): {out}"
        );
    }
}

/// ctests/pipe_pace.c: subscribe, report at gaps of 0 to 2 ms, unsubscribe, then read, with a
/// default pipe and raised ones; and a reporter paced like model executions against a
/// reader that reads every 200 ms. Every record arrives, in order, and nobody waits for the
/// reader while the pipe has room. Built plainly and with AddressSanitizer and
/// UndefinedBehaviorSanitizer, and with pipes written by write() (ACLPROF_PIPE_SPLICE=0).
#[test]
fn a_pipe_holds_its_size_in_records_at_any_pace() {
    let src = root().join("ctests/pipe_pace.c");
    let c11_san: Vec<&str> = std::iter::once("-std=c11").chain(SANITIZE).collect();
    let plain = build_c_with(&src, "aclprof", &["-std=c11"], "");
    let asan = build_c_with(&src, "aclprof", &c11_san, "-asan");
    let no_splice = [("ACLPROF_PIPE_SPLICE", "0")];
    for (exe, env) in [
        (&plain, &[][..]),
        (&asan, &SANITIZE_ENV[..]),
        (&plain, &no_splice[..]),
    ] {
        for mode in ["gaps", "late"] {
            let out = exec(exe, &[Path::new(mode)], env);
            assert!(
                out.contains(&format!("PASSED {mode}")) && !out.contains("FAILED"),
                "{} {mode} {env:?}: {out}",
                exe.display()
            );
        }
    }
}

/// `aclprof top` on a running C program that subscribes to its own model and runs under
/// PROFILING_MODE: listing it; a view that agrees exactly with the ops run while it
/// watched; viewers attaching, detaching and being killed many times without the
/// program's subscription or file mode losing an op; the program killed under a viewer;
/// and a viewer of another user refused.
#[test]
fn top_watches_a_running_program() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let work = fresh_dir("watch");
    let sockets = fresh_dir("watch-sockets");
    let results = fresh_dir("watch-results");
    const EXECUTIONS: u64 = 4;
    const OPS: u64 = 125;
    let opts = format!(
        r#"{{"output": "{}", "task_trace": "on"}}"#,
        results.display()
    );
    let top = || {
        let mut c = Command::new(common::aclprof_bin());
        c.arg("top").env("ACLPROF_WATCH_DIR", &sockets);
        c
    };
    // A viewer with these arguments, once it says it is watching; and its stderr.
    let viewer_of = |args: &[&str], stdout: Stdio| {
        started(
            top().args(args).stdout(stdout),
            "aclprof: watching process ",
        )
    };
    let env = [
        ("PROFILING_MODE", "true"),
        ("PROFILING_OPTIONS", opts.as_str()),
    ];
    let target = WatchTarget::start(&work, &sockets, EXECUTIONS, OPS, &env);
    let pid = target.pid;
    // Nobody watches it yet: no socket, no thread of the watcher's.
    let watcher_threads = || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .filter(|t| {
                let comm = std::fs::read_to_string(t.as_ref().unwrap().path().join("comm"));
                comm.is_ok_and(|c| c.starts_with("aclprof-watch") || c.starts_with("aclprof-view"))
            })
            .count()
    };
    let unwatched = || !sockets.join(format!("{pid}.sock")).exists() && watcher_threads() == 0;
    assert!(unwatched(), "an unwatched process has a socket or a thread");

    // Listed.
    let out = top().output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success()
            && listed.contains(&pid.to_string())
            && listed.contains("watch_target"),
        "{listed}"
    );

    // One view agrees with what ran while it watched: every op, none dropped.
    let pid_s = pid.to_string();
    let (viewer, _) = viewer_of(
        // Long enough for a second viewer's process and the executions on a loaded machine.
        &[&pid_s, "--once", "--format", "json", "--duration", "15"],
        Stdio::piped(),
    );
    // One viewer at a time: a second is told so.
    refused_as_second_viewer(&top().args([&pid.to_string(), "--once"]).output().unwrap());
    target.go();
    let out = viewer.wait_with_output().unwrap();
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ops"], EXECUTIONS * OPS, "{j}");
    assert_eq!(j["dropped"], 0, "{j}");
    let conv = j["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "Conv2D")
        .unwrap()
        .clone();
    assert_eq!(conv["count"], 53 * EXECUTIONS, "{j}");
    assert_eq!(j["types"][0]["type"], "Conv2D", "longest type first: {j}");
    assert_eq!(j["longest"].as_array().unwrap().len(), 5, "{j}");

    // Viewers come and go, and one is killed while the program runs.
    let mut runs = 1;
    for i in 0..8 {
        let (mut v, _) = viewer_of(&[&pid_s, "--interval", "0.05"], Stdio::null());
        if i % 2 == 0 {
            target.go();
            runs += 1;
        }
        if i == 3 {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(v.id() as i32, libc::SIGKILL) };
        } else {
            // SAFETY: as above.
            unsafe { libc::kill(v.id() as i32, libc::SIGINT) };
        }
        let _ = v.wait();
    }
    target.go();
    runs += 1;
    // Every viewer has left: the agent's thread ends and its socket goes.
    let t0 = Instant::now();
    while !unwatched() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the watcher's thread or socket outlived its viewers"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Another user is refused, in one line.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::aclprof_bin())
            .args(["top", &pid.to_string(), "--once"])
            .env("ACLPROF_WATCH_DIR", &sockets)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(1)
                && err.lines().count() == 1
                && err.contains("permission denied: only the process's user or root"),
            "{:?} {err}",
            out.status
        );
    }

    // The program stops: its subscription and file mode have every op it ran.
    let (ok, text) = target.stop();
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "ran {} executions of {OPS} ops; the subscription received {}",
            runs * EXECUTIONS,
            runs * EXECUTIONS * OPS
        )),
        "{text}"
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    assert_eq!(op_summary_rows(&dirs[0]) as u64, runs * EXECUTIONS * OPS);
    assert!(
        !sockets.join(format!("{pid}.agent")).exists(),
        "the marker is removed at exit"
    );

    // A program killed under a viewer: the viewer ends, cleanly.
    let work2 = fresh_dir("watch-killed");
    let mut target = WatchTarget::start(&work2, &sockets, EXECUTIONS, OPS, &env);
    let pid = target.pid;
    let pid_s = pid.to_string();
    let (mut v, mut err) = viewer_of(
        &[&pid_s, "--interval", "0.1", "--format", "json"],
        Stdio::piped(),
    );
    target.go();
    target.child.kill().unwrap();
    let _ = target.child.wait();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = v.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the viewer outlived its process"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(
        status.success() && rest.contains(&format!("process {pid} ended")),
        "{rest}"
    );
    let mut views = String::new();
    std::io::Read::read_to_string(&mut v.stdout.take().unwrap(), &mut views).unwrap();
    let seen: u64 = views
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["ops"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(seen, EXECUTIONS * OPS, "{views}");
    // Its files stay (it was killed); listing removes them.
    assert!(sockets.join(format!("{pid}.agent")).exists());
    let _ = top().output().unwrap();
    assert!(!sockets.join(format!("{pid}.agent")).exists());
    assert!(!sockets.join(format!("{pid}.sock")).exists());
}

/// Starts `c` (stderr piped) and waits for its first line on stderr, which must start with
/// `says` (a viewer saying it is attached); the child and the rest of its stderr.
fn started(
    c: &mut Command,
    says: &str,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
) {
    let mut child = c.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.starts_with(says), "{line}");
    (child, err)
}

/// A second viewer of a process is refused, in one line saying another one watches.
fn refused_as_second_viewer(out: &std::process::Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1) && err.lines().count() == 1 && err.contains("another viewer"),
        "{err}"
    );
}

/// Waits (60 s at most) for file `p` to appear.
fn wait_for_file(p: &Path) {
    let t0 = std::time::Instant::now();
    while !p.exists() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "{} never appeared",
            p.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// ctests/watch_target.c running resnet50.json for a test that watches it: `executions`
/// executions of `ops` ops each time GO appears in `work`, its watch files in `sockets`.
struct WatchTarget {
    child: std::process::Child,
    pid: u32,
    work: PathBuf,
}

impl WatchTarget {
    /// Starts it with `env` besides the watch directory, once it is ready and watchable.
    fn start(
        work: &Path,
        sockets: &Path,
        executions: u64,
        ops: u64,
        env: &[(&str, &str)],
    ) -> WatchTarget {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(sockets, std::fs::Permissions::from_mode(0o700)).unwrap();
        let child = Command::new(build("watch_target", "aclprof"))
            .arg(root().join("models/resnet50.json"))
            .arg(work)
            .args([executions.to_string(), ops.to_string()])
            .env("ACLPROF_WATCH_DIR", sockets)
            .envs(env.iter().copied())
            .env_remove("ACLPROF_LOG")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        wait_for_file(&work.join("READY"));
        wait_for_file(&sockets.join(format!("{pid}.agent")));
        WatchTarget {
            child,
            pid,
            work: work.to_path_buf(),
        }
    }

    /// Runs its executions once: GO, then wait for DONE.
    fn go(&self) {
        let _ = std::fs::remove_file(self.work.join("DONE"));
        std::fs::write(self.work.join("GO"), "").unwrap();
        wait_for_file(&self.work.join("DONE"));
    }

    /// Asks it to stop; whether it succeeded, and what it printed.
    fn stop(mut self) -> (bool, String) {
        std::fs::write(self.work.join("STOP"), "").unwrap();
        let status = self.child.wait().unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut self.child.stdout.take().unwrap(), &mut text).unwrap();
        (status.success(), text)
    }
}

#[path = "c/memory.rs"]
mod memory;

#[path = "c/capture.rs"]
mod capture;

#[path = "c/serve.rs"]
mod serve;
