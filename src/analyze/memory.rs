//! `aclprof analyze --memory`: a run's device memory from its recorded allocations (the host
//! log's memory events): per device the peaks and the op that reached them, memory per op,
//! what was never released, growth per step, and the findings people look for: a leak
//! (what is held grows step after step), fragmentation (reserved grows while allocated stays
//! flat) and a peak far above the steady state.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM};
use crate::formats::host::HostEvent;
use crate::formats::memory::Pool;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// One allocation or release, as recorded.
pub use crate::formats::memory::MemEvent as Event;

/// Memory per op (operator memory).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpMemory {
    pub name: String,
    pub allocations: u64,
    pub bytes: u64,
    pub max_bytes: u64,
    /// Summed lifetime of the released allocations, ns.
    pub held_ns: u64,
    pub released: u64,
}

/// An allocation never released.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unreleased {
    pub pool: Pool,
    pub name: String,
    pub addr: u64,
    pub bytes: u64,
    pub at_ns: u64,
}

/// What a device held at a step's ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepMemory {
    pub step: u64,
    /// What the process had in use on the device (operator memory allocated, application,
    /// models), bytes.
    pub in_use_start: u64,
    pub in_use_end: u64,
    /// The operator pool's allocated and reserved bytes.
    pub allocated_start: u64,
    pub allocated_end: u64,
    pub reserved_start: u64,
    pub reserved_end: u64,
}

/// One device's memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceMemory {
    pub device: u32,
    pub peak_allocated: u64,
    pub peak_allocated_at_ns: u64,
    /// The op whose allocation reached the peak.
    pub peak_op: String,
    pub peak_reserved: u64,
    /// The most the process held at once (operator pool reserved, application, models).
    pub peak_held: u64,
    pub held_at_end: u64,
    pub ops: Vec<OpMemory>,
    pub unreleased: Vec<Unreleased>,
    pub steps: Vec<StepMemory>,
}

/// A finding: (rule, evidence).
pub type Finding = (String, String);

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Analysis {
    pub devices: Vec<DeviceMemory>,
    pub findings: Vec<Finding>,
}

/// A step: (index, start, end), the library's clock.
pub type Step = (u64, u64, u64);

pub use crate::formats::memory::PlanEntry;

/// What a host log holds of memory and the host's resources.
#[derive(Clone, Debug, Default)]
pub struct Logged {
    /// In time order.
    pub events: Vec<Event>,
    pub plan: Vec<PlanEntry>,
    pub samples: Vec<crate::formats::host_sys::Sample>,
}

/// Reads the memory events, plans and host samples of a result directory: its memory log
/// and its host log (only their lines are parsed).
pub fn read_log(dir: &Path) -> Logged {
    let mut l = Logged::default();
    // A model loaded while a session starts may be planned twice: kept once.
    let mut planned = std::collections::HashSet::new();
    let lines = std::fs::File::open(dir.join(crate::formats::layout::HOST_LOG))
        .map(|f| std::io::BufReader::new(f).lines());
    for line in lines
        .into_iter()
        .flatten()
        .map_while(std::result::Result::ok)
    {
        if !(line.contains("\"mem\"") || line.contains("\"memplan\"") || line.contains("\"sys\"")) {
            continue;
        }
        match HostEvent::from_line(&line) {
            Some(HostEvent::Mem(m)) => l.events.push(m),
            Some(HostEvent::MemPlan(e)) if planned.insert(e.clone()) => l.plan.push(e),
            Some(HostEvent::Sys(s)) => l.samples.push(s),
            _ => {}
        }
    }
    // A session's events are in the memory log; a replayed database's in the host log.
    l.events.extend(crate::formats::memory::mem_log_of(dir));
    l.events.sort_by_key(|e| e.start);
    l
}

/// The memory events of a result directory (or of each in a folder) and their steps.
pub fn events_of(path: &Path) -> Result<(Vec<Event>, Vec<Step>)> {
    let mut all = Vec::new();
    let mut steps = Vec::new();
    for d in crate::analyze::result_dirs(path)? {
        all.extend(read_log(&d).events);
        steps.extend(crate::filemode::export::read_host_steps(&d));
    }
    if all.is_empty() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: no memory was recorded in it (profile with ACL_PROF_TASK_MEMORY, \
                 PROFILING_OPTIONS task_memory, or aclprof record --memory)",
                path.display()
            ),
        );
    }
    all.sort_by_key(|e| e.start);
    steps.sort_unstable();
    Ok((all, steps))
}

