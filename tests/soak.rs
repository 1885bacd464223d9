//! Soak: four threads subscribe, report and unsubscribe (pipe and ring), start and stop file
//! mode, and report into a long-lived model, for `ACLPROF_SOAK_SECS` seconds (30 by default;
//! `scripts/bench` runs it for 600). Resident memory and open descriptors must stay flat,
//! every call must succeed or fail only with the documented conflict, and every pipe and
//! ring subscription must deliver exactly what was reported.

use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::ffi::{c_int, c_void, CString};
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CONFLICT: i32 = 148047; // ACL_ERROR_PROF_API_CONFLICT: subscribe vs file mode

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn load(name: &str) -> u32 {
    let mut m = 0;
    let c = CString::new(name).unwrap();
    assert_eq!(unsafe { aclprofExtModelLoad(c.as_ptr(), 0, &mut m) }, 0);
    m
}

fn report(m: u32, n: u64) {
    for _ in 0..n {
        let t = aclprofExtNowNs();
        let e = unsafe { aclprofExtReportOp(m, c"soak/op".as_ptr(), c"Add".as_ptr(), t, t + 50) };
        assert_eq!(e, 0);
    }
}

/// One pipe subscription: subscribe, 100 ops, unsubscribe, read them all back.
fn pipe_round(i: u64) -> bool {
    let m = load(&format!("pipe{i}"));
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let mut w: Box<c_int> = Box::new(fds[1]);
    let cfg = unsafe {
        aclprofCreateSubscribeConfig(
            1,
            aclprofAicoreMetrics(0xFF),
            (&mut *w as *mut c_int).cast(),
        )
    };
    let e = aclprofModelSubscribe(m, cfg);
    let done = if e == 0 {
        report(m, 100);
        assert_eq!(aclprofModelUnSubscribe(m), 0);
        assert_eq!(*w, -1);
        let mut r = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), 100 * 512, "every record of the subscription");
        true
    } else {
        assert_eq!(e, CONFLICT, "subscribing while file mode runs");
        unsafe { libc::close(fds[0]) };
        unsafe { libc::close(fds[1]) };
        false
    };
    aclprofDestroySubscribeConfig(cfg);
    assert_eq!(aclprofExtModelUnload(m), 0);
    done
}

/// One ring subscription: subscribe, attach, 100 ops, unsubscribe, read to the end.
fn ring_round(i: u64) -> bool {
    let m = load(&format!("ring{i}"));
    let mut fd: c_int = -1;
    let e = unsafe { aclprofExtRingSubscribe(m, std::ptr::null(), 256, &mut fd) };
    let done = if e == 0 {
        let mut ring: *mut aclprofExtRing = std::ptr::null_mut();
        assert_eq!(
            unsafe { aclprofExtRingAttach(std::ptr::null(), fd, &mut ring) },
            0
        );
        report(m, 100);
        assert_eq!(aclprofModelUnSubscribe(m), 0);
        let mut n = 0;
        loop {
            let mut p: *const c_void = std::ptr::null();
            let mut len = 0usize;
            if unsafe { aclprofExtRingAcquire(ring, 64, 100, &mut p, &mut len) } != 0 {
                break;
            }
            n += len / 512;
            assert_eq!(aclprofExtRingRelease(ring, len), 0);
        }
        assert_eq!(aclprofExtRingDetach(ring), 0);
        assert_eq!(n, 100, "every record of the ring");
        true
    } else {
        assert_eq!(e, CONFLICT, "subscribing while file mode runs");
        false
    };
    assert_eq!(aclprofExtModelUnload(m), 0);
    done
}

/// One file-mode session of 50 ms, its output removed again (keeps the disk flat too).
fn file_round(root: &std::path::Path) {
    let rootc = CString::new(root.to_str().unwrap()).unwrap();
    let mut dev = 0u32;
    let e = unsafe { aclprofInit(rootc.as_ptr(), root.to_str().unwrap().len()) };
    if e != 0 {
        assert_eq!(e, CONFLICT, "file mode while subscribed");
        return;
    }
    let cfg = unsafe {
        aclprofCreateConfig(
            &mut dev,
            1,
            aclprofAicoreMetrics(0xFF),
            std::ptr::null(),
            0x2,
        )
    };
    assert!(!cfg.is_null());
    assert_eq!(aclprofStart(cfg), 0);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(aclprofStop(cfg), 0);
    assert_eq!(aclprofDestroyConfig(cfg), 0);
    assert_eq!(aclprofFinalize(), 0);
    for d in std::fs::read_dir(root).unwrap().flatten() {
        let _ = std::fs::remove_dir_all(d.path());
    }
}

