//! `aclprof top PID --serve [ADDR:]PORT`: Prometheus metrics of running processes. Each
//! process is read through the watcher's ring (as `top` reads it) by a thread of its own,
//! which adds each op to counters; hyper answers `GET /metrics` with those counters encoded
//! by `prometheus-client` (classic text, or OpenMetrics when asked). A scrape takes only this
//! process's lock: the watched program never waits for it (its ring drops what this reader
//! misses, counted in `aclprof_records_dropped_total`).

use crate::error::{CliError, Result};
use aclprof::formats::record::{View, RECORD_SIZE};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::net::SocketAddr;
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
/// A request's head is refused (431) when larger than this, and its connection closed
/// when the head is not all there [`REQUEST_TIMEOUT`] after the connection was accepted.
const MAX_REQUEST: usize = 8192;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection (Prometheus keeps one open between scrapes) ends after this long; the
/// client opens another.
const CONNECTION_LIMIT: Duration = Duration::from_secs(60);

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
    memory: Vec<crate::watch::PoolTotals>,
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
fn read(pid: u32, attached: crate::watch::Attached, all: Processes) {
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

/// The metrics, encoded by the Prometheus project's client library at each scrape from
/// the counters the readers keep (no copy of them between scrapes).
struct Metrics(Processes);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("aclprof's metrics")
    }
}

impl Collector for Metrics {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let pid_label = |pid: &u32| vec![("pid", pid.to_string())];
        let mut m = e.encode_descriptor(
            "aclprof_process_info",
            "A process watched: 1 while it runs, 0 once it ended; its command line.",
            None,
            MetricType::Gauge,
        )?;
        for (pid, p) in all.iter() {
            let mut l = pid_label(pid);
            l.push(("command", p.command.clone()));
            m.encode_family(&l)?.encode_gauge(&u64::from(!p.ended))?;
        }
        let mut m = e.encode_descriptor(
            "aclprof_records_dropped",
            "Op records this exporter could not read in time (the process never waits for it).",
            None,
            MetricType::Counter,
        )?;
        for (pid, p) in all.iter() {
            m.encode_family(&pid_label(pid))?
                .encode_counter::<NoLabelSet, _, u64>(&p.dropped, None)?;
        }
        type Pool = crate::watch::PoolTotals;
        for (name, help, value) in [
            (
                "aclprof_device_memory_allocated_bytes",
                "Device memory in use, per device and pool (operator, application, model).",
                (|t: &Pool| t.allocated) as fn(&Pool) -> u64,
            ),
            (
                "aclprof_device_memory_reserved_bytes",
                "Device memory held from the device, per device and pool.",
                |t: &Pool| t.reserved,
            ),
        ] {
            let mut m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (pid, p) in all.iter() {
                for t in &p.memory {
                    let mut l = pid_label(pid);
                    l.push(("device", t.device.to_string()));
                    l.push(("pool", t.pool.clone()));
                    m.encode_family(&l)?.encode_gauge(&value(t))?;
                }
            }
        }
        // (pid, model, device, op type) and its figures, in a fixed order.
        let series = || {
            all.iter().flat_map(|(pid, p)| {
                p.series.iter().flat_map(move |(ty, m)| {
                    m.iter().map(move |(&(model, device), s)| {
                        let l = vec![
                            ("pid", pid.to_string()),
                            ("model", model.to_string()),
                            ("device", device.to_string()),
                            ("op_type", ty.clone()),
                        ];
                        (l, s)
                    })
                })
            })
        };
        let mut m = e.encode_descriptor(
            "aclprof_ops",
            "Ops reported since the exporter attached, by process, model, device and op type.",
            None,
            MetricType::Counter,
        )?;
        for (l, s) in series() {
            m.encode_family(&l)?
                .encode_counter::<NoLabelSet, _, u64>(&s.ops, None)?;
        }
        let mut m = e.encode_descriptor(
            "aclprof_op_device_seconds",
            "Device time of the ops reported since the exporter attached, in seconds.",
            None,
            MetricType::Counter,
        )?;
        for (l, s) in series() {
            m.encode_family(&l)?
                .encode_counter::<NoLabelSet, _, u64>(&seconds(s.device_ns), None)?;
        }
        let mut m = e.encode_descriptor(
            "aclprof_op_duration_seconds",
            "Durations of the ops reported since the exporter attached, in seconds.",
            None,
            MetricType::Histogram,
        )?;
        for (l, s) in series() {
            let buckets: Vec<(f64, u64)> = s
                .buckets
                .iter()
                .enumerate()
                .map(|(i, &n)| (BUCKETS.get(i).map_or(f64::INFINITY, |&b| b as f64 / 1e9), n))
                .collect();
            m.encode_family(&l)?.encode_histogram::<NoLabelSet>(
                seconds(s.device_ns),
                s.ops,
                &buckets,
                None,
            )?;
        }
        Ok(())
    }
}

