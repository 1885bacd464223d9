//! Tests of the analysis: queries, inputs, ranking, steps and rendering.

use super::*;
use crate::formats::record::{encode, sign, OpFields};

fn rec(name: &str, ty: &str, dev: u32, stream: u32, start: u64, dur: u64) -> Vec<u8> {
    let mut r = Box::new([0u8; RECORD_SIZE]);
    let f = OpFields {
        model_id: 1,
        start,
        end: start + dur,
        dev_id: dev,
        stream_id: stream,
        ..Default::default()
    };
    encode(&mut r, &f, name.as_bytes(), ty.as_bytes());
    sign(&mut r[..]);
    r.to_vec()
}

fn file(recs: &[Vec<u8>]) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let p = std::env::temp_dir().join(format!(
        "aclprof-analyze-{}-{}.bin",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::write(&p, recs.concat()).unwrap();
    p
}

fn sample() -> PathBuf {
    file(&[
        rec("conv1", "Conv2D", 0, 1, 0, 10_000),
        rec("relu1", "Relu", 0, 1, 10_000, 1_000),
        rec("conv2", "Conv2D", 1, 2, 0, 30_000),
        rec("relu2", "Relu", 1, 2, 30_000, 3_000),
        rec("fc", "MatMulV2", 0, 1, 11_000, 6_000),
    ])
}

#[test]
fn the_top_n_without_grouping_follows_the_order_asked() {
    let p = sample();
    let names = |order: &str| {
        let q = Query {
            top: 2,
            order_by: Some(order.into()),
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        assert_eq!((r.ops, r.groups), (5, 5), "{order}");
        r.rows.into_iter().map(|x| x.key).collect::<Vec<_>>()
    };
    assert_eq!(names("time"), ["conv2", "conv1"]);
    assert_eq!(names("+time"), ["relu1", "relu2"]);
    assert_eq!(names("start"), ["conv1", "conv2"]);
    assert_eq!(names("name"), ["conv1", "conv2"]);
    assert_eq!(names("+max"), ["relu1", "relu2"]);
    let bad = Query {
        order_by: Some("colour".into()),
        ..Default::default()
    };
    assert_eq!(analyze(&p, &bad).unwrap_err().code, ACL_ERROR_INVALID_PARAM);
    let _ = std::fs::remove_file(p);
}

#[test]
fn huge_durations_saturate_the_totals_and_malformed_names_count_as_signed_ops() {
    let mut bad_name = rec("x", "T", 0, 1, 0, 5);
    bad_name[record::OFF_NAME] = 0; // the stored length says 1, the NUL comes first
    record::sign(&mut bad_name);
    let p = file(&[
        rec("a", "T", 0, 1, 0, u64::MAX),
        rec("b", "T", 0, 1, 0, u64::MAX),
        bad_name,
    ]);
    for by in [None, Some(Key::Type)] {
        let q = Query {
            by,
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        // A signed record is an op, as aclprofGetOpNum and the export count it; only
        // its name cannot be read (docs/design.md, "Decoding").
        assert_eq!((r.ops, r.total_ns, r.corrupt), (3, u64::MAX, 0), "{by:?}");
    }
    let _ = std::fs::remove_file(p);
}

#[test]
fn groups_by_type_with_every_aggregate() {
    let p = sample();
    let q = Query {
        by: Some(Key::Type),
        ..Default::default()
    };
    let r = analyze(&p, &q).unwrap();
    assert_eq!((r.ops, r.total_ns, r.groups), (5, 50_000, 3));
    let keys: Vec<&str> = r.rows.iter().map(|x| x.key.as_str()).collect();
    assert_eq!(keys, ["Conv2D", "MatMulV2", "Relu"]);
    assert_eq!(r.rows[0].count, 2);
    assert_eq!((r.rows[0].min_ns, r.rows[0].max_ns), (10_000, 30_000));
    assert!((r.rows[0].share - 80.0).abs() < 1e-9);
    assert!((r.rows[2].cumulative - 100.0).abs() < 1e-9);
    for (f, want) in [
        (Func::Mean, 20_000.0),
        (Func::Max, 30_000.0),
        (Func::Min, 10_000.0),
        (Func::Count, 2.0),
    ] {
        let r = analyze(
            &p,
            &Query {
                func: f,
                ..q.clone()
            },
        )
        .unwrap();
        let conv = r.rows.iter().find(|x| x.key == "Conv2D").unwrap();
        assert_eq!(conv.time, want, "{f:?}");
    }
    let _ = std::fs::remove_file(p);
}

#[test]
fn filters_and_top_ops() {
    let p = sample();
    let r = analyze(
        &p,
        &Query {
            top: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let names: Vec<&str> = r.rows.iter().map(|x| x.key.as_str()).collect();
    assert_eq!(names, ["conv2", "conv1"], "the two longest ops");
    assert_eq!(r.groups, 5);
    let shortest = analyze(
        &p,
        &Query {
            top: 0,
            order_by: Some("+time".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let times: Vec<f64> = shortest.rows.iter().map(|x| x.time).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(shortest.rows.last().unwrap().key, "conv2");
    let capped = Query {
        top: 0,
        max_time_ns: shortest.rows[1].time as u64,
        ..Default::default()
    };
    assert_eq!(analyze(&p, &capped).unwrap().ops, 2, "the two shortest ops");
    let q = Query {
        top: 0,
        types: vec!["Relu".into()],
        device: Some(1),
        ..Default::default()
    };
    let r = analyze(&p, &q).unwrap();
    assert_eq!((r.ops, r.rows[0].key.as_str()), (1, "relu2"));
    let q = Query {
        top: 0,
        name: Some(regex::bytes::Regex::new("^conv").unwrap()),
        min_time_ns: 20_000,
        ..Default::default()
    };
    assert_eq!(analyze(&p, &q).unwrap().ops, 1);
    let q = Query {
        by: Some(Key::Device),
        order_by: Some("device".into()),
        ..Default::default()
    };
    let r = analyze(&p, &q).unwrap();
    assert_eq!(r.rows[0].key, "0");
    assert_eq!(r.rows[0].total_ns, 17_000);
    let bad = Query {
        order_by: Some("colour".into()),
        ..Default::default()
    };
    assert!(analyze(&p, &bad).is_err());
    let _ = std::fs::remove_file(p);
}

#[test]
fn corrupt_and_torn_records_are_skipped_and_counted() {
    let mut bad = rec("x", "X", 0, 0, 0, 5);
    bad[200] ^= 1;
    let mut torn = rec("y", "Y", 0, 0, 0, 5);
    torn.truncate(100);
    let p = file(&[rec("a", "A", 0, 0, 0, 7), bad, torn]);
    let r = analyze(&p, &Query::default()).unwrap();
    assert_eq!((r.ops, r.corrupt), (1, 2));
    let _ = std::fs::remove_file(p);
}

#[test]
fn renders_every_format() {
    let p = sample();
    let q = Query {
        by: Some(Key::Type),
        ..Default::default()
    };
    let r = analyze(&p, &q).unwrap();
    let t = render(&r, Format::Table);
    assert!(t.lines().next().unwrap().starts_with("Type"), "{t}");
    assert!(
        t.contains("Conv2D") && t.contains("3 of 3 groups; 5 ops, 50.000 us in all"),
        "{t}"
    );
    let c = render(&r, Format::Csv);
    assert_eq!(
        c.lines().nth(1).unwrap(),
        "Conv2D,2,40.000,80.00,80.00,20.000,10.000,30.000"
    );
    let j: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
    assert_eq!(j["rows"][0]["Type"], "Conv2D");
    assert_eq!(j["rows"][0]["Count"], 2.0);
    let m = render(&r, Format::Markdown);
    assert!(m.starts_with("| Type | Count |") && m.lines().nth(1).unwrap().starts_with("|---|"));
    let _ = std::fs::remove_file(p);
}

/// `--aggregate mean|min|max`: the aggregate's column is not repeated by the fixed ones.
#[test]
fn an_aggregate_column_is_not_repeated() {
    let p = sample();
    for (func, title) in [
        (Func::Mean, "Mean(us)"),
        (Func::Min, "Min(us)"),
        (Func::Max, "Max(us)"),
    ] {
        let q = Query {
            by: Some(Key::Type),
            func,
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap();
        let c = render(&r, Format::Csv);
        let head: Vec<&str> = c.lines().next().unwrap().split(',').collect();
        assert_eq!(head.iter().filter(|h| **h == title).count(), 1, "{c}");
        assert_eq!(head.len(), 7, "{c}");
        let row: Vec<&str> = c.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(row.len(), head.len(), "{c}");
        let j: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
        assert_eq!(j["rows"][0].as_object().unwrap().len(), 7);
    }
    let _ = std::fs::remove_file(p);
}

/// A folder of result directories, each with devices of their own rank: `ranks` device
/// directories in all, `ops` ops each (durations repeat, so the top N has ties).
fn cluster(ranks: u32, ops: u64) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let root = std::env::temp_dir().join(format!(
        "aclprof-cluster-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    for r in 0..ranks {
        let dev = root.join(format!("PROF_{:06}_x/device_{}", r / 2, r % 2));
        std::fs::create_dir_all(dev.join("data")).unwrap();
        std::fs::write(
            dev.join(format!("info.json.{}", r % 2)),
            format!("{{\"rank_id\": {r}}}"),
        )
        .unwrap();
        let recs: Vec<Vec<u8>> = (0..ops)
            .map(|i| {
                let ty = ["Conv2D", "Relu", "MatMulV2"][(i % 3) as usize];
                rec(
                    &format!("op{i}"),
                    ty,
                    r % 2,
                    1,
                    i * 100,
                    10 + (i * 7 + r as u64) % 50,
                )
            })
            .collect();
        std::fs::write(dev.join("data/aclprof_ops.stream_1.bin"), recs.concat()).unwrap();
    }
    root
}

/// `q` analysed on `threads` threads.
fn on_threads(path: &Path, q: &Query, threads: usize) -> Report {
    analyze(
        path,
        &Query {
            threads,
            ..q.clone()
        },
    )
    .unwrap()
}

/// Any number of threads finds exactly what one does, ties among the top ops included.
#[test]
fn threads_change_nothing_but_speed() {
    let root = cluster(7, 400);
    for q in [
        Query {
            by: Some(Key::Rank),
            top: 0,
            ..Default::default()
        },
        Query {
            by: Some(Key::Type),
            func: Func::Max,
            ..Default::default()
        },
        Query {
            top: 25,
            ..Default::default()
        },
        Query {
            top: 25,
            order_by: Some("+time".into()),
            ..Default::default()
        },
    ] {
        let one = on_threads(&root, &q, 1);
        assert_eq!(one.ops, 7 * 400);
        assert!(one.rows.len() > 2);
        for threads in [2, 3, 8] {
            let many = on_threads(&root, &q, threads);
            assert_eq!(many.rows, one.rows, "{threads} threads, {q:?}");
            assert_eq!((many.ops, many.total_ns), (one.ops, one.total_ns));
        }
    }
    // One file, cut into pieces, with a torn record at its end.
    let mut recs: Vec<Vec<u8>> = (0..1000u64)
        .map(|i| rec(&format!("op{}", i % 37), "Add", 0, 1, i * 10, 5 + i % 11))
        .collect();
    recs.push(vec![1u8; 100]);
    let one = file(&recs);
    for q in [
        Query {
            top: 30,
            ..Default::default()
        },
        Query {
            by: Some(Key::Name),
            top: 0,
            ..Default::default()
        },
    ] {
        let a = on_threads(&one, &q, 1);
        assert_eq!((a.ops, a.corrupt), (1000, 1));
        for threads in [2, 5] {
            let b = on_threads(&one, &q, threads);
            assert_eq!(b.rows, a.rows, "{threads} threads over one file, {q:?}");
            assert_eq!(
                (b.ops, b.total_ns, b.corrupt),
                (a.ops, a.total_ns, a.corrupt)
            );
        }
    }
    assert!(
        parts_of(&inputs(&one).unwrap()).len() > 10,
        "the file is cut into pieces"
    );
    let _ = std::fs::remove_file(one);
    assert_eq!(workers(0, 1), 1);
    assert_eq!(workers(2, 100), 2);
    assert_eq!(workers(8, 3), 3);
    let _ = std::fs::remove_dir_all(root);
}

/// The JSON query and the command line fill the same options, checked in one place; an
/// error names the option as each spells it, and every choice's names come from one table.
#[test]
fn json_and_command_line_options_make_the_same_query() {
    let v: serde_json::Value = serde_json::json!({
        "top": 3, "aggregate_by": "name+shape", "aggregate": "mean", "min_time": 1.5,
        "type": "Conv2D", "name": "conv", "device": 1, "format": "md", "order_by": null,
    });
    let o = Options::from_json(&v).unwrap();
    let cli = Options {
        top: 3,
        aggregate_by: Some(Key::NameShape),
        aggregate: Func::Mean,
        min_time_us: 1.5,
        types: vec!["Conv2D".into()],
        name: Some("conv".into()),
        device: Some(1),
        format: Format::Markdown,
        ..Options::default()
    };
    let (a, b) = (o.query(false).unwrap(), cli.query(true).unwrap());
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert_eq!(o.format, Format::Markdown);
    let neg = Options {
        min_time_us: -1.0,
        ..Options::default()
    };
    assert!(neg.query(true).unwrap_err().starts_with("--min-time -1 "));
    assert!(neg.query(false).unwrap_err().starts_with("min_time -1 "));
    let bad = Options::from_json(&serde_json::json!({"aggregate_by": "op"})).unwrap_err();
    assert_eq!(
        bad,
        "aggregate_by: expected one of type, name, name+shape, device, stream, model, rank"
    );
    assert_eq!(
        Format::CHOICES.names(),
        ["table", "csv", "json", "markdown"]
    );
    assert!(Options::from_json(&serde_json::json!({"topp": 1}))
        .unwrap_err()
        .contains("unknown option"));
}

/// Groups ordered by `start` come in the order of their first op, the same on every run
/// (they were gathered in a hash map, whose order changes from run to run), with
/// `--aggregate-by` type and name, ascending or not, and on any number of threads.
#[test]
fn groups_by_start_follow_their_first_op_every_time() {
    let p = file(&[
        rec("b", "MatMulV2", 0, 1, 5_000, 10),
        rec("a", "Conv2D", 0, 1, 1_000, 10),
        rec("c", "Relu", 0, 1, 3_000, 10),
        rec("a", "Conv2D", 0, 1, 9_000, 10),
        rec("d", "TransData", 0, 1, 7_000, 10),
        rec("e", "Add", 0, 1, 3_000, 10), // ties with Relu: by key
    ]);
    for (by, want) in [
        (
            Key::Type,
            ["Conv2D", "Add", "Relu", "MatMulV2", "TransData"],
        ),
        (Key::Name, ["a", "c", "e", "b", "d"]),
    ] {
        for order in ["start", "+start"] {
            for threads in [1, 3] {
                let q = Query {
                    by: Some(by),
                    order_by: Some(order.into()),
                    threads,
                    ..Default::default()
                };
                let keys: Vec<String> = analyze(&p, &q)
                    .unwrap()
                    .rows
                    .into_iter()
                    .map(|r| r.key)
                    .collect();
                assert_eq!(keys, want, "{by:?} {order} on {threads} threads");
                let top = Query { top: 3, ..q };
                let keys: Vec<String> = analyze(&p, &top)
                    .unwrap()
                    .rows
                    .into_iter()
                    .map(|r| r.key)
                    .collect();
                assert_eq!(keys, want[..3], "{by:?} {order} -t 3");
            }
        }
    }
}

/// `--order-by` takes a column as the table heads it, and the `--aggregate-by` key as it
/// was given.
#[test]
fn order_by_takes_headings_and_the_aggregate_key() {
    let p = sample();
    let keys = |by: Option<Key>, order: &str| {
        let q = Query {
            by,
            order_by: Some(order.into()),
            ..Default::default()
        };
        let r = analyze(&p, &q).unwrap_or_else(|e| panic!("{order}: {}", e.msg));
        r.rows.into_iter().map(|x| x.key).collect::<Vec<_>>()
    };
    assert_eq!(
        keys(Some(Key::Type), "Mean(us)"),
        keys(Some(Key::Type), "mean")
    );
    assert_eq!(
        keys(Some(Key::Type), "Share(%)"),
        keys(Some(Key::Type), "total")
    );
    assert_eq!(
        keys(Some(Key::Type), "+Sum(us)"),
        ["Relu", "MatMulV2", "Conv2D"]
    );
    assert_eq!(
        keys(Some(Key::NameShape), "name+shape"),
        ["conv1", "conv2", "fc", "relu1", "relu2"]
    );
    assert_eq!(keys(None, "Start(us)"), keys(None, "start"));
    // The per-op listing's headings, and -COLUMN descending.
    assert_eq!(
        keys(None, "Type"),
        ["conv1", "conv2", "fc", "relu1", "relu2"]
    );
    assert_eq!(
        keys(None, "-type"),
        ["relu1", "relu2", "fc", "conv1", "conv2"]
    );
    assert_eq!(
        keys(None, "Device"),
        ["conv1", "relu1", "fc", "conv2", "relu2"]
    );
    assert_eq!(keys(None, "-Stream")[..2], ["conv2", "relu2"]);
    assert_eq!(
        keys(None, "-name"),
        ["relu2", "relu1", "fc", "conv2", "conv1"]
    );
    assert_eq!(
        keys(Some(Key::Type), "-type"),
        ["Relu", "MatMulV2", "Conv2D"]
    );
    // (Equal values keep the order the ops were reported in.)
    assert_eq!(
        keys(None, "-start"),
        ["relu2", "fc", "relu1", "conv1", "conv2"]
    );
    // What orders nothing is refused, saying why.
    for (by, order, says) in [
        (None, "count", "every op counts 1"),
        (Some(Key::Type), "device", "a column of the per-op listing"),
    ] {
        let q = Query {
            by,
            order_by: Some(order.into()),
            ..Default::default()
        };
        let e = analyze(&p, &q).unwrap_err();
        assert!(e.msg.contains(says), "{order}: {}", e.msg);
    }
}

#[test]
fn a_bad_name_pattern_is_one_line() {
    for re in ["(", "[a-", "a{2,1}", "\\"] {
        let e = Query::name_regex(re).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("not a regular expression: "), "{e}");
    }
    assert!(Query::name_regex("^conv").is_ok());
}