/// Analyses `events` (in time order) with the run's `steps`.
pub fn analyze(events: &[Event], steps: &[Step]) -> Analysis {
    let mut devices: BTreeMap<u32, Vec<&Event>> = BTreeMap::new();
    for e in events {
        devices.entry(e.device).or_default().push(e);
    }
    let mut a = Analysis::default();
    for (device, evs) in devices {
        let d = device_memory(device, &evs, steps);
        findings(&d, &mut a.findings);
        a.devices.push(d);
    }
    a
}

fn device_memory(device: u32, evs: &[&Event], steps: &[Step]) -> DeviceMemory {
    let mut d = DeviceMemory {
        device,
        ..Default::default()
    };
    let mut state: BTreeMap<Pool, (u64, u64)> = BTreeMap::new();
    let held = |s: &BTreeMap<Pool, (u64, u64)>| -> u64 {
        s.iter()
            .map(|(p, (a, r))| if *p == Pool::Op { *r } else { *a })
            .sum()
    };
    let in_use = |s: &BTreeMap<Pool, (u64, u64)>| -> u64 { s.values().map(|(a, _)| *a).sum() };
    let mut ops: BTreeMap<&str, OpMemory> = BTreeMap::new();
    let mut open: BTreeMap<(Pool, u64), Vec<&Event>> = BTreeMap::new();
    // The state just before each step boundary is read as the events pass it.
    let mut bounds: Vec<(u64, usize, bool)> = steps
        .iter()
        .enumerate()
        .flat_map(|(i, &(_, s, e))| [(s, i, true), (e, i, false)])
        .collect();
    bounds.sort_unstable();
    let mut at_bound: Vec<[(u64, u64, u64); 2]> = vec![[(0, 0, 0); 2]; steps.len()];
    let mut next_bound = 0;
    let mut record = |state: &BTreeMap<Pool, (u64, u64)>, upto: u64, next_bound: &mut usize| {
        while *next_bound < bounds.len() && bounds[*next_bound].0 < upto {
            let (_, i, start) = bounds[*next_bound];
            let op = state.get(&Pool::Op).copied().unwrap_or((0, 0));
            at_bound[i][usize::from(!start)] = (in_use(state), op.0, op.1);
            *next_bound += 1;
        }
    };
    for e in evs {
        record(&state, e.start, &mut next_bound);
        state.insert(e.pool, (e.allocated, e.reserved));
        let h = held(&state);
        if h > d.peak_held {
            d.peak_held = h;
        }
        if e.pool == Pool::Op {
            if e.allocated > d.peak_allocated {
                (d.peak_allocated, d.peak_allocated_at_ns) = (e.allocated, e.start);
                d.peak_op = e.name.clone();
            }
            d.peak_reserved = d.peak_reserved.max(e.reserved);
        }
        let key = (e.pool, e.addr);
        if e.size > 0 {
            if e.pool == Pool::Op {
                let o = ops.entry(e.name.as_str()).or_insert_with(|| OpMemory {
                    name: e.name.clone(),
                    ..Default::default()
                });
                o.allocations += 1;
                o.bytes += e.size.unsigned_abs();
                o.max_bytes = o.max_bytes.max(e.size.unsigned_abs());
            }
            open.entry(key).or_default().push(e);
        } else if e.size < 0 {
            let alloc = open.get_mut(&key).and_then(|v| {
                let i = v
                    .iter()
                    .rposition(|a| a.pool != Pool::Op || a.name == e.name)?;
                Some(v.remove(i))
            });
            if let (Some(a), Pool::Op) = (alloc, e.pool) {
                if let Some(o) = ops.get_mut(a.name.as_str()) {
                    o.held_ns += e.start.saturating_sub(a.start);
                    o.released += 1;
                }
            }
        }
    }
    record(&state, u64::MAX, &mut next_bound);
    d.held_at_end = held(&state);
    d.unreleased = open
        .into_values()
        .flatten()
        .map(|a| Unreleased {
            pool: a.pool,
            name: a.name.clone(),
            addr: a.addr,
            bytes: a.size.unsigned_abs(),
            at_ns: a.start,
        })
        .collect();
    d.unreleased.sort_by_key(|u| u.at_ns);
    d.ops = ops.into_values().collect();
    d.ops
        .sort_by(|a, b| b.max_bytes.cmp(&a.max_bytes).then(a.name.cmp(&b.name)));
    d.steps = steps
        .iter()
        .zip(at_bound)
        .map(|(&(index, _, _), [s, e])| StepMemory {
            step: index,
            in_use_start: s.0,
            in_use_end: e.0,
            allocated_start: s.1,
            allocated_end: e.1,
            reserved_start: s.2,
            reserved_end: e.2,
        })
        .collect();
    d
}

fn kb(b: u64) -> String {
    crate::formats::memory::kb(b)
}

