//! The transport's unit tests: pipes, rings and the accounting, through `Sub`.

use super::*;
use std::io::Read;
use std::os::fd::FromRawFd;

fn pipe() -> (std::fs::File, c_int) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: `fds[0]` was just opened and is owned here alone.
    (unsafe { std::fs::File::from_raw_fd(fds[0]) }, fds[1])
}

/// A subscription writing to `w` (its user fd slot lives for the whole test run).
fn started(w: c_int, capacity: usize, policy: OnFull) -> Arc<Sub> {
    let (raises, kind) = prepare_fd(w).unwrap();
    let slot: &'static mut c_int = Box::leak(Box::new(w));
    let dest = Dest::Fd {
        fd: w,
        // SAFETY: `slot` is a leaked int that outlives the subscription.
        user: unsafe { UserFd::new(slot) },
        raises,
        kind,
    };
    Sub::start(9, 0, dest, capacity, policy).unwrap()
}

/// A thread reading `r` to its end.
fn read_all(mut r: std::fs::File) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        all
    })
}

fn op(i: u64) -> OpFields {
    OpFields {
        model_id: 9,
        op_index: i,
        start: i * 10,
        end: i * 10 + 5,
        ..Default::default()
    }
}

/// `threads` threads, each reporting `per` ops on its own stream (= its number).
fn spawn_producers(sub: &Arc<Sub>, threads: u64, per: u64) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|t| {
            let sub = sub.clone();
            std::thread::spawn(move || {
                let lane = sub.claim();
                for i in 0..per {
                    let mut f = op(t * 1_000_000 + i);
                    f.stream_id = t as u32;
                    sub.push(lane, &f, b"n", b"t");
                }
                sub.release(lane);
            })
        })
        .collect()
}

#[test]
fn delivers_whole_signed_records_in_order() {
    let (r, w) = pipe();
    let sub = started(w, 1024, OnFull::Block);
    let reader = read_all(r);
    let lane = sub.claim();
    for i in 1..=1000 {
        sub.push(lane, &op(i), b"n", b"t");
    }
    sub.release(lane);
    let c = sub.close(Duration::from_secs(5));
    // SAFETY: `w` is this test's own write end, closed once.
    unsafe { libc::close(w) };
    let all = reader.join().unwrap();
    assert_eq!(
        c,
        Counts {
            reported: 1000,
            delivered: 1000,
            dropped: 0,
            bytes: 512_000
        }
    );
    assert_eq!(crate::accessor::op_num(&all).unwrap(), 1000);
    for i in 0..1000u32 {
        assert_eq!(
            crate::accessor::record(&all, i).unwrap().view.op_index(),
            i as u64 + 1
        );
    }
}

#[test]
fn a_partial_batch_arrives_without_any_flush_call() {
    let (mut r, w) = pipe();
    let sub = started(w, 1024, OnFull::Block);
    let lane = sub.claim();
    for i in 1..=3 {
        sub.push(lane, &op(i), b"n", b"t");
    }
    let mut buf = [0u8; 3 * RECORD_SIZE];
    r.read_exact(&mut buf).unwrap(); // the flusher wrote them
    assert_eq!(crate::accessor::op_num(&buf).unwrap(), 3);
    sub.release(lane);
    sub.close(Duration::from_secs(1));
    // SAFETY: `w` is this test's own write end, closed once.
    unsafe { libc::close(w) };
}

#[test]
fn closed_reader_breaks_the_subscription_without_sigpipe() {
    let (r, w) = pipe();
    drop(r);
    let sub = started(w, 1024, OnFull::Block);
    let lane = sub.claim();
    for i in 1..=100 {
        sub.push(lane, &op(i), b"n", b"t");
    }
    assert!(sub.flush(Instant::now() + Duration::from_secs(5)));
    assert!(sub.is_broken());
    let c = sub.close(Duration::from_secs(5));
    assert_eq!(c.reported, 100);
    assert_eq!(c.delivered, 0);
    assert_eq!(c.dropped, 100);
    // SAFETY: `w` is this test's own write end, closed once.
    unsafe { libc::close(w) };
}

#[test]
fn drop_policy_counts_exactly_and_timeout_bounds_close() {
    let (r, w) = pipe(); // nobody reads r
    let sub = started(w, 256, OnFull::Drop);
    let lane = sub.claim();
    for i in 1..=5000 {
        sub.push(lane, &op(i), b"n", b"t");
    }
    let t = Instant::now();
    let c = sub.close(Duration::from_millis(200));
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "close took {:?}",
        t.elapsed()
    );
    assert_eq!(c.reported, 5000);
    assert_eq!(c.delivered + c.dropped, 5000, "{c:?}");
    assert!(c.dropped > 0 && c.delivered > 0, "{c:?}");
    assert_eq!(c.bytes, c.delivered * RECORD_SIZE as u64);
    drop(r);
    // SAFETY: `w` is this test's own write end, closed once.
    unsafe { libc::close(w) };
}

