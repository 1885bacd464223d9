//! Hot-path benchmarks, each printed next to a baseline measured in the same run (the goals
//! are in docs/performance.md).
//!
//!   cargo bench --bench hotpaths            (or scripts/bench, which adds the C baselines)
//!
//! Baselines measured here: T_clk = clock_gettime(CLOCK_MONOTONIC) (vDSO); T_cpy512 = a
//! 512-byte memcpy with 1 MiB source and destination (L3-resident); the raw pipe = one
//! writer thread writing 4 KiB batches of 512-byte records into a default 64 KiB pipe, one
//! reader reading 64 KiB and touching one word of every 64-byte line of every record (the C
//! harness's pipebench "batch" mode, in-process); the raw ring = an SPSC ring of 512-byte
//! records with indices published every 16 records (the harness's shmring, in-process).
//!
//! Readers of aclprof do what CANN's samples do: the pipe reader reads 64 KiB and calls
//! aclprofGetOpNum (which verifies every record); the ring reader runs in a second process
//! (this binary, exec'd) attached through /proc/<pid>/fd/<fd>, acquires up to 256 records
//! at a time and touches one word of every 64-byte line, as the harness's reader does.

use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::ffi::{c_int, c_void};
use std::hint::black_box;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The p50 and p99 of `v`.
fn p50_p99(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[v.len() * 99 / 100])
}

/// Median over `runs` of ns per iteration of `f(iters)`.
fn ns_per(runs: usize, iters: u64, mut f: impl FnMut(u64)) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f(iters);
                t.elapsed().as_nanos() as f64 / iters as f64
            })
            .collect(),
    )
}

fn t_clk() -> f64 {
    ns_per(7, 2_000_000, |n| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        for _ in 0..n {
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
            black_box(&ts);
        }
    })
}

fn t_cpy512() -> f64 {
    const WS: usize = 1 << 20;
    let src = vec![1u8; WS];
    let mut dst = vec![0u8; WS];
    ns_per(7, 2_000_000, |n| {
        let mut off = 0;
        for _ in 0..n {
            dst[off..off + 512].copy_from_slice(black_box(&src[off..off + 512]));
            off = (off + 512 + 64) % (WS - 512);
        }
        black_box(&dst);
    })
}

fn pipe() -> (std::fs::File, c_int) {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    (unsafe { std::fs::File::from_raw_fd(fds[0]) }, fds[1])
}

static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// CANN's reader thread: reads 64 KiB, counts (and so verifies) the records with
/// aclprofGetOpNum. Returns the bytes read.
fn drain(mut r: std::fs::File) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut total = 0u64;
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => return total,
                Ok(n) => {
                    let mut num = 0u32;
                    let e = unsafe { aclprofGetOpNum(buf.as_ptr().cast(), n, &mut num) };
                    assert_eq!((e, num as usize * 512), (0, n), "whole, valid records");
                    total += n as u64;
                    READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    })
}

/// The harness's decode: one word from every 64-byte line of a record.
#[inline]
fn touch(rec: &[u8]) -> u64 {
    (0..512).step_by(64).map(|o| rec[o] as u64).sum()
}

/// Raw baseline for T4: an SPSC ring of 512-byte records in shared memory between two
/// threads, indices published every 16 records (the harness's shmring, in-process).
fn raw_ring(records: u64, ring_bytes: usize) -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let cap = (ring_bytes / 512) as u64;
    let mut mem = vec![0u8; ring_bytes];
    // Shared between the two threads by address; `mem` outlives both (joined below).
    let base = mem.as_mut_ptr() as usize;
    let head = Arc::new(AtomicU64::new(0));
    let tail = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let (h2, t2) = (head.clone(), tail.clone());
    let consumer = std::thread::spawn(move || {
        let (mut t, mut h, mut sum) = (0u64, 0u64, 0u64);
        while t < records {
            while t == h {
                h = h2.load(Ordering::Acquire);
            }
            let rec = (base + (t % cap) as usize * 512) as *const u8;
            sum += touch(unsafe { std::slice::from_raw_parts(rec, 512) });
            t += 1;
            if t % 16 == 0 || t == h {
                t2.store(t, Ordering::Release);
            }
        }
        sum
    });
    let rec = [7u8; 512];
    let (mut h, mut cached_tail) = (0u64, 0u64);
    while h < records {
        while h - cached_tail >= cap {
            cached_tail = tail.load(Ordering::Acquire);
        }
        unsafe {
            std::ptr::copy_nonoverlapping(
                rec.as_ptr(),
                (base + (h % cap) as usize * 512) as *mut u8,
                512,
            )
        };
        h += 1;
        if h % 16 == 0 || h == records {
            head.store(h, Ordering::Release);
        }
    }
    black_box(consumer.join().unwrap());
    black_box(&mut mem);
    records as f64 / t.elapsed().as_secs_f64()
}

