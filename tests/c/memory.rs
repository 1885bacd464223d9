//! Memory, runtime calls and host resources from a C program (ctests/memory_app.c): a
//! known allocation pattern comes out exactly in CANN's files, database tables and
//! timeline tracks.

use super::*;
use std::collections::HashMap;

/// The one result directory under `out`.
fn the_result_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn kb(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{s:?} is not a KB figure"))
}

#[test]
fn a_known_allocation_pattern_comes_out_exactly() {
    let exe = build("memory_app", "aclprof");
    let out = fresh_dir("memory-results");
    exec(&exe, &[&out, &data("memory_model.json")], &[]);
    let dir = &the_result_dir(&out);

    // memory_record: per execution conv1 (+workspace, +output, -workspace), relu1 (+output,
    // -conv1's output), fc (+output, -relu1's output), the end (-fc's output); twice; then
    // the 4 KiB of custom_op, allocated and released.
    let (h, rec) = read_csv(&output(dir, "memory_record_"));
    assert_eq!(
        h,
        [
            "Device_id",
            "Component",
            "Timestamp(us)",
            "Total Allocated(KB)",
            "Total Reserved(KB)",
            "Device"
        ]
    );
    assert_eq!(rec.len(), 2 * 8 + 2, "{rec:?}");
    let conv_out = 64.0 * 56.0 * 56.0 * 2.0 / 1024.0; // 392 KB
    let alloc: Vec<f64> = rec.iter().map(|r| kb(&r["Total Allocated(KB)"])).collect();
    let expect_one = [
        1024.0,
        1024.0 + conv_out,
        conv_out,
        2.0 * conv_out,
        conv_out,
        conv_out + 4000.0 / 1024.0,
        4000.0 / 1024.0,
        0.0,
    ];
    for (i, want) in expect_one
        .iter()
        .chain(expect_one.iter())
        .chain([4.0, 0.0].iter())
        .enumerate()
    {
        assert!(
            (alloc[i] - want).abs() < 0.001,
            "row {i}: {} KB, expected {want}",
            alloc[i]
        );
    }
    // The operator pool reserves 2 MiB blocks while it holds anything.
    assert_eq!(rec[1]["Total Reserved(KB)"], "2048.000");
    assert_eq!(rec[7]["Total Reserved(KB)"], "0.000");
    assert!(rec
        .iter()
        .all(|r| r["Component"] == "GE" && r["Device"] == "NPU:0" && r["Device_id"] == "0"));
    let ts: Vec<u64> = rec.iter().map(|r| us(&r["Timestamp(us)"])).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "in time order: {ts:?}");

    // operator_memory: every allocation paired with its release.
    let (h, ops) = read_csv(&output(dir, "operator_memory_"));
    assert_eq!(h.len(), 10);
    assert_eq!(ops.len(), 2 * 4 + 1);
    let names: Vec<&str> = ops.iter().map(|r| r["Name"].as_str()).collect();
    assert_eq!(&names[..4], ["conv1", "conv1", "relu1", "fc"]);
    assert_eq!(names[8], "custom_op");
    assert!(
        ops.iter()
            .all(|r| !r["Duration(us)"].is_empty() && !r["Release Total Allocated(KB)"].is_empty()),
        "{ops:?}"
    );
    // conv1's workspace lives exactly its 20 µs.
    assert_eq!(ops[0]["Size(KB)"], "1024.000");
    assert_eq!(ops[0]["Duration(us)"], "20.000");

    // static_op_mem: the plan made when the session started (the model was loaded
    // before), then the most it holds at once: conv1 and relu1 at node 1.
    let (_, plan) = read_csv(&output(dir, "static_op_mem_"));
    let rows: Vec<(String, String, String)> = plan
        .iter()
        .map(|r| {
            (
                r["Op Name"].clone(),
                r["Node Index Start"].clone(),
                r["Node Index End"].clone(),
            )
        })
        .collect();
    assert_eq!(rows[0], ("conv1".into(), "0".into(), "1".into()));
    assert_eq!(rows[2], ("fc".into(), "2".into(), "4294967295".into()));
    assert_eq!(plan[3]["Op Name"], "TOTAL");
    assert_eq!(kb(&plan[3]["Size(KB)"]), 1024.0 + 2.0 * conv_out);

    // npu_mem at 50 Hz: the application's memory ends with the leaked 256 KiB (and the
    // model's work and weight memory, 128 KiB).
    let (h, mem) = read_csv(&output(dir, "npu_mem_"));
    assert_eq!(
        h,
        [
            "Device_id",
            "event",
            "ddr(KB)",
            "hbm(KB)",
            "memory(KB)",
            "timestamp(us)"
        ]
    );
    let app: Vec<&HashMap<String, String>> = mem.iter().filter(|r| r["event"] == "APP").collect();
    assert!(!app.is_empty());
    assert_eq!(
        app.last().unwrap()["memory(KB)"],
        "384.000",
        "{:?}",
        app.last()
    );
    let peak = app.iter().map(|r| kb(&r["memory(KB)"])).fold(0.0, f64::max);
    assert!(peak <= 1024.0 + 256.0 * 2.0 + 128.0 + 2048.0, "{peak}");
    let (_, modules) = read_csv(&output(dir, "npu_module_mem_"));
    assert!(modules.iter().any(|r| r["Component"] == "RUNTIME"));

    // Runtime calls at CANN's runtime level.
    let (_, api) = read_csv(&output(dir, "api_statistic_"));
    let count = |name: &str| {
        api.iter()
            .find(|r| r["API Name"] == name && r["Level"] == "runtime")
            .map(|r| r["Count"].clone())
    };
    assert_eq!(count("aclrtMalloc").as_deref(), Some("5"), "{api:?}");
    assert_eq!(count("aclrtFree").as_deref(), Some("4"));

    // Host resources: one summary row each.
    let (_, cpu) = read_csv(&output(dir, "host_cpu_usage_"));
    assert_eq!(cpu.len(), 1);
    assert!(cpu[0]["Total Cpu Numbers"].parse::<u32>().unwrap() >= 1);
    let (_, hm) = read_csv(&output(dir, "host_mem_usage_"));
    assert!(kb(&hm[0]["Peak Used Memory(KB)"]) > 0.0);

    // The database: the same allocations, the runtime level, the samples.
    let db = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .expect("msprof_*.db");
    let conn = rusqlite::Connection::open(db).unwrap();
    let one = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(one("SELECT count(*) FROM NPU_OP_MEM"), 18);
    assert_eq!(
        one("SELECT max(totalAllocate) FROM NPU_OP_MEM"),
        1024 * 1024 + 64 * 56 * 56 * 2
    );
    assert_eq!(
        one("SELECT count(*) FROM NPU_OP_MEM n JOIN ENUM_MEMORY e ON n.type = e.id WHERE e.name = 'release'"),
        9
    );
    assert_eq!(one("SELECT count(*) FROM CANN_API WHERE type = 5000 AND name IN (SELECT id FROM STRING_IDS WHERE value = 'aclrtFree')"), 4);
    assert!(one("SELECT count(*) FROM NPU_MEM") > 0);
    assert!(one("SELECT count(*) FROM CPU_USAGE") > 0);
    assert!(one("SELECT count(*) FROM HOST_MEM_USAGE") > 0);

    // --order-by memory ranks ops by what they allocated while they ran (conv1: its 1 MiB
    // workspace and 392 KB output; relu1: 392 KB; fc: 4000 bytes).
    let ranked = Command::new(common::aclprof_bin())
        .args([
            "analyze",
            "--order-by",
            "memory",
            "--format",
            "json",
            "--top",
            "3",
        ])
        .arg(dir)
        .output()
        .unwrap();
    assert!(ranked.status.success());
    let v: serde_json::Value = serde_json::from_slice(&ranked.stdout).unwrap();
    let top: Vec<(String, u64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let name = r["Name"].as_str().unwrap().to_string();
            (name, r["Memory(bytes)"].as_u64().unwrap_or(0))
        })
        .collect();
    let conv = 1024 * 1024 + 64 * 56 * 56 * 2;
    assert_eq!(
        top,
        [
            ("conv1".to_string(), conv),
            ("conv1".to_string(), conv),
            ("relu1".to_string(), 64 * 56 * 56 * 2)
        ]
    );

    // The directory's README lists the memory files, and as not collected only what needs
    // an NPU's hardware or root (osrt here), not memory or runtime calls.
    let readme =
        std::fs::read_to_string(dir.join("mindstudio_profiler_output/README.txt")).unwrap();
    assert!(
        readme.contains("memory_record_") && readme.contains("npu_mem_"),
        "{readme}"
    );
    let missing = readme.split("Not collected").nth(1).unwrap_or_default();
    assert!(missing.contains("osrt"), "{readme}");
    assert!(
        !missing.contains("memory") && !missing.contains("RUNTIME_API"),
        "{readme}"
    );

    // The timeline's tracks.
    let tl: serde_json::Value =
        serde_json::from_slice(&std::fs::read(output(dir, "msprof_")).unwrap()).unwrap();
    let evs = tl.as_array().unwrap();
    let named = |n: &str| {
        evs.iter()
            .any(|e| e["name"] == "process_name" && e["args"]["name"] == n)
    };
    assert!(named("NPU MEM") && named("CPU Usage") && named("Memory Usage"));
    let last_app = evs
        .iter()
        .rfind(|e| e["name"] == "APP/Memory" && e["ph"] == "C")
        .unwrap();
    assert_eq!(last_app["args"]["KB"].as_f64(), Some(384.0));
    // Each runtime call at both of CANN's levels (AscendCL and runtime).
    assert!(evs.iter().any(|e| e["name"] == "Runtime@aclrtMalloc"));
    assert!(evs.iter().any(|e| e["name"] == "AscendCL@aclrtFree"));
    let acl_count = |name: &str| {
        api.iter()
            .find(|r| r["API Name"] == name && r["Level"] == "acl")
            .map(|r| r["Count"].clone())
    };
    assert_eq!(acl_count("aclrtFree").as_deref(), Some("4"));
}

