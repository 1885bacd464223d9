//! Model checks of the delivery protocol (docs/design.md, "The delivery protocol"), run by
//! `scripts/loom`: the crate built with `--cfg loom`, so the lanes, the gate, the fences,
//! the flusher's passes and the route cache run on loom's atomics and locks, and loom runs
//! each model under every interleaving of those operations up to its preemption bound.
//! The records really go through a pipe, and each model reads them back and checks the
//! invariant: every record a push accepted arrives exactly once, each thread's in the
//! order it pushed them, and reported = delivered + dropped.
//!
//! Slots and each lane's producer state are shadowed by loom cells
//! (`Mem::track_write`, `Lane::prod`), so an access the protocol does not order is a
//! reported data race, not a silent one.

use super::*;
use loom::thread;

/// A subscription writing to a new pipe, with lanes of `cap` slots; returns it and the
/// pipe's two ends.
fn pipe_sub_with(cap: usize) -> (Arc<Sub>, c_int, c_int) {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (raises, kind) = prepare_fd(fds[1]).unwrap();
    let slot: &'static mut c_int = Box::leak(Box::new(fds[1]));
    // SAFETY: the slot is leaked, so it outlives the subscription.
    let user = unsafe { UserFd::new(slot) };
    let dest = Dest::Fd {
        fd: fds[1],
        user,
        raises,
        kind, // not spliced under loom (`fd::splice_pipes`)
    };
    let sub = Sub::start_with_stall(9, 0, dest, cap, OnFull::Block, Duration::from_secs(5))
        .expect("a subscription");
    (sub, fds[0], fds[1])
}

fn pipe_sub() -> (Arc<Sub>, c_int, c_int) {
    pipe_sub_with(8)
}

/// Everything waiting in the pipe: (stream, op index) of each record, after checking that
/// the bytes are whole, signed records.
fn read_all(r: c_int) -> Vec<(u32, u64)> {
    read_records(r)
        .into_iter()
        .map(|(s, i, _)| (s, i))
        .collect()
}

/// (stream, op index, start) of each record waiting in the pipe.
fn read_records(r: c_int) -> Vec<(u32, u64, u64)> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 64 * RECORD_SIZE];
    loop {
        // SAFETY: reading into our own buffer; the read end is non-blocking (below).
        let n = unsafe {
            libc::fcntl(r, libc::F_SETFL, libc::O_NONBLOCK);
            libc::read(r, buf.as_mut_ptr().cast(), buf.len())
        };
        if n <= 0 {
            break;
        }
        all.extend_from_slice(&buf[..n as usize]);
    }
    assert_eq!(all.len() % RECORD_SIZE, 0, "a torn record");
    assert_eq!(
        crate::accessor::op_num(&all).unwrap() as usize,
        all.len() / RECORD_SIZE,
        "every record signed"
    );
    all.chunks_exact(RECORD_SIZE)
        .map(|c| {
            let v = record::View(c.try_into().unwrap());
            (v.stream_id(), v.op_index(), v.start())
        })
        .collect()
}

fn op(stream: u32, i: u64) -> OpFields {
    OpFields {
        model_id: 9,
        op_index: i,
        stream_id: stream,
        start: i,
        end: i + 1,
        ..Default::default()
    }
}

/// Each stream's records, in arrival order.
fn by_stream(got: &[(u32, u64)]) -> std::collections::BTreeMap<u32, Vec<u64>> {
    let mut m = std::collections::BTreeMap::<u32, Vec<u64>>::new();
    for &(s, i) in got {
        m.entry(s).or_default().push(i);
    }
    m
}

/// Runs the flusher until nothing is on its list.
fn flush_until_idle() {
    loop {
        let due = flusher::take_due();
        if due.is_empty() {
            return;
        }
        flusher::pass(due);
    }
}

