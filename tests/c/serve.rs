//! `aclprof top PID --serve`: a real Prometheus server (Debian's, installed by
//! scripts/prometheus) scrapes a running C program's metrics, and what it stored agrees
//! with what the program reported (its own file-mode op_summary); the HTTP server answers
//! only `GET /metrics`, cuts off oversized and slow requests, and answers a scrape while
//! thousands of idle and half-sent connections are held.

use super::*;
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Waits (60 s at most) until `f` gives a value.
fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One HTTP/1.0 exchange: the status line's code and the body ("" when the server closed
/// the connection without an answer).
fn http(addr: &str, request: &[u8]) -> (u32, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = s.write_all(request);
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    (code, body)
}

fn get(addr: &str, path: &str) -> (u32, String) {
    http(
        addr,
        format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes(),
    )
}

/// `aclprof top PID --serve` on a port of its choosing, for the watch files in `sockets`.
fn exporter(pid: u32, sockets: &Path) -> std::process::Child {
    Command::new(common::aclprof_bin())
        .args(["top", &pid.to_string(), "--serve", "127.0.0.1:0"])
        .env("ACLPROF_WATCH_DIR", sockets)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The address the exporter serves at, from the line it says once it has attached.
fn serving_at(exporter: &mut std::process::Child, pid: u32) -> String {
    let mut line = String::new();
    std::io::BufReader::new(exporter.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .strip_prefix(&format!(
            "aclprof: serving metrics of process {pid} on http://"
        ))
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string()
}

/// Connections held open at once by the hostile client: half idle, half with a request
/// begun and never finished.
const HELD: usize = 6000;

/// Opens `n` connections to `addr` (as many as this process's descriptors allow, its limit
/// raised to the hard one), every second one with half a request sent.
fn hold_connections(addr: &str, n: usize) -> Vec<TcpStream> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get/setrlimit with a valid struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
    let n = n.min((l.rlim_cur as usize).saturating_sub(256));
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        let Ok(mut c) = TcpStream::connect(addr) else {
            break;
        };
        if i % 2 == 1 {
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ");
        }
        held.push(c);
    }
    assert!(
        held.len() >= n.min(2000),
        "only {} connections opened",
        held.len()
    );
    held
}