/// `aclprof record --memory --host-sys cpu,mem --runtime-api` on CANN's own sample program:
/// the device memory it allocates is sampled (npu_mem APP), its runtime calls are at both
/// levels, its host use is summarised, and `aclprof analyze --memory` reads the run.
#[test]
fn record_collects_memory_runtime_calls_and_the_host_from_an_unmodified_program() {
    let exe = build_c(&root().join("examples/cann_resnet50_sample.c"), "ascendcl");
    let out = fresh_dir("record-memory");
    let scratch = fresh_dir("record-memory-scratch");
    let o = Command::new(common::aclprof_bin())
        .args([
            "record",
            "--memory",
            "--runtime-api",
            "--host-sys",
            "cpu,mem",
            "-o",
        ])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .arg(root().join("models/resnet50.om"))
        .arg(&scratch)
        .arg("3")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let dir = &the_result_dir(&out);
    // Sampled at 50 Hz from the start to the end (the program frees all it allocated, and
    // may run shorter than a tick: the figures between ticks are in analyze's peak below).
    let (_, mem) = read_csv(&output(dir, "npu_mem_"));
    let app: Vec<_> = mem.iter().filter(|r| r["event"] == "APP").collect();
    assert!(app.len() >= 2, "{mem:?}");
    assert_eq!(app.last().unwrap()["memory(KB)"], "0.000");
    let (_, api) = read_csv(&output(dir, "api_statistic_"));
    for level in ["acl", "runtime"] {
        assert!(
            api.iter()
                .any(|r| r["Level"] == level && r["API Name"] == "aclrtMalloc"),
            "aclrtMalloc at the {level} level: {api:?}"
        );
    }
    let (_, cpu) = read_csv(&output(dir, "host_cpu_usage_"));
    assert_eq!(cpu.len(), 1);
    let analyzed = Command::new(common::aclprof_bin())
        .args(["analyze", "--memory", "--format", "json"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(analyzed.status.success());
    let v: serde_json::Value = serde_json::from_slice(&analyzed.stdout).unwrap();
    assert!(v["devices"][0]["peak_held"].as_u64().unwrap() > 0, "{v}");
}

/// A replayed table's operator memory (torch_npu's `operator_memory.csv` beside its
/// `kernel_details.csv`) is replayed with its values: sizes, totals and times from the
/// table's first op, each allocation paired with its own release.
#[test]
fn a_replayed_table_s_operator_memory_keeps_its_values() {
    let exe = build("env_mode_app", "aclprof");
    let work = fresh_dir("replayed-memory-input");
    let table = work.join("kernel_details.csv");
    std::fs::copy(
        root().join("tests/data/real/kernel_details_torchnpu_level0_910B_msinsight.csv"),
        &table,
    )
    .unwrap();
    let (_, rows) = read_csv(&table);
    let t0 = rows.iter().map(|r| us(&r["Start Time(us)"])).min().unwrap();
    let at = |ns: u64| format!("{}.{:03}\t", ns / 1000, ns % 1000);
    let text = format!(
        "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),\
         Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),\
         Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),\
         Release Total Active(MB),Stream Ptr,Device Type\n\
         aten::empty,512.000,{},{},,20.000,,2.500,8.000,2.500,2.000,8.000,2.000,,NPU:0\n\
         aten::mm,1024.000,{},,,,,3.500,8.000,,,,,,NPU:0\n",
        at(t0 + 5_000),
        at(t0 + 25_000),
        at(t0 + 7_000)
    );
    std::fs::write(work.join("operator_memory.csv"), text).unwrap();
    let out = fresh_dir("replayed-memory");
    let opts = format!(
        r#"{{"output": "{}", "task_trace": "on", "task_memory": "on"}}"#,
        out.display()
    );
    exec(
        &exe,
        &[&table, Path::new("1")],
        &[("PROFILING_MODE", "true"), ("PROFILING_OPTIONS", &opts)],
    );
    let dir = the_result_dir(&out);
    let (_, record) = read_csv(&output(&dir, "memory_record_"));
    let got: Vec<(&str, &str)> = record
        .iter()
        .map(|r| {
            (
                r["Total Allocated(KB)"].as_str(),
                r["Total Reserved(KB)"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("2560.000", "8192.000"),
            ("3584.000", "8192.000"),
            ("2048.000", "8192.000")
        ]
    );
    // At their offsets from the first op.
    let (_, ops) = read_csv(&output(&dir, "op_summary_"));
    let first = ops
        .iter()
        .map(|r| us(&r["Task Start Time(us)"]))
        .min()
        .unwrap();
    assert_eq!(us(&record[0]["Timestamp(us)"]) - first, 5_000);
    let (_, paired) = read_csv(&output(&dir, "operator_memory_"));
    let cells: Vec<(&str, &str, &str)> = paired
        .iter()
        .map(|r| {
            (
                r["Name"].as_str(),
                r["Size(KB)"].as_str(),
                r["Duration(us)"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("aten::empty", "512.000", "20.000"),
            ("aten::mm", "1024.000", "")
        ]
    );
}
