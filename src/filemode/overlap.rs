//! Overlap Analysis and the step trace (docs/design.md, "File-mode export"): a device's ops,
//! in start order, split into Computing (the union of compute ops), Communication (the
//! union of communication ops), Communication(Not Overlapped) (communication while nothing
//! computes) and Free (neither), and those times summed per step.
//!
//! Streaming, in memory bounded by the compute intervals that overlap one communication
//! interval: an interval is final once an op starts after its end, and every op that could
//! cover any part of it has arrived by then.

/// One of Overlap Analysis's four tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Track {
    Computing,
    Communication,
    NotOverlapped,
    Free,
}

impl Track {
    /// The track's name and thread id in the timeline, as real runs name them.
    pub fn track(self) -> (&'static str, u64) {
        match self {
            Track::Computing => ("Computing", 0),
            Track::Communication => ("Communication", 1),
            Track::NotOverlapped => ("Communication(Not Overlapped)", 2),
            Track::Free => ("Free", 3),
        }
    }
}

/// One device's intervals being merged.
#[derive(Default)]
pub struct Overlap {
    /// Any op: its gaps are Free.
    busy: Option<(u64, u64)>,
    comp: Option<(u64, u64)>,
    /// Finished compute intervals that overlap the open communication interval.
    comp_done: Vec<(u64, u64)>,
    comm: Option<(u64, u64)>,
}

/// Extends the open interval with [s, e), or returns the finished one it replaces.
fn merge(open: &mut Option<(u64, u64)>, s: u64, e: u64) -> Option<(u64, u64)> {
    match open {
        Some((_, oe)) if s <= *oe => {
            *oe = (*oe).max(e);
            None
        }
        _ => open.replace((s, e)),
    }
}

impl Overlap {
    /// The next op (ops come in start order).
    pub fn op(&mut self, start: u64, end: u64, comm: bool, out: &mut impl FnMut(Track, u64, u64)) {
        if let Some((_, e)) = merge(&mut self.busy, start, end) {
            out(Track::Free, e, start);
        }
        if comm {
            if let Some(done) = merge(&mut self.comm, start, end) {
                self.end_comm(done, out);
            }
        } else if let Some(done) = merge(&mut self.comp, start, end) {
            out(Track::Computing, done.0, done.1);
            if self.comm.is_some_and(|(cs, _)| done.1 > cs) {
                self.comp_done.push(done);
            }
        }
    }

    /// A finished communication interval: its parts no compute interval covers.
    fn end_comm(&mut self, (cs, ce): (u64, u64), out: &mut impl FnMut(Track, u64, u64)) {
        out(Track::Communication, cs, ce);
        let mut t = cs;
        for &(s, e) in self.comp_done.iter().chain(self.comp.iter()) {
            if e <= t || s >= ce {
                continue;
            }
            if s > t {
                out(Track::NotOverlapped, t, s);
            }
            t = t.max(e);
            if t >= ce {
                break;
            }
        }
        if t < ce {
            out(Track::NotOverlapped, t, ce);
        }
        // Every later communication interval starts after all of these ended.
        self.comp_done.clear();
    }

    /// The device's last op was seen.
    pub fn finish(&mut self, out: &mut impl FnMut(Track, u64, u64)) {
        if let Some(done) = self.comm.take() {
            self.end_comm(done, out);
        }
        if let Some((s, e)) = self.comp.take() {
            out(Track::Computing, s, e);
        }
        *self = Overlap::default();
    }
}

/// One step of one device: its window and the time each piece took in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// The step's index; `None` for a run without steps (one row for everything).
    pub id: Option<u64>,
    pub start: u64,
    /// `u64::MAX` while the step is open (it ends at the next `fp_point` op or the last op).
    pub end: u64,
    pub first_op: Option<u64>,
    /// When the device first computes or communicates in the step.
    pub first_busy: Option<u64>,
    pub last_end: u64,
    pub fp_start: Option<u64>,
    pub bp_end: Option<u64>,
    pub computing: u64,
    pub communication: u64,
    pub not_overlapped: u64,
}

/// What step_trace_time.csv says of a step (ns).
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    pub dev: u32,
    pub step: Step,
    /// The window's end (the open step's last op end).
    pub end: u64,
    /// From the step's start until the device is first busy in it (steps from host
    /// timestamps only).
    pub preparing: u64,
    /// The window after Preparing: Computing + Communication(Not Overlapped) + Free.
    pub stage: u64,
    pub free: u64,
}

