//! A running aggregate of op durations: what `op_statistic` and `aclprof analyze` report
//! per group. A leaf, so the export and the analysis both build on it.

/// Count, total, extremes and sum of squares (in µs², for a variance) of durations in ns.
#[derive(Default, Clone, Copy)]
pub struct Agg {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
    pub sq: f64,
}

impl Agg {
    pub fn add(&mut self, ns: u64) {
        if self.count == 0 || ns < self.min {
            self.min = ns;
        }
        self.max = self.max.max(ns);
        self.count += 1;
        self.total = self.total.saturating_add(ns);
        self.sq += (ns as f64 / 1000.0).powi(2);
    }
    /// Adds another aggregate's durations.
    pub fn merge(&mut self, o: &Agg) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 || o.min < self.min {
            self.min = o.min;
        }
        self.max = self.max.max(o.max);
        self.count += o.count;
        self.total = self.total.saturating_add(o.total);
        self.sq += o.sq;
    }
    /// The mean, in ns.
    pub fn avg(&self) -> f64 {
        self.total as f64 / self.count.max(1) as f64
    }
}