/// The rules: a leak, fragmentation, a peak far above the steady state.
fn findings(d: &DeviceMemory, out: &mut Vec<Finding>) {
    let steps = &d.steps;
    if steps.len() >= 2 {
        let grew = steps
            .iter()
            .filter(|s| s.in_use_end > s.in_use_start)
            .count();
        let total: i128 = steps
            .iter()
            .map(|s| i128::from(s.in_use_end) - i128::from(s.in_use_start))
            .sum();
        if grew == steps.len() && total > 0 {
            out.push((
                "leak".into(),
                format!(
                    "device {}: the memory in use grew in every one of {} steps, by {} KB per \
                     step on average ({} allocations never released)",
                    d.device,
                    steps.len(),
                    kb((total / steps.len() as i128) as u64),
                    d.unreleased.len()
                ),
            ));
        }
        let alloc_flat = steps
            .iter()
            .all(|s| s.allocated_end.abs_diff(s.allocated_start) <= s.allocated_start / 100);
        let reserved_grew = steps
            .iter()
            .filter(|s| s.reserved_end > s.reserved_start)
            .count();
        if alloc_flat && reserved_grew * 2 > steps.len() {
            out.push((
                "fragmentation".into(),
                format!(
                    "device {}: the operator pool's reserved memory grew in {reserved_grew} of {} \
                     steps while what was allocated stayed flat",
                    d.device,
                    steps.len()
                ),
            ));
        }
        let mut ends: Vec<u64> = steps.iter().map(|s| s.allocated_end).collect();
        ends.sort_unstable();
        let steady = ends[ends.len() / 2];
        if steady > 0 && d.peak_allocated > 2 * steady {
            out.push((
                "peak".into(),
                format!(
                    "device {}: the peak of {} KB (at {}) is {:.1} times the steady state of {} KB",
                    d.device,
                    kb(d.peak_allocated),
                    d.peak_op,
                    d.peak_allocated as f64 / steady as f64,
                    kb(steady)
                ),
            ));
        }
    } else if !d.unreleased.is_empty() {
        let bytes: u64 = d.unreleased.iter().map(|u| u.bytes).sum();
        out.push((
            "unreleased".into(),
            format!(
                "device {}: {} allocations ({} KB) were never released",
                d.device,
                d.unreleased.len(),
                kb(bytes)
            ),
        ));
    }
}

fn pool_name(p: Pool) -> &'static str {
    match p {
        Pool::Op => "operator",
        Pool::App => "application",
        Pool::Model => "model",
    }
}

/// The columns of memory per op (CSV, table; Python's rows are keyed by them).
pub const OP_COLUMNS: [&str; 6] = [
    "Device",
    "Op",
    "Allocations",
    "Total(KB)",
    "Max(KB)",
    "Avg Lifetime(us)",
];

/// One op's row under [`OP_COLUMNS`].
fn op_row(device: u32, o: &OpMemory) -> Vec<String> {
    vec![
        device.to_string(),
        o.name.clone(),
        o.allocations.to_string(),
        kb(o.bytes),
        kb(o.max_bytes),
        format!("{:.3}", (o.held_ns / o.released.max(1)) as f64 / 1e3),
    ]
}

