//! Op metadata end to end: shapes, data types, formats, FLOPs and bytes given by a runtime
//! (aclprofExtOpMetaCreate + aclprofExtReportOpMeta) and by a model description reach
//! op_summary, the timeline's slice args, the database, `op_meta.tsv`, and the analysis
//! (cost columns, `name+shape`, `--order-by memory`, `--input-dtype`).

use aclprof::analyze::{self, Format, Key, Query};
use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::ffi::CString;
use std::path::PathBuf;

mod common;
use common::{output, read_csv};

fn meta_of(
    shapes: &CString,
    types: &CString,
    formats: &CString,
    out: &CString,
    flops: u64,
    bytes: u64,
) -> u32 {
    let m = aclprofExtOpMeta {
        inputShapes: shapes.as_ptr(),
        inputTypes: types.as_ptr(),
        inputFormats: formats.as_ptr(),
        outputShapes: out.as_ptr(),
        outputTypes: types.as_ptr(),
        outputFormats: std::ptr::null(),
        flops,
        bytes,
    };
    let mut id = u32::MAX;
    assert_eq!(unsafe { aclprofExtOpMetaCreate(&m, &mut id) }, 0);
    id
}

#[test]
fn metadata_reaches_every_output() {
    let root = std::env::temp_dir().join(format!("aclprof-opmeta-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let rootc = CString::new(root.to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { aclprofInit(rootc.as_ptr(), root.to_str().unwrap().len()) },
        0
    );
    let mut model = 0;
    unsafe { assert_eq!(aclprofExtModelLoad(c"m".as_ptr(), 0, &mut model), 0) };
    // A description with its own metadata, replayed by the simulator.
    let desc = root.join("desc.json");
    std::fs::write(
        &desc,
        r#"{"name":"d","ops":[{"name":"fc","type":"MatMulV2","duration_us":4,
            "input_shapes":"16,32;32,8","input_types":"FLOAT16;FLOAT16","flops":8192,"bytes":1824}]}"#,
    )
    .unwrap();
    let descc = CString::new(desc.to_str().unwrap()).unwrap();
    let mut sim = 0;
    assert_eq!(
        unsafe { aclprofExtSimModelLoad(descc.as_ptr(), &mut sim) },
        0
    );

    let mut devs = [0u32];
    let cfg = unsafe {
        aclprofCreateConfig(
            devs.as_mut_ptr(),
            1,
            aclprofAicoreMetrics(0xFF),
            std::ptr::null(),
            ACL_PROF_TASK_TIME,
        )
    };
    assert_eq!(aclprofStart(cfg), 0);

    let c = |s: &str| CString::new(s).unwrap();
    let (f16, nchw) = (c("FLOAT16;FLOAT16"), c("NCHW;NCHW"));
    let small = meta_of(
        &c("1,3,8,8;4,3,3,3"),
        &f16,
        &nchw,
        &c("1,4,6,6"),
        3_888,
        1_000,
    );
    let big = meta_of(
        &c("1,3,16,16;4,3,3,3"),
        &f16,
        &nchw,
        &c("1,4,14,14"),
        21_168,
        8_000,
    );
    assert_eq!(
        meta_of(
            &c("1,3,8,8;4,3,3,3"),
            &f16,
            &nchw,
            &c("1,4,6,6"),
            3_888,
            1_000
        ),
        small,
        "an equal description has the same id"
    );
    assert_ne!(small, 0);
    assert_ne!(small, big);
    assert_eq!(
        meta_of(&c(""), &c(""), &c(""), &c(""), 0, 0),
        0,
        "nothing known"
    );

    let t = aclprofExtNowNs();
    let report = |name: &std::ffi::CStr, ty: &std::ffi::CStr, at: u64, dur: u64, meta: u32| unsafe {
        aclprofExtReportOpMeta(
            model,
            name.as_ptr(),
            ty.as_ptr(),
            t + at,
            t + at + dur,
            meta,
        )
    };
    // conv ran twice with the small input and once with the big one.
    assert_eq!(report(c"conv", c"Conv2D", 0, 1_000, small), 0);
    assert_eq!(report(c"conv", c"Conv2D", 2_000, 1_000, small), 0);
    assert_eq!(report(c"conv", c"Conv2D", 4_000, 4_000, big), 0);
    // Without metadata, either call.
    assert_eq!(report(c"relu", c"Relu", 9_000, 500, 0), 0);
    assert_eq!(
        unsafe {
            aclprofExtReportOp(
                model,
                c"add".as_ptr(),
                c"Add".as_ptr(),
                t + 10_000,
                t + 10_100,
            )
        },
        0
    );
    // An id nobody created: refused, and not recorded.
    assert_eq!(
        report(c"bogus", c"Bogus", 11_000, 100, u32::MAX),
        aclprof::error::ACL_ERROR_INVALID_PARAM
    );
    assert_eq!(aclprofExtSimModelExecute(sim), 0);
    assert_eq!(aclprofStop(cfg), 0);
    assert_eq!(aclprofFinalize(), 0);
    aclprofDestroyConfig(cfg);

    let dirs: Vec<PathBuf> = aclprof::formats::layout::entries_named(&root, "PROF_").unwrap();
    assert_eq!(dirs.len(), 1);
    let dir = &dirs[0];

    // op_summary: CANN's quoted shapes, types and formats; N/A where unknown, shapes blank.
    let (_, rows) = read_csv(&output(dir, "op_summary_"));
    let names: Vec<&str> = rows.iter().map(|r| r["Op Name"].as_str()).collect();
    assert_eq!(names, ["conv", "conv", "conv", "relu", "add", "fc"]);
    let col = |i: usize, k: &str| rows[i][k].clone();
    assert_eq!(col(0, "Input Shapes"), "\"1,3,8,8;4,3,3,3\"");
    assert_eq!(col(2, "Input Shapes"), "\"1,3,16,16;4,3,3,3\"");
    assert_eq!(col(2, "Output Shapes"), "\"1,4,14,14\"");
    assert_eq!(col(0, "Input Data Types"), "FLOAT16;FLOAT16");
    assert_eq!(col(0, "Input Formats"), "NCHW;NCHW");
    assert_eq!(col(0, "Output Formats"), "N/A");
    assert_eq!(col(3, "Input Shapes"), "");
    assert_eq!(col(3, "Input Data Types"), "N/A");
    assert_eq!(col(5, "Input Shapes"), "\"16,32;32,8\"");

    // The timeline: the slice args say the same, without CANN's quotes, with FLOPs and bytes.
    let tl: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(output(dir, "msprof_")).unwrap()).unwrap();
    let slices: Vec<&serde_json::Value> = tl
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["Task Type"].is_string())
        .collect();
    let args =
        |name: &str, n: usize| &slices.iter().filter(|e| e["name"] == name).nth(n).unwrap()["args"];
    assert_eq!(args("conv", 2)["Input Shapes"], "1,3,16,16;4,3,3,3");
    assert_eq!(args("conv", 2)["FLOPs"], 21_168);
    assert_eq!(args("conv", 2)["Bytes"], 8_000);
    assert_eq!(args("fc", 0)["FLOPs"], 8192);
    assert!(args("relu", 0).get("Input Shapes").is_none());
    assert!(args("relu", 0).get("FLOPs").is_none());

    // The database: COMPUTE_TASK_INFO's inputShapes through STRING_IDS, quoted as CANN does.
    let db = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut shapes: Vec<String> = conn
        .prepare(
            "SELECT s.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s ON s.id = c.inputShapes \
             JOIN STRING_IDS n ON n.id = c.name WHERE n.value = 'conv'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    shapes.sort();
    assert_eq!(
        shapes,
        [
            "\"1,3,16,16;4,3,3,3\"",
            "\"1,3,8,8;4,3,3,3\"",
            "\"1,3,8,8;4,3,3,3\""
        ]
    );

    // op_meta.tsv beside the records, with the ids they use.
    let tsv = aclprof::opmeta::read(
        &dir.join("device_0/data")
            .join(aclprof::formats::layout::OP_META_FILE),
    );
    assert_eq!(tsv.len(), 3, "small, big and fc");
    assert_eq!(tsv[&small].flops, Some(3_888));

    // The analysis: name+shape groups, cost columns, --order-by memory, --input-dtype.
    let q = Query {
        top: 0,
        by: Some(Key::NameShape),
        order_by: Some("memory".into()),
        ..Query::default()
    };
    let r = analyze::analyze(dir, &q).unwrap();
    assert!(r.meta);
    let keys: Vec<(String, Option<String>, Option<u64>, u64)> = r
        .rows
        .iter()
        .map(|r| (r.key.clone(), r.in_shapes.clone(), r.bytes, r.count))
        .collect();
    assert_eq!(
        keys,
        [
            (
                "conv".into(),
                Some("1,3,16,16;4,3,3,3".into()),
                Some(8_000),
                1
            ),
            (
                "conv".into(),
                Some("1,3,8,8;4,3,3,3".into()),
                Some(2_000),
                2
            ),
            ("fc".into(), Some("16,32;32,8".into()), Some(1_824), 1),
            ("add".into(), None, None, 1),
            ("relu".into(), None, None, 1),
        ]
    );
    let json: serde_json::Value = serde_json::from_str(&analyze::render(&r, Format::Json)).unwrap();
    let first = &json["rows"][0];
    assert_eq!(first["Computation(FLOPs)"], 21_168);
    assert_eq!(first["Memory(bytes)"], 8_000);
    // 21 168 FLOPs in 4 µs: 5.292 GFLOPS; 8 000 bytes in 4 µs: 2 GB/s.
    assert_eq!(first["FLOPS(G/s)"], 5.292);
    assert_eq!(first["Bandwidth(GB/s)"], 2.0);
    assert_eq!(first["Input Shapes"], "1,3,16,16;4,3,3,3");
    assert_eq!(json["rows"][3]["Memory(bytes)"], "N/A");

    let by_type = analyze::analyze(
        dir,
        &Query {
            by: Some(Key::Type),
            order_by: Some("computation".into()),
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(by_type.rows[0].key, "Conv2D");
    assert_eq!(by_type.rows[0].flops, Some(3_888 * 2 + 21_168));
    let f16 = analyze::analyze(
        dir,
        &Query {
            top: 0,
            input_dtype: Some("float16".into()),
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(f16.ops, 4, "the three convs and fc have float16 inputs");
    let _ = std::fs::remove_dir_all(&root);
}
