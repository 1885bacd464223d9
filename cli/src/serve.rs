//! `aclprof top PID --serve [ADDR:]PORT`: Prometheus metrics of running processes. Each
//! process is read through the watcher's ring (as `top` reads it) by a thread of its own,
//! which adds each op to counters; a small HTTP server answers `GET /metrics` from those
//! counters. A scrape takes only this process's lock: the watched program never waits for
//! it (its ring drops what this reader misses, counted in `aclprof_records_dropped_total`).

use aclprof::formats::record::{View, RECORD_SIZE};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds of the op duration histogram's buckets, in nanoseconds (1 µs to 1 s).
const BUCKETS: [u64; 12] = [
    1_000,
    5_000,
    10_000,
    50_000,
    100_000,
    500_000,
    1_000_000,
    5_000_000,
    10_000_000,
    50_000_000,
    100_000_000,
    1_000_000_000,
];
/// Op types kept apart per process; ops of further types count under `op_type="other"`,
/// so a program that invents types cannot grow the exporter (or Prometheus) without bound.
const MAX_TYPES: usize = 256;
/// A request is cut off when larger than this or slower than [`REQUEST_TIMEOUT`].
const MAX_REQUEST: usize = 8192;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 16;

/// One (model, device, op type)'s figures.
#[derive(Default)]
struct Series {
    ops: u64,
    device_ns: u64,
    /// Ops per bucket (not cumulative), the last one +Inf.
    buckets: [u64; BUCKETS.len() + 1],
}

/// What one process reported since the exporter attached.
#[derive(Default)]
struct Process {
    pub command: String,
    /// By op type (at most [`MAX_TYPES`] and "other"), then (model, device).
    series: BTreeMap<String, BTreeMap<(u32, u32), Series>>,
    pub dropped: u64,
    pub ended: bool,
    /// The device memory pools' totals, asked of the process every second.
    memory: Vec<aclprof::watch::PoolTotals>,
}

impl Process {
    fn new(command: String) -> Process {
        Process {
            command,
            ..Default::default()
        }
    }

    fn add(&mut self, v: &View<'_>) {
        let ty = String::from_utf8_lossy(v.op_type().unwrap_or_default());
        let by_type = match self.series.get_mut(ty.as_ref()) {
            Some(m) => m,
            None => {
                let ty = if self.series.len() >= MAX_TYPES {
                    "other".to_string()
                } else {
                    ty.into_owned()
                };
                self.series.entry(ty).or_default()
            }
        };
        let s = by_type.entry((v.model_id(), v.dev_id())).or_default();
        let d = v.duration();
        s.ops += 1;
        s.device_ns += d;
        let b = BUCKETS
            .iter()
            .position(|&le| d <= le)
            .unwrap_or(BUCKETS.len());
        s.buckets[b] += 1;
    }
}

/// The processes served, by pid.
type Processes = Arc<Mutex<BTreeMap<u32, Process>>>;

/// Reads process `pid`'s ring into its counters until it ends.
fn read(pid: u32, attached: aclprof::watch::Attached, all: Processes) {
    let reader = &attached.reader;
    let mut asked = std::time::Instant::now() - Duration::from_secs(1);
    loop {
        if asked.elapsed() >= Duration::from_secs(1) {
            asked = std::time::Instant::now();
            if let Some(m) = attached.memory() {
                if let Some(p) = all.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&pid) {
                    p.memory = m;
                }
            }
        }
        let r = reader.acquire(2048, Duration::from_millis(500));
        let mut g = all.lock().unwrap_or_else(|p| p.into_inner());
        let Some(p) = g.get_mut(&pid) else { return };
        match r {
            Ok(Some((ptr, len))) => {
                // SAFETY: the ring hands out `len` readable bytes at `ptr`, whole records,
                // valid until released.
                let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
                for rec in bytes.chunks_exact(RECORD_SIZE) {
                    if let Ok(r) = rec.try_into() {
                        p.add(&View(r));
                    }
                }
                p.dropped = reader.ring.dropped();
                drop(g);
                if reader.release(len).is_err() {
                    break;
                }
            }
            Ok(None) => p.dropped = reader.ring.dropped(),
            Err(_) => break,
        }
    }
    if let Some(p) = all.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&pid) {
        p.ended = true;
    }
}