/// A reader thread that drains a ring subscription through the C reader API.
fn ring_reader(fd: c_int) -> std::thread::JoinHandle<u64> {
    let mut ring: *mut aclprofExtRing = std::ptr::null_mut();
    assert_eq!(
        unsafe { aclprofExtRingAttach(std::ptr::null(), fd, &mut ring) },
        0
    );
    let ring = ring as usize;
    std::thread::spawn(move || {
        let ring = ring as *mut aclprofExtRing;
        let mut n = 0u64;
        loop {
            let mut p: *const c_void = std::ptr::null();
            let mut len = 0usize;
            let e = unsafe { aclprofExtRingAcquire(ring, 256, 100, &mut p, &mut len) };
            if e != 0 {
                break;
            }
            if len > 0 {
                black_box(unsafe { aclprofGetOpStart(p, len, 0) });
                n += (len / 512) as u64;
                aclprofExtRingRelease(ring, len);
            }
        }
        aclprofExtRingDetach(ring);
        n
    })
}

/// T4's reader: this binary exec'd with `--ring-reader PATH [opnum]`, attached to the ring
/// through /proc/<pid>/fd/<fd>. It reads each record's first bytes, with `opnum` after
/// calling `aclprofGetOpNum` on the batch, as CANN's samples do. Prints how many records
/// it read.
fn ring_reader_child(path: &str, opnum: bool) {
    let c = std::ffi::CString::new(path).unwrap();
    let mut ring: *mut aclprofExtRing = std::ptr::null_mut();
    assert_eq!(
        unsafe { aclprofExtRingAttach(c.as_ptr(), -1, &mut ring) },
        0
    );
    let (mut n, mut sum) = (0u64, 0u64);
    loop {
        let mut p: *const c_void = std::ptr::null();
        let mut len = 0usize;
        let e = unsafe { aclprofExtRingAcquire(ring, 256, 1000, &mut p, &mut len) };
        if e != 0 {
            break;
        }
        if len > 0 {
            if opnum {
                let mut k = 0u32;
                assert_eq!(unsafe { aclprofGetOpNum(p, len, &mut k) }, 0);
                assert_eq!(k as usize, len / 512);
            }
            let recs = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
            sum += recs.chunks_exact(512).map(touch).sum::<u64>();
            n += (len / 512) as u64;
            aclprofExtRingRelease(ring, len);
        }
    }
    aclprofExtRingDetach(ring);
    black_box(sum);
    println!("{n}");
}

/// Starts T4's reader process on the ring `fd` of this process.
fn spawn_ring_reader(fd: c_int) -> std::process::Child {
    spawn_ring_reader_as(fd, "touch")
}

fn spawn_ring_reader_as(fd: c_int, how: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--ring-reader")
        .arg(format!("/proc/{}/fd/{fd}", std::process::id()))
        .arg(how)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn child_count(c: std::process::Child) -> u64 {
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Raw baseline: records/s through a pipe with 4 KiB batched writes (pipebench batch).
fn raw_pipe(records: u64) -> f64 {
    let (mut r, w) = pipe();
    let t = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let (mut total, mut sum) = (0u64, 0u64);
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    sum += buf[..n].chunks_exact(512).map(touch).sum::<u64>();
                    total += n as u64;
                }
            }
        }
        black_box(sum);
        total
    });
    let mut rec = [7u8; 512];
    let mut batch = vec![0u8; 4096];
    let mut sent = 0u64;
    while sent < records {
        for (i, chunk) in batch.chunks_exact_mut(512).enumerate() {
            rec[..8].copy_from_slice(&(sent + i as u64).to_le_bytes());
            chunk.copy_from_slice(&rec);
        }
        let mut off = 0;
        while off < batch.len() {
            let n = unsafe { libc::write(w, batch[off..].as_ptr().cast(), batch.len() - off) };
            assert!(n > 0);
            off += n as usize;
        }
        sent += 8;
    }
    unsafe { libc::close(w) };
    assert_eq!(reader.join().unwrap(), sent * 512);
    sent as f64 / t.elapsed().as_secs_f64()
}

