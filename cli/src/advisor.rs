//! The report's assistant: suggestions drawn from a run's figures, in the manner of
//! MindInsight's proposers and msprof-analyze's advisor. Each rule has a threshold, says its
//! evidence in numbers, and links to the ops, steps or ranks it is about. The rules and
//! their thresholds are listed in docs/design.md ("The assistant").

use aclprof::runstats::RunStats;
use std::collections::BTreeMap;

/// Device idle for more than this share of its end-to-end time.
pub const FREE_SHARE: f64 = 0.20;
/// Communication nobody computes beside, over this share of end-to-end time.
pub const COMM_SHARE: f64 = 0.10;
/// Iteration gap (waiting before the forward pass) over this share of the step.
pub const GAP_SHARE: f64 = 0.20;
/// AI CPU ops over this share of the op time (MindInsight flags any AI CPU op).
pub const AICPU_SHARE: f64 = 0.0;
/// TransData over this share of the op time.
pub const TRANSDATA_SHARE: f64 = 0.05;
/// One op type over this share of the op time.
pub const DOMINANT_SHARE: f64 = 0.50;
/// A step this many times slower than the median step (runs of 3 steps or more).
pub const SLOW_STEP: f64 = 1.5;
/// A rank whose computing (or waiting) is this many times the median rank's (clusters of
/// 2 ranks or more): the library's rule, [`aclprof::runstats::RunStats::slow_rank`].
pub const SLOW_RANK: f64 = aclprof::analyze::verdict::SLOW;
/// The training thread waits for data (the data pipeline's `wait` spans) over this share of
/// step time (of the pipeline's span without steps).
pub const DATA_BOUND: f64 = 0.20;

/// The host process keeps one CPU busier than this share, on average over the samples of
/// `ACL_PROF_HOST_SYS` cpu, while the device is idle more than [`FREE_SHARE`]: CPU-bound.
pub const HOST_CPU_BOUND: f64 = 0.90;

/// Where a suggestion points: ops of a type, a step, a rank.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Type(String),
    Step(u64),
    Rank(u32),
}

/// One suggestion.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The rule's name (stable: tests and links use it).
    pub rule: &'static str,
    pub title: String,
    /// The numbers that made it fire, and the threshold.
    pub evidence: String,
    pub what_to_do: &'static str,
    pub targets: Vec<Target>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

use aclprof::analyze::verdict::median;

/// Step id -> (time, gap), as its slowest device saw it.
type Steps = BTreeMap<u64, (u64, u64)>;

/// The sum of `f` over the run's devices.
fn device_sum(r: &RunStats, f: fn(&aclprof::runstats::DeviceTime) -> u64) -> f64 {
    r.devices.iter().map(f).sum::<u64>() as f64
}

/// The rules that fire for `r`, in the order of the list in docs/design.md.
pub fn advise(r: &RunStats) -> Vec<Advice> {
    let mut out = Vec::new();
    let e2e = r.e2e() as f64;
    let op_time: f64 = r
        .types
        .rows
        .iter()
        .filter(|t| !r.comm_types.contains(&t.key))
        .map(|t| t.total_ns as f64)
        .sum();
    let steps: Steps = r
        .slowest_steps()
        .into_iter()
        .map(|(s, _)| (s.id, (s.total(), s.gap)))
        .collect();
    let free = device_sum(r, |d| d.free);

    out.extend(free_time(r, free, e2e));
    out.extend(communication(r, e2e));
    out.extend(data_wait(&steps));
    out.extend(ai_cpu(r, op_time));
    out.extend(transdata(r, op_time));
    out.extend(dominant_type(r, op_time));
    out.extend(slow_step(&steps));
    out.extend(data_bound(r, &steps));
    memory_rules(r, &mut out);
    out.extend(host_cpu_bound(r, free, e2e));
    out.extend(slow_rank(r));
    out
}