/// Nanoseconds as seconds.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The metrics as text: Prometheus's classic format, or OpenMetrics when asked; and its
/// content type.
fn render(registry: &Registry, openmetrics: bool) -> (String, &'static str) {
    let mut text = String::new();
    if openmetrics {
        let _ = prometheus_client::encoding::text::encode(&mut text, registry);
        (
            text,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )
    } else {
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, registry);
        (
            text,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )
    }
}

/// `PORT` or `ADDR:PORT` (loopback unless an address is given).
fn address(s: &str) -> Result<SocketAddr> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| CliError::usage(format!("--serve: PORT or ADDRESS:PORT, not {s:?}")))
}

/// Serves `GET /metrics` on `listener` until the process ends: hyper's HTTP/1 on one
/// thread of tokio, so an idle or half-sent connection costs a small task, not a thread,
/// and none of them delays a scrape. Each connection must send a request's head within
/// [`REQUEST_TIMEOUT`] of being accepted (and of its last answer), at most
/// [`MAX_REQUEST`] bytes of it, and ends after [`CONNECTION_LIMIT`].
fn serve(listener: std::net::TcpListener, registry: Arc<Registry>) -> Result<()> {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io_on("--serve", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| CliError::io_on("--serve", e))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| CliError::io_on("--serve", e))?;
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                // Out of descriptors (or memory): the connections held end in time; a scrape
                // waits for one, it is never refused for good.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            };
            let registry = registry.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let registry = registry.clone();
                    async move {
                        let (status, ctype, body) = answer(&req, &registry);
                        hyper::Response::builder()
                            .status(status)
                            .header(hyper::header::CONTENT_TYPE, ctype)
                            .body(Full::new(Bytes::from(body)))
                    }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(REQUEST_TIMEOUT)
                    .max_header_size(MAX_REQUEST)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let _ = tokio::time::timeout(CONNECTION_LIMIT, conn).await;
            });
        }
    })
}

/// The answer to one request: (status, content type, body).
fn answer<B>(req: &hyper::Request<B>, registry: &Registry) -> (u16, &'static str, String) {
    if req.method() == hyper::Method::GET && req.uri().path() == "/metrics" {
        // Prometheus asks for OpenMetrics first when it can read it.
        let openmetrics = req
            .headers()
            .get_all(hyper::header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("application/openmetrics-text"));
        let (text, ctype) = render(registry, openmetrics);
        (200, ctype, text)
    } else {
        (
            404,
            "text/plain; charset=utf-8",
            "only GET /metrics is served here\n".to_string(),
        )
    }
}

/// Raises this process's limit of open descriptors to the hard limit: each connection
/// held open by a client is one.
fn raise_open_files_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

/// `top --serve`: attaches to the process (or, with `all`, to every watchable one, looking
/// again every 2 s for new ones) and serves their metrics until interrupted.
pub fn run(pid: Option<u32>, all: bool, addr: &str) -> Result<()> {
    let addr = address(addr)?;
    if pid.is_none() && !all {
        return Err(CliError::usage("--serve: name the process (PID), or --all"));
    }
    raise_open_files_limit();
    let (listener, bound) = std::net::TcpListener::bind(addr)
        .and_then(|l| l.local_addr().map(|bound| (l, bound)))
        .map_err(|e| CliError::io_on(format!("--serve {addr}"), e))?;
    let procs: Processes = Default::default();
    let attach = |pid: u32, procs: &Processes| -> Result<()> {
        let a = crate::watch::attach(pid)?;
        let command = crate::watch::command_of(pid);
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
                    for w in crate::watch::list(unsafe { libc::geteuid() }) {
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
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Metrics(procs)));
    serve(listener, Arc::new(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_both_formats_written() {
        let mut p = Process::new("a\"b\\c\nd".into());
        p.dropped = 3;
        let procs: Processes = Arc::new(Mutex::new(BTreeMap::from([(7, p)])));
        let mut r = Registry::default();
        r.register_collector(Box::new(Metrics(procs)));
        let (text, ctype) = render(&r, false);
        assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
        assert!(
            text.contains("aclprof_process_info{pid=\"7\",command=\"a\\\"b\\\\c\\nd\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE aclprof_records_dropped_total counter"),
            "{text}"
        );
        assert!(
            text.contains("aclprof_records_dropped_total{pid=\"7\"} 3"),
            "{text}"
        );
        let (text, ctype) = render(&r, true);
        assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
        assert!(text.ends_with("# EOF\n"), "{text}");
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
        let mut r = Registry::default();
        r.register_collector(Box::new(Metrics(Arc::new(Mutex::new(BTreeMap::from([(
            1, p,
        )]))))));
        let (text, _) = render(&r, false);
        assert!(text.contains("aclprof_op_duration_seconds_bucket{pid=\"1\",model=\"0\",device=\"0\",op_type=\"T0\",le=\"1e-06\"} 1"), "{text}");
        assert!(text.contains("aclprof_op_duration_seconds_count{pid=\"1\",model=\"0\",device=\"0\",op_type=\"other\"} 10"), "{text}");
    }
}
