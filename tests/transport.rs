//! The data path through the public C API, under the conditions that tear records or lose
//! them in naive designs: two subscriptions writing into one pipe or one stream socket, a
//! reader slow enough that every write meets a full fd (non-blocking, `EAGAIN`, partial
//! writes on sockets), and many threads at once. Every byte that arrives must be a whole,
//! valid record, every stream in order, and reported = delivered.

use aclprof::ffi::ext::*;
use aclprof::ffi::prof::*;
use std::collections::HashMap;
use std::ffi::c_int;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::time::Duration;

const REC: usize = 512;

/// The delivery statistics are process-wide: tests that read them run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn model(name: &str) -> u32 {
    let mut m = 0;
    let c = std::ffi::CString::new(name).unwrap();
    assert_eq!(unsafe { aclprofExtModelLoad(c.as_ptr(), 0, &mut m) }, 0);
    m
}

fn report(m: u32, n: u64, tag: u64) {
    for i in 0..n {
        let name = std::ffi::CString::new(format!("t{tag}/op{i}")).unwrap();
        let e =
            unsafe { aclprofExtReportOp(m, name.as_ptr(), c"Add".as_ptr(), i * 10, i * 10 + 5) };
        assert_eq!(e, 0);
    }
}

/// Subscribes every model in `models` to the fd in `*fd` (which must outlive the
/// subscriptions), reports `per` ops from two threads per model, unsubscribes, and returns
/// the configs to destroy.
fn run_producers(models: &[u32], fd: &mut c_int, per: u64) -> Vec<*mut aclprofSubscribeConfig> {
    let cfgs: Vec<_> = models
        .iter()
        .map(|&m| {
            let c = unsafe {
                aclprofCreateSubscribeConfig(
                    1,
                    aclprofAicoreMetrics(0xFF),
                    (fd as *mut c_int).cast(),
                )
            };
            assert_eq!(aclprofModelSubscribe(m, c), 0);
            c
        })
        .collect();
    let hs: Vec<_> = models
        .iter()
        .flat_map(|&m| [(m, 0u64), (m, 1u64)])
        .map(|(m, t)| std::thread::spawn(move || report(m, per, t)))
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    for &m in models {
        assert_eq!(aclprofModelUnSubscribe(m), 0);
    }
    cfgs
}

fn stats() -> aclprofExtStats {
    let mut s = aclprofExtStats {
        recordsReported: 0,
        recordsDelivered: 0,
        recordsDropped: 0,
        bytesWritten: 0,
    };
    assert_eq!(unsafe { aclprofExtGetStats(&mut s) }, 0);
    s
}

/// A reader thread that reads `size` bytes at a time, hands each read to `check` (with its
/// number), pauses for `pause` every `every` reads, and returns everything it read.
fn slow_reader(
    mut r: std::fs::File,
    size: usize,
    every: u64,
    pause: Duration,
    check: impl Fn(u64, &[u8]) + Send + 'static,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = vec![0u8; size];
        let mut reads = 0u64;
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    check(reads, &buf[..n]);
                    all.extend_from_slice(&buf[..n]);
                    reads += 1;
                    if reads % every == 0 {
                        std::thread::sleep(pause);
                    }
                }
                Err(e) => panic!("{e}"),
            }
        }
        all
    })
}

/// Checks a byte stream of records: whole, valid, each (pid, thread) stream in order.
fn check_stream(bytes: &[u8]) -> usize {
    assert_eq!(bytes.len() % REC, 0, "a torn record at the end");
    let mut num = 0u32;
    assert_eq!(
        unsafe { aclprofGetOpNum(bytes.as_ptr().cast(), bytes.len(), &mut num) },
        0
    );
    let mut last: HashMap<(u32, u32), u64> = HashMap::new();
    for rec in bytes.chunks_exact(REC) {
        let v = aclprof::formats::record::View(rec.try_into().unwrap());
        let key = (v.model_id(), v.thread_id());
        if let Some(&prev) = last.get(&key) {
            assert!(v.op_index() > prev, "stream {key:?} out of order");
        }
        last.insert(key, v.op_index());
    }
    num as usize
}