/// "free-time": the device idle for more than [`FREE_SHARE`] of its end-to-end time.
fn free_time(r: &RunStats, free: f64, e2e: f64) -> Option<Advice> {
    if !(e2e > 0.0 && free / e2e > FREE_SHARE) {
        return None;
    }
    // The steps with the most free time first.
    let mut st: Vec<_> = r.steps.iter().map(|s| (s.free, s.id)).collect();
    st.sort_by(|a, b| b.cmp(a));
    st.dedup_by_key(|s| s.1);
    Some(Advice {
        rule: "free-time",
        title: "The device is idle for much of the run".into(),
        evidence: format!(
            "free time is {} of end-to-end device time ({:.3} of {:.3} us; threshold {})",
            pct(free / e2e),
            free / 1e3,
            e2e / 1e3,
            pct(FREE_SHARE)
        ),
        what_to_do: "Look at what the host does between ops: synchronous calls, small \
                     ops launched one by one, waiting for input. Larger batches, graph \
                     mode or fused ops keep the device fed.",
        targets: st.iter().take(3).map(|s| Target::Step(s.1)).collect(),
    })
}

/// "communication": communication nothing computes beside over [`COMM_SHARE`] of
/// end-to-end time.
fn communication(r: &RunStats, e2e: f64) -> Option<Advice> {
    let nov = device_sum(r, |d| d.not_overlapped);
    if !(e2e > 0.0 && nov / e2e > COMM_SHARE) {
        return None;
    }
    Some(Advice {
        rule: "communication",
        title: "Communication is not overlapped with computation".into(),
        evidence: format!(
            "communication nothing computes beside takes {} of end-to-end device time \
             ({:.3} us; threshold {})",
            pct(nov / e2e),
            nov / 1e3,
            pct(COMM_SHARE)
        ),
        what_to_do: "Overlap gradient communication with the backward pass (bucketed \
                     all-reduce), fuse small collectives, or check for a slow link.",
        targets: r
            .comm_types
            .iter()
            .map(|t| Target::Type(t.clone()))
            .collect(),
    })
}

/// "data-wait": the iteration gap over [`GAP_SHARE`] of step time.
fn data_wait(steps: &Steps) -> Option<Advice> {
    if steps.is_empty() {
        return None;
    }
    let total: f64 = steps.values().map(|s| s.0 as f64).sum();
    let gap: f64 = steps.values().map(|s| s.1 as f64).sum();
    if !(total > 0.0 && gap / total > GAP_SHARE) {
        return None;
    }
    let mut st: Vec<_> = steps.iter().map(|(id, s)| (s.1, *id)).collect();
    st.sort_by(|a, b| b.cmp(a));
    Some(Advice {
        rule: "data-wait",
        title: "Steps wait for data before the forward pass".into(),
        evidence: format!(
            "the iteration gap is {} of step time ({:.3} of {:.3} us over {} steps; \
             threshold {})",
            pct(gap / total),
            gap / 1e3,
            total / 1e3,
            steps.len(),
            pct(GAP_SHARE)
        ),
        what_to_do: "The input pipeline does not keep up: more loader workers, \
                     prefetching, or moving preprocessing to the device.",
        targets: st.iter().take(3).map(|s| Target::Step(s.1)).collect(),
    })
}

/// "ai-cpu": ops on the AI CPU over [`AICPU_SHARE`] of the op time `op_time`.
fn ai_cpu(r: &RunStats, op_time: f64) -> Option<Advice> {
    let aicpu: Vec<&aclprof::analyze::Row> = r
        .types
        .rows
        .iter()
        .filter(|t| r.core.get(&t.key).is_some_and(|c| c == "AI_CPU"))
        .collect();
    let aicpu_time: f64 = aicpu.iter().map(|t| t.total_ns as f64).sum();
    if !(!aicpu.is_empty() && op_time > 0.0 && aicpu_time / op_time > AICPU_SHARE) {
        return None;
    }
    Some(Advice {
        rule: "ai-cpu",
        title: "Ops run on the AI CPU".into(),
        evidence: format!(
            "{} op types ({} ops) ran on the AI CPU: {} of op time ({:.3} us)",
            aicpu.len(),
            aicpu.iter().map(|t| t.count).sum::<u64>(),
            pct(aicpu_time / op_time),
            aicpu_time / 1e3
        ),
        what_to_do: "AI CPU ops are slow and break the AI Core pipeline: use a data \
                     type or shape the AI Core kernel supports, or replace the op.",
        targets: aicpu.iter().map(|t| Target::Type(t.key.clone())).collect(),
    })
}