struct Subscribed {
    model: u32,
    fd: Box<c_int>,
    cfg: *mut aclprofSubscribeConfig,
    reader: Option<std::thread::JoinHandle<u64>>,
}

/// A subscribe config for the fd in `fd` (boxed: the library keeps its address).
fn new_sub_config(fd: &mut Box<c_int>) -> *mut aclprofSubscribeConfig {
    unsafe {
        aclprofCreateSubscribeConfig(
            1,
            aclprofAicoreMetrics(0xFF),
            (&mut **fd as *mut c_int).cast(),
        )
    }
}

fn subscribe(model: u32) -> Subscribed {
    let (r, w) = pipe();
    let mut fd = Box::new(w);
    let cfg = new_sub_config(&mut fd);
    assert_eq!(aclprofModelSubscribe(model, cfg), 0);
    Subscribed {
        model,
        fd,
        cfg,
        reader: Some(drain(r)),
    }
}

impl Subscribed {
    fn finish(mut self) -> u64 {
        assert_eq!(aclprofModelUnSubscribe(self.model), 0);
        assert_eq!(*self.fd, -1);
        aclprofDestroySubscribeConfig(self.cfg);
        self.reader.take().unwrap().join().unwrap() / 512
    }
}

fn report_loop(model: u32, n: u64) {
    let base = aclprofExtNowNs();
    for i in 0..n {
        let s = base + i * 1000;
        unsafe {
            aclprofExtReportOp(
                model,
                c"resnet50/layer3/block4/conv2/Conv2D".as_ptr(),
                c"Conv2D".as_ptr(),
                s,
                s + 700,
            )
        };
    }
}

/// The same records from a plain producer: an SPSC ring of 512-byte records (1 MiB) read by
/// another thread, each record copied from a template and its index and times written,
/// published one by one; `bursts` bursts of `burst` records, each followed by `pause`.
/// Returns the p50 and p99 over bursts of the per-record time.
fn raw_ring_bursts(bursts: usize, burst: u64, pause: Duration) -> (f64, f64) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    const CAP: u64 = 2048;
    let mut mem = vec![0u8; CAP as usize * 512];
    let base = mem.as_mut_ptr() as usize; // outlives the consumer (joined below)
    let head = Arc::new(AtomicU64::new(0));
    let tail = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (h2, t2, d2) = (head.clone(), tail.clone(), done.clone());
    let consumer = std::thread::spawn(move || {
        let (mut t, mut sum) = (0u64, 0u64);
        loop {
            let h = h2.load(Ordering::Acquire);
            if t == h {
                if d2.load(Ordering::Acquire) && h2.load(Ordering::Acquire) == t {
                    return sum;
                }
                std::hint::spin_loop();
                continue;
            }
            while t < h {
                let rec = (base + (t % CAP) as usize * 512) as *const u8;
                sum += touch(unsafe { std::slice::from_raw_parts(rec, 512) });
                t += 1;
            }
            t2.store(t, Ordering::Release);
        }
    });
    let mut template = [0u8; 512];
    template[..35].copy_from_slice(b"resnet50/layer3/block4/conv2/Conv2D");
    let (mut h, mut cached_tail) = (0u64, 0u64);
    let mut v = Vec::with_capacity(bursts);
    for _ in 0..bursts {
        let t0 = Instant::now();
        for _ in 0..burst {
            while h - cached_tail >= CAP {
                cached_tail = tail.load(Ordering::Acquire);
            }
            let slot = (base + (h % CAP) as usize * 512) as *mut u8;
            let rec = unsafe { std::slice::from_raw_parts_mut(slot, 512) };
            rec.copy_from_slice(black_box(&template));
            let now = h * 1000;
            rec[300..308].copy_from_slice(&h.to_le_bytes());
            rec[308..316].copy_from_slice(&now.to_le_bytes());
            rec[316..324].copy_from_slice(&(now + 700).to_le_bytes());
            h += 1;
            head.store(h, Ordering::Release);
        }
        v.push(t0.elapsed().as_nanos() as f64 / burst as f64);
        std::thread::sleep(pause);
    }
    done.store(true, Ordering::Release);
    black_box(consumer.join().unwrap());
    drop(mem);
    p50_p99(v)
}

