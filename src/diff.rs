//! `aclprof diff BASE NEW`: two runs compared as msprof-analyze's `compare` does, overall
//! first (end-to-end device time as computing by class, communication not overlapped and
//! free), then per op type, per op (by name) and per step; each row base, new, difference and
//! ratio (docs/design.md, "Comparing runs").

use crate::analyze::{markdown_table, text_table, Format};
use crate::formats::text::csv_field;
use crate::runstats::RunStats;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Which table a row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Overall,
    Type,
    Op,
    Step,
    /// Device memory, when both runs recorded it: its values are bytes, shown in KB.
    Memory,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Overall => "overall",
            Section::Type => "type",
            Section::Op => "op",
            Section::Step => "step",
            Section::Memory => "memory",
        }
    }
    fn heading(self) -> &'static str {
        match self {
            Section::Overall => "Overall: device time, summed over devices",
            Section::Type => "Op types, by total device time",
            Section::Op => "Ops, matched by name, by total device time",
            Section::Step => "Steps, by their slowest device's step time",
            Section::Memory => {
                "Device memory in KB (Base/New/Diff): peaks, then each op's largest allocation"
            }
        }
    }
}

/// One compared row. `None`: not in that run (an added or removed type, op or step).
#[derive(Clone, Debug, PartialEq)]
pub struct DiffRow {
    pub section: Section,
    pub key: String,
    pub base_count: Option<u64>,
    pub new_count: Option<u64>,
    pub base_ns: Option<u64>,
    pub new_ns: Option<u64>,
}

impl DiffRow {
    /// New minus base, in ns (a missing side counts as 0).
    pub fn diff_ns(&self) -> i128 {
        self.new_ns.unwrap_or(0) as i128 - self.base_ns.unwrap_or(0) as i128
    }
    /// New over base; None when base is missing or zero.
    pub fn ratio(&self) -> Option<f64> {
        match (self.base_ns, self.new_ns) {
            (Some(b), Some(n)) if b > 0 => Some(n as f64 / b as f64),
            _ => None,
        }
    }
    /// What the values are divided by to show them, and the unit shown: µs for times, KB
    /// for memory.
    pub fn unit(&self) -> (f64, &'static str) {
        if self.section == Section::Memory {
            (1024.0, "KB")
        } else {
            (1e3, "us")
        }
    }
    pub fn status(&self) -> &'static str {
        match (self.base_ns, self.new_ns) {
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            _ => "",
        }
    }
}

/// Two runs compared.
#[derive(Debug, Default)]
pub struct Diff {
    pub base: String,
    pub new: String,
    pub rows: Vec<DiffRow>,
}

/// Rows of `section` pairing `base`'s keys with `new`'s (base's first, in key order, then
/// those only `new` has).
fn paired(
    section: Section,
    base: BTreeMap<String, (u64, u64)>,
    mut new: BTreeMap<String, (u64, u64)>,
) -> Vec<DiffRow> {
    let mut v: Vec<DiffRow> = Vec::with_capacity(base.len().max(new.len()));
    for (k, (bc, bt)) in base {
        let n = new.remove(&k);
        v.push(DiffRow {
            section,
            key: k,
            base_count: Some(bc),
            new_count: n.map(|x| x.0),
            base_ns: Some(bt),
            new_ns: n.map(|x| x.1),
        });
    }
    v.extend(new.into_iter().map(|(k, (nc, nt))| DiffRow {
        section,
        key: k,
        base_count: None,
        new_count: Some(nc),
        base_ns: None,
        new_ns: Some(nt),
    }));
    v
}

/// [`paired`], largest change first.
fn keyed(
    section: Section,
    base: BTreeMap<String, (u64, u64)>,
    new: BTreeMap<String, (u64, u64)>,
) -> Vec<DiffRow> {
    let mut v = paired(section, base, new);
    // Ties by name, so the order is stable.
    v.sort_by(|a, b| {
        b.diff_ns()
            .abs()
            .cmp(&a.diff_ns().abs())
            .then_with(|| a.key.cmp(&b.key))
    });
    v
}

fn report_map(r: &crate::analyze::Report) -> BTreeMap<String, (u64, u64)> {
    r.rows
        .iter()
        .map(|x| (x.key.clone(), (x.count, x.total_ns)))
        .collect()
}

/// Step id -> (devices that ran it, its slowest device's step time).
fn step_map(r: &RunStats) -> BTreeMap<String, (u64, u64)> {
    r.slowest_steps()
        .into_iter()
        .map(|(s, devices)| (format!("step {}", s.id), (devices, s.total())))
        .collect()
}

