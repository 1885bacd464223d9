//! What memory and host data cost, as ratios against a baseline measured in the same
//! process:
//!
//! * an allocation reported while a session records memory (`aclprofExtMemReport`, a
//!   release and an allocation per iteration), against the same pair of calls with no
//!   session, and against `malloc` + `free` of the same size;
//! * the host sampler at 50 Hz with every item (`host_sys` cpu, mem, disk, network;
//!   `host_sys_usage` cpu, mem): its thread's CPU time over the session's wall time.
//!
//!   cargo bench --bench memory [-- ITERATIONS SAMPLER_SECONDS]

use aclprof::ffi::ext_mem::{aclprofExtMemEvent, aclprofExtMemReport, ACLPROF_EXT_MEM_OPERATOR};
use aclprof::ffi::prof::*;
use aclprof::formats::acl_prof::{ACL_PROF_TASK_MEMORY, ACL_PROF_TASK_TIME};
use std::time::{Duration, Instant};

fn report_pairs(n: u64) -> f64 {
    let owner = c"conv1";
    let mut ev = aclprofExtMemEvent {
        deviceId: 0,
        pool: ACLPROF_EXT_MEM_OPERATOR,
        addr: 0x1000,
        size: 4096,
        owner: owner.as_ptr(),
        totalAllocated: 0,
        totalReserved: 0,
        timeNs: 0,
    };
    let t = Instant::now();
    for _ in 0..n {
        ev.size = 4096;
        // SAFETY: a valid event with a C-string owner.
        assert_eq!(unsafe { aclprofExtMemReport(&ev) }, 0);
        ev.size = -4096;
        // SAFETY: as above.
        assert_eq!(unsafe { aclprofExtMemReport(&ev) }, 0);
    }
    t.elapsed().as_nanos() as f64 / (2 * n) as f64
}

fn malloc_pairs(n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: malloc/free of a fresh block.
        unsafe {
            let p = libc::malloc(4096);
            std::hint::black_box(p);
            libc::free(p);
        }
    }
    t.elapsed().as_nanos() as f64 / (2 * n) as f64
}

/// A file-mode session with `data_type`, and `settings` (aclprofSetConfig), around `body`.
fn session(dir: &std::path::Path, data_type: u64, settings: &[(i32, &str)], body: impl FnOnce()) {
    let path = dir.to_str().unwrap();
    // SAFETY: valid strings and lengths; the config is destroyed once.
    unsafe {
        assert_eq!(aclprofInit(path.as_ptr().cast(), path.len()), 0);
        for (ty, v) in settings {
            assert_eq!(
                aclprofSetConfig(aclprofConfigType(*ty), v.as_ptr().cast(), v.len()),
                0
            );
        }
        let mut devices = [0u32];
        let config = aclprofCreateConfig(
            devices.as_mut_ptr(),
            1,
            aclprofAicoreMetrics(0xFF),
            std::ptr::null(),
            data_type,
        );
        assert!(!config.is_null());
        assert_eq!(aclprofStart(config), 0);
        body();
        assert_eq!(aclprofStop(config), 0);
        assert_eq!(aclprofDestroyConfig(config), 0);
        assert_eq!(aclprofFinalize(), 0);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time of this process's thread named `name`, seconds (0 if there is none).
fn thread_cpu(name: &str) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let f: Vec<u64> = after
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        return (f[11] + f[12]) as f64 / tck;
    }
    0.0
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(200_000);
    let secs = args.get(1).copied().unwrap_or(5);
    let dir = std::env::temp_dir().join(format!("aclprof-bench-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // Rounds alternate the three, so a loaded machine slows them alike.
    let (mut off, mut on, mut base) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        base.push(malloc_pairs(n));
        off.push(report_pairs(n));
        session(&dir, ACL_PROF_TASK_TIME | ACL_PROF_TASK_MEMORY, &[], || {
            on.push(report_pairs(n));
        });
    }
    let (off, on, base) = (median(off), median(on), median(base));
    println!(
        "allocation event, memory recorded: {on:.1} ns ({:.1} x malloc+free's {base:.1} ns per call); \
         no session: {off:.1} ns ({:.1} x)",
        on / base,
        off / base
    );

    // The sampler at 50 Hz for `secs` seconds: this process's items, then every item.
    use aclprof::formats::prof_values::config_type as ct;
    let asks: [(&str, &[(i32, &str)]); 2] = [
        (
            "host_sys cpu,mem,disk,network",
            &[(ct::HOST_SYS, "cpu,mem,disk,network")],
        ),
        (
            "and host_sys_usage cpu,mem (every process of the machine)",
            &[
                (ct::HOST_SYS, "cpu,mem,disk,network"),
                (ct::HOST_SYS_USAGE, "cpu,mem"),
                (ct::HOST_SYS_USAGE_FREQ, "50"),
            ],
        ),
    ];
    for (what, settings) in asks {
        let mut share = 0.0;
        session(&dir, ACL_PROF_TASK_TIME, settings, || {
            let t = Instant::now();
            // Let it run; read its CPU time just before the stop.
            std::thread::sleep(Duration::from_secs(secs));
            share = thread_cpu("aclprof-host") / t.elapsed().as_secs_f64();
        });
        println!(
            "host sampler at 50 Hz, {what}: {:.2} % of one CPU over {secs} s",
            100.0 * share
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
