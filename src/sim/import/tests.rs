//! Tests of the model-description importers.

use super::*;

#[test]
fn json_descriptions() {
    let p = Path::new("m.json");
    let m = parse_json(
        p,
        r#"{"name":"m","device":0,"wait_us":2,"ops":[
        {"name":"a","type":"Conv2D","duration_us":10.5},
        {"name":"b","type":"Relu","duration_us":1,"wait_us":0}]}"#,
    )
    .unwrap();
    assert_eq!(
        m.ops[0],
        SimOp {
            name: "a".into(),
            op_type: "Conv2D".into(),
            duration_ns: 10_500,
            wait_ns: 2_000,
            ..Default::default()
        }
    );
    assert_eq!(m.ops[1].wait_ns, 0);
    let no_wait = parse_json(
        p,
        r#"{"name":"m","ops":[{"name":"a","type":"T","duration_us":1}]}"#,
    )
    .unwrap();
    assert_eq!(no_wait.ops[0].wait_ns, DEFAULT_WAIT_NS);
    for bad in [
        "{",
        r#"{"ops":[]}"#,
        r#"{"name":"m","ops":[{"name":"a","duration_us":1}]}"#,
        r#"{"name":"m","ops":[{"name":"a","type":"T","duration_us":-1}]}"#,
        r#"{"name":"m","device":-1,"ops":[]}"#,
    ] {
        assert_eq!(
            parse_json(p, bad).unwrap_err().code,
            ACL_ERROR_INVALID_FILE,
            "{bad}"
        );
    }
}

#[test]
fn op_summary_csv_replays_names_types_durations_and_waits() {
    let text = "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim,Input Shapes\n\
                1,1,3,2,conv1,Conv2D,static,AI_CORE,1700000000000.000\t,12.345,0,8,\"\"\"1,3,224,224\"\"\"\n\
                1,1,4,2,relu1,Relu,static,AI_VECTOR_CORE,1700000000013.345\t,2.000,1.000000,4,N/A\n";
    let m = parse_csv(Path::new("/x/op_summary_20260101000000.csv"), text).unwrap();
    assert_eq!(m.device, 1);
    assert_eq!(m.name, "op_summary_20260101000000");
    assert_eq!(m.ops.len(), 2);
    assert_eq!(
        m.ops[0],
        SimOp {
            name: "conv1".into(),
            op_type: "Conv2D".into(),
            duration_ns: 12_345,
            wait_ns: 0,
            offset_ns: Some(0),
            task: Some(TaskInfo {
                task_type: Some("AI_CORE".into()),
                block_dim: Some(8),
                mix_block_dim: None,
                stream_id: Some(2),
                task_id: Some(3),
            }),
            pmu: Vec::new(),
            // Kept as written (the triple quotes of real files leave one pair).
            meta: Some(Box::new(OpMeta {
                input_shapes: "\"1,3,224,224\"".into(),
                ..Default::default()
            })),
            meta_id: 0,
            reg_id: 0,
            output_bytes: None,
            workspace_bytes: 0,
        }
    );
    assert_eq!(m.ops[1].meta, None, "N/A is unknown");
    assert_eq!(m.ops[1].wait_ns, 1_000);
    assert!(
        m.pmu_columns.is_empty(),
        "no PMU columns without a Context ID"
    );
    let pmu =
        "Op Name,OP Type,Task Duration(us),Output Formats,Context ID,aic_mac_ratio,aiv_time(us)\n\
               mm,MatMul,5,ND,N/A,0.75,N/A\n";
    let m = parse_csv(Path::new("x.csv"), pmu).unwrap();
    assert_eq!(m.pmu_columns, ["aic_mac_ratio", "aiv_time(us)"]);
    assert_eq!(m.ops[0].pmu, ["0.75", "N/A"]);
    assert!(parse_csv(Path::new("x.csv"), "a,b\n1,2\n").is_err());
    let bom = format!("\u{FEFF}{text}");
    assert_eq!(parse_text(Path::new("x.csv"), &bom).unwrap().ops.len(), 2);
}

#[test]
fn a_byte_order_mark_is_not_content() {
    let json =
        "\u{FEFF}{\"name\":\"m\",\"ops\":[{\"name\":\"a\",\"type\":\"T\",\"duration_us\":1}]}";
    let m = parse_text(Path::new("m.json"), json).unwrap();
    assert_eq!((m.name.as_str(), m.ops.len()), ("m", 1));
}