/// The analysis as text in `format` (json: everything; csv: memory per op; table and
/// markdown: everything, as tables).
pub fn render(a: &Analysis, format: super::Format) -> String {
    use super::render::{markdown_table, text_table};
    use super::Format;
    match format {
        Format::Json => {
            return serde_json::to_string_pretty(&serde_json::json!({
                "devices": a.devices,
                "findings": a.findings.iter().map(|(r, e)| serde_json::json!({"rule": r, "evidence": e})).collect::<Vec<_>>(),
            }))
            .unwrap_or_default()
                + "\n";
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(OP_COLUMNS);
            for d in &a.devices {
                for o in &d.ops {
                    let _ = w.write_record(op_row(d.device, o));
                }
            }
            return String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default();
        }
        Format::Table | Format::Markdown => {}
    }
    let md = format == Format::Markdown;
    let table = |head: &[&str], rows: &[Vec<String>]| {
        let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
        if md {
            markdown_table(&head, rows)
        } else {
            text_table(&head, rows, |c| c == 1)
        }
    };
    let mut s = String::new();
    for d in &a.devices {
        s +=
            &format!(
            "Device {}: peak allocated {} KB ({}), peak reserved {} KB, most held {} KB, held at \
             the end {} KB\n\n",
            d.device,
            kb(d.peak_allocated),
            if d.peak_op.is_empty() { "-" } else { &d.peak_op },
            kb(d.peak_reserved),
            kb(d.peak_held),
            kb(d.held_at_end)
        );
        let rows: Vec<Vec<String>> = d.ops.iter().map(|o| op_row(d.device, o)).collect();
        if !rows.is_empty() {
            s += &table(&OP_COLUMNS, &rows);
            s += "\n";
        }
        if !d.unreleased.is_empty() {
            s += "Never released:\n";
            let rows: Vec<Vec<String>> = d
                .unreleased
                .iter()
                .map(|u| {
                    vec![
                        pool_name(u.pool).to_string(),
                        u.name.clone(),
                        kb(u.bytes),
                        format!("{:#x}", u.addr),
                    ]
                })
                .collect();
            s += &table(&["Pool", "Owner", "Size(KB)", "Address"], &rows);
            s += "\n";
        }
        if !d.steps.is_empty() {
            let rows: Vec<Vec<String>> = d
                .steps
                .iter()
                .map(|st| {
                    vec![
                        st.step.to_string(),
                        kb(st.in_use_start),
                        kb(st.in_use_end),
                        format!(
                            "{:.3}",
                            (st.in_use_end as f64 - st.in_use_start as f64) / 1024.0
                        ),
                        format!(
                            "{:.3}",
                            (st.reserved_end as f64 - st.reserved_start as f64) / 1024.0
                        ),
                    ]
                })
                .collect();
            s += &table(
                &[
                    "Step",
                    "In use at start(KB)",
                    "In use at end(KB)",
                    "Growth(KB)",
                    "Reserved growth(KB)",
                ],
                &rows,
            );
            s += "\n";
        }
    }
    if a.findings.is_empty() {
        s += "No memory finding.\n";
    }
    for (rule, evidence) in &a.findings {
        s += &format!("{rule}: {evidence}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pool: Pool, addr: u64, size: i64, name: &str, at: u64, a: u64, r: u64) -> Event {
        Event {
            device: 0,
            pool,
            addr,
            size,
            name: name.into(),
            start: at,
            allocated: a,
            component: String::new(),
            reserved: r,
            tid: 0,
        }
    }

    #[test]
    fn a_leak_in_every_step_is_found_with_what_was_never_released() {
        // Each step allocates 1 KB of application memory and frees none of it; the
        // operator pool reaches 3 KB once (at "big").
        let mut v = Vec::new();
        for i in 0..3u64 {
            let t = i * 100;
            v.push(ev(
                Pool::App,
                10 + i,
                1024,
                "aclrtMalloc",
                t + 10,
                1024 * (i + 1),
                1024 * (i + 1),
            ));
            v.push(ev(Pool::Op, 1, 1024, "conv", t + 20, 1024, 4096));
            v.push(ev(Pool::Op, 1, -1024, "conv", t + 30, 0, 4096));
        }
        v.push(ev(Pool::Op, 2, 3072, "big", 250, 3072, 4096));
        v.push(ev(Pool::Op, 2, -3072, "big", 260, 0, 4096));
        v.sort_by_key(|e| e.start);
        let steps = [(1, 0, 99), (2, 100, 199), (3, 200, 299)];
        let a = analyze(&v, &steps);
        let d = &a.devices[0];
        assert_eq!((d.peak_allocated, d.peak_op.as_str()), (3072, "big"));
        assert_eq!(d.peak_reserved, 4096);
        assert_eq!(d.unreleased.len(), 3);
        assert!(d
            .unreleased
            .iter()
            .all(|u| u.pool == Pool::App && u.bytes == 1024));
        assert_eq!(d.steps[1].in_use_end - d.steps[1].in_use_start, 1024);
        let rules: Vec<&str> = a.findings.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(rules, ["leak"], "{:?}", a.findings);
        let conv = d.ops.iter().find(|o| o.name == "conv").unwrap();
        assert_eq!((conv.allocations, conv.released, conv.held_ns), (3, 3, 30));
    }

    #[test]
    fn reserved_growing_under_flat_allocations_is_fragmentation() {
        let mut v = Vec::new();
        for i in 0..4u64 {
            let t = i * 100;
            let r = 2048 * (i + 1);
            v.push(ev(Pool::Op, i, 1024, "op", t + 10, 1024, r));
            v.push(ev(Pool::Op, i, -1024, "op", t + 20, 0, r));
        }
        let steps = [(1, 0, 99), (2, 100, 199), (3, 200, 299), (4, 300, 399)];
        let a = analyze(&v, &steps);
        let rules: Vec<&str> = a.findings.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(rules, ["fragmentation"], "{:?}", a.findings);
        let text = render(&a, super::super::Format::Table);
        assert!(text.contains("fragmentation: device 0"), "{text}");
    }
}