#[test]
fn two_subscriptions_share_a_pipe_and_a_slow_reader_never_sees_a_torn_record() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let r = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    let mut w: c_int = fds[1];
    // Reads of 13 records (a multiple of the record size, not of the 4 KiB writes), pausing
    // now and then so the pipe fills and writers meet EAGAIN; every read is whole records.
    let reader = slow_reader(
        r,
        13 * REC,
        200,
        Duration::from_millis(2),
        |reads, chunk| {
            assert_eq!(chunk.len() % REC, 0, "read {reads} returned a torn record");
            let mut num = 0u32;
            let e = unsafe { aclprofGetOpNum(chunk.as_ptr().cast(), chunk.len(), &mut num) };
            assert_eq!(e, 0, "read {reads}: a record that does not verify");
        },
    );
    let (a, b) = (model("pipe-a"), model("pipe-b"));
    let before = stats();
    let cfgs = run_producers(&[a, b], &mut w, 20_000);
    assert_eq!(w, -1, "the last unsubscribe closed the shared fd");
    let all = reader.join().unwrap();
    assert_eq!(check_stream(&all), 80_000);
    let after = stats();
    assert_eq!(after.recordsReported - before.recordsReported, 80_000);
    assert_eq!(after.recordsDelivered - before.recordsDelivered, 80_000);
    for c in cfgs {
        aclprofDestroySubscribeConfig(c);
    }
}

/// Writes are up to 32 KiB, past `PIPE_BUF`. A pipe shrunk to one or four pages takes only
/// part of each, so every write is cut short (at the pipe's page boundaries) and the rest
/// waits in the lane: still only whole records arrive, in order, none lost.
#[test]
fn a_small_pipe_cuts_large_writes_and_readers_still_see_whole_records() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for (pipe_size, read_records) in [(4096, 7), (16384, 13), (65536, 3)] {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        assert!(unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, pipe_size) } >= pipe_size);
        let r = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut w: c_int = fds[1];
        let reader = slow_reader(
            r,
            read_records * REC,
            50,
            Duration::from_millis(1),
            move |reads, chunk| {
                assert_eq!(
                    chunk.len() % REC,
                    0,
                    "pipe {pipe_size}: read {reads} is torn"
                );
                let mut num = 0u32;
                let e = unsafe { aclprofGetOpNum(chunk.as_ptr().cast(), chunk.len(), &mut num) };
                assert_eq!(e, 0, "pipe {pipe_size}: read {reads} does not verify");
            },
        );
        let (a, b) = (
            model(&format!("small-a{pipe_size}")),
            model(&format!("small-b{pipe_size}")),
        );
        let before = stats();
        let cfgs = run_producers(&[a, b], &mut w, 5_000);
        let all = reader.join().unwrap();
        assert_eq!(check_stream(&all), 20_000, "pipe {pipe_size}");
        let after = stats();
        assert_eq!(after.recordsDelivered - before.recordsDelivered, 20_000);
        assert_eq!(after.recordsDropped, before.recordsDropped);
        for c in cfgs {
            aclprofDestroySubscribeConfig(c);
        }
    }
}