/// aclprof's side of [`raw_ring_bursts`]: the same pattern of reports into a ring
/// subscription read by another thread. Returns the p50 and p99 per-op time over bursts.
fn lib_ring_bursts(model: u32, bursts: usize, burst: u64, pause: Duration) -> (f64, f64) {
    let fd = ring_subscribe(model, 2048);
    let reader = ring_reader(fd);
    let mut v = Vec::with_capacity(bursts);
    for _ in 0..bursts {
        let t0 = Instant::now();
        report_loop(model, burst);
        v.push(t0.elapsed().as_nanos() as f64 / burst as f64);
        std::thread::sleep(pause);
    }
    assert_eq!(aclprofModelUnSubscribe(model), 0);
    assert_eq!(
        reader.join().unwrap(),
        bursts as u64 * burst,
        "every record read"
    );
    p50_p99(v)
}

/// Producer cost while the reader keeps up: bursts of `burst` ops (well below the staging
/// capacity), each followed by aclprofExtFlush outside the timing. Returns the amortized,
/// p50 and p99 per-op cost over the bursts (a burst's time / its ops).
fn report_bursts(model: u32, bursts: usize, burst: u64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = Vec::with_capacity(bursts);
    for _ in 0..bursts {
        let t = Instant::now();
        report_loop(model, burst);
        v.push(t.elapsed().as_nanos() as f64 / burst as f64);
        assert_eq!(aclprofExtFlush(), 0);
    }
    let amortized = v.iter().sum::<f64>() / v.len() as f64;
    let (p50, p99) = p50_p99(v);
    (amortized, p50, p99)
}

fn ring_subscribe(model: u32, capacity: u32) -> c_int {
    let mut fd: c_int = -1;
    assert_eq!(
        unsafe { aclprofExtRingSubscribe(model, std::ptr::null(), capacity, &mut fd) },
        0
    );
    fd
}

/// Reports `per` ops from each of `threads` threads; returns the wall time.
fn report_threads(model: u32, threads: u64, per: u64) -> f64 {
    let t = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|_| std::thread::spawn(move || report_loop(model, per)))
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    t.elapsed().as_secs_f64()
}

