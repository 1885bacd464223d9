//! Rendering a report: a table, CSV, JSON or Markdown, and the table helpers the other
//! commands share.

use super::*;

/// Output formats of [`render`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
    Markdown,
}

impl Format {
    /// The names `--format` (and the JSON query's `format`) take; `md` is `markdown`.
    pub const CHOICES: Choices<Format> = Choices(&[
        ("table", Format::Table),
        ("csv", Format::Csv),
        ("json", Format::Json),
        ("markdown", Format::Markdown),
        ("md", Format::Markdown),
    ]);

    pub fn parse(s: &str) -> Option<Format> {
        Format::CHOICES.parse(s)
    }
}

fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// The cost columns (MegEngine's computation, FLOPS, memory and bandwidth), shown when the
/// ops carried metadata; `--order-by computation|flops|memory|bandwidth` sorts by them.
pub const COST_COLUMNS: [&str; 4] = [
    "Computation(FLOPs)",
    "FLOPS(G/s)",
    "Memory(bytes)",
    "Bandwidth(GB/s)",
];

/// The report's columns and cells.
pub fn table(r: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let time_title = match r.func {
        None => "Duration(us)".to_string(),
        Some(Func::Count) => "Count(agg)".to_string(),
        Some(f) => format!("{f:?}(us)"),
    };
    let mut head: Vec<String> = match r.by {
        Some(k) => vec![k.title().into(), "Count".into(), time_title],
        // Start tells apart the ops a listing shows under one name (each execution's).
        None => ["Name", "Type", "Device", "Stream", "Model", "Start(us)"]
            .iter()
            .map(|s| s.to_string())
            .chain([time_title])
            .collect(),
    };
    // A group's mean, min and max; not for a single op (they are its duration), and not
    // the one the aggregate column already is.
    let stats: Vec<Func> = [Func::Mean, Func::Min, Func::Max]
        .into_iter()
        .filter(|&f| r.by.is_some() && r.func != Some(f))
        .collect();
    head.extend(["Share(%)".to_string(), "Cumulative(%)".to_string()]);
    head.extend(stats.iter().map(|f| format!("{f:?}(us)")));
    // MegEngine's profile_analyze columns, when the ops carried metadata.
    let shapes = r.meta && matches!(r.by, None | Some(Key::NameShape));
    if r.meta {
        head.extend(COST_COLUMNS.iter().map(|c| c.to_string()));
    }
    if shapes {
        head.extend(["Input Shapes".to_string(), "Output Shapes".to_string()]);
    }
    let rows = r
        .rows
        .iter()
        .map(|row| {
            let mut c = vec![row.key.clone()];
            match &row.op {
                Some((ty, dev, stream, model, start)) => {
                    c.extend([
                        ty.clone(),
                        dev.to_string(),
                        stream.to_string(),
                        model.to_string(),
                        // In op_summary's clock (epoch), exact: an epoch time in µs has more
                        // digits than an f64 holds.
                        {
                            let t = (*start as i128 + row.wall_offset).max(0);
                            format!("{}.{:03}", t / 1000, t % 1000)
                        },
                    ]);
                    c.push(us(row.time));
                }
                None => {
                    c.push(row.count.to_string());
                    c.push(if r.func == Some(Func::Count) {
                        format!("{}", row.time)
                    } else {
                        us(row.time)
                    });
                }
            }
            c.push(format!("{:.2}", row.share));
            c.push(format!("{:.2}", row.cumulative));
            c.extend(stats.iter().map(|f| match f {
                Func::Min => us(row.min_ns as f64),
                Func::Max => us(row.max_ns as f64),
                _ => us(row.mean_ns()),
            }));
            if r.meta {
                let cost = Cost {
                    flops: row.flops,
                    bytes: row.bytes,
                    allocated: row.allocated,
                };
                for (col, scale) in [
                    (Col::Computation, 1.0),
                    (Col::Flops, 1e-9),
                    (Col::Memory, 1.0),
                    (Col::Bandwidth, 1e-9),
                ] {
                    c.push(match cost.value(col, row.total_ns) {
                        Some(x) if scale == 1.0 => format!("{x}"),
                        Some(x) => format!("{:.3}", x * scale),
                        None => "N/A".into(),
                    });
                }
            }
            if shapes {
                let na = || "N/A".to_string();
                c.push(row.in_shapes.clone().unwrap_or_else(na));
                c.push(row.out_shapes.clone().unwrap_or_else(na));
            }
            c
        })
        .collect();
    (head, rows)
}