/// A reader reading 64 KiB from a pipe one producer fills flat out gets at least the 64
/// records of one write on each `read()` (writes of 4 KiB gave it 8.5: it kept up with them).
#[test]
fn a_reader_of_64_kib_gets_a_whole_write_per_read() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let r = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    let mut w: c_int = fds[1];
    // CANN's sample reader: 64 KiB reads, each counted (and so verified), nothing kept.
    let reader = std::thread::spawn(move || {
        let (mut buf, mut reads, mut records) = (vec![0u8; 65536], 0u64, 0u64);
        let mut r = r;
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (reads, records),
                Ok(n) => {
                    let mut num = 0u32;
                    let e = unsafe { aclprofGetOpNum(buf.as_ptr().cast(), n, &mut num) };
                    assert_eq!((e, num as usize * REC), (0, n), "whole, valid records");
                    reads += 1;
                    records += num as u64;
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    let m = model("wide-reads");
    let cfg = unsafe {
        aclprofCreateSubscribeConfig(1, aclprofAicoreMetrics(0xFF), (&mut w as *mut c_int).cast())
    };
    assert_eq!(aclprofModelSubscribe(m, cfg), 0);
    const N: u64 = 2_000_000;
    let t = std::time::Instant::now();
    for i in 0..N {
        let e =
            unsafe { aclprofExtReportOp(m, c"net/conv".as_ptr(), c"Conv2D".as_ptr(), i, i + 1) };
        assert_eq!(e, 0);
    }
    assert_eq!(aclprofModelUnSubscribe(m), 0);
    let passes = t.elapsed().as_millis() as u64 / 10 + 1;
    let (reads, records) = reader.join().unwrap();
    assert_eq!(records, N);
    // 64 per whole write. Each flusher pass (every 10 ms) may end with a partial batch,
    // and the next batch then starts with the rest of its page: two more writes a pass,
    // which a slow build makes many of, and nothing else does.
    let whole = N / 64;
    assert!(
        reads <= whole + 2 * passes + 16,
        "{reads} reads of {N} records: {:.1} records per read, {passes} flusher passes",
        N as f64 / reads as f64
    );
    aclprofDestroySubscribeConfig(cfg);
}

#[test]
fn two_subscriptions_share_a_stream_socket_with_partial_writes() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut sv = [0; 2];
    assert_eq!(
        unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) },
        0
    );
    // A tiny send buffer: writes of 4 KiB are cut short and continue later.
    let small: c_int = 4096;
    unsafe {
        libc::setsockopt(
            sv[1],
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&small as *const c_int).cast(),
            4,
        );
    }
    let r = unsafe { std::fs::File::from_raw_fd(sv[0]) };
    let mut w: c_int = sv[1];
    // Reads of any size: the stream is reassembled.
    let reader = slow_reader(r, 3000, 500, Duration::from_millis(1), |_, _| {});
    let (a, b) = (model("sock-a"), model("sock-b"));
    let cfgs = run_producers(&[a, b], &mut w, 5_000);
    let all = reader.join().unwrap();
    assert_eq!(check_stream(&all), 20_000, "no interleaving inside a batch");
    for c in cfgs {
        aclprofDestroySubscribeConfig(c);
    }
}

/// What a listener was told, in order.
static HEARD: std::sync::Mutex<Vec<(c_int, usize)>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn heard(listening: c_int, user: *mut std::ffi::c_void) {
    HEARD.lock().unwrap().push((listening, user as usize));
}

#[test]
fn a_listener_hears_each_change_of_whether_anyone_listens() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let user = 7usize as *mut std::ffi::c_void;
    HEARD.lock().unwrap().clear();
    assert_eq!(unsafe { aclprofExtListen(Some(heard), user) }, 0);
    // The pair once only; NULL refused.
    assert_eq!(unsafe { aclprofExtListen(Some(heard), user) }, 100000);
    assert_eq!(unsafe { aclprofExtListen(None, user) }, 100000);
    let (a, b) = (model("listened-a"), model("listened-b"));
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let mut w: c_int = fds[1];
    let wp: *mut c_int = &mut w;
    let cfg = unsafe { aclprofCreateSubscribeConfig(1, aclprofAicoreMetrics(0xFF), wp.cast()) };
    // Two subscriptions: one change on the first, one when the last goes.
    assert_eq!(aclprofModelSubscribe(a, cfg), 0);
    assert_eq!(aclprofModelSubscribe(b, cfg), 0);
    assert_eq!(aclprofModelUnSubscribe(a), 0);
    assert_eq!(aclprofModelUnSubscribe(b), 0);
    assert_eq!(unsafe { aclprofExtUnlisten(Some(heard), user) }, 0);
    assert_eq!(unsafe { aclprofExtUnlisten(Some(heard), user) }, 100000);
    // (The unsubscribe closed the pipe's write end: another for the next subscription.)
    let mut fds2 = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds2.as_mut_ptr()) }, 0);
    // SAFETY: `w` lives to the end of the test; the config reads it through this pointer.
    unsafe { *wp = fds2[1] };
    assert_eq!(aclprofModelSubscribe(a, cfg), 0, "unheard once unlistened");
    assert_eq!(aclprofModelUnSubscribe(a), 0);
    aclprofDestroySubscribeConfig(cfg);
    unsafe { libc::close(fds[0]) };
    unsafe { libc::close(fds2[0]) };
    let heard = HEARD.lock().unwrap().clone();
    assert_eq!(heard, [(0, 7), (1, 7), (0, 7)]);
}