fn close_fds(r: c_int, w: c_int) {
    // SAFETY: the pipe's two ends, ours to close.
    unsafe {
        libc::close(r);
        libc::close(w);
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// One producer, and the flusher writing its lane as it fills: FIFO, exactly once; the
/// slots each side touches are ordered by head and tail (the shadow cells say so). The
/// lane has two slots and batches of two, so once it is full the producer writes it out
/// itself (inline, or waiting for room when the flusher holds the lane), racing the
/// flusher, and the third record reuses a slot the consumer freed.
#[test]
fn lane_producer_and_flusher() {
    model(|| {
        let (sub, r, w) = pipe_sub_with(2);
        let s = sub.clone();
        let prod = thread::spawn(move || {
            let lane = s.claim();
            for i in 1..=3 {
                assert!(s.push(lane, &op(1, i), b"n", b"t"));
            }
        });
        let flusher = thread::spawn(|| {
            for _ in 0..2 {
                flusher::pass(flusher::take_due());
            }
        });
        prod.join().unwrap();
        flusher.join().unwrap();
        let c = sub.close(Duration::from_secs(5));
        flush_until_idle();
        assert_eq!(read_all(r), vec![(1, 1), (1, 2), (1, 3)]);
        assert_eq!((c.reported, c.delivered, c.dropped), (3, 3, 0));
        close_fds(r, w);
    });
}

/// The flusher letting a subscription go idle while the producer publishes: a record is
/// never left in a lane with nobody scheduled to write it (the light/heavy fence pair).
#[test]
fn flusher_never_strands_a_record() {
    model(|| {
        let (sub, r, w) = pipe_sub();
        let s = sub.clone();
        let prod = thread::spawn(move || {
            let lane = s.claim();
            assert!(s.push(lane, &op(1, 1), b"n", b"t"));
            thread::yield_now();
            assert!(s.push(lane, &op(1, 2), b"n", b"t"));
        });
        let flusher = thread::spawn(|| {
            for _ in 0..3 {
                flusher::pass(flusher::take_due());
            }
        });
        prod.join().unwrap();
        flusher.join().unwrap();
        // Whatever is still in a lane has the flusher scheduled for it.
        flush_until_idle();
        assert_eq!(
            read_all(r),
            vec![(1, 1), (1, 2)],
            "a record left in its lane"
        );
        sub.close(Duration::from_secs(5));
        flush_until_idle();
        close_fds(r, w);
    });
}

/// A push racing the close of its subscription: it is either refused (and counted
/// nowhere) or delivered before close returns; nothing is written after.
#[test]
fn close_waits_for_pushes_and_nothing_follows() {
    model(|| {
        let (sub, r, w) = pipe_sub();
        let s = sub.clone();
        let prod = thread::spawn(move || {
            let lane = s.claim();
            let accepted = (1..=2)
                .map(|i| s.push(lane, &op(1, i), b"n", b"t"))
                .collect::<Vec<_>>();
            s.release(lane);
            accepted
        });
        let s = sub.clone();
        let closer = thread::spawn(move || s.close(Duration::from_secs(5)));
        let accepted = prod.join().unwrap();
        let c = closer.join().unwrap();
        let n = accepted.iter().filter(|&&a| a).count() as u64;
        // Once one push is refused, every later one is.
        assert!(accepted.windows(2).all(|w| w[0] || !w[1]), "{accepted:?}");
        let got = read_all(r);
        assert_eq!(got.len() as u64, n, "accepted {accepted:?}, got {got:?}");
        assert_eq!((c.reported, c.delivered, c.dropped), (n, n, 0));
        // Nothing more reaches the fd (its number may be another file's by now).
        flush_until_idle();
        assert!(read_all(r).is_empty());
        close_fds(r, w);
    });
}

/// A thread gives its lane back (it exits) while another claims one and reports, and the
/// flusher writes: the lane's producer state passes from one owner to the next.
#[test]
fn lane_passes_between_threads() {
    model(|| {
        let (sub, r, w) = pipe_sub();
        let s = sub.clone();
        let t1 = thread::spawn(move || {
            let lane = s.claim();
            assert!(s.push(lane, &op(1, 1), b"n", b"t"));
            s.retire_lane(lane);
        });
        let s = sub.clone();
        let t2 = thread::spawn(move || {
            let lane = s.claim();
            assert!(s.push(lane, &op(2, 2), b"n", b"t"));
            assert!(s.push(lane, &op(2, 3), b"n", b"t"));
            s.release(lane);
        });
        flusher::pass(flusher::take_due());
        t1.join().unwrap();
        t2.join().unwrap();
        let c = sub.close(Duration::from_secs(5));
        flush_until_idle();
        let got = read_all(r);
        let m = by_stream(&got);
        assert_eq!(m.get(&1), Some(&vec![1]));
        assert_eq!(m.get(&2), Some(&vec![2, 3]), "{got:?}");
        assert_eq!((c.reported, c.delivered), (3, 3));
        close_fds(r, w);
    });
}

/// Models A and B: two threads report to B through the route cache while a third
/// unsubscribes A (a route change): B gets every record once, each thread's in order,
/// and A's counts match what its reader got.
#[test]
fn route_change_keeps_each_threads_lane() {
    static MODELS: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    let &(a, b) = MODELS.get_or_init(|| {
        crate::registry::with(|r| {
            (
                r.load("A", 0, 1, None).unwrap(),
                r.load("B", 0, 1, None).unwrap(),
            )
        })
    });
    model(move || {
        let (sub_a, ra, wa) = pipe_sub();
        let (sub_b, rb, wb) = pipe_sub();
        crate::hotpath::set_route(a, Some(sub_a.clone()));
        crate::hotpath::set_route(b, Some(sub_b.clone()));
        let reporter = move |t: u64| {
            move || {
                let r = |m: u32, i: u64| {
                    let name = format!("{t}/{i}");
                    let start = t * 100 + i;
                    crate::hotpath::report_op(
                        m,
                        name.as_bytes(),
                        b"t",
                        start,
                        start + 1,
                        Default::default(),
                    )
                    .unwrap();
                };
                r(b, 1);
                r(a, 2);
                r(b, 3);
                crate::hotpath::thread_exit();
            }
        };
        let t1 = thread::spawn(reporter(1));
        let t2 = thread::spawn(reporter(2));
        let sa = sub_a.clone();
        let unsub = thread::spawn(move || {
            crate::hotpath::set_route(a, None);
            sa.close(Duration::from_secs(5))
        });
        t1.join().unwrap();
        t2.join().unwrap();
        let ca = unsub.join().unwrap();
        crate::hotpath::set_route(b, None);
        let cb = sub_b.close(Duration::from_secs(5));
        flush_until_idle();
        // start = thread * 100 + the thread's own sequence number.
        let got_b = read_records(rb);
        assert_eq!(
            (cb.reported, cb.delivered, got_b.len()),
            (4, 4, 4),
            "{got_b:?}"
        );
        let per_thread: Vec<(u32, u64)> = got_b
            .iter()
            .map(|&(_, _, start)| ((start / 100) as u32, start % 100))
            .collect();
        for (t, seq) in by_stream(&per_thread) {
            assert_eq!(seq, vec![1, 3], "thread {t}: {got_b:?}");
        }
        let got_a = read_all(ra);
        assert_eq!(got_a.len() as u64, ca.delivered);
        assert_eq!(ca.reported, ca.delivered + ca.dropped);
        close_fds(ra, wa);
        close_fds(rb, wb);
    });
}

/// One thread reports three ops for model A, the second and third through the route it
/// resolved (`report_op` tries [`crate::hotpath::report_repeated`] first), while another thread moves A to a new
/// subscription C and closes the old one: each op arrives exactly once, in A or in C,
/// and never in A after one arrived in C.
#[test]
fn resolved_route_meets_a_route_change() {
    static MODEL: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let &a = MODEL.get_or_init(|| crate::registry::with(|r| r.load("A2", 0, 1, None).unwrap()));
    model(move || {
        let (sub_a, ra, wa) = pipe_sub();
        let (sub_c, rc, wc) = pipe_sub();
        crate::hotpath::set_route(a, Some(sub_a.clone()));
        let reporter = thread::spawn(move || {
            for i in 1..=3u64 {
                crate::hotpath::report_op(a, b"op", b"t", i, i + 1, Default::default()).unwrap();
            }
            crate::hotpath::thread_exit();
        });
        let (sa, sc) = (sub_a.clone(), sub_c.clone());
        let switch = thread::spawn(move || {
            crate::hotpath::set_route(a, Some(sc));
            sa.close(Duration::from_secs(5))
        });
        reporter.join().unwrap();
        let ca = switch.join().unwrap();
        crate::hotpath::set_route(a, None);
        let cc = sub_c.close(Duration::from_secs(5));
        flush_until_idle();
        let starts = |r| {
            read_records(r)
                .into_iter()
                .map(|(_, _, s)| s)
                .collect::<Vec<_>>()
        };
        let (got_a, got_c) = (starts(ra), starts(rc));
        let mut all = got_a.clone();
        all.extend(&got_c);
        assert_eq!(all, vec![1, 2, 3], "A {got_a:?}, C {got_c:?}");
        assert_eq!(
            (ca.reported, ca.delivered),
            (got_a.len() as u64, got_a.len() as u64)
        );
        assert_eq!(
            (cc.reported, cc.delivered),
            (got_c.len() as u64, got_c.len() as u64)
        );
        close_fds(ra, wa);
        close_fds(rc, wc);
    });
}