#[test]
fn a_stalled_ring_reader_costs_one_timeout_then_drops_are_counted() {
    let ring = Arc::new(ring::Ring::create(None, 8).unwrap());
    let reader = ring::Reader::attach(ring::Ring::open(None, Some(ring.fd())).unwrap()).unwrap();
    let stall = Duration::from_millis(300);
    let sub = Sub::start_with_stall(9, 0, Dest::Ring(ring), 0, OnFull::Block, stall).unwrap();
    let lane = sub.claim();
    let t = Instant::now();
    for i in 1..=100 {
        sub.push(lane, &op(i), b"n", b"t");
    }
    let waited = t.elapsed();
    assert!(
        // One timeout, not one per record (100 x 300 ms), however loaded the machine.
        waited >= sub.stall_timeout && waited < Duration::from_secs(10)
    );
    sub.release(lane);
    let c = sub.close(Duration::from_millis(100));
    assert_eq!((c.reported, c.delivered, c.dropped), (100, 8, 92));
    let (_, len) = reader.acquire(64, Duration::ZERO).unwrap().unwrap();
    assert_eq!(len, 8 * RECORD_SIZE);
    assert_eq!(reader.ring.dropped(), 92);
}

/// More reporting threads than lanes (so the shared lane is contended), a small ring and
/// a reader that pauses: with either policy, reported = delivered + dropped exactly, the
/// reader gets exactly the delivered records, each stream in order, and the drop count
/// in the ring's header agrees.
#[test]
fn ring_stress_accounts_for_every_record() {
    for policy in [OnFull::Drop, OnFull::Block] {
        let ring = Arc::new(ring::Ring::create(None, 64).unwrap());
        let reader =
            ring::Reader::attach(ring::Ring::open(None, Some(ring.fd())).unwrap()).unwrap();
        let sub = Sub::start_with_stall(9, 0, Dest::Ring(ring), 0, policy, Duration::from_secs(20))
            .unwrap();
        let producers = spawn_producers(&sub, 12, 5000);
        let consumer = std::thread::spawn(move || {
            let mut last = [None::<u64>; 12];
            let mut got = 0u64;
            let mut batches = 0u64;
            loop {
                match reader.acquire(16, Duration::from_millis(100)) {
                    Ok(Some((p, len))) => {
                        // SAFETY: the callback gets a span of `len` readable bytes.
                        let recs = unsafe { std::slice::from_raw_parts(p, len) };
                        assert_eq!(
                            crate::accessor::op_num(recs).unwrap() as usize * RECORD_SIZE,
                            len
                        );
                        for r in recs.chunks_exact(RECORD_SIZE) {
                            let v = record::View(r.try_into().unwrap());
                            let s = v.stream_id() as usize;
                            assert!(last[s].is_none_or(|p| p < v.op_index()), "stream {s}");
                            last[s] = Some(v.op_index());
                        }
                        got += (len / RECORD_SIZE) as u64;
                        reader.release(len).unwrap();
                        batches += 1;
                        if batches % 64 == 0 {
                            std::thread::sleep(Duration::from_micros(300));
                        }
                    }
                    Ok(None) => {}
                    Err(_) => return (got, reader.ring.dropped()),
                }
            }
        });
        for p in producers {
            p.join().unwrap();
        }
        let c = sub.close(Duration::from_secs(5));
        let (got, header_dropped) = consumer.join().unwrap();
        assert_eq!(c.reported, 60_000, "{policy:?}");
        assert_eq!(c.delivered + c.dropped, 60_000, "{policy:?} {c:?}");
        assert_eq!(
            got, c.delivered,
            "{policy:?}: the reader got every delivered record"
        );
        assert_eq!(header_dropped, c.dropped, "{policy:?}");
        if policy == OnFull::Block {
            assert_eq!(c.dropped, 0);
        } else {
            assert!(c.dropped > 0 && c.delivered > 0, "{c:?}");
        }
    }
}

#[test]
fn many_threads_share_few_lanes_and_every_record_arrives() {
    let (r, w) = pipe();
    let sub = started(w, 256, OnFull::Block);
    let reader = read_all(r);
    let hs = spawn_producers(&sub, 24, 2000);
    for h in hs {
        h.join().unwrap();
    }
    let c = sub.close(Duration::from_secs(10));
    // SAFETY: `w` is this test's own write end, closed once.
    unsafe { libc::close(w) };
    let all = reader.join().unwrap();
    assert_eq!(c.reported, 48_000);
    assert_eq!(c.delivered, 48_000, "{c:?}");
    assert_eq!(crate::accessor::op_num(&all).unwrap(), 48_000);
    // per-stream order
    let mut last = vec![None::<u64>; 24];
    for rec in all.chunks_exact(RECORD_SIZE) {
        let v = record::View(rec.try_into().unwrap());
        let s = v.stream_id() as usize;
        assert!(last[s].is_none_or(|p| p < v.op_index()));
        last[s] = Some(v.op_index());
    }
}