use crate::formats::text::csv_field;

/// `head` and `rows` as a Markdown table.
pub fn markdown_table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "|{}|", vec!["---"; head.len()].join("|"));
    for cells in rows {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o
}

/// `head` and `rows` as aligned columns under a rule; column `i` is left-aligned when
/// `left(i)`, else right-aligned.
pub fn text_table(head: &[String], rows: &[Vec<String>], left: impl Fn(usize) -> bool) -> String {
    let mut o = String::new();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for cells in rows {
        for (i, c) in cells.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String], o: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if left(i) {
                    format!("{c:<w$}", w = w[i])
                } else {
                    format!("{c:>w$}", w = w[i])
                }
            })
            .collect();
        let _ = writeln!(o, "{}", parts.join("  ").trim_end());
    };
    line(head, &mut o);
    let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
    line(&rule, &mut o);
    for cells in rows {
        line(cells, &mut o);
    }
    o
}

/// The report as text in `format`.
pub fn render(r: &Report, format: Format) -> String {
    let (head, rows) = table(r);
    let mut o = String::new();
    match format {
        Format::Csv => {
            for line in std::iter::once(&head).chain(rows.iter()) {
                let cells: Vec<String> = line.iter().map(|c| csv_field(c)).collect();
                let _ = writeln!(o, "{}", cells.join(","));
            }
        }
        Format::Json => {
            let rows: Vec<serde_json::Value> = rows
                .iter()
                .map(|cells| {
                    let m: serde_json::Map<String, serde_json::Value> = head
                        .iter()
                        .zip(cells)
                        .map(|(h, c)| {
                            let text = matches!(
                                h.as_str(),
                                "Name" | "Type" | "Input Shapes" | "Output Shapes"
                            );
                            let v = c
                                .parse::<u64>()
                                .ok()
                                .filter(|_| !text)
                                .map(Into::into)
                                .or_else(|| {
                                    c.parse::<f64>()
                                        .ok()
                                        .filter(|_| !text)
                                        .and_then(serde_json::Number::from_f64)
                                        .map(Into::into)
                                })
                                .unwrap_or_else(|| c.clone().into());
                            (h.clone(), v)
                        })
                        .collect();
                    m.into()
                })
                .collect();
            let v = serde_json::json!({
                "ops": r.ops, "total_us": r.total_ns as f64 / 1000.0, "groups": r.groups,
                "corrupt_records": r.corrupt, "rows": rows,
            });
            let _ = writeln!(
                o,
                "{}",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            );
        }
        Format::Markdown => o.push_str(&markdown_table(&head, &rows)),
        Format::Table => {
            // Text left-aligned, numbers right-aligned.
            o.push_str(&text_table(&head, &rows, |i| {
                i == 0 || (r.by.is_none() && i == 1)
            }));
            let shown = rows.len();
            let what = if r.by.is_some() {
                ("group", "groups")
            } else {
                ("op", "ops")
            };
            let _ = writeln!(
                o,
                "{shown} of {}; {}, {} us in all{}",
                crate::formats::text::count(r.groups as u64, what.0, what.1),
                crate::formats::text::count(r.ops, "op", "ops"),
                us(r.total_ns as f64),
                if r.corrupt > 0 {
                    format!("; {}", corrupt_skipped(r.corrupt))
                } else {
                    String::new()
                }
            );
        }
    }
    o
}