/// CPU time of this process so far, in seconds.
fn process_cpu() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--ring-reader") {
        return ring_reader_child(&args[i + 1], args.get(i + 2).is_some_and(|a| a == "opnum"));
    }
    if args.iter().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes: nothing to test here
    }
    let clk = t_clk();
    let cpy = t_cpy512();
    println!("baselines (this run): T_clk = {clk:.1} ns, T_cpy512 (L3) = {cpy:.1} ns");

    // The signature of one record (CANN's CRC-32C register over bytes 4..512): signing a
    // record just built (producer), and verifying one (reader: the zero bytes are checked).
    let recs: Vec<aclprof::formats::record::Record> = (0..2048u64)
        .map(|i| {
            let mut r = [0u8; 512];
            let f = aclprof::formats::record::OpFields {
                op_index: i,
                start: i * 1000,
                end: i * 1000 + 700,
                ..Default::default()
            };
            aclprof::formats::record::encode(
                &mut r,
                &f,
                b"resnet50/layer3/block4/conv2/Conv2D",
                b"Conv2D",
            );
            aclprof::formats::record::sign(&mut r);
            r
        })
        .collect();
    let sign = ns_per(7, 2_000_000, |n| {
        let mut acc = 0u32;
        for k in 0..n {
            acc ^=
                aclprof::formats::record::fresh_signature_of(black_box(&recs[(k % 2048) as usize]));
        }
        black_box(acc);
    });
    let verify = ns_per(7, 2_000_000, |n| {
        let mut acc = 0u32;
        for k in 0..n {
            acc ^= aclprof::formats::record::signature_of(black_box(&recs[(k % 2048) as usize]));
        }
        black_box(acc);
    });
    println!(
        "SIG signature of one record: sign {sign:.1} ns = {:.2} x T_cpy512 (goal <= 1 x); verify {verify:.1} ns = {:.2} x",
        sign / cpy,
        verify / cpy
    );

    // Batch decode: aclprofExtDecodeOps over 1 MiB of records (L3-resident).
    let flat: Vec<u8> = recs.iter().flatten().copied().collect();
    let mut ops: Vec<aclprofExtOp> = Vec::with_capacity(2048);
    let dec = ns_per(7, 200, |n| {
        for _ in 0..n {
            let mut cnt = 0u32;
            let e = unsafe {
                aclprofExtDecodeOps(
                    flat.as_ptr().cast(),
                    flat.len(),
                    ops.as_mut_ptr(),
                    2048,
                    &mut cnt,
                )
            };
            assert_eq!((e, cnt), (0, 2048));
            black_box(ops.as_ptr());
        }
    }) / 2048.0;
    println!(
        "R1b batch decode (aclprofExtDecodeOps), per record: {dec:.1} ns = {:.2} x T_cpy512   (goal <= 1.5 x)",
        dec / cpy
    );

    let mut model = 0u32;
    assert_eq!(
        unsafe { aclprofExtModelLoad(c"bench".as_ptr(), 0, &mut model) },
        0
    );

    // R1: the eight CANN accessor calls on one record, records cycling through a buffer.
    let len = flat.len();
    let p = flat.as_ptr() as *const c_void;
    let r1 = ns_per(7, 200_000, |n| unsafe {
        let mut name = [0i8; 64];
        let mut ty = [0i8; 16];
        for k in 0..n {
            let i = (k % 2048) as u32;
            let mut l = 0usize;
            aclprofGetOpNameLen(p, len, i, &mut l);
            aclprofGetOpName(p, len, i, name.as_mut_ptr(), l);
            aclprofGetOpTypeLen(p, len, i, &mut l);
            aclprofGetOpType(p, len, i, ty.as_mut_ptr(), l);
            black_box(aclprofGetOpStart(p, len, i));
            black_box(aclprofGetOpEnd(p, len, i));
            black_box(aclprofGetOpDuration(p, len, i));
            black_box(aclprofGetModelId(p, len, i));
            black_box(&name);
        }
    });
    println!(
        "R1 the 8 accessor calls on one record: {r1:.1} ns = {:.2} x T_cpy512   (goal <= 4 x)",
        r1 / cpy
    );

    // P1: nobody subscribed.
    let p1 = ns_per(7, 5_000_000, |n| report_loop(model, n));
    println!(
        "P1 report, no subscriber:        {p1:6.2} ns/op = {:.3} x T_clk   (goal <= 0.1 x)",
        p1 / clk
    );

    // P4: a pipe subscriber whose reader keeps up.
    let s = subscribe(model);
    report_bursts(model, 50, 1024); // warm up the lane
    let (amortized, p50, p99) = report_bursts(model, 1000, 1024);
    let got = s.finish();
    assert!(got > 0);
    println!(
        "P4 report, pipe subscriber: {amortized:.1} ns/op = {:.2} x T_clk (bursts of 1024, mean; write() included); \
         burst p50 {p50:.1} ns ({:.2} x), p99 {p99:.1} ns   (goal <= 1.5 x)",
        amortized / clk,
        p50 / clk
    );

    // P2: a ring subscriber whose reader keeps up.
    let fd = ring_subscribe(model, 2048);
    let reader = ring_reader(fd);
    report_bursts(model, 50, 1024);
    let (ramort, r50, r99) = report_bursts(model, 1000, 1024);
    assert_eq!(aclprofModelUnSubscribe(model), 0);
    reader.join().unwrap();
    println!(
        "P2 report, ring subscriber: {ramort:.1} ns/op = {:.2} x T_clk (mean); burst p50 {r50:.1} ns ({:.2} x), \
         p99 {r99:.1} ns ({:.2} x)   (goal p50 <= 1 x, p99 <= 5 x)",
        ramort / clk,
        r50 / clk,
        r99 / clk
    );

    // P2 in the pattern a model execution reports: bursts of 125 ops, 300 us apart, against
    // a plain producer writing the same records into a ring in the same pattern.
    let pause = Duration::from_micros(300);
    raw_ring_bursts(100, 125, pause);
    let (raw50, raw99) = raw_ring_bursts(2000, 125, pause);
    let (lib50, lib99) = lib_ring_bursts(model, 2000, 125, pause);
    println!(
        "P2b bursts of 125 ops 300 us apart, ring subscriber: p50 {lib50:.1} ns/op = {:.2} x T_clk, \
         p99 {lib99:.1} ns; a plain producer writing the same records into a ring: p50 {raw50:.1} ns, \
         p99 {raw99:.1} ns; aclprof / plain = {:.2} x (p50)",
        lib50 / clk,
        lib50 / raw50
    );

    // T4: ring throughput, the reader in another process; library (2048-record lanes =
    // 1 MiB) vs a raw in-process SPSC ring of 1 MiB.
    const NR: u64 = 4_000_000;
    let through_ring = |how: &str| {
        let fd = ring_subscribe(model, 2048);
        let child = spawn_ring_reader_as(fd, how);
        std::thread::sleep(Duration::from_millis(100)); // attached before we start
        let t = Instant::now();
        report_loop(model, NR);
        assert_eq!(aclprofModelUnSubscribe(model), 0);
        assert_eq!(child_count(child), NR, "every record through the ring");
        NR as f64 / t.elapsed().as_secs_f64()
    };
    let (mut lib_r, mut lib_n, mut raw_r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        raw_r.push(raw_ring(NR, 1 << 20));
        lib_r.push(through_ring("touch"));
        lib_n.push(through_ring("opnum"));
    }
    let (lib_r, lib_n, raw_r) = (median(lib_r), median(lib_n), median(raw_r));
    println!(
        "T4 ring throughput (512 B, 1 MiB, reader in another process): aclprof {:.2} M rec/s, raw SPSC ring {:.2} M rec/s = {:.2} x   (goal >= 0.7 x)",
        lib_r / 1e6,
        raw_r / 1e6,
        lib_r / raw_r
    );
    println!(
        "T4b the same, the reader calling aclprofGetOpNum on each batch as CANN's samples do: aclprof {:.2} M rec/s = {:.2} x the raw ring   (goal >= 0.7 x)",
        lib_n / 1e6,
        lib_n / raw_r
    );

    // T1: end-to-end pipe throughput, library vs raw batched writes, back to back.
    const N: u64 = 2_000_000;
    let mut lib = Vec::new();
    let mut raw = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..5 {
        raw.push(raw_pipe(N));
        READS.store(0, std::sync::atomic::Ordering::Relaxed);
        let s = subscribe(model);
        let t = Instant::now();
        report_loop(model, N);
        let got = s.finish();
        assert_eq!(got, N, "every record delivered");
        lib.push(N as f64 / t.elapsed().as_secs_f64());
        reads.push(N as f64 / READS.load(std::sync::atomic::Ordering::Relaxed).max(1) as f64);
    }
    let (lib, raw) = (median(lib), median(raw));
    println!(
        "T1 pipe throughput (512 B, 4 KiB writes, 64 KiB pipe): aclprof {:.2} M rec/s, raw {:.2} M rec/s = {:.2} x   (goal >= 0.8 x)",
        lib / 1e6,
        raw / 1e6,
        lib / raw
    );
    println!(
        "R2 records per read() of the pipe reader (64 KiB reads): {:.1}   (goal >= 64)",
        median(reads)
    );

    // Scaling: 1, 2, 4 reporting threads into one subscription (goal: >= 0.8 x one thread).
    for (what, ring) in [("pipe", false), ("ring", true)] {
        let mut one = 0.0;
        let mut row = String::new();
        for threads in [1u64, 2, 4] {
            let per = N / threads;
            let rate = if ring {
                let fd = ring_subscribe(model, 2048);
                let child = spawn_ring_reader(fd);
                std::thread::sleep(Duration::from_millis(100));
                let secs = report_threads(model, threads, per);
                assert_eq!(aclprofModelUnSubscribe(model), 0);
                assert_eq!(child_count(child), per * threads);
                (per * threads) as f64 / secs
            } else {
                let s = subscribe(model);
                let t = Instant::now();
                report_threads(model, threads, per);
                let got = s.finish();
                assert_eq!(got, per * threads);
                got as f64 / t.elapsed().as_secs_f64()
            };
            if threads == 1 {
                one = rate;
            }
            row += &format!(
                "  {threads} thr {:.2} M/s ({:.2} x)",
                rate / 1e6,
                rate / one
            );
        }
        println!("SCALE {what}:{row}   (goal >= 0.8 x)");
    }

    // P6: the main example's model (ResNet-50) run with and without a pipe subscriber: the
    // executing thread's CPU time per execution, as a share of the execution's wall time.
    let path = std::ffi::CString::new(concat!(env!("CARGO_MANIFEST_DIR"), "/models/resnet50.json"))
        .unwrap();
    let mut sim = 0u32;
    assert_eq!(
        unsafe { aclprofExtSimModelLoad(path.as_ptr(), &mut sim) },
        0
    );
    let thread_cpu = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
    };
    let run = |n: u32| {
        let (c0, t0) = (thread_cpu(), Instant::now());
        for _ in 0..n {
            assert_eq!(aclprofExtSimModelExecute(sim), 0);
        }
        (
            (thread_cpu() - c0) / n as f64,
            t0.elapsed().as_nanos() as f64 / n as f64,
        )
    };
    run(20);
    let (cpu_off, wall) = run(200);
    let s = subscribe(sim);
    let (cpu_on, _) = run(200);
    s.finish();
    println!(
        "P6 ResNet-50 execution ({:.2} ms, 125 ops): executing thread CPU {:.1} us without a subscriber, {:.1} us with \
         a pipe subscriber: +{:.2} % of the execution   (goal <= 1 % at 100 k ops/s)",
        wall / 1e6,
        cpu_off / 1e3,
        cpu_on / 1e3,
        100.0 * (cpu_on - cpu_off) / wall
    );

    // Idle: 100 subscriptions with no traffic cost nothing (no thread polls).
    let mut idle = Vec::new();
    for i in 0..100 {
        let mut m = 0u32;
        let name = std::ffi::CString::new(format!("idle{i}")).unwrap();
        assert_eq!(unsafe { aclprofExtModelLoad(name.as_ptr(), 0, &mut m) }, 0);
        idle.push(subscribe(m));
    }
    let c0 = process_cpu();
    std::thread::sleep(Duration::from_secs(2));
    let idle_cpu = (process_cpu() - c0) / 2.0;
    for s in idle {
        s.finish();
    }
    println!(
        "IDLE 100 idle pipe subscriptions: {:.3} % of a core   (goal < 1 %)",
        100.0 * idle_cpu
    );

    // Many short subscriptions: subscribe, 15 ops, unsubscribe, 1500 times.
    let t = Instant::now();
    for i in 0..1500 {
        let mut m = 0u32;
        let name = std::ffi::CString::new(format!("short{i}")).unwrap();
        assert_eq!(unsafe { aclprofExtModelLoad(name.as_ptr(), 0, &mut m) }, 0);
        let s = subscribe(m);
        report_loop(m, 15);
        assert_eq!(s.finish(), 15);
        assert_eq!(aclprofExtModelUnload(m), 0);
    }
    println!(
        "MANY 1500 subscriptions of 15 ops each (subscribe, report, unsubscribe, read): {:.2} s   (goal < 5 s)",
        t.elapsed().as_secs_f64()
    );
}
