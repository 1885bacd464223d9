//! What a subscription counts: records reported, delivered and dropped, and the losses
//! (with why) reported once each where the user looks.

use super::*;

/// What [`Sub::new_losses`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Losses {
    /// Records lost since the last look: a failure ([`Sub::loss_reason`] says why).
    pub lost: u64,
    /// Records dropped since the last look as `ACLPROF_ON_FULL=drop` asked: counted, not a
    /// failure.
    pub chosen: u64,
}

/// Record counts, as `aclprofExtGetStats` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub reported: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub bytes: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.reported += o.reported;
        self.delivered += o.delivered;
        self.dropped += o.dropped;
        self.bytes += o.bytes;
    }
}

impl Sub {
    pub(super) fn note_loss(&self, why: &str) {
        *self.lost_why.lock().unwrap_or_else(|p| p.into_inner()) = why.to_string();
    }

    /// Records lost or dropped since the last call, and why (for an error and a warning
    /// where the user looks: the next aclprofExtFlush or aclprofStop).
    pub fn new_losses(&self) -> Option<Losses> {
        let lost = self.lost_of(&self.counts());
        let before = self.losses_reported.swap(lost, Ordering::AcqRel);
        let chosen = self.chosen_drops.load(Ordering::Relaxed);
        let chosen_before = self.chosen_reported.swap(chosen, Ordering::AcqRel);
        (lost > before).then(|| {
            let n = lost - before;
            let chosen = (chosen - chosen_before).min(n);
            Losses {
                lost: n - chosen,
                chosen,
            }
        })
    }

    /// Why records were lost, as far as this subscription knows.
    pub fn loss_reason(&self) -> String {
        let why = self
            .lost_why
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if why.is_empty() {
            "full buffers under ACLPROF_ON_FULL=drop, or a reader that stopped reading".into()
        } else {
            why
        }
    }

    /// File mode: records not written because ACL_PROF_STORAGE_LIMIT was reached.
    pub fn over_limit(&self) -> u64 {
        self.over_limit.load(Ordering::Relaxed)
    }

    /// Of the records `c` (this subscription's counts) says were dropped, those lost other
    /// than to the storage limit, which is reported on its own. Saturating: a late reporter
    /// may have raised the limit's count since `c` was taken.
    pub fn lost_of(&self, c: &Counts) -> u64 {
        c.dropped.saturating_sub(self.over_limit())
    }

    pub(super) fn set_broken(&self, why: &str) {
        self.note_loss(why);
        if !self.broken.swap(true, Ordering::AcqRel) {
            log::error!(
                "aclprof: {} is broken: {why}; its records are counted as dropped",
                self.describe()
            );
        }
    }

    /// Records reported, delivered, dropped so far.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        let mut consumed = 0;
        for l in self.lanes.iter() {
            if let Some(m) = l.used() {
                let ctl = m.ctl();
                let d = ctl.dropped.load(Ordering::Relaxed);
                let h = ctl.head.load(Ordering::Acquire);
                c.reported += h + d;
                c.dropped += d;
                consumed += match self.dest {
                    Dest::Ring(_) => h,
                    _ => l.sent_total.load(Ordering::Acquire),
                };
            }
        }
        let unplaced = self.reported_unplaced.load(Ordering::Relaxed);
        c.reported += unplaced;
        let lost = self.lost.load(Ordering::Relaxed) + self.over_limit.load(Ordering::Relaxed);
        c.delivered = consumed - (lost - unplaced).min(consumed);
        c.dropped += lost;
        c.bytes = c.delivered * RECORD_SIZE as u64;
        c
    }
}
