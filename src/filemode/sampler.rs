//! The host sampler: one thread, started by a session that asks for the host's resources
//! (`ACL_PROF_HOST_SYS`, `ACL_PROF_HOST_SYS_USAGE`) and joined when it stops, that reads
//! `/proc` at the session's frequency and records what it reads as host events. No thread
//! exists otherwise. Usage is computed as msprof computes it (docs/compatibility.md, "Host
//! resources"): a thread's CPU time counts for the CPU it last ran on; rates are over the
//! interval since the previous sample, timed on the real clock.

use crate::formats::host::HostEvent;
use crate::formats::host_sys::{Proc, Sample, SYS_MEM_KEYS};
use std::collections::HashMap;
use std::fs;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the session asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ask {
    pub cpu: bool,
    pub mem: bool,
    pub disk: bool,
    pub network: bool,
    pub sys_cpu: bool,
    pub sys_mem: bool,
    pub hz: u32,
}

impl Ask {
    /// From `ACL_PROF_HOST_SYS`'s and `ACL_PROF_HOST_SYS_USAGE`'s values ("cpu,mem,...").
    pub fn new(host_sys: Option<&str>, usage: Option<&str>, hz: u32) -> Ask {
        let has = |v: Option<&str>, item: &str| {
            v.is_some_and(|v| v.split(',').any(|i| i.trim().eq_ignore_ascii_case(item)))
        };
        Ask {
            cpu: has(host_sys, "cpu"),
            mem: has(host_sys, "mem"),
            disk: has(host_sys, "disk"),
            network: has(host_sys, "network"),
            sys_cpu: has(usage, "cpu"),
            sys_mem: has(usage, "mem"),
            hz: hz.clamp(1, 50),
        }
    }

    pub fn any(&self) -> bool {
        self.cpu || self.mem || self.disk || self.network || self.sys_cpu || self.sys_mem
    }
}

/// The running sampler.
pub struct Sampler {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    /// The process that started it: a forked child has no such thread to join.
    pid: u32,
}

impl Sampler {
    /// Starts sampling; `record` receives each sample. None (and one warning) if the
    /// thread cannot be made: the session goes on without host data.
    pub fn start(ask: Ask, record: fn(HostEvent)) -> Option<Sampler> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("aclprof-host".into())
            .spawn(move || run(&ask, &s, record))
            .map_err(|e| log::warn!("aclprof: host resources are not sampled: {e}"))
            .ok()?;
        Some(Sampler {
            stop,
            thread: Some(thread),
            pid: std::process::id(),
        })
    }

    /// Takes a last sample and joins the thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let Some(t) = self.thread.take() else { return };
        if self.pid != std::process::id() {
            std::mem::forget(t); // the parent's thread, not in this process
            return;
        }
        *self.stop.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.stop.1.notify_all();
        let _ = t.join();
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run(ask: &Ask, stop: &(Mutex<bool>, Condvar), record: fn(HostEvent)) {
    let period = Duration::from_secs(1) / ask.hz;
    let mut state = State::default();
    state.sample(ask, &mut |_| {}); // the baseline the first interval is measured from
    let mut next = Instant::now() + period;
    loop {
        let done = {
            let mut g = stop.0.lock().unwrap_or_else(|p| p.into_inner());
            while !*g {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                g = stop
                    .1
                    .wait_timeout(g, next - now)
                    .map_or_else(|p| p.into_inner().0, |r| r.0);
            }
            *g
        };
        state.sample(ask, &mut |s| record(HostEvent::Sys(s)));
        if done {
            return;
        }
        next += period;
        let now = Instant::now();
        if next < now {
            next = now + period; // fell behind (a loaded machine): no burst of samples
        }
    }
}

/// What the previous sample read, for the next one's differences.
#[derive(Default)]
struct State {
    at: Option<Instant>,
    threads: HashMap<u32, u64>,
    io: Option<(u64, u64)>,
    net: Option<u64>,
    stat: Vec<[u64; 8]>,
    procs: HashMap<u32, u64>,
}

/// The kernel's clock ticks per second (CLK_TCK), read once.
fn ticks_per_s() -> f64 {
    static TCK: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TCK.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            t as f64
        } else {
            100.0
        }
    })
}

/// The share of one CPU (%) that `ticks` of CPU time are over `dt` seconds.
fn cpu_share(ticks: u64, dt: f64) -> f64 {
    ticks as f64 / ticks_per_s() / dt * 100.0
}

/// One `<dir>/<id>/stat` of `/proc/self/task` or `/proc`: the thread's or process's id,
/// its directory, command, user+system CPU ticks (fields 14 and 15) and last CPU (39).
struct Stat {
    id: u32,
    path: std::path::PathBuf,
    name: String,
    ticks: u64,
    cpu: usize,
}

/// Every readable `stat` under `dir` (a thread or process that ended meanwhile is skipped).
fn stats(dir: &str) -> impl Iterator<Item = Stat> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let id = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let text = fs::read_to_string(e.path().join("stat")).ok()?;
            let (name, f) = stat_fields(&text)?;
            Some(Stat {
                id,
                path: e.path(),
                name,
                ticks: field(&f, 14) + field(&f, 15),
                cpu: field(&f, 39) as usize,
            })
        })
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).unwrap_or(4096)
}