/// "transdata": TransData over [`TRANSDATA_SHARE`] of the op time `op_time`.
fn transdata(r: &RunStats, op_time: f64) -> Option<Advice> {
    let trans: Vec<&aclprof::analyze::Row> = r
        .types
        .rows
        .iter()
        .filter(|t| t.key.starts_with("TransData"))
        .collect();
    let trans_time: f64 = trans.iter().map(|t| t.total_ns as f64).sum();
    if !(op_time > 0.0 && trans_time / op_time > TRANSDATA_SHARE) {
        return None;
    }
    Some(Advice {
        rule: "transdata",
        title: "Format conversions (TransData) take a large share".into(),
        evidence: format!(
            "TransData takes {} of op time ({:.3} us; threshold {})",
            pct(trans_time / op_time),
            trans_time / 1e3,
            pct(TRANSDATA_SHARE)
        ),
        what_to_do: "Keep tensors in the device's format between ops (NC1HWC0, \
                     FRACTAL_NZ): avoid mixing formats and host-side reshapes.",
        targets: trans.iter().map(|t| Target::Type(t.key.clone())).collect(),
    })
}

/// "dominant-type": one op type over [`DOMINANT_SHARE`] of the op time `op_time`.
fn dominant_type(r: &RunStats, op_time: f64) -> Option<Advice> {
    let top = r
        .types
        .rows
        .iter()
        .filter(|t| !r.comm_types.contains(&t.key))
        .max_by_key(|t| t.total_ns)?;
    let share = top.total_ns as f64 / op_time.max(1.0);
    if share <= DOMINANT_SHARE {
        return None;
    }
    Some(Advice {
        rule: "dominant-type",
        title: format!("{} dominates the op time", top.key),
        evidence: format!(
            "{} takes {} of op time ({} ops, {:.3} us; threshold {})",
            top.key,
            pct(share),
            top.count,
            top.total_ns as f64 / 1e3,
            pct(DOMINANT_SHARE)
        ),
        what_to_do: "Tuning this type pays most: check its shapes and data types, \
                     try the auto-tuner (AOE) on it, or a fused or lower-precision \
                     variant.",
        targets: vec![Target::Type(top.key.clone())],
    })
}