/// A PromQL instant query's result: each series' labels and value.
fn query(prom: &str, q: &str, at: Option<f64>) -> Vec<(serde_json::Value, f64)> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut path = format!("/api/v1/query?query={enc}");
    if let Some(t) = at {
        path += &format!("&time={t:.3}");
    }
    let (code, body) = get(prom, &path);
    assert_eq!(code, 200, "{q}: {body}");
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    j["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metric"].clone(),
                r["value"][1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

/// The single value of a query, if it has one.
fn scalar(prom: &str, q: &str) -> Option<f64> {
    query(prom, q, None).first().map(|r| r.1)
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn prometheus_scrapes_what_the_program_reported() {
    const EXECUTIONS: u64 = 4;
    const OPS: u64 = 125;
    let prometheus = match std::env::var("ACLPROF_PROMETHEUS") {
        Ok(p) => PathBuf::from(p),
        Err(_) => match Command::new("sh")
            .args(["-c", "command -v prometheus"])
            .output()
        {
            Ok(o) if o.status.success() => {
                PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string())
            }
            _ => {
                // scripts/test installs it (scripts/prometheus) and must never skip this.
                assert!(
                    std::env::var_os("ACLPROF_RUNNING_TESTS").is_none(),
                    "no prometheus: scripts/prometheus installs it"
                );
                eprintln!("skipped: no prometheus on PATH (scripts/prometheus installs it)");
                return;
            }
        },
    };
    let work = fresh_dir("serve-work");
    let sockets = fresh_dir("serve-sockets");
    let results = fresh_dir("serve-results");
    let tsdb = fresh_dir("serve-tsdb");
    let opts = format!(
        r#"{{"output": "{}", "task_trace": "on"}}"#,
        results.display()
    );
    let env = [
        ("PROFILING_MODE", "true"),
        ("PROFILING_OPTIONS", opts.as_str()),
    ];
    let target = WatchTarget::start(&work, &sockets, EXECUTIONS, OPS, &env);
    let pid = target.pid;

    // The exporter, on a port of its choosing.
    let mut exporter = exporter(pid, &sockets);
    let addr = serving_at(&mut exporter, pid);

    // Only GET /metrics; a slow request does not hold up a scrape, and is cut off; so is an
    // oversized one.
    let (code, body) = get(&addr, "/metrics");
    assert_eq!(code, 200);
    assert!(body.contains("# TYPE aclprof_ops_total counter"), "{body}");
    assert!(body.contains(&format!("aclprof_process_info{{pid=\"{pid}\"")));
    assert_eq!(get(&addr, "/").0, 404);
    assert_eq!(get(&addr, "/metrics/../x").0, 404);
    assert_eq!(http(&addr, b"POST /metrics HTTP/1.0\r\n\r\n").0, 404);
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /metr").unwrap();
    assert_eq!(
        get(&addr, "/metrics").0,
        200,
        "a slow client held up a scrape"
    );
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(rest.is_empty(), "a request never finished was answered");
    let mut big = b"GET /metrics HTTP/1.0\r\nX: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 64 * 1024));
    let (code, body) = http(&addr, &big);
    assert!(
        (code == 431 || code == 0) && !body.contains("aclprof_"),
        "an oversized request: {code} {body}"
    );
    // OpenMetrics when Prometheus asks for it.
    let (code, body) = http(
        &addr,
        b"GET /metrics HTTP/1.0\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
    );
    assert!(code == 200 && body.ends_with("# EOF\n"), "{code} {body}");

    // Thousands of idle and half-sent connections (another local process holding them, or
    // any host that reaches a --serve on a public address) cost no scrape its answer.
    let held = hold_connections(&addr, HELD);
    assert_eq!(
        get(&addr, "/metrics").0,
        200,
        "a scrape while {} connections are held",
        held.len()
    );
    drop(held);

    // Prometheus scrapes it every second.
    let prom_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prom = format!("127.0.0.1:{prom_port}");
    let config = tsdb.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: aclprof\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let mut server = Command::new(&prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            tsdb.join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // Its web server answers (503) before its storage is ready: /-/ready says when.
        until("Prometheus is ready", || {
            std::net::TcpStream::connect(&prom).ok()?;
            (get(&prom, "/-/ready").0 == 200).then_some(())
        });
        until("Prometheus scrapes the exporter", || {
            (scalar(&prom, "up{job=\"aclprof\"}")? == 1.0).then_some(())
        });
        let total_ops = || scalar(&prom, "sum(aclprof_ops_total)");
        target.go();
        until("Prometheus has the first run", || {
            (total_ops()? == (EXECUTIONS * OPS) as f64).then_some(())
        });
        let between = now_s();
        target.go();
        until("Prometheus has the second run", || {
            (total_ops()? == (2 * EXECUTIONS * OPS) as f64).then_some(())
        });
        // What the second run reported, over its window, per op type.
        let after = now_s();
        let window = query(
            &prom,
            &format!(
                "sum by (op_type) (aclprof_ops_total - aclprof_ops_total offset {}ms)",
                ((after - between) * 1000.0) as u64
            ),
            Some(after),
        );
        let conv = window
            .iter()
            .find(|(m, _)| m["op_type"] == "Conv2D")
            .unwrap_or_else(|| panic!("{window:?}"));
        assert_eq!(conv.1, (53 * EXECUTIONS) as f64, "{window:?}");
        assert!(scalar(&prom, "sum(rate(aclprof_op_device_seconds_total[1m]))").unwrap() > 0.0);
        assert_eq!(
            scalar(&prom, "sum(aclprof_records_dropped_total)"),
            Some(0.0)
        );

        // The program stops; its file mode recorded every op: device seconds per type agree.
        let (ok, text) = target.stop();
        assert!(ok, "{text}");
        let dirs: Vec<PathBuf> = std::fs::read_dir(&results)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let mut truth: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        let summary = std::fs::read_dir(dirs[0].join("mindstudio_profiler_output"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("op_summary_"))
            .unwrap();
        for row in read_csv(&summary).1 {
            let t = truth.entry(row["OP Type"].clone()).or_default();
            t.0 += 1;
            t.1 += row["Task Duration(us)"].parse::<f64>().unwrap() * 1e-6;
        }
        let seconds = until("Prometheus has every op's time", || {
            let v = query(
                &prom,
                "sum by (op_type) (aclprof_op_device_seconds_total)",
                None,
            );
            let counts = query(
                &prom,
                "sum by (op_type) (aclprof_op_duration_seconds_count)",
                None,
            );
            let n: f64 = counts.iter().map(|c| c.1).sum();
            (n == (2 * EXECUTIONS * OPS) as f64).then_some((v, counts))
        });
        let (v, counts) = seconds;
        assert_eq!(v.len(), truth.len(), "{v:?} {truth:?}");
        for (m, secs) in &v {
            let ty = m["op_type"].as_str().unwrap();
            let (n, want) = truth[ty];
            assert!(
                (secs - want).abs() < 1e-6,
                "{ty}: Prometheus {secs} s, the program {want} s"
            );
            let c = counts.iter().find(|c| c.0["op_type"] == ty).unwrap().1;
            assert_eq!(c, n as f64, "{ty}");
        }
    }));
    let _ = server.kill();
    let _ = server.wait();
    let _ = exporter.kill();
    let _ = exporter.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// The sum of a metric's samples in the exporter's text.
fn sum_of(text: &str, metric: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A program idle in its own code while the exporter asks answers at its first call, the
/// first op of its executions: every op from there on reaches the exporter (or is counted
/// as dropped), none of those reported while the exporter connects is lost.
#[test]
fn every_op_after_the_answer_is_counted() {
    const EXECUTIONS: u64 = 200;
    const OPS: u64 = 125;
    let work = fresh_dir("answer-work");
    let sockets = fresh_dir("answer-sockets");
    let target = WatchTarget::start(
        &work,
        &sockets,
        EXECUTIONS,
        OPS,
        &[("WATCH_TARGET_QUIET", "1")],
    );
    let pid = target.pid;
    let mut exporter = exporter(pid, &sockets);
    // The exporter has asked; the program has not answered (it makes no call while idle).
    until("the exporter asks", || {
        sockets.join(format!("{pid}.attach")).exists().then_some(())
    });
    // The executions start at once; the exporter connects while they run.
    std::fs::write(work.join("GO"), "").unwrap();
    let addr = serving_at(&mut exporter, pid);
    wait_for_file(&work.join("DONE"));
    let result = std::panic::catch_unwind(|| {
        // Each op counted once, or counted as dropped if the exporter connected so late
        // that the ring (4 096 records from the answer on) filled first: never missing.
        let want = (EXECUTIONS * OPS) as f64;
        let seen =
            |t: &str| sum_of(t, "aclprof_ops_total") + sum_of(t, "aclprof_records_dropped_total");
        let text = until("the exporter has read every op", || {
            let (code, text) = get(&addr, "/metrics");
            (code == 200 && seen(&text) >= want).then_some(text)
        });
        assert_eq!(seen(&text), want, "{text}");
        assert!(sum_of(&text, "aclprof_ops_total") > 0.0, "{text}");
    });
    let _ = exporter.kill();
    let _ = exporter.wait();
    let (ok, text) = target.stop();
    assert!(ok, "{text}");
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
