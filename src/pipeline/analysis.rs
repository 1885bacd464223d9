//! The data-preparation analysis (MindInsight's "Data Preparation" view; MindSpore's
//! MindData analyzer): per stage of the data pipeline, its workers' busy time and its output
//! queue's fill; the stage that holds the pipeline back, by a documented rule with its
//! evidence; and the training thread's wait for data (docs/design.md, "The data pipeline").

use super::{Event, WAIT};
use crate::error::*;
use std::collections::BTreeMap;
use std::path::Path;

/// A stage's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stage {
    pub name: String,
    pub spans: u64,
    pub busy_ns: u64,
    pub workers: u32,
    /// Its workers' busy time over the stage's active window (first span to last),
    /// averaged over its workers.
    pub utilization: f64,
    /// Samples of its output queue.
    pub samples: u64,
    /// Mean fill of its output queue (depth / capacity; 0 when capacity is unknown).
    pub fill: f64,
    /// Share of samples with its output queue empty, and full.
    pub empty: f64,
    pub full: f64,
    pub mean_depth: f64,
    /// Its output queue's samples, in order, and the largest capacity they gave.
    pub depths: Vec<u32>,
    pub capacity: u32,
    /// The mean time between its queue samples (ns; 0 with fewer than two).
    pub sample_interval_ns: u64,
}