fn cpu_count() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(
            fs::read_to_string("/proc/stat")
                .map(|s| s.lines().filter(|l| cpu_line(l).is_some()).count())
                .unwrap_or(0),
        )
}

/// A `/proc/stat` line of one CPU: its index and its first eight counters.
fn cpu_line(l: &str) -> Option<(usize, [u64; 8])> {
    let mut it = l.split_whitespace();
    let n = it.next()?.strip_prefix("cpu")?.parse().ok()?;
    let mut v = [0u64; 8];
    for x in &mut v {
        *x = it.next().and_then(|t| t.parse().ok()).unwrap_or(0);
    }
    Some((n, v))
}

/// The fields of a `/proc/<pid>/stat` line after the command's closing parenthesis (field
/// 3 of proc(5) is index 0).
fn stat_fields(text: &str) -> Option<(String, Vec<&str>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    Some((name, text.get(close + 1..)?.split_whitespace().collect()))
}

fn field(f: &[&str], n: usize) -> u64 {
    f.get(n - 3).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn meminfo() -> HashMap<String, u64> {
    fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.to_string(), v.split_whitespace().next()?.parse().ok()?))
        })
        .collect()
}

impl State {
    fn sample(&mut self, ask: &Ask, out: &mut dyn FnMut(Sample)) {
        let now = Instant::now();
        let start = crate::clock::now_ns();
        let dt = self.at.map(|a| now.duration_since(a).as_secs_f64());
        self.at = Some(now);
        let rate = |d: u64| dt.map_or(0, |dt| (d as f64 / dt.max(1e-9)) as u64);
        if ask.cpu {
            let mut cpus = vec![0.0; cpu_count()];
            let mut seen = HashMap::new();
            for t in stats("/proc/self/task") {
                let before = self.threads.get(&t.id).copied().unwrap_or(0);
                if let (Some(dt), Some(c)) = (dt, cpus.get_mut(t.cpu)) {
                    *c += cpu_share(t.ticks.saturating_sub(before), dt);
                }
                seen.insert(t.id, t.ticks);
            }
            self.threads = seen;
            if dt.is_some() {
                for c in &mut cpus {
                    *c = c.min(100.0);
                }
                out(Sample::Cpu { start, cpus });
            }
        }
        if ask.mem {
            let resident = fs::read_to_string("/proc/self/statm")
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
                .unwrap_or(0);
            let total = meminfo().get("MemTotal").copied().unwrap_or(0) * 1024;
            out(Sample::Mem {
                start,
                used: resident * page_size(),
                total,
            });
        }
        if ask.disk {
            let io = fs::read_to_string("/proc/self/io").ok().map(|s| {
                let get = |k: &str| {
                    s.lines()
                        .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
                        .unwrap_or(0)
                };
                (get("read_bytes:"), get("write_bytes:"))
            });
            if let (Some((r, w)), Some((r0, w0))) = (io, self.io) {
                out(Sample::Disk {
                    start,
                    read: rate(r.saturating_sub(r0)),
                    write: rate(w.saturating_sub(w0)),
                });
            }
            self.io = io;
        }
        if ask.network {
            let (bytes, speed) = network();
            if let Some(b0) = self.net {
                out(Sample::Net {
                    start,
                    used: rate(bytes.saturating_sub(b0)),
                    speed,
                });
            }
            self.net = Some(bytes);
        }
        if ask.sys_cpu {
            self.sys_cpu(start, out);
        }
        if ask.sys_mem {
            self.sys_mem(start, dt, out);
        }
    }

    /// The system's CPUs: each one's time shares since the last sample.
    fn sys_cpu(&mut self, start: u64, out: &mut dyn FnMut(Sample)) {
        let mut stat = Vec::new();
        for l in fs::read_to_string("/proc/stat").unwrap_or_default().lines() {
            if let Some((n, v)) = cpu_line(l) {
                stat.resize(stat.len().max(n + 1), [0; 8]);
                stat[n] = v;
            }
        }
        if self.stat.len() == stat.len() {
            let cpus = stat
                .iter()
                .zip(&self.stat)
                .map(|(now, before)| {
                    let d: Vec<f64> = (0..8)
                        .map(|i| now[i].saturating_sub(before[i]) as f64)
                        .collect();
                    let total: f64 = d.iter().sum::<f64>().max(1.0);
                    // user+nice, system, iowait, irq, softirq, idle (+steal).
                    [d[0] + d[1], d[2], d[4], d[5], d[6], d[3] + d[7]].map(|x| x / total * 100.0)
                })
                .collect();
            out(Sample::SysCpu { start, cpus });
        }
        self.stat = stat;
    }