/// The memory section: per device its peaks and what it held at the end (by name), then per
/// op its largest allocation (count: its allocations), largest change first.
fn memory_rows(
    base: &crate::analyze::memory::Analysis,
    new: &crate::analyze::memory::Analysis,
) -> Vec<DiffRow> {
    let figures = |a: &crate::analyze::memory::Analysis| {
        let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for d in &a.devices {
            for (what, v) in [
                ("peak allocated", d.peak_allocated),
                ("peak reserved", d.peak_reserved),
                ("peak held", d.peak_held),
                ("held at end", d.held_at_end),
            ] {
                m.insert(format!("device {} {what}", d.device), (1, v));
            }
        }
        m
    };
    let ops = |a: &crate::analyze::memory::Analysis| {
        let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for o in a.devices.iter().flat_map(|d| d.ops.iter()) {
            let e = m.entry(format!("op {}", o.name)).or_default();
            e.0 += o.allocations;
            e.1 = e.1.max(o.max_bytes);
        }
        m
    };
    let mut rows = paired(Section::Memory, figures(base), figures(new));
    rows.extend(keyed(Section::Memory, ops(base), ops(new)));
    rows
}

/// Compares `new` with `base`.
pub fn diff(base: &RunStats, new: &RunStats) -> Diff {
    let mut rows = Vec::new();
    type Overall = BTreeMap<String, (Option<u64>, u64)>;
    let (bo, mut no): (Vec<_>, Overall) = (
        base.overall(),
        new.overall()
            .into_iter()
            .map(|(k, c, t)| (k, (c, t)))
            .collect(),
    );
    let mut order: Vec<String> = bo.iter().map(|x| x.0.clone()).collect();
    for (k, _, _) in new.overall() {
        if !order.contains(&k) {
            // A class only the new run has goes before the communication row.
            let at = order.len() - 2;
            order.insert(at, k);
        }
    }
    let bmap: Overall = bo.into_iter().map(|(k, c, t)| (k, (c, t))).collect();
    for k in order {
        let b = bmap.get(&k).copied();
        let n = no.remove(&k);
        rows.push(DiffRow {
            section: Section::Overall,
            key: k,
            base_count: b.and_then(|x| x.0),
            new_count: n.and_then(|x| x.0),
            base_ns: b.map(|x| x.1),
            new_ns: n.map(|x| x.1),
        });
    }
    rows.extend(keyed(
        Section::Type,
        report_map(&base.types),
        report_map(&new.types),
    ));
    rows.extend(keyed(
        Section::Op,
        report_map(&base.names),
        report_map(&new.names),
    ));
    rows.extend(keyed(Section::Step, step_map(base), step_map(new)));
    if let (Some(b), Some(n)) = (&base.memory_analysis, &new.memory_analysis) {
        rows.extend(memory_rows(b, n));
    }
    Diff {
        base: base.name.clone(),
        new: new.name.clone(),
        rows,
    }
}

impl Diff {
    /// What `--fail-above pct` fails on: end-to-end time, any op type both runs have, or a
    /// device's peak memory (when both runs recorded memory), larger by more than `pct`
    /// percent. Each as one line.
    pub fn regressions(&self, pct: f64) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| {
                (r.section == Section::Overall && r.key == "E2E time")
                    || r.section == Section::Type
                    || (r.section == Section::Memory && r.key.contains(" peak "))
            })
            .filter_map(|r| {
                let ratio = r.ratio()?;
                let up = (ratio - 1.0) * 100.0;
                let (scale, unit) = r.unit();
                (up > pct).then(|| {
                    format!(
                        "{} {}: {:.3} -> {:.3} {unit} (+{up:.1}%)",
                        r.section.title(),
                        r.key,
                        r.base_ns.unwrap_or(0) as f64 / scale,
                        r.new_ns.unwrap_or(0) as f64 / scale
                    )
                })
            })
            .collect()
    }

    /// At most `top` rows of each section but the overall one (0: all).
    pub fn cut(&mut self, top: usize) {
        if top == 0 {
            return;
        }
        let mut seen: BTreeMap<Section, usize> = BTreeMap::new();
        self.rows.retain(|r| {
            let n = seen.entry(r.section).or_default();
            *n += 1;
            r.section == Section::Overall || *n <= top
        });
    }
}