/// What the pipeline analysis found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Analysis {
    /// Stages in pipeline order (the order they were first seen; the training thread's
    /// `wait` is not a stage).
    pub stages: Vec<Stage>,
    /// First event to last (ns).
    pub span_ns: u64,
    /// The training thread's total wait for data.
    pub wait_ns: u64,
    pub waits: u64,
    /// The stage holding the pipeline back, the rule that found it, and its evidence.
    pub bottleneck: Option<(String, &'static str, String)>,
    /// Other findings: (rule, evidence).
    pub findings: Vec<(&'static str, String)>,
}

/// A stage whose workers are busier than this is short of workers (MindSpore: CPU > 75 %).
pub const BUSY: f64 = 0.75;
/// The queue into a stage is this full, and the one out of it this empty: the stage is the
/// bottleneck (MindSpore's analyzer).
pub const IN_FULL: f64 = 0.8;
pub const OUT_EMPTY: f64 = 0.2;
/// The last queue (to the device) empty in more than this share of samples: the host
/// pipeline cannot keep up (MindSpore: 60 %).
pub const DEVICE_EMPTY: f64 = 0.6;

/// What the events of one stage add up to.
#[derive(Default)]
struct Acc {
    spans: u64,
    busy: u64,
    /// First span start, last span end.
    first: u64,
    last: u64,
    workers: BTreeMap<u32, u64>,
    samples: u64,
    fill: f64,
    depth: u64,
    empty: u64,
    full: u64,
    depths: Vec<u32>,
    capacity: u32,
    /// First and last sample.
    sampled: (u64, u64),
}

impl Acc {
    fn empty() -> Acc {
        Acc {
            first: u64::MAX,
            sampled: (u64::MAX, 0),
            ..Acc::default()
        }
    }

    /// Adds one of the stage's events.
    fn add(&mut self, e: &Event) {
        let s = self;
        match e {
            Event::Span {
                worker, start, end, ..
            } => {
                s.spans += 1;
                s.busy += end - start;
                s.first = s.first.min(*start);
                s.last = s.last.max(*end);
                *s.workers.entry(*worker).or_default() += end - start;
            }
            Event::Queue {
                depth,
                capacity,
                ns,
                ..
            } => {
                s.samples += 1;
                s.depth += u64::from(*depth);
                s.depths.push(*depth);
                s.capacity = s.capacity.max(*capacity);
                s.sampled = (s.sampled.0.min(*ns), s.sampled.1.max(*ns));
                if *capacity > 0 {
                    s.fill += f64::from(*depth) / f64::from(*capacity);
                    if depth >= capacity {
                        s.full += 1;
                    }
                }
                if *depth == 0 {
                    s.empty += 1;
                }
            }
        }
    }

    /// The stage's figures.
    fn stage(&self, name: &str) -> Stage {
        let s = self;
        let n = s.samples.max(1) as f64;
        // Over the stage's own active window: from its first span to its last.
        let window = s.last.saturating_sub(s.first.min(s.last)).max(1) as f64;
        Stage {
            name: name.to_string(),
            spans: s.spans,
            busy_ns: s.busy,
            workers: s.workers.len() as u32,
            utilization: if s.workers.is_empty() {
                0.0
            } else {
                s.busy as f64 / s.workers.len() as f64 / window
            },
            samples: s.samples,
            fill: s.fill / n,
            empty: s.empty as f64 / n,
            full: s.full as f64 / n,
            mean_depth: s.depth as f64 / n,
            depths: s.depths.clone(),
            capacity: s.capacity,
            sample_interval_ns: if s.samples > 1 {
                (s.sampled.1 - s.sampled.0) / (s.samples - 1)
            } else {
                0
            },
        }
    }
}

/// Analyses `events`.
pub fn analyze(events: &[Event]) -> Analysis {
    let mut order: Vec<String> = Vec::new();
    let mut first = u64::MAX;
    let mut last = 0u64;
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    let mut a = Analysis::default();
    for e in events {
        let (stage, t0, t1) = match e {
            Event::Span {
                stage, start, end, ..
            } => (stage, *start, *end),
            Event::Queue { stage, ns, .. } => (stage, *ns, *ns),
        };
        first = first.min(t0);
        last = last.max(t1);
        if stage == WAIT {
            if let Event::Span { start, end, .. } = e {
                a.wait_ns += end - start;
                a.waits += 1;
            }
            continue;
        }
        if !order.contains(stage) {
            order.push(stage.clone());
        }
        acc.entry(stage.clone()).or_insert_with(Acc::empty).add(e);
    }
    a.span_ns = last.saturating_sub(first.min(last));
    for name in &order {
        a.stages.push(acc[name].stage(name));
    }
    judge(&mut a);
    a
}

/// The rules: which stage is the bottleneck, and what else stands out.
fn judge(a: &mut Analysis) {
    // Rule 1: a full queue into a stage and an empty one out of it.
    for w in a.stages.windows(2) {
        let (up, st) = (&w[0], &w[1]);
        if up.samples > 0 && st.samples > 0 && up.fill >= IN_FULL && st.fill <= OUT_EMPTY {
            a.bottleneck = Some((
                st.name.clone(),
                "queues",
                format!(
                    "its input queue (after {}) is {:.0}% full on average and its output \
                     queue {:.0}% (thresholds: in >= {:.0}%, out <= {:.0}%)",
                    up.name,
                    100.0 * up.fill,
                    100.0 * st.fill,
                    100.0 * IN_FULL,
                    100.0 * OUT_EMPTY
                ),
            ));
            break;
        }
    }
    // Rule 2: workers busy nearly all the time.
    let busiest = a
        .stages
        .iter()
        .filter(|s| s.utilization > BUSY)
        .max_by(|x, y| x.utilization.total_cmp(&y.utilization));
    if let Some(s) = busiest {
        let ev = format!(
            "its {} worker(s) are busy {:.0}% of the time (threshold {:.0}%): add workers or \
             make it cheaper",
            s.workers,
            100.0 * s.utilization,
            100.0 * BUSY
        );
        if a.bottleneck.is_none() {
            a.bottleneck = Some((s.name.clone(), "busy-workers", ev));
        } else {
            a.findings
                .push(("busy-workers", format!("{}: {ev}", s.name)));
        }
    }
    // Rule 3: the queue to the device is mostly empty.
    if let Some(s) = a.stages.last().filter(|s| s.samples > 0) {
        if s.empty > DEVICE_EMPTY {
            a.findings.push((
                "device-queue-empty",
                format!(
                    "the last queue ({}) was empty in {:.0}% of samples (threshold {:.0}%): \
                     the host pipeline cannot keep up with the device",
                    s.name,
                    100.0 * s.empty,
                    100.0 * DEVICE_EMPTY
                ),
            ));
        }
    }
}

/// The analysis as text, or as JSON (what `aclprof analyze --pipeline --format json` and
/// aclprofExtAnalyze's `"pipeline": true` give).
pub fn render(a: &Analysis, json: bool) -> String {
    use std::fmt::Write as _;
    if json {
        let stages: Vec<serde_json::Value> = a
            .stages
            .iter()
            .map(|s| {
                serde_json::json!({"stage": s.name, "spans": s.spans, "busy_us": s.busy_ns as f64 / 1e3,
                "workers": s.workers, "utilization": s.utilization, "queue_samples": s.samples,
                "queue_fill": s.fill, "queue_empty": s.empty, "queue_full": s.full,
                "queue_mean_depth": s.mean_depth, "queue_depths": s.depths,
                "queue_capacity": s.capacity, "sample_interval_ms": s.sample_interval_ns as f64 / 1e6})
            })
            .collect();
        let v = serde_json::json!({
            "span_us": a.span_ns as f64 / 1e3, "wait_us": a.wait_ns as f64 / 1e3, "waits": a.waits,
            "stages": stages,
            "bottleneck": a.bottleneck.as_ref().map(|(s, r, e)| serde_json::json!({"stage": s, "rule": r, "evidence": e})),
            "findings": a.findings.iter().map(|(r, e)| serde_json::json!({"rule": r, "evidence": e})).collect::<Vec<_>>(),
        });
        return format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
    }
    let head: Vec<String> = [
        "Stage",
        "Spans",
        "Busy(us)",
        "Workers",
        "Busy(%)",
        "Queue samples",
        "Queue fill(%)",
        "Empty(%)",
        "Full(%)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = a
        .stages
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.spans.to_string(),
                format!("{:.3}", s.busy_ns as f64 / 1e3),
                s.workers.to_string(),
                format!("{:.1}", 100.0 * s.utilization),
                s.samples.to_string(),
                format!("{:.1}", 100.0 * s.fill),
                format!("{:.1}", 100.0 * s.empty),
                format!("{:.1}", 100.0 * s.full),
            ]
        })
        .collect();
    let mut o = crate::analyze::text_table(&head, &rows, |i| i == 0);
    let _ = writeln!(
        o,
        "\nThe training thread waited for data {:.3} us in {} waits, over {:.3} us.",
        a.wait_ns as f64 / 1e3,
        a.waits,
        a.span_ns as f64 / 1e3
    );
    match &a.bottleneck {
        Some((s, rule, ev)) => {
            let _ = writeln!(o, "Bottleneck: {s} ({rule}): {ev}.");
        }
        None => {
            let _ = writeln!(o, "No stage holds the pipeline back.");
        }
    }
    for (rule, ev) in &a.findings {
        let _ = writeln!(o, "Also ({rule}): {ev}.");
    }
    o
}

