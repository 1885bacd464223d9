//! `aclprof top PID`: a live view of a process that uses the library, read from the ring its
//! watcher agent ([`aclprof::watch`]) fills: ops per second, device time per op type in the
//! last interval and since attaching, the longest ops, activity per device and stream, and
//! the records the view dropped.

use aclprof::error::*;
use aclprof::formats::record::{View, RECORD_SIZE};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Distinct ops shown as the longest.
const LONGEST: usize = 5;
/// Op names a window keeps (a program that names every op anew must not grow the viewer
/// without bound); ops of names beyond it still count everywhere else.
const MAX_NAMES: usize = 1 << 16;

/// An op (by name) in a window: its longest run, where that ran, and how often it ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpMax {
    pub max_ns: u64,
    pub count: u64,
    pub op_type: String,
    pub device: u32,
    pub stream: u32,
}

/// One op type's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeTime {
    pub count: u64,
    pub total_ns: u64,
}

/// What one interval (or the time since attaching) saw.
#[derive(Clone, Debug, Default)]
pub struct Window {
    pub seconds: f64,
    pub ops: u64,
    pub types: HashMap<String, TypeTime>,
    /// Every op name seen, with its longest run ([`Window::longest`] ranks them).
    pub ops_by_name: HashMap<String, OpMax>,
    /// (device, stream) -> (ops, device time).
    pub streams: BTreeMap<(u32, u32), (u64, u64)>,
}

impl Window {
    fn add(&mut self, v: &View<'_>) {
        self.ops += 1;
        let ty = String::from_utf8_lossy(v.op_type().unwrap_or_default());
        let d = v.duration();
        match self.types.get_mut(ty.as_ref()) {
            Some(t) => {
                t.count += 1;
                t.total_ns += d;
            }
            None => {
                self.types.insert(
                    ty.clone().into_owned(),
                    TypeTime {
                        count: 1,
                        total_ns: d,
                    },
                );
            }
        }
        let s = self.streams.entry((v.dev_id(), v.stream_id())).or_default();
        s.0 += 1;
        s.1 += d;
        let name = String::from_utf8_lossy(v.name().unwrap_or_default());
        let full = self.ops_by_name.len() >= MAX_NAMES;
        let op = match self.ops_by_name.get_mut(name.as_ref()) {
            Some(op) => op,
            None if full => return,
            None => self.ops_by_name.entry(name.into_owned()).or_default(),
        };
        op.count += 1;
        if d > op.max_ns || op.count == 1 {
            *op = OpMax {
                max_ns: d,
                count: op.count,
                op_type: ty.into_owned(),
                device: v.dev_id(),
                stream: v.stream_id(),
            };
        }
    }

    /// The distinct ops with the longest runs, longest first (ties by name).
    pub fn longest(&self) -> Vec<(&String, &OpMax)> {
        let mut v: Vec<_> = self.ops_by_name.iter().collect();
        v.sort_by(|a, b| b.1.max_ns.cmp(&a.1.max_ns).then(a.0.cmp(b.0)));
        v.truncate(LONGEST);
        v
    }

    fn merge(&mut self, o: &Window) {
        self.seconds += o.seconds;
        self.ops += o.ops;
        for (k, t) in &o.types {
            let e = self.types.entry(k.clone()).or_default();
            e.count += t.count;
            e.total_ns += t.total_ns;
        }
        for (k, s) in &o.streams {
            let e = self.streams.entry(*k).or_default();
            e.0 += s.0;
            e.1 += s.1;
        }
        for (k, op) in &o.ops_by_name {
            if self.ops_by_name.len() >= MAX_NAMES && !self.ops_by_name.contains_key(k) {
                continue;
            }
            let e = self.ops_by_name.entry(k.clone()).or_default();
            let count = e.count + op.count;
            if op.max_ns > e.max_ns || e.count == 0 {
                *e = op.clone();
            }
            e.count = count;
        }
    }