/// "slow-step": steps over [`SLOW_STEP`] times the median step, in runs of 3 steps or more.
fn slow_step(steps: &Steps) -> Option<Advice> {
    if steps.len() < 3 {
        return None;
    }
    let med = median(steps.values().map(|s| s.0 as f64).collect());
    let slow: Vec<(u64, u64)> = steps
        .iter()
        .filter(|(_, s)| s.0 as f64 > SLOW_STEP * med)
        .map(|(id, s)| (*id, s.0))
        .collect();
    if med <= 0.0 || slow.is_empty() {
        return None;
    }
    Some(Advice {
        rule: "slow-step",
        title: "Some steps are much slower than the median".into(),
        evidence: format!(
            "{} of {} steps take over {SLOW_STEP}× the median step ({:.3} us): {}",
            slow.len(),
            steps.len(),
            med / 1e3,
            slow.iter()
                .take(5)
                .map(|(id, t)| format!("step {id} {:.3} us", *t as f64 / 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        what_to_do: "Look at what differs in those steps: a first-step compilation, \
                     a checkpoint, a garbage collection or another process.",
        targets: slow.iter().map(|s| Target::Step(s.0)).collect(),
    })
}

/// "data-bound": the training thread waits for the data pipeline over [`DATA_BOUND`] of
/// step time (of the pipeline's span without steps).
fn data_bound(r: &RunStats, steps: &Steps) -> Option<Advice> {
    let a = r.pipeline_analysis.as_ref()?;
    let total: u64 = if steps.is_empty() {
        a.span_ns
    } else {
        steps.values().map(|s| s.0).sum()
    };
    if !(total > 0 && a.wait_ns as f64 / total as f64 > DATA_BOUND) {
        return None;
    }
    let mut st: Vec<(u64, u64)> = r
        .steps
        .iter()
        .map(|s| {
            (
                aclprof::pipeline::wait_in(&r.pipeline, s.start, s.end),
                s.id,
            )
        })
        .collect();
    st.sort_by(|a, b| b.cmp(a));
    st.dedup_by_key(|s| s.1);
    let culprit = match &a.bottleneck {
        Some((stage, rule, ev)) => format!("; the bottleneck is {stage} ({rule}: {ev})"),
        None => "; no single stage is the bottleneck".into(),
    };
    Some(Advice {
        rule: "data-bound",
        title: "Training waits for its data pipeline".into(),
        evidence: format!(
            "the training thread waited for data {} of {} ({:.3} of {:.3} us; \
             threshold {}){culprit}",
            pct(a.wait_ns as f64 / total as f64),
            if steps.is_empty() {
                "the pipeline's time"
            } else {
                "step time"
            },
            a.wait_ns as f64 / 1e3,
            total as f64 / 1e3,
            pct(DATA_BOUND)
        ),
        what_to_do: "Speed up the bottleneck stage (more workers, cheaper transforms, \
                     caching decoded data), prefetch more batches, or move \
                     preprocessing to the device.",
        targets: st.iter().take(3).map(|s| Target::Step(s.1)).collect(),
    })
}

/// "host-cpu-bound": the host's busiest CPU over [`HOST_CPU_BOUND`] busy while the device
/// is free over [`FREE_SHARE`] of the time.
fn host_cpu_bound(r: &RunStats, free: f64, e2e: f64) -> Option<Advice> {
    if !(e2e > 0.0 && free / e2e > FREE_SHARE) {
        return None;
    }
    let busiest: Vec<f64> = r
        .memory
        .samples
        .iter()
        .filter_map(|s| match s {
            aclprof::formats::host_sys::Sample::Cpu { cpus, .. } => {
                Some(cpus.iter().copied().fold(0.0, f64::max) / 100.0)
            }
            _ => None,
        })
        .collect();
    let mean = busiest.iter().sum::<f64>() / busiest.len().max(1) as f64;
    if busiest.is_empty() || mean <= HOST_CPU_BOUND {
        return None;
    }
    Some(Advice {
        rule: "host-cpu-bound",
        title: "The host keeps a CPU busy while the device waits".into(),
        evidence: format!(
            "the process's busiest CPU was {} busy on average over {} samples (threshold {}) while the device was free {} of the time",
            pct(mean),
            busiest.len(),
            pct(HOST_CPU_BOUND),
            pct(free / e2e)
        ),
        what_to_do: "One host thread is the limit: launch work from more threads, move preprocessing off the launching thread, or use graph mode so one call launches many ops.",
        targets: Vec::new(),
    })
}

/// "slow-rank": a rank computing (or waiting) over [`SLOW_RANK`] times the median rank's.
fn slow_rank(r: &RunStats) -> Option<Advice> {
    use aclprof::analyze::verdict::Why;
    let s = r.slow_rank()?;
    let (title, evidence, what_to_do) = match s.why {
        Why::Computes => (
            "A rank is slower than the others",
            format!(
                "rank {} computes {:.3} us, {:.2}× the median rank's (over {SLOW_RANK}×); \
                 the others wait for it in communication (rank {} longest, {:.3} us)",
                s.rank,
                s.ns as f64 / 1e3,
                s.of_median,
                s.waiter,
                s.waiter_ns as f64 / 1e3
            ),
            "Every rank waits for the slowest at each collective: check that device's \
             health and clocks, its data shard, and whether it runs extra work (logging, \
             evaluation).",
        ),
        Why::Waits => (
            "A rank waits for the others",
            format!(
                "rank {} waits {:.3} us in communication not overlapped with computing, \
                 {:.2}× the median rank's (over {SLOW_RANK}×), while no rank computes \
                 much longer",
                s.rank,
                s.ns as f64 / 1e3,
                s.of_median
            ),
            "No rank computes too long, so the wait is in the communication itself: \
             check the links from this rank (aclprof analyze --communication names the \
             slowest) and the collectives' sizes.",
        ),
    };
    Some(Advice {
        rule: "slow-rank",
        title: title.into(),
        evidence,
        what_to_do,
        targets: vec![Target::Rank(s.rank)],
    })
}

/// A leak and a peak far above the steady state, from `aclprof analyze --memory`'s rules.
fn memory_rules(r: &RunStats, out: &mut Vec<Advice>) {
    let Some(a) = &r.memory_analysis else { return };
    for (rule, evidence) in &a.findings {
        let (name, title, what_to_do): (&'static str, &str, &'static str) = match rule.as_str() {
            "leak" => (
                "memory-leak",
                "Device memory grows step after step",
                "Find what each step allocates and keeps (the allocations never released \
                 are listed in the Memory section): tensors kept in a list across steps, \
                 buffers allocated per step and never freed, caches without a bound.",
            ),
            "peak" => (
                "memory-peak",
                "The memory peak is far above the steady state",
                "The op at the peak holds much more than a step needs: split it, recompute \
                 instead of keeping activations, or lower the batch size; the steady state \
                 shows what the model really needs.",
            ),
            _ => continue,
        };
        // The steps whose memory in use grew most.
        let mut st: Vec<(i128, u64)> = a
            .devices
            .iter()
            .flat_map(|d| d.steps.iter())
            .map(|s| {
                (
                    i128::from(s.in_use_end) - i128::from(s.in_use_start),
                    s.step,
                )
            })
            .collect();
        st.sort_by(|a, b| b.cmp(a));
        out.push(Advice {
            rule: name,
            title: title.into(),
            evidence: evidence.clone(),
            what_to_do,
            targets: if name == "memory-leak" {
                st.iter().take(3).map(|s| Target::Step(s.1)).collect()
            } else {
                Vec::new()
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aclprof::analyze::{Report, Row};
    use aclprof::runstats::{DeviceTime, StepTime};

    /// A run of one device, 1000 us end to end, with these types (name, ns, core) and
    /// these steps (total, gap).
    fn run(types: &[(&str, u64, &str)], free: u64, nov: u64, steps: &[(u64, u64)]) -> RunStats {
        let mut r = RunStats {
            types: Report {
                rows: types
                    .iter()
                    .map(|&(k, t, _)| Row {
                        key: k.into(),
                        count: 1,
                        total_ns: t,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        };
        for &(k, _, c) in types {
            r.core.insert(k.into(), c.into());
            if k.starts_with("hcom_") {
                r.comm_types.insert(k.into());
            }
        }
        r.devices.push(DeviceTime {
            rank: Some(0),
            e2e: 1_000_000,
            free,
            not_overlapped: nov,
            computing: 1_000_000 - free - nov,
            op_time: types.iter().map(|t| t.1).sum(),
            ..Default::default()
        });
        for (i, &(t, g)) in steps.iter().enumerate() {
            r.steps.push(StepTime {
                id: i as u64 + 1,
                start: 0,
                end: t,
                gap: g,
                ..Default::default()
            });
        }
        r
    }

    fn balanced() -> RunStats {
        run(
            &[
                ("Conv2D", 400_000, "AI_CORE"),
                ("MatMul", 300_000, "AI_CORE"),
                ("Relu", 200_000, "AI_VECTOR_CORE"),
                ("Add", 100_000, "AI_VECTOR_CORE"),
            ],
            100_000,
            0,
            &[(250_000, 10_000), (240_000, 10_000), (260_000, 10_000)],
        )
    }

    fn rules(r: &RunStats) -> Vec<&'static str> {
        advise(r).iter().map(|a| a.rule).collect()
    }

    #[test]
    fn a_balanced_run_has_no_suggestion() {
        assert_eq!(rules(&balanced()), Vec::<&str>::new());
    }

    #[test]
    fn each_rule_fires_on_a_run_built_to_trigger_it() {
        let mut r = balanced();
        r.devices[0].free = 300_000;
        assert_eq!(rules(&r), ["free-time"]);
        assert_eq!(advise(&r)[0].targets.len(), 3);

        let mut r = balanced();
        r.types.rows.push(Row {
            key: "hcom_allReduce_".into(),
            count: 1,
            total_ns: 150_000,
            ..Default::default()
        });
        r.comm_types.insert("hcom_allReduce_".into());
        r.devices[0].not_overlapped = 150_000;
        assert_eq!(rules(&r), ["communication"]);
        assert_eq!(
            advise(&r)[0].targets,
            [Target::Type("hcom_allReduce_".into())]
        );

        let mut r = balanced();
        r.steps[1].gap = 200_000;
        assert_eq!(rules(&r), ["data-wait"]);
        assert_eq!(advise(&r)[0].targets[0], Target::Step(2));

        let mut r = balanced();
        r.core.insert("Add".into(), "AI_CPU".into());
        assert_eq!(rules(&r), ["ai-cpu"]);
        assert_eq!(advise(&r)[0].targets, [Target::Type("Add".into())]);

        let mut r = balanced();
        r.types.rows[3].key = "TransData".into();
        assert_eq!(rules(&r), ["transdata"]);

        let mut r = balanced();
        r.types.rows[0].total_ns = 1_200_000;
        assert_eq!(rules(&r), ["dominant-type"]);
        assert_eq!(advise(&r)[0].targets, [Target::Type("Conv2D".into())]);

        let mut r = balanced();
        r.steps[2].end = 500_000;
        assert_eq!(rules(&r), ["slow-step"]);
        assert_eq!(advise(&r)[0].targets, [Target::Step(3)]);

        let mut r = balanced();
        for rank in 1..4 {
            let mut d = r.devices[0].clone();
            d.rank = Some(rank);
            if rank == 2 {
                d.computing *= 2;
            }
            r.devices.push(d);
        }
        assert_eq!(rules(&r), ["slow-rank"]);
        assert_eq!(advise(&r)[0].targets, [Target::Rank(2)]);
        // The same rule as the report's cluster view: no rank computes longer, one waits.
        let c = r.devices[0].computing;
        for d in &mut r.devices {
            d.computing = c;
            d.not_overlapped = if d.rank == Some(3) { 50_000 } else { 10_000 };
        }
        let a = advise(&r);
        assert_eq!(a.iter().map(|a| a.rule).collect::<Vec<_>>(), ["slow-rank"]);
        assert_eq!(a[0].targets, [Target::Rank(3)]);
        assert_eq!(a[0].title, "A rank waits for the others");
        assert_eq!(
            r.slow_rank().map(|s| s.rank),
            Some(3),
            "the library's answer"
        );
    }

    #[test]
    fn thresholds_are_not_crossed_by_values_at_them() {
        let mut r = balanced();
        r.devices[0].free = 200_000; // exactly 20 %
        r.types.rows[3].key = "TransData".into();
        r.types.rows[3].total_ns = 52_632; // 5.5 % of the op time: above 5 %
        let fired = rules(&r);
        assert!(!fired.contains(&"free-time"), "{fired:?}");
        assert!(fired.contains(&"transdata"), "{fired:?}");
    }

    #[test]
    fn memory_and_host_rules_fire_on_their_figures_only() {
        use aclprof::analyze::memory::{analyze, Event};
        use aclprof::formats::host_sys::Sample;
        use aclprof::formats::memory::Pool;
        // 1 KB of application memory kept in each of three steps: a leak.
        let mut r = balanced();
        let events: Vec<Event> = (0..3u64)
            .map(|i| Event {
                device: 0,
                pool: Pool::App,
                addr: i,
                size: 1024,
                name: "aclrtMalloc".into(),
                start: i * 100 + 50,
                allocated: 1024 * (i + 1),
                component: String::new(),
                reserved: 1024 * (i + 1),
                tid: 0,
            })
            .collect();
        r.memory_analysis = Some(analyze(
            &events,
            &[(1, 0, 99), (2, 100, 199), (3, 200, 299)],
        ));
        assert_eq!(rules(&r), ["memory-leak"]);
        assert_eq!(advise(&r)[0].targets.len(), 3);

        // A host thread at 95 % of a CPU while the device is free 30 %: CPU-bound; at 90 %,
        // or with a busy device, not.
        let cpu = |busy: f64| Sample::Cpu {
            start: 0,
            cpus: vec![busy, 3.0],
        };
        let mut r = balanced();
        r.devices[0].free = 300_000;
        r.memory.samples = vec![cpu(95.0), cpu(95.0)];
        assert_eq!(rules(&r), ["free-time", "host-cpu-bound"]);
        // The advice reads as prose: no run of spaces from a broken line continuation.
        for a in advise(&r) {
            for text in [a.title.as_str(), &a.evidence, a.what_to_do] {
                assert!(!text.contains("  "), "{}: {text:?}", a.rule);
            }
        }
        r.memory.samples = vec![cpu(90.0), cpu(90.0)];
        assert_eq!(rules(&r), ["free-time"]);
        let mut r = balanced();
        r.memory.samples = vec![cpu(100.0)];
        assert_eq!(rules(&r), Vec::<&str>::new());
    }
}