/// The pipeline events of the run at `path` (a result directory or a folder of them); an
/// error when it recorded none.
pub fn events_of(path: &Path) -> Result<Vec<Event>> {
    let mut all = Vec::new();
    for d in crate::analyze::result_dirs(path)? {
        all.extend(super::read(&d.join(crate::formats::layout::HOST_LOG)));
    }
    if all.is_empty() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: no data-pipeline events in it (report them with aclprofExtPipelineSpan and \
                 aclprofExtPipelineQueue, aclprof.pipeline or the PyTorch DataLoader bridge)",
                path.display()
            ),
        );
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipeline of read -> decode -> batch over 1 s; `slow` stage's workers are busy
    /// `busy` of the time; queues given as mean fills.
    fn pipeline(fills: [f64; 3], busy: [f64; 3], device_empty: bool) -> Vec<Event> {
        let mut v = Vec::new();
        let stages = ["read", "decode", "batch"];
        for (i, st) in stages.iter().enumerate() {
            // Two spans, at the start and the end of the second: busy `busy[i]` of it.
            let half = (busy[i] * 5e8) as u64;
            for start in [0, 1_000_000_000 - half] {
                v.push(Event::Span {
                    stage: st.to_string(),
                    worker: 0,
                    tid: 1,
                    start,
                    end: start + half,
                });
            }
            for k in 0..10u64 {
                let depth = if i == 2 && device_empty && k < 7 {
                    0
                } else {
                    (fills[i] * 10.0).round() as u32
                };
                v.push(Event::Queue {
                    stage: st.to_string(),
                    depth,
                    capacity: 10,
                    ns: k * 100_000_000,
                });
            }
        }
        v.push(Event::Span {
            stage: WAIT.into(),
            worker: 0,
            tid: 2,
            start: 0,
            end: 1_000_000_000,
        });
        v
    }

    #[test]
    fn a_balanced_pipeline_has_no_bottleneck() {
        let a = analyze(&pipeline([0.5, 0.5, 0.5], [0.4, 0.5, 0.3], false));
        assert_eq!(a.bottleneck, None);
        assert!(a.findings.is_empty(), "{:?}", a.findings);
        assert_eq!(
            a.stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["read", "decode", "batch"]
        );
        assert_eq!(a.waits, 1);
    }

    #[test]
    fn a_stage_between_a_full_and_an_empty_queue_is_the_bottleneck() {
        let a = analyze(&pipeline([0.9, 0.1, 0.1], [0.2, 0.5, 0.2], false));
        let (stage, rule, _) = a.bottleneck.unwrap();
        assert_eq!((stage.as_str(), rule), ("decode", "queues"));
    }

    #[test]
    fn busy_workers_and_an_empty_device_queue_are_found() {
        let a = analyze(&pipeline([0.5, 0.5, 0.5], [0.3, 0.95, 0.3], true));
        let (stage, rule, ev) = a.bottleneck.unwrap();
        assert_eq!((stage.as_str(), rule), ("decode", "busy-workers"), "{ev}");
        assert_eq!(a.findings[0].0, "device-queue-empty");
    }

    #[test]
    fn data_wait_is_cut_to_a_window() {
        let ev = pipeline([0.5; 3], [0.1; 3], false);
        assert_eq!(
            crate::pipeline::wait_in(&ev, 250_000_000, 750_000_000),
            500_000_000
        );
        assert_eq!(
            crate::pipeline::wait_in(&ev, 2_000_000_000, 3_000_000_000),
            0
        );
    }
}
