//! Tests of the export's formats.

use super::*;

#[test]
fn the_metadata_args_are_op_summarys_tensor_columns() {
    assert_eq!(
        META_ARGS,
        [
            "Input Shapes",
            "Input Data Types",
            "Input Formats",
            "Output Shapes",
            "Output Data Types",
            "Output Formats"
        ]
    );
}

#[test]
fn number_formats() {
    for (ns, want) in [
        (0u64, "0"),
        (1500, "1.5"),
        (2000, "2"),
        (1234, "1.234"),
        (10, "0.01"),
        (1_000_001, "1000.001"),
    ] {
        let mut s = String::new();
        push_us_trim(&mut s, ns);
        assert_eq!(s, want);
        assert_eq!(us_trim(ns as f64), want);
    }
    let mut s = String::new();
    push_us(&mut s, 1_234_567, 6);
    assert_eq!(s, "1234.567000");
    s.clear();
    push_u64(&mut s, 7, 3);
    assert_eq!(s, "007");
    s.clear();
    push_csv_field(&mut s, "a,\"b\"");
    assert_eq!(s, "\"a,\"\"b\"\"\"");
    assert_eq!(us3(1_234_567), "1234.567");
    assert_eq!(us3(5), "0.005");
    assert_eq!(us_trim(1500.0), "1.5");
    assert_eq!(us_trim(2000.0), "2");
    assert_eq!(us_trim(0.0), "0");
    assert_eq!(us_trim(1234.0), "1.234");
}