    fn types_by_time(&self) -> Vec<(&String, &TypeTime)> {
        let mut v: Vec<_> = self.types.iter().collect();
        v.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(b.0)));
        v
    }
}

/// How the view ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The time asked for (`--duration`, `--once`) ran out.
    Done,
    /// The process closed the view or ended.
    ProcessEnded,
}

/// Reads the watched process's ops for `interval`, calling `show(last interval, since
/// attach, records dropped so far)` after each, until `duration` (if any) has passed or
/// the process ends. Detaches when done.
pub fn watch(
    attached: crate::watch::Attached,
    interval: Duration,
    duration: Option<Duration>,
    show: &mut dyn FnMut(&Window, &Window, u64),
) -> Result<End> {
    let reader = &attached.reader;
    let began = Instant::now();
    let mut total = Window::default();
    loop {
        let start = Instant::now();
        let mut until = start + interval;
        if let Some(d) = duration {
            until = until.min(began + d);
        }
        let mut w = Window::default();
        let mut ended = false;
        loop {
            let now = Instant::now();
            if now >= until {
                break;
            }
            match reader.acquire(2048, until - now) {
                Ok(Some((p, len))) => {
                    // SAFETY: the ring hands out `len` readable bytes at `p`, whole
                    // records, valid until released.
                    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
                    for rec in bytes.chunks_exact(RECORD_SIZE) {
                        if let Ok(r) = rec.try_into() {
                            w.add(&View(r));
                        }
                    }
                    reader.release(len)?;
                }
                Ok(None) => {}
                Err(_) => {
                    ended = true;
                    break;
                }
            }
        }
        w.seconds = start.elapsed().as_secs_f64();
        total.merge(&w);
        show(&w, &total, reader.ring.dropped());
        if ended {
            return Ok(End::ProcessEnded);
        }
        if duration.is_some_and(|d| began.elapsed() >= d) {
            return Ok(End::Done);
        }
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The view as JSON (`--format json`).
pub fn json(pid: u32, w: &Window, total: &Window, dropped: u64) -> serde_json::Value {
    let types = |w: &Window| -> Vec<serde_json::Value> {
        let all: u64 = w.types.values().map(|t| t.total_ns).sum();
        w.types_by_time()
            .into_iter()
            .map(|(k, t)| {
                serde_json::json!({"type": k, "count": t.count, "total_us": us(t.total_ns),
                    "share": if all > 0 { 100.0 * t.total_ns as f64 / all as f64 } else { 0.0 }})
            })
            .collect()
    };
    serde_json::json!({
        "pid": pid,
        "seconds": w.seconds,
        "ops": w.ops,
        "ops_per_s": if w.seconds > 0.0 { w.ops as f64 / w.seconds } else { 0.0 },
        "dropped": dropped,
        "types": types(w),
        "longest": w.longest().into_iter().map(|(n, op)| serde_json::json!(
            {"name": n, "type": op.op_type, "duration_us": us(op.max_ns), "count": op.count,
             "device": op.device, "stream": op.stream})).collect::<Vec<_>>(),
        "streams": w.streams.iter().map(|((d, s), (n, busy))| serde_json::json!(
            {"device": d, "stream": s, "ops": n, "busy_us": us(*busy),
             "busy_share": if w.seconds > 0.0 { *busy as f64 / (w.seconds * 1e9) } else { 0.0 }})).collect::<Vec<_>>(),
        "since_attach": {"seconds": total.seconds, "ops": total.ops, "types": types(total)},
    })
}

/// The view as text: a header, then op types (last interval and since attaching), the
/// longest ops and the streams.
pub fn text(pid: u32, command: &str, w: &Window, total: &Window, dropped: u64) -> String {
    let mut o = String::new();
    let rate = if w.seconds > 0.0 {
        w.ops as f64 / w.seconds
    } else {
        0.0
    };
    let _ = writeln!(
        o,
        "aclprof top: pid {pid} {command}\n{:.0} ops/s over the last {:.1} s; {} ops in {:.1} s since attaching; {dropped} dropped by this view",
        rate, w.seconds, total.ops, total.seconds
    );
    let all: u64 = w.types.values().map(|t| t.total_ns).sum();
    let _ = writeln!(
        o,
        "\n{:<28} {:>9} {:>12} {:>7}   {:>10} {:>14}",
        "Op type", "Count", "Time(us)", "Share", "Count all", "Time all(us)"
    );
    for (k, t) in total.types_by_time().into_iter().take(15) {
        let cur = w.types.get(k).cloned().unwrap_or_default();
        let share = if all > 0 {
            100.0 * cur.total_ns as f64 / all as f64
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "{:<28} {:>9} {:>12.3} {:>6.1}%   {:>10} {:>14.3}",
            k,
            cur.count,
            us(cur.total_ns),
            share,
            t.count,
            us(t.total_ns)
        );
    }
    let longest = w.longest();
    if !longest.is_empty() {
        let _ = writeln!(
            o,
            "\nLongest ops in the last interval (the longest run of each, and its runs)"
        );
        for (n, op) in longest {
            let _ = writeln!(
                o,
                "  {:>12.3} us {:>7}x  {n} ({}, device {}, stream {})",
                us(op.max_ns),
                op.count,
                op.op_type,
                op.device,
                op.stream
            );
        }
    }
    if !w.streams.is_empty() {
        let _ = writeln!(
            o,
            "\n{:>6} {:>6} {:>9} {:>6}",
            "Device", "Stream", "Ops", "Busy"
        );
        for ((d, s), (n, busy)) in &w.streams {
            let b = if w.seconds > 0.0 {
                100.0 * *busy as f64 / (w.seconds * 1e9)
            } else {
                0.0
            };
            let _ = writeln!(o, "{d:>6} {s:>6} {n:>9} {b:>5.1}%");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_count_types_streams_and_keep_the_longest() {
        let mut w = Window::default();
        let mut recs = Vec::new();
        for i in 0..8u64 {
            let mut r = [0u8; RECORD_SIZE];
            aclprof::formats::record::encode(
                &mut r,
                &aclprof::formats::record::OpFields {
                    model_id: 1,
                    flag: aclprof::formats::record::FLAG_OP,
                    thread_id: 1,
                    op_index: i,
                    start: 100 * i,
                    end: 100 * i + 10 * (i + 1),
                    execution_time: 10 * (i + 1),
                    dev_id: 0,
                    pid: 1,
                    stream_id: (i % 2) as u32,
                    sim_op: 0,
                    meta: 0,
                },
                format!("op{}", i % 6).as_bytes(),
                if i < 5 { b"A" } else { b"B" },
            );
            recs.push(r);
        }
        for r in &recs {
            w.add(&View(r));
        }
        assert_eq!(w.ops, 8);
        assert_eq!(
            w.types["A"],
            TypeTime {
                count: 5,
                total_ns: 150
            }
        );
        assert_eq!(
            w.types["B"],
            TypeTime {
                count: 3,
                total_ns: 210
            }
        );
        // op0 and op1 ran twice (10 and 70, 20 and 80 ns): each is listed once, with its
        // longest run and its count.
        let longest: Vec<(&str, u64, u64)> = w
            .longest()
            .iter()
            .map(|(n, op)| (n.as_str(), op.max_ns, op.count))
            .collect();
        assert_eq!(
            longest,
            [
                ("op1", 80, 2),
                ("op0", 70, 2),
                ("op5", 60, 1),
                ("op4", 50, 1),
                ("op3", 40, 1)
            ]
        );
        assert_eq!(w.streams[&(0, 0)], (4, 10 + 30 + 50 + 70));
        let mut t = Window::default();
        t.merge(&w);
        t.merge(&w);
        let top = t.longest()[0];
        assert_eq!(
            (
                t.ops,
                t.types["A"].count,
                top.0.as_str(),
                top.1.max_ns,
                top.1.count
            ),
            (16, 10, "op1", 80, 4)
        );
    }
}
