//! What stands out in a cluster, decided here once for every caller: the report's cluster
//! view, `aclprof analyze --communication`, the assistant, and Python's `aclprof.cluster`
//! (through `aclprofExtSlowRank` and `aclprofExtSlowestLink`), so they never name different
//! ranks or links for the same data (docs/design.md, "Clusters").

/// A rank stands out when its computing is more than this many times the median rank's, or
/// its communication not overlapped with computing is.
pub const SLOW: f64 = 1.2;

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One rank's time: what it computed, and what it spent in communication not overlapped
/// with computing (waiting for its peers, mostly), ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankTime {
    pub rank: u32,
    pub computing_ns: u64,
    pub waiting_ns: u64,
}

/// Why a rank stands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// It computes longest, over [`SLOW`] × the median: the others wait for it.
    Computes = 1,
    /// No rank computes too long, but it waits in communication over [`SLOW`] × the median.
    Waits = 2,
}

/// The rank that stands out, and the figures that say why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowRank {
    pub rank: u32,
    pub why: Why,
    /// Its computing ([`Why::Computes`]) or waiting ([`Why::Waits`]), ns.
    pub ns: u64,
    /// That against the median rank's (infinite when the median is 0).
    pub of_median: f64,
    /// The rank that waits longest, and how long (ns).
    pub waiter: u32,
    pub waiter_ns: u64,
}

/// The slow rank among `ranks`, if one stands out (none with fewer than two ranks). Ties go
/// to the lowest rank.
pub fn slow_rank(ranks: &[RankTime]) -> Option<SlowRank> {
    if ranks.len() < 2 {
        return None;
    }
    let top = |f: fn(&RankTime) -> u64| {
        ranks
            .iter()
            .max_by_key(|r| (f(r), std::cmp::Reverse(r.rank)))
            .map(|r| (r.rank, f(r)))
    };
    let med = |f: fn(&RankTime) -> u64| median(ranks.iter().map(|r| f(r) as f64).collect());
    let (slow, c) = top(|r| r.computing_ns)?;
    let (waiter, w) = top(|r| r.waiting_ns)?;
    let (mc, mw) = (med(|r| r.computing_ns), med(|r| r.waiting_ns));
    let ratio = |x: u64, m: f64| if m > 0.0 { x as f64 / m } else { f64::INFINITY };
    if mc > 0.0 && c as f64 > SLOW * mc {
        return Some(SlowRank {
            rank: slow,
            why: Why::Computes,
            ns: c,
            of_median: ratio(c, mc),
            waiter,
            waiter_ns: w,
        });
    }
    if w > 0 && w as f64 > SLOW * mw {
        return Some(SlowRank {
            rank: waiter,
            why: Why::Waits,
            ns: w,
            of_median: ratio(w, mw),
            waiter,
            waiter_ns: w,
        });
    }
    None
}

/// The slowest of `links` ((bytes, ns) each): the one with the lowest bandwidth among those
/// that moved bytes, as an index into `links`, with its bandwidth against the median such
/// link's; none with fewer than two such links. Ties go to the first.
pub fn slowest_link(links: &[(u64, u64)]) -> Option<(usize, f64)> {
    let bw = |i: usize| links[i].0 as f64 / links[i].1 as f64;
    let moved: Vec<usize> = (0..links.len())
        .filter(|&i| links[i].0 > 0 && links[i].1 > 0)
        .collect();
    if moved.len() < 2 {
        return None;
    }
    let slowest = *moved
        .iter()
        .min_by(|&&a, &&b| bw(a).total_cmp(&bw(b)).then(a.cmp(&b)))?;
    let med = median(moved.iter().map(|&i| bw(i)).collect());
    Some((slowest, if med > 0.0 { bw(slowest) / med } else { 0.0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(rank: u32, computing_ns: u64, waiting_ns: u64) -> RankTime {
        RankTime {
            rank,
            computing_ns,
            waiting_ns,
        }
    }

    #[test]
    fn the_slow_rank_computes_or_waits_over_the_threshold() {
        assert_eq!(slow_rank(&[r(0, 100, 0)]), None, "one rank is no cluster");
        // Rank 2 computes 1.5× the median: the others wait for it.
        let s = slow_rank(&[r(0, 100, 50), r(1, 100, 60), r(2, 150, 0)]).unwrap();
        assert_eq!((s.rank, s.why, s.ns, s.waiter), (2, Why::Computes, 150, 1));
        assert!((s.of_median - 1.5).abs() < 1e-9);
        // Just above the median but under 1.2×: nobody computes too long; rank 1 waits
        // 3× the median wait.
        let s = slow_rank(&[r(0, 100, 10), r(1, 110, 30), r(2, 105, 10)]).unwrap();
        assert_eq!((s.rank, s.why), (1, Why::Waits));
        // Nothing stands out.
        assert_eq!(
            slow_rank(&[r(0, 100, 10), r(1, 110, 11), r(2, 105, 10)]),
            None
        );
        // Two ranks: the median is their mean, so one stands out at over 1.5× the other.
        assert_eq!(slow_rank(&[r(0, 100, 0), r(1, 130, 0)]), None);
        assert_eq!(
            slow_rank(&[r(0, 100, 0), r(1, 200, 0)]).map(|s| s.rank),
            Some(1)
        );
        // All equal, or nothing measured: nobody.
        assert_eq!(slow_rank(&[r(0, 100, 5), r(1, 100, 5), r(2, 100, 5)]), None);
        assert_eq!(slow_rank(&[r(0, 0, 0), r(1, 0, 0)]), None);
        // Ties: the lowest rank.
        let s = slow_rank(&[r(3, 300, 0), r(1, 300, 0), r(2, 100, 0), r(4, 100, 0)]).unwrap();
        assert_eq!(s.rank, 1);
    }

    #[test]
    fn the_slowest_link_needs_two_that_moved_bytes() {
        assert_eq!(slowest_link(&[(100, 10)]), None);
        assert_eq!(slowest_link(&[(100, 10), (0, 5), (7, 0)]), None);
        let (i, of) = slowest_link(&[(100, 10), (0, 5), (20, 10), (100, 20)]).unwrap();
        assert_eq!(i, 2, "2 GB/s against 10 and 5");
        assert!((of - 2.0 / 5.0).abs() < 1e-9, "{of}");
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