impl StepRow {
    pub fn overlapped(&self) -> u64 {
        self.step
            .communication
            .saturating_sub(self.step.not_overlapped)
    }
}

/// Where steps come from: host step timestamps (`aclprofGetStepTimestamp`), else the
/// `fp_point` op's starts, else one step for the whole run.
pub struct Steps {
    host: Vec<(u64, u64, u64)>,
    fp: Option<String>,
    bp: Option<String>,
    cur: Vec<Step>,
    pub rows: Vec<StepRow>,
}

impl Steps {
    /// `host`: (index, start, end) of each step, in any order.
    pub fn new(mut host: Vec<(u64, u64, u64)>, fp: Option<String>, bp: Option<String>) -> Steps {
        host.sort_by_key(|h| (h.1, h.0));
        Steps {
            host,
            fp,
            bp,
            cur: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn cut_at_fp(&self) -> bool {
        self.host.is_empty() && self.fp.is_some()
    }

    pub fn begin_device(&mut self) {
        self.cur = if !self.host.is_empty() {
            self.host
                .iter()
                .map(|&(id, start, end)| Step {
                    id: Some(id),
                    start,
                    end,
                    ..Default::default()
                })
                .collect()
        } else if self.fp.is_some() {
            Vec::new()
        } else {
            vec![Step {
                id: None,
                start: 0,
                end: u64::MAX,
                ..Default::default()
            }]
        };
    }

    /// The step holding time `t`.
    fn at(&mut self, t: u64) -> Option<&mut Step> {
        let i = self.cur.partition_point(|s| s.start <= t).checked_sub(1)?;
        let s = &mut self.cur[i];
        (t < s.end || s.end == u64::MAX).then_some(s)
    }

    /// The next op, in start order.
    pub fn op(&mut self, name: &str, start: u64, end: u64) {
        let is = |p: &Option<String>| p.as_deref() == Some(name);
        if self.cut_at_fp() && is(&self.fp) {
            if let Some(last) = self.cur.last_mut() {
                last.end = start;
            }
            let id = self.cur.len() as u64 + 1;
            self.cur.push(Step {
                id: Some(id),
                start,
                end: u64::MAX,
                ..Default::default()
            });
        }
        let (fp, bp) = (is(&self.fp), is(&self.bp));
        if let Some(s) = self.at(start) {
            s.first_op.get_or_insert(start);
            s.last_end = s.last_end.max(end);
            if fp {
                s.fp_start.get_or_insert(start);
            }
            if bp {
                s.bp_end = Some(s.bp_end.unwrap_or(0).max(end));
            }
        }
    }

    /// A finished piece of Overlap Analysis, summed into the steps it overlaps.
    pub fn add(&mut self, piece: Track, s: u64, e: u64) {
        if piece == Track::Free {
            return; // Free is what the window leaves over
        }
        let first = self
            .cur
            .partition_point(|st| st.end <= s && st.end != u64::MAX);
        for st in self.cur[first..].iter_mut().take_while(|st| st.start < e) {
            let lo = s.max(st.start);
            let hi = e.min(st.end);
            if hi <= lo {
                continue;
            }
            let d = hi - lo;
            st.first_busy = Some(st.first_busy.map_or(lo, |f| f.min(lo)));
            match piece {
                Track::Computing => st.computing += d,
                Track::Communication => st.communication += d,
                Track::NotOverlapped => st.not_overlapped += d,
                Track::Free => {}
            }
        }
    }

    /// The device's pieces are all in: its rows.
    pub fn end_device(&mut self, dev: u32) {
        let from_host = !self.host.is_empty();
        for st in std::mem::take(&mut self.cur) {
            let Some(first) = st.first_op.or(from_host.then_some(st.start)) else {
                continue; // a run without steps and without ops has no row
            };
            let start = if st.id.is_none() { first } else { st.start };
            let end = if st.end == u64::MAX {
                st.last_end
            } else {
                st.end
            };
            let preparing = if from_host {
                st.first_busy.map_or(0, |f| f.saturating_sub(st.start))
            } else {
                0
            };
            let stage = end.saturating_sub(start + preparing);
            let free = stage.saturating_sub(st.computing + st.not_overlapped);
            self.rows.push(StepRow {
                dev,
                end,
                preparing,
                stage,
                free,
                step: st,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(ops: &[(u64, u64, bool)]) -> Vec<(Track, u64, u64)> {
        let mut v = Vec::new();
        let mut ov = Overlap::default();
        let mut out = |p, s, e| v.push((p, s, e));
        for &(s, e, c) in ops {
            ov.op(s, e, c, &mut out);
        }
        ov.finish(&mut out);
        v.sort_by_key(|&(p, s, _)| (p as u8, s));
        v
    }

    use Track::*;

    #[test]
    fn compute_only_has_computing_and_free() {
        assert_eq!(
            pieces(&[(0, 10, false), (5, 12, false), (20, 30, false)]),
            vec![(Computing, 0, 12), (Computing, 20, 30), (Free, 12, 20)]
        );
    }

    #[test]
    fn communication_not_overlapped_is_what_compute_leaves_uncovered() {
        // comm 10..50 against compute 0..20, 25..30, 45..60
        let p = pieces(&[
            (0, 20, false),
            (10, 50, true),
            (25, 30, false),
            (45, 60, false),
        ]);
        assert_eq!(
            p,
            vec![
                (Computing, 0, 20),
                (Computing, 25, 30),
                (Computing, 45, 60),
                (Communication, 10, 50),
                (NotOverlapped, 20, 25),
                (NotOverlapped, 30, 45),
            ]
        );
    }

    #[test]
    fn communication_alone_and_gaps() {
        let p = pieces(&[
            (0, 10, true),
            (10, 15, true),
            (20, 25, false),
            (30, 40, true),
        ]);
        assert_eq!(
            p,
            vec![
                (Computing, 20, 25),
                (Communication, 0, 15),
                (Communication, 30, 40),
                (NotOverlapped, 0, 15),
                (NotOverlapped, 30, 40),
                (Free, 15, 20),
                (Free, 25, 30),
            ]
        );
    }

    #[test]
    fn fully_hidden_communication_is_all_overlapped() {
        let p = pieces(&[(0, 100, false), (10, 20, true), (30, 40, true)]);
        assert!(!p.iter().any(|x| x.0 == NotOverlapped), "{p:?}");
    }

    fn run(steps: &mut Steps, ops: &[(&str, u64, u64, bool)]) {
        steps.begin_device();
        let mut ov = Overlap::default();
        let mut got = Vec::new();
        for &(n, s, e, c) in ops {
            steps.op(n, s, e);
            ov.op(s, e, c, &mut |p, a, b| got.push((p, a, b)));
        }
        ov.finish(&mut |p, a, b| got.push((p, a, b)));
        for (p, a, b) in got {
            steps.add(p, a, b);
        }
        steps.end_device(0);
    }

    #[test]
    fn without_steps_one_row_spans_the_ops() {
        let mut st = Steps::new(Vec::new(), None, None);
        run(
            &mut st,
            &[
                ("a", 100, 110, false),
                ("hcom_x", 105, 130, true),
                ("b", 140, 150, false),
            ],
        );
        let r = &st.rows[0];
        assert_eq!(st.rows.len(), 1);
        assert_eq!(
            (r.step.id, r.step.computing, r.step.communication),
            (None, 20, 25)
        );
        assert_eq!(
            (r.step.not_overlapped, r.overlapped(), r.stage, r.free),
            (20, 5, 50, 10)
        );
        assert_eq!(r.preparing, 0);
    }

    #[test]
    fn host_steps_split_intervals_and_count_preparing() {
        let mut st = Steps::new(vec![(2, 100, 200), (1, 0, 100)], None, None);
        run(&mut st, &[("a", 10, 150, false), ("b", 180, 190, false)]);
        let r: Vec<_> = st
            .rows
            .iter()
            .map(|r| (r.step.id, r.step.computing, r.preparing, r.stage, r.free))
            .collect();
        assert_eq!(r, vec![(Some(1), 90, 10, 90, 0), (Some(2), 60, 0, 100, 40)]);
    }

    #[test]
    fn fp_point_ops_cut_steps_and_bp_point_ends_the_pass() {
        let mut st = Steps::new(Vec::new(), Some("fp".into()), Some("bp".into()));
        run(
            &mut st,
            &[
                ("warmup", 0, 5, false),
                ("fp", 10, 20, false),
                ("bp", 20, 30, false),
                ("x", 35, 40, false),
                ("fp", 50, 55, false),
                ("bp", 55, 60, false),
            ],
        );
        let r: Vec<_> = st
            .rows
            .iter()
            .map(|r| {
                (
                    r.step.id,
                    r.step.start,
                    r.end,
                    r.step.fp_start,
                    r.step.bp_end,
                    r.step.computing,
                )
            })
            .collect();
        assert_eq!(
            r,
            vec![
                (Some(1), 10, 50, Some(10), Some(30), 25),
                (Some(2), 50, 60, Some(50), Some(60), 10),
            ]
        );
    }
}