#[test]
fn soak_memory_and_descriptors_stay_flat() {
    let secs: u64 = std::env::var("ACLPROF_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let root = std::env::temp_dir().join(format!("aclprof-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    // One round of each kind alone first, so that what the library creates once (the
    // flusher, the logger) is open before the quiet count of descriptors is taken.
    assert!(pipe_round(u64::MAX));
    assert!(ring_round(u64::MAX));
    file_round(&root);
    std::thread::sleep(Duration::from_millis(100)); // the flusher lets go of what ended
    let quiet_fds = fds();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    static ROUNDS: AtomicU64 = AtomicU64::new(0);
    let spawn = |f: fn(u64) -> bool, stop: std::sync::Arc<AtomicBool>| {
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                if f(i) {
                    ROUNDS.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
        })
    };
    let mut hs = vec![
        spawn(pipe_round, stop.clone()),
        spawn(ring_round, stop.clone()),
    ];
    let steady = load("steady");
    let s2 = stop.clone();
    hs.push(std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            report(steady, 1000);
        }
    }));
    let s3 = stop.clone();
    let root3 = root.clone();
    hs.push(std::thread::spawn(move || {
        while !s3.load(Ordering::Relaxed) {
            file_round(&root3);
            std::thread::sleep(Duration::from_millis(150));
        }
    }));
    // Warm up (thread-locals, lanes, the flusher), then sample every second. RSS moves by a
    // lane or two (8 MiB each) with the timing of file-mode sessions; a leak grows.
    std::thread::sleep(Duration::from_secs(3.min(secs)));
    let t0 = Instant::now();
    let (mut rss, mut fd) = (Vec::new(), Vec::new());
    while t0.elapsed() < Duration::from_secs(secs.saturating_sub(3)) {
        rss.push(rss_kib());
        fd.push(fds());
        std::thread::sleep(Duration::from_secs(1));
    }
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    let _ = std::fs::remove_dir_all(&root);
    let early = rss.iter().take(3).max().copied().unwrap_or(0);
    let (rss0, rss1) = (rss[0], *rss.last().unwrap());
    let (fds0, fds1) = (fd[0], *fd.last().unwrap());
    println!(
        "soak {:.0} s: {} subscription rounds; RSS {rss0} -> {rss1} KiB, fds {fds0} -> {fds1}",
        t0.elapsed().as_secs_f64(),
        ROUNDS.load(Ordering::Relaxed)
    );
    assert!(ROUNDS.load(Ordering::Relaxed) > 0);
    // A sample taken during a file-mode session holds its lanes (more under a sanitizer's
    // shadow memory); a leak raises the floor, as below for descriptors.
    let rss_floor_late = rss.iter().rev().take(5).min().copied().unwrap_or(0);
    assert!(rss_floor_late <= early + 32 * 1024, "RSS grew: {rss:?} KiB");
    // A sample sees whatever the workers hold open at that instant (a pipe, a ring, a
    // session's output files), so single samples move by several; a leak raises the floor
    // (thousands of rounds a second: even one descriptor in a thousand rounds is hundreds).
    let floor_late = fd.iter().rev().take(5).min().copied().unwrap_or(0);
    let early_max = fd.iter().take(3).max().copied().unwrap_or(0);
    assert!(floor_late <= early_max + 4, "descriptors grew: {fd:?}");
    // With every worker stopped, exactly what was open before they started. (The library's
    // flusher may hold an ended subscription for a pass or two: a leak never goes away.)
    let settle = Instant::now();
    let mut end_fds = fds();
    while end_fds > quiet_fds && settle.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
        end_fds = fds();
    }
    assert!(
        end_fds <= quiet_fds,
        "descriptors left open: {quiet_fds} before the workers, {end_fds} after"
    );
}