#[test]
fn kernel_details_keep_start_times_task_types_and_streams() {
    let text = "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim\r\n\
                1,4294967295,7,2,b,Mul,AI_VECTOR_CORE,1736405443881500.320\t,6.28,0,40,0\r\n\
                1,4294967295,N/A,N/A,hcom_allReduce_1,hcom_allReduce_,HCCL,1736405443881410.320\t,50.621,0,0,0\r\n";
    let m = parse_text(Path::new("kernel_details.csv"), text).unwrap();
    // Ordered by start; starts kept to the ns although they do not fit an f64.
    assert_eq!(m.ops[0].name, "hcom_allReduce_1");
    assert_eq!(m.ops[0].offset_ns, Some(0));
    assert_eq!(m.ops[1].offset_ns, Some(90_000));
    assert_eq!(m.ops[1].duration_ns, 6_280);
    let t = m.ops[1].task.as_ref().unwrap();
    assert_eq!(
        (t.task_type.as_deref(), t.block_dim, t.stream_id, t.task_id),
        (Some("AI_VECTOR_CORE"), Some(40), Some(2), Some(7))
    );
    assert_eq!(m.ops[0].task.as_ref().unwrap().stream_id, None);
    assert_eq!(
        us_str_to_ns("1736405443881410.3205"),
        Some(1_736_405_443_881_410_321)
    );
    assert_eq!(us_str_to_ns("N/A"), None);
}

#[test]
fn durations_waits_and_start_spreads_are_bounded() {
    let p = Path::new("op_summary_bounds.csv");
    let head = "Op Name,OP Type,Task Start Time(us),Task Duration(us),Task Wait Time(us)\n";
    // A wait of 8.3e15 µs came from the fuzzer: it would overflow the simulator's clock.
    for row in [
        "a,A,1,1,8311111111111111\n",
        "a,A,1,8311111111111111,0\n",
        "a,A,1,1,0\nb,B,2000000000000000,1,0\n",
    ] {
        let e = parse_csv(p, &format!("{head}{row}")).unwrap_err();
        assert_eq!(e.code, ACL_ERROR_INVALID_FILE, "{row}");
    }
    let m = parse_csv(p, &format!("{head}a,A,1,999999999999.999,0\n")).unwrap();
    assert_eq!(m.ops[0].duration_ns, MAX_SPAN_NS - 1);
}

#[test]
fn unsupported_files_get_one_clear_error() {
    let dir = std::env::temp_dir().join(format!("aclprof-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes, says) in [
        ("prof.db", &b"SQLite format 3\0\x10\x00"[..], "SQLite"),
        ("model.om", &b"IMOD\0\0\x01\xff\xfe"[..], "binary"),
        ("x.csv", &b"a,b\n1,2\n"[..], "Supported:"),
        ("x.json", &b"{\"traceEvents\": []}"[..], "Ascend Hardware"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = parse_file(&p).unwrap_err();
        assert_eq!(e.code, ACL_ERROR_INVALID_FILE);
        assert!(e.msg.contains(says), "{name}: {}", e.msg);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_ops_carry_their_tensors() {
    let p = Path::new("m.json");
    let m = parse_json(
        p,
        r#"{"name":"m","ops":[
        {"name":"a","type":"Conv2D","duration_us":1,"input_shapes":"1,3,224,224;64,3,7,7",
         "input_types":"FLOAT16;FLOAT16","output_formats":"NC1HWC0"},
        {"name":"b","type":"Relu","duration_us":1}]}"#,
    )
    .unwrap();
    let a = m.ops[0].meta.as_deref().unwrap();
    assert_eq!(
        a.input_shapes, "\"1,3,224,224;64,3,7,7\"",
        "in CANN's quotes"
    );
    assert_eq!(a.input_types, "FLOAT16;FLOAT16");
    assert_eq!(a.output_formats, "NC1HWC0");
    assert_eq!(a.output_shapes, "");
    assert_eq!(m.ops[1].meta, None);
    let bad =
        r#"{"name":"m","ops":[{"name":"a","type":"T","duration_us":1,"input_shapes":[1,3]}]}"#;
    assert!(parse_json(p, bad)
        .unwrap_err()
        .msg
        .contains("input_shapes must be a string"));
    // A communication op's link.
    let m = parse_json(
        p,
        r#"{"name":"m","ops":[{"name":"hcom_allReduce_1","type":"hcom_allReduce_",
        "duration_us":10,"bytes":1000,"peer":1,"transport":"RDMA","transit_us":4}]}"#,
    )
    .unwrap();
    let a = m.ops[0].meta.as_deref().unwrap();
    assert_eq!(
        (a.peer, a.transport.as_str(), a.transit_ns, a.bytes),
        (Some(1), "RDMA", Some(4000), Some(1000))
    );
    for (op, says) in [
        (
            r#""peer":1,"transit_us":4"#,
            "a link needs peer, transit_us and bytes together",
        ),
        (
            r#""bytes":9,"peer":1"#,
            "a link needs peer, transit_us and bytes together",
        ),
        (
            r#""bytes":9,"peer":-1,"transit_us":4"#,
            "peer must be a rank",
        ),
        (
            r#""bytes":9,"peer":1,"transit_us":11"#,
            "transit_us must be a number from 0 to duration_us",
        ),
        (
            r#""bytes":9,"peer":1,"transit_us":4,"transport":"HCCS""#,
            "transport must be one of SDMA, RDMA",
        ),
    ] {
        let bad =
            format!(r#"{{"name":"m","ops":[{{"name":"a","type":"T","duration_us":10,{op}}}]}}"#);
        let e = parse_json(p, &bad).unwrap_err().msg;
        assert!(e.contains(says), "{op}: {e}");
    }
}