/// A label value, escaped as the text format asks.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The metrics in Prometheus's text format (0.0.4).
fn render(all: &BTreeMap<u32, Process>) -> String {
    let mut o = String::new();
    let head = |o: &mut String, name: &str, ty: &str, help: &str| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {ty}");
    };
    head(
        &mut o,
        "aclprof_process_info",
        "gauge",
        "A process watched: 1 while it runs, 0 once it ended; its command line.",
    );
    for (pid, p) in all {
        let _ = writeln!(
            o,
            "aclprof_process_info{{pid=\"{pid}\",command=\"{}\"}} {}",
            label(&p.command),
            u8::from(!p.ended)
        );
    }
    head(
        &mut o,
        "aclprof_records_dropped_total",
        "counter",
        "Op records this exporter could not read in time (the process never waits for it).",
    );
    for (pid, p) in all {
        let _ = writeln!(
            o,
            "aclprof_records_dropped_total{{pid=\"{pid}\"}} {}",
            p.dropped
        );
    }
    for (name, help, value) in [
        (
            "aclprof_device_memory_allocated_bytes",
            "Device memory in use, per device and pool (operator, application, model).",
            (|t: &aclprof::watch::PoolTotals| t.allocated)
                as fn(&aclprof::watch::PoolTotals) -> u64,
        ),
        (
            "aclprof_device_memory_reserved_bytes",
            "Device memory held from the device, per device and pool.",
            |t: &aclprof::watch::PoolTotals| t.reserved,
        ),
    ] {
        head(&mut o, name, "gauge", help);
        for (pid, p) in all {
            for t in &p.memory {
                let _ = writeln!(
                    o,
                    "{name}{{pid=\"{pid}\",device=\"{}\",pool=\"{}\"}} {}",
                    t.device,
                    label(&t.pool),
                    value(t)
                );
            }
        }
    }
    let each = |o: &mut String, f: &dyn Fn(&mut String, &str, &Series)| {
        for (pid, p) in all {
            for ((ty, (model, device)), s) in p
                .series
                .iter()
                .flat_map(|(ty, m)| m.iter().map(move |(k, s)| ((ty, k), s)))
            {
                let labels = format!(
                    "pid=\"{pid}\",model=\"{model}\",device=\"{device}\",op_type=\"{}\"",
                    label(ty)
                );
                f(o, &labels, s);
            }
        }
    };
    head(
        &mut o,
        "aclprof_ops_total",
        "counter",
        "Ops reported since the exporter attached, by process, model, device and op type.",
    );
    each(&mut o, &|o, l, s| {
        let _ = writeln!(o, "aclprof_ops_total{{{l}}} {}", s.ops);
    });
    head(
        &mut o,
        "aclprof_op_device_seconds_total",
        "counter",
        "Device time of the ops reported since the exporter attached, in seconds.",
    );
    each(&mut o, &|o, l, s| {
        let _ = writeln!(
            o,
            "aclprof_op_device_seconds_total{{{l}}} {}",
            seconds(s.device_ns)
        );
    });
    head(
        &mut o,
        "aclprof_op_duration_seconds",
        "histogram",
        "Durations of the ops reported since the exporter attached, in seconds.",
    );
    each(&mut o, &|o, l, s| {
        let mut cum = 0;
        for (i, n) in s.buckets.iter().enumerate() {
            cum += n;
            let le = BUCKETS
                .get(i)
                .map_or("+Inf".to_string(), |&b| format!("{:e}", b as f64 / 1e9));
            let _ = writeln!(
                o,
                "aclprof_op_duration_seconds_bucket{{{l},le=\"{le}\"}} {cum}"
            );
        }
        let _ = writeln!(
            o,
            "aclprof_op_duration_seconds_sum{{{l}}} {}",
            seconds(s.device_ns)
        );
        let _ = writeln!(o, "aclprof_op_duration_seconds_count{{{l}}} {}", s.ops);
    });
    o
}

/// Nanoseconds as seconds, exactly (no float rounding in the text).
fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// `PORT` or `ADDR:PORT` (loopback unless an address is given).
fn address(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("--serve: PORT or ADDRESS:PORT, not {s:?}"))
}

