//! How CANN's files write numbers and strings: microseconds (exact, from integer ns), JSON
//! string literals and CSV fields. One definition each, for the export, the analysis and
//! the command line.

use std::fmt::Write as _;

/// `ns` as microseconds with exactly 3 decimals.
pub fn us3(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Appends `ns` as microseconds with up to 3 decimals, trailing zeros removed.
pub fn push_us_trim(o: &mut String, ns: u64) {
    push_u64(o, ns / 1000, 1);
    let frac = ns % 1000;
    if frac != 0 {
        let (digits, width) = match (frac % 100, frac % 10) {
            (0, _) => (frac / 100, 1),
            (_, 0) => (frac / 10, 2),
            _ => (frac, 3),
        };
        o.push('.');
        push_u64(o, digits, width);
    }
}

/// Microseconds with up to 3 decimals, trailing zeros removed (msprof's DoubleToStr).
pub fn us_trim(ns: f64) -> String {
    let mut o = String::new();
    push_us_trim(&mut o, ns.max(0.0).round() as u64);
    o
}

pub fn jstr(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    push_json_str(&mut o, s);
    o
}

/// Appends `s` as a JSON string literal.
pub fn push_json_str(o: &mut String, s: &str) {
    o.push('"');
    // Op names almost never need escaping: copy them whole when they don't.
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        o.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(o, "\\u{:04x}", c as u32);
                }
                c => o.push(c),
            }
        }
    }
    o.push('"');
}

/// Appends `s` as a CSV field (quoted only when it must be).
pub fn push_csv_field(o: &mut String, s: &str) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        o.push('"');
        o.push_str(&s.replace('"', "\"\""));
        o.push('"');
    } else {
        o.push_str(s);
    }
}

/// Appends `v` in decimal, zero-padded to `width` digits. core::fmt and a digit-at-a-time
/// loop were the export's largest cost; itoa writes two digits per step.
pub fn push_u64(o: &mut String, v: u64, width: usize) {
    let mut b = itoa::Buffer::new();
    let digits = b.format(v);
    for _ in digits.len()..width {
        o.push('0');
    }
    o.push_str(digits);
}

/// Appends `ns` as microseconds with `decimals` (3 or 6) decimals.
pub fn push_us(o: &mut String, ns: u64, decimals: u32) {
    push_u64(o, ns / 1000, 1);
    o.push('.');
    if decimals == 6 {
        push_u64(o, ns % 1000, 3);
        o.push_str("000");
    } else {
        push_u64(o, ns % 1000, 3);
    }
}

/// `s` as a CSV field (quoted only when it must be).
pub fn csv_field(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    push_csv_field(&mut o, s);
    o
}

/// `n` and its noun, singular for one: "1 run", "3 runs".
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}