const HEAD: [&str; 9] = [
    "Section",
    "Name",
    "Base Count",
    "New Count",
    "Base(us)",
    "New(us)",
    "Diff(us)",
    "Ratio",
    "Status",
];

fn cells(r: &DiffRow) -> [String; 9] {
    let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |n| n.to_string());
    let scale = r.unit().0;
    let us =
        |v: Option<u64>| v.map_or_else(|| "-".to_string(), |n| format!("{:.3}", n as f64 / scale));
    [
        r.section.title().to_string(),
        r.key.clone(),
        opt(r.base_count),
        opt(r.new_count),
        us(r.base_ns),
        us(r.new_ns),
        format!("{:+.3}", r.diff_ns() as f64 / scale),
        r.ratio()
            .map_or_else(|| "-".to_string(), |x| format!("{x:.3}")),
        r.status().to_string(),
    ]
}

/// The comparison as text in `format`.
pub fn render(d: &Diff, format: Format) -> String {
    let mut o = String::new();
    match format {
        Format::Csv => {
            let _ = writeln!(o, "{}", HEAD.join(","));
            for r in &d.rows {
                let c: Vec<String> = cells(r).iter().map(|c| csv_field(c)).collect();
                let _ = writeln!(o, "{}", c.join(","));
            }
        }
        Format::Json => {
            let rows: Vec<serde_json::Value> = d
                .rows
                .iter()
                .map(|r| {
                    let (scale, unit) = r.unit();
                    let mut v = serde_json::json!({
                        "Section": r.section.title(),
                        "Name": r.key,
                        "Base Count": r.base_count,
                        "New Count": r.new_count,
                        "Ratio": r.ratio(),
                        "Status": r.status(),
                    });
                    v[format!("Base({unit})")] = r.base_ns.map(|n| n as f64 / scale).into();
                    v[format!("New({unit})")] = r.new_ns.map(|n| n as f64 / scale).into();
                    v[format!("Diff({unit})")] = (r.diff_ns() as f64 / scale).into();
                    v
                })
                .collect();
            let v = serde_json::json!({"base": d.base, "new": d.new, "rows": rows});
            let _ = writeln!(
                o,
                "{}",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            );
        }
        Format::Markdown | Format::Table => {
            let _ = writeln!(o, "base: {}\nnew:  {}", d.base, d.new);
            for s in [
                Section::Overall,
                Section::Type,
                Section::Op,
                Section::Step,
                Section::Memory,
            ] {
                let rows: Vec<[String; 9]> = d
                    .rows
                    .iter()
                    .filter(|r| r.section == s)
                    .map(cells)
                    .collect();
                if rows.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    o,
                    "\n{}{}",
                    if format == Format::Markdown {
                        "### "
                    } else {
                        ""
                    },
                    s.heading()
                );
                let head: Vec<String> = HEAD[1..]
                    .iter()
                    .map(|h| {
                        if s == Section::Memory {
                            h.replace("(us)", "(KB)")
                        } else {
                            h.to_string()
                        }
                    })
                    .collect();
                let rows: Vec<Vec<String>> = rows.into_iter().map(|c| c[1..].to_vec()).collect();
                if format == Format::Markdown {
                    let _ = write!(o, "\n{}", markdown_table(&head, &rows));
                } else {
                    // The name and the status left-aligned, numbers right-aligned.
                    o.push_str(&text_table(&head, &rows, |i| i == 0 || i == head.len() - 1));
                }
            }
        }
    }
    o
}