    /// The system's memory, and each process's CPU share and memory.
    fn sys_mem(&mut self, start: u64, dt: Option<f64>, out: &mut dyn FnMut(Sample)) {
        let m = meminfo();
        let values = SYS_MEM_KEYS
            .iter()
            .map(|k| m.get(*k).copied().unwrap_or(0))
            .collect();
        out(Sample::SysMem { start, values });
        let mut procs = Vec::new();
        let mut seen = HashMap::new();
        for p in stats("/proc") {
            let cpu = match (dt, self.procs.get(&p.id)) {
                (Some(dt), Some(&t0)) => cpu_share(p.ticks.saturating_sub(t0), dt),
                _ => 0.0,
            };
            seen.insert(p.id, p.ticks);
            let statm: Vec<u64> = fs::read_to_string(p.path.join("statm"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect();
            let at = |i: usize| statm.get(i).copied().unwrap_or(0);
            procs.push(Proc {
                pid: p.id,
                name: p.name,
                cpu,
                size: at(0),
                resident: at(1),
                shared: at(2),
            });
        }
        self.procs = seen;
        if dt.is_some() {
            out(Sample::Procs { start, procs });
        }
    }
}

/// Bytes received and sent over every interface but loopback, and the fastest one's speed
/// (bytes per second; 0 when the kernel does not say).
fn network() -> (u64, u64) {
    let mut bytes = 0u64;
    let mut speed = 0u64;
    for l in fs::read_to_string("/proc/net/dev")
        .unwrap_or_default()
        .lines()
        .skip(2)
    {
        let Some((name, rest)) = l.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name == "lo" {
            continue;
        }
        let v: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        bytes += v.first().copied().unwrap_or(0) + v.get(8).copied().unwrap_or(0);
        let mbit = fs::read_to_string(format!("/sys/class/net/{name}/speed"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(0);
        speed = speed.max(u64::try_from(mbit).unwrap_or(0) * 1_000_000 / 8);
    }
    (bytes, speed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_read_the_switches_values() {
        let a = Ask::new(Some("cpu, mem,osrt"), None, 50);
        assert!(a.cpu && a.mem && !a.disk && !a.network && !a.sys_cpu);
        assert!(Ask::new(None, Some("mem"), 0).sys_mem);
        assert!(!Ask::new(None, None, 10).any());
        assert_eq!(Ask::new(None, None, 500).hz, 50);
    }

    fn thread_cpu_s() -> f64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    }

    #[test]
    fn a_busy_thread_s_cpu_time_is_counted_in_full() {
        // The thread spins until it has used 300 ms of CPU, however long that takes on a
        // loaded machine; the sample must attribute at least that much CPU time to the
        // process (a tick of rounding aside), and no more than the process used.
        let ask = Ask::new(Some("cpu"), None, 50);
        let mut state = State::default();
        let process_cpu = || {
            let text = fs::read_to_string("/proc/self/stat").unwrap();
            let (_, f) = stat_fields(&text).unwrap();
            (field(&f, 14) + field(&f, 15)) as f64 / ticks_per_s()
        };
        let p0 = process_cpu();
        state.sample(&ask, &mut |_| {});
        let t0 = state.at.unwrap();
        let c0 = thread_cpu_s();
        let mut x = 0u64;
        while thread_cpu_s() - c0 < 0.3 {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        let mut seen = Vec::new();
        state.sample(&ask, &mut |s| seen.push(s));
        let dt = state.at.unwrap().duration_since(t0).as_secs_f64();
        let p1 = process_cpu();
        let [Sample::Cpu { cpus, .. }] = &seen[..] else {
            panic!("one CPU sample expected: {seen:?}");
        };
        assert_eq!(cpus.len(), cpu_count());
        let used = cpus.iter().sum::<f64>() / 100.0 * dt;
        let tick = 1.0 / ticks_per_s();
        assert!(
            used >= 0.3 - 2.0 * tick,
            "attributed {used:.3} s of CPU, spun 0.3 s"
        );
        assert!(
            used <= p1 - p0 + 2.0 * tick,
            "attributed {used:.3} s, the process used {:.3} s",
            p1 - p0
        );
    }

    #[test]
    fn the_sampler_records_until_stopped() {
        static SEEN: Mutex<Vec<Sample>> = Mutex::new(Vec::new());
        fn keep(e: HostEvent) {
            if let HostEvent::Sys(s) = e {
                SEEN.lock().unwrap().push(s);
            }
        }
        let sampler =
            Sampler::start(Ask::new(Some("mem,disk"), Some("cpu,mem"), 50), keep).unwrap();
        // Wait for samples by counting them, not by timing.
        while SEEN.lock().unwrap().len() < 3 {
            std::thread::sleep(Duration::from_millis(5));
        }
        sampler.stop();
        let n = SEEN.lock().unwrap().len();
        let seen = SEEN.lock().unwrap();
        assert!(seen
            .iter()
            .any(|s| matches!(s, Sample::Mem { used, total, .. } if *used > 0 && *total > *used)));
        assert!(seen
            .iter()
            .any(|s| matches!(s, Sample::SysMem { values, .. } if values[0] > 0)));
        drop(seen);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(SEEN.lock().unwrap().len(), n, "a sample after stop");
    }
}