/// Every key of the grammar is accepted; a misspelt one, at the top or in an op, is refused
/// with the key named and the nearest known key suggested.
#[test]
fn unknown_keys_in_a_model_description_are_refused_by_name() {
    let p = Path::new("m.json");
    let op = r#"{"name": "a", "type": "HcomAllReduce", "duration_us": 2, "wait_us": 1,
        "input_shapes": "1,2", "input_types": "FLOAT16", "input_formats": "ND",
        "output_shapes": "1,2", "output_types": "FLOAT16", "output_formats": "ND",
        "flops": 4, "bytes": 8, "output_bytes": 4, "workspace_bytes": 0,
        "peer": 1, "transport": "RDMA", "transit_us": 1}"#;
    let full = format!(
        r#"{{"name": "m", "device": 0, "wait_us": 1, "inputs": [4], "outputs": [4], "ops": [{op}]}}"#
    );
    let m = parse_json(p, &full).unwrap();
    assert_eq!(m.ops.len(), 1);
    for key in MODEL_KEYS {
        assert!(full.contains(&format!("\"{key}\"")), "the test uses {key}");
    }
    for key in OP_KEYS {
        assert!(op.contains(&format!("\"{key}\"")), "the test uses {key}");
    }
    for (text, says) in [
        (
            r#"{"name": "m", "devise": 0, "ops": []}"#,
            r#"unknown key "devise" (did you mean "device"?)"#,
        ),
        (
            r#"{"name": "m", "ops": [{"name": "a", "type": "A", "duration_us": 1, "flop": 100}]}"#,
            r#"ops[0]: unknown key "flop" (did you mean "flops"?)"#,
        ),
        (
            r#"{"name": "m", "ops": [{"name": "a", "type": "A", "duraton_us": 1}]}"#,
            r#"ops[0]: unknown key "duraton_us" (did you mean "duration_us"?)"#,
        ),
        (
            r#"{"name": "m", "ops": [], "colour": 1}"#,
            r#"unknown key "colour"; the keys are"#,
        ),
    ] {
        let e = parse_json(p, text).unwrap_err();
        assert_eq!(e.code, ACL_ERROR_INVALID_FILE);
        assert!(e.msg.contains(says), "{text}: {}", e.msg);
    }
}

/// A description read by serde still says which key is wrong, where, and what it must be.
#[test]
fn a_bad_value_in_a_description_is_named_with_its_place() {
    let p = Path::new("m.json");
    for (text, says) in [
        (r#"{"ops": []}"#, r#"missing "name" (a string)"#),
        (r#"{"name": "m"}"#, r#"missing "ops" (an array of ops)"#),
        (r#"[1]"#, "must be a JSON object"),
        (r#"{"name": "m", "ops": [1]}"#, "ops[0] must be an op"),
        (
            r#"{"name": "m", "device": -1, "ops": []}"#,
            "device must be a non-negative integer",
        ),
        (
            r#"{"name": "m", "wait_us": -1, "ops": []}"#,
            "wait_us must be a non-negative number",
        ),
        (
            r#"{"name": "m", "inputs": [1, "x"], "ops": []}"#,
            "inputs must be an array of byte sizes",
        ),
        (
            r#"{"name": "m", "ops": [{"name": "a", "duration_us": 1}]}"#,
            r#"ops[0] needs "type" (a string)"#,
        ),
        (
            r#"{"name": "m", "ops": [{"name": "a", "type": "T", "duration_us": 1},
                {"name": "b", "type": "T", "duration_us": -2}]}"#,
            "ops[1].duration_us must be a non-negative number",
        ),
        (
            r#"{"name": "m", "ops": [{"name": "a", "type": "T", "duration_us": 1, "flops": 1.5}]}"#,
            "ops[0].flops must be a non-negative integer",
        ),
    ] {
        let e = parse_json(p, text).unwrap_err();
        assert_eq!(e.code, ACL_ERROR_INVALID_FILE);
        assert!(e.msg.contains(says), "{text}: {}", e.msg);
    }
}