/// What aclprofExtDiff does: options as a JSON object ("top", "format", "fail_above").
pub fn run_json(
    base: &std::path::Path,
    new: &std::path::Path,
    options: &serde_json::Value,
) -> crate::error::Result<String> {
    use crate::error::{err, ACL_ERROR_INVALID_PARAM};
    let bad = |m: String| err(ACL_ERROR_INVALID_PARAM, format!("optionsJson: {m}"));
    let empty = serde_json::Map::new();
    let o = match options {
        serde_json::Value::Null => &empty,
        serde_json::Value::Object(o) => o,
        _ => return bad("not a JSON object".into()),
    };
    let mut top = 0;
    let mut format = Format::Json;
    let mut fail_above = None;
    for (k, v) in o {
        match (k.as_str(), v) {
            (_, serde_json::Value::Null) => {}
            ("top", v) => match v.as_u64() {
                Some(n) => top = n as usize,
                None => return bad(format!("\"top\" must be a whole number, not {v}")),
            },
            ("format", v) => match v.as_str().and_then(Format::parse) {
                Some(f) => format = f,
                None => {
                    return bad(format!(
                        "\"format\" must be table, csv, json or markdown, not {v}"
                    ))
                }
            },
            ("fail_above", v) => match v.as_f64().filter(|p| p.is_finite() && *p >= 0.0) {
                Some(p) => fail_above = Some(p),
                None => return bad(format!("\"fail_above\" must be a percentage, not {v}")),
            },
            (k, _) => return bad(format!("unknown option {k:?} (top, format, fail_above)")),
        }
    }
    let mut d = diff(&RunStats::of(base)?, &RunStats::of(new)?);
    let regressed = fail_above.map(|p| d.regressions(p));
    d.cut(top);
    let text = render(&d, format);
    Ok(match (format, regressed) {
        (Format::Json, Some(r)) => {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            v["regressions"] = r.into();
            serde_json::to_string_pretty(&v).unwrap_or_default()
        }
        _ => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: &[(&str, u64, u64)]) -> BTreeMap<String, (u64, u64)> {
        v.iter().map(|&(k, c, t)| (k.to_string(), (c, t))).collect()
    }

    #[test]
    fn rows_sort_by_absolute_change_and_name_added_and_removed() {
        let v = keyed(
            Section::Type,
            m(&[("A", 1, 100), ("B", 2, 50), ("Gone", 1, 30)]),
            m(&[("A", 1, 90), ("B", 2, 150), ("New", 3, 10)]),
        );
        let keys: Vec<(&str, &str)> = v.iter().map(|r| (r.key.as_str(), r.status())).collect();
        assert_eq!(
            keys,
            [("B", ""), ("Gone", "removed"), ("A", ""), ("New", "added")]
        );
        assert_eq!(v[0].ratio(), Some(3.0));
        assert_eq!(v[1].diff_ns(), -30);
        assert_eq!(v[3].ratio(), None);
    }

    #[test]
    fn fail_above_looks_at_e2e_and_types_only() {
        let row = |section, key: &str, b, n| DiffRow {
            section,
            key: key.into(),
            base_count: Some(1),
            new_count: Some(1),
            base_ns: Some(b),
            new_ns: Some(n),
        };
        let d = Diff {
            rows: vec![
                row(Section::Overall, "E2E time", 1000, 1040),
                row(Section::Overall, "Free time", 10, 1000),
                row(Section::Type, "Conv2D", 500, 1000),
                row(Section::Op, "conv1", 100, 900),
            ],
            ..Default::default()
        };
        assert_eq!(d.regressions(3.0).len(), 2);
        assert_eq!(
            d.regressions(5.0),
            ["type Conv2D: 0.500 -> 1.000 us (+100.0%)"]
        );
        assert!(d.regressions(100.0).is_empty());
    }

    #[test]
    fn memory_is_compared_in_kb_and_its_peaks_can_fail_a_run() {
        use crate::analyze::memory::{analyze, Event};
        use crate::formats::memory::Pool;
        // One op allocating `bytes` once.
        let run = |bytes: u64| {
            let ev = |size: i64, at, allocated| Event {
                device: 0,
                pool: Pool::Op,
                addr: 1,
                size,
                name: "conv".into(),
                start: at,
                allocated,
                component: String::new(),
                reserved: 4 << 20,
                tid: 0,
            };
            let events = [ev(bytes as i64, 1, bytes), ev(-(bytes as i64), 2, 0)];
            RunStats {
                memory_analysis: Some(analyze(&events, &[])),
                ..Default::default()
            }
        };
        let d = diff(&run(1024 * 1024), &run(2 * 1024 * 1024));
        let mem: Vec<&DiffRow> = d
            .rows
            .iter()
            .filter(|r| r.section == Section::Memory)
            .collect();
        let keys: Vec<&str> = mem.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "device 0 held at end",
                "device 0 peak allocated",
                "device 0 peak held",
                "device 0 peak reserved",
                "op conv"
            ]
        );
        assert_eq!(
            d.regressions(50.0),
            ["memory device 0 peak allocated: 1024.000 -> 2048.000 KB (+100.0%)"]
        );
        let json: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).unwrap();
        let conv = json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["Name"] == "op conv")
            .unwrap();
        assert_eq!(
            (conv["Base(KB)"].as_f64(), conv["New(KB)"].as_f64()),
            (Some(1024.0), Some(2048.0))
        );
        let table = render(&d, Format::Table);
        assert!(
            table.contains("Device memory in KB") && table.contains("Base(KB)"),
            "{table}"
        );
    }
}