/// Serves `GET /metrics` on `listener` until the process ends.
fn serve(listener: TcpListener, all: Processes) {
    let busy = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        if busy.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            busy.fetch_sub(1, Ordering::AcqRel);
            continue; // (dropped: closed)
        }
        let (all, busy) = (all.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                answer(conn, &all);
                busy.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // (the connection went with the closure)
        }
    }
}

/// Reads one request (cut off when too large or too slow) and answers it.
fn answer(mut conn: TcpStream, all: &Processes) {
    let _ = conn.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = conn.set_write_timeout(Some(REQUEST_TIMEOUT));
    let deadline = std::time::Instant::now() + REQUEST_TIMEOUT;
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        if req.len() > MAX_REQUEST || std::time::Instant::now() >= deadline {
            return;
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let line = req.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let path = path.map(|p| p.split(|&b| b == b'?').next().unwrap_or_default());
    let (status, ctype, body) = if method == Some(b"GET") && path == Some(b"/metrics") {
        let text = render(&all.lock().unwrap_or_else(|p| p.into_inner()));
        ("200 OK", "text/plain; version=0.0.4; charset=utf-8", text)
    } else {
        (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "only GET /metrics is served here\n".to_string(),
        )
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// `top --serve`: attaches to the process (or, with `all`, to every watchable one, looking
/// again every 2 s for new ones) and serves their metrics until interrupted.
pub fn run(pid: Option<u32>, all: bool, addr: &str) -> Result<(), String> {
    let addr = address(addr)?;
    if pid.is_none() && !all {
        return Err("--serve: name the process (PID), or --all".into());
    }
    let listener = std::net::TcpListener::bind(addr).map_err(|e| format!("--serve {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let procs: Processes = Default::default();
    let attach = |pid: u32, procs: &Processes| -> Result<(), String> {
        let a = aclprof::watch::attach(pid).map_err(|e| e.msg)?;
        let command = aclprof::watch::command_of(pid);
        procs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(pid, Process::new(command));
        let procs = procs.clone();
        std::thread::spawn(move || read(pid, a, procs));
        Ok(())
    };
    match pid {
        Some(pid) => attach(pid, &procs)?,
        None => {
            let procs = procs.clone();
            let me = std::process::id();
            std::thread::spawn(move || {
                // Processes that refused (another viewer watches them): said once, tried
                // again at each look.
                let mut said = std::collections::HashSet::new();
                loop {
                    // SAFETY: geteuid has no preconditions.
                    for w in aclprof::watch::list(unsafe { libc::geteuid() }) {
                        let known = procs
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .contains_key(&w.pid);
                        if w.pid != me && !known {
                            if let Err(e) = attach(w.pid, &procs) {
                                if said.insert(w.pid) {
                                    eprintln!("aclprof: {e}");
                                }
                            }
                        }
                    }
                    std::thread::sleep(std::time::Duration::from_secs(2));
                }
            });
        }
    }
    eprintln!(
        "aclprof: serving metrics of {} on http://{bound}/metrics",
        pid.map_or("every watchable process".to_string(), |p| format!(
            "process {p}"
        ))
    );
    serve(listener, procs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact_and_labels_escaped() {
        assert_eq!(seconds(1_500_000_001), "1.500000001");
        assert_eq!(seconds(42), "0.000000042");
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(address("9400").unwrap().to_string(), "127.0.0.1:9400");
        assert_eq!(address("0.0.0.0:9400").unwrap().to_string(), "0.0.0.0:9400");
        assert!(address("nine").is_err());
    }

    #[test]
    fn op_types_beyond_the_bound_count_as_other() {
        let mut p = Process::default();
        for i in 0..MAX_TYPES + 10 {
            let mut rec = [0u8; RECORD_SIZE];
            let op = aclprof::formats::record::OpFields {
                start: 0,
                end: 1000,
                ..Default::default()
            };
            aclprof::formats::record::encode(&mut rec, &op, b"n", format!("T{i}").as_bytes());
            p.add(&View(&rec));
        }
        assert_eq!(p.series.len(), MAX_TYPES + 1);
        let other = &p.series["other"][&(0, 0)];
        assert_eq!(other.ops, 10);
        let text = render(&BTreeMap::from([(1, p)]));
        assert!(text.contains("aclprof_op_duration_seconds_bucket{pid=\"1\",model=\"0\",device=\"0\",op_type=\"T0\",le=\"1e-6\"} 1"), "{text}");
    }
}
