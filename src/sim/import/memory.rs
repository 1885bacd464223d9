//! The operator memory a replayed table's run recorded: `operator_memory*.csv` beside the
//! table (torch_npu's, MindSpore's and msprof's layouts: sizes in KB, totals in MB or KB,
//! times in µs since the epoch), as allocation and release events at their offsets from the
//! table's first op. The simulator replays them with each execution, with their totals.

use super::*;
use crate::formats::memory::{MemEvent, Pool};

/// One event of a replayed run's memory: ns after the table's first op starts (negative:
/// before it), and the event.
pub type Replayed = (i64, MemEvent);

/// The memory events of the `operator_memory*.csv` files in `table`'s directory, relative
/// to `t0` (the table's first op start, ns since the epoch), in time order; none without
/// such a file. A file that is not one is an error naming it.
pub fn beside(table: &Path, t0: u64) -> Result<Vec<Replayed>> {
    let Some(dir) = table.parent() else {
        return Ok(Vec::new());
    };
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("operator_memory") && n.ends_with(".csv"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)
            .map_err(|e| crate::error::file_error("cannot read", &f, e))?;
        read(&f, &text, t0, &mut out)?;
    }
    out.sort_by_key(|(t, _)| *t);
    Ok(out)
}

/// A number of a cell as the tables write them (a trailing tab, quotes), or None if blank.
fn number(s: &str) -> Option<f64> {
    let s = s.trim().trim_matches('"').trim();
    if s.is_empty() || s.eq_ignore_ascii_case("N/A") {
        return None;
    }
    s.parse().ok()
}

fn read(path: &Path, text: &str, t0: u64, out: &mut Vec<Replayed>) -> Result<()> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.trim_start_matches('\u{FEFF}').as_bytes());
    let headers = rd
        .headers()
        .map_err(|e| Error::new(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    // A total in MB or KB, as bytes.
    let total = |what: &str| -> Option<(usize, f64)> {
        col(&format!("{what}(MB)"))
            .map(|c| (c, 1024.0 * 1024.0))
            .or_else(|| col(&format!("{what}(KB)")).map(|c| (c, 1024.0)))
    };
    let (Some(name), Some(size), Some(at)) =
        (col("Name"), col("Size(KB)"), col("Allocation Time(us)"))
    else {
        return err(
            ACL_ERROR_INVALID_FILE,
            format!(
                "{}: not an operator_memory table (it needs Name, Size(KB) and Allocation \
                 Time(us))",
                path.display()
            ),
        );
    };
    let (release, duration) = (col("Release Time(us)"), col("Duration(us)"));
    let (a_alloc, a_res) = (
        total("Allocation Total Allocated"),
        total("Allocation Total Reserved"),
    );
    let (r_alloc, r_res) = (
        total("Release Total Allocated"),
        total("Release Total Reserved"),
    );
    let device = col("Device_id").or(col("Device Type")).or(col("Device"));
    // Times exactly (an epoch in µs is past what a double holds to the nanosecond).
    let ns = |ns: u64| i128::from(ns) - i128::from(t0);
    for (i, row) in rd.records().enumerate() {
        let row = row
            .map_err(|e| Error::new(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())))?;
        let get = |c: usize| row.get(c).unwrap_or("");
        let (Some(kb), Some(start)) = (number(get(size)), us_str_to_ns(get(at))) else {
            continue; // a row without a size or a time says nothing to replay
        };
        let bytes = (kb.abs() * 1024.0).round() as i64;
        let dev = device
            .map(get)
            .and_then(|d| d.trim().trim_start_matches("NPU:").trim().parse().ok())
            .unwrap_or(0);
        let value = |t: Option<(usize, f64)>| -> u64 {
            t.and_then(|(c, scale)| number(get(c)).map(|v| (v * scale).max(0.0) as u64))
                .unwrap_or(0)
        };
        let event = |size: i64, allocated: u64, reserved: u64| MemEvent {
            // Each allocation its own address, so a release pairs with its own.
            addr: 0x5000_0000_0000 + 0x1000 * i as u64,
            allocated,
            component: String::new(),
            device: dev,
            name: get(name).trim().to_string(),
            pool: Pool::Op,
            reserved,
            size,
            start: 0,
            tid: 0,
        };
        let offset = |t: i128| i64::try_from(t).unwrap_or(i64::MAX);
        if kb < 0.0 {
            // Some layouts give a release as its own row of negative size.
            out.push((
                offset(ns(start)),
                event(-bytes, value(a_alloc), value(a_res)),
            ));
            continue;
        }
        out.push((
            offset(ns(start)),
            event(bytes, value(a_alloc), value(a_res)),
        ));
        let end = release.and_then(|c| us_str_to_ns(get(c))).or_else(|| {
            duration
                .and_then(|c| number(get(c)))
                .map(|d| start + (d * 1000.0).round().max(0.0) as u64)
        });
        if let Some(end) = end {
            out.push((offset(ns(end)), event(-bytes, value(r_alloc), value(r_res))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_npu_s_layout_becomes_paired_events() {
        let text = "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),\
            Duration(us),Active Duration(us),Allocation Total Allocated(MB),Allocation Total \
            Reserved(MB),Allocation Total Active(MB),Release Total Allocated(MB),Release Total \
            Reserved(MB),Release Total Active(MB),Stream Ptr,Device Type\n\
            aten::empty,512.0,1000.500\t,1010.500\t,,10.0,,2.5,4.0,2.5,2.0,4.0,2.0,,NPU:1\n\
            aten::mm,64.0,1002.000\t,,,,,2.5625,4.0,,,,,,NPU:1\n";
        let mut out = Vec::new();
        read(Path::new("operator_memory.csv"), text, 1_000_000, &mut out).unwrap();
        let got: Vec<(i64, i64, u64, u32, &str)> = out
            .iter()
            .map(|(t, e)| (*t, e.size, e.allocated, e.device, e.name.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (500, 512 * 1024, 5 << 19, 1, "aten::empty"),
                (10_500, -512 * 1024, 2 << 20, 1, "aten::empty"),
                (2_000, 64 * 1024, 2_686_976, 1, "aten::mm"),
            ]
        );
        assert_eq!(
            out[0].1.addr, out[1].1.addr,
            "a release pairs with its allocation"
        );
        assert_eq!(out[0].1.reserved, 4 << 20);
        assert!(read(Path::new("x.csv"), "a,b\n1,2\n", 0, &mut Vec::new()).is_err());
    }
}
