//! The export's timeline writer: msprof's JSON timeline and, beside it, the same timeline
//! as a native Perfetto trace (`pftrace`).

use super::*;

/// The timeline writer: a bare JSON array of trace events, and the same timeline as a
/// native Perfetto trace (see `pftrace`).
pub(super) struct Timeline {
    pub(super) w: BufWriter<File>,
    pub(super) pf: Pftrace<BufWriter<File>>,
    pub(super) pf_path: PathBuf,
    pub(super) buf: String,
    pub(super) first: bool,
    /// monotonic ns -> epoch ns
    pub(super) offset: i128,
    pub(super) pid: u64,
    /// Processes (tid u64::MAX) and threads whose metadata events were written.
    pub(super) named: std::collections::HashSet<(u64, u64)>,
}

pub(super) const HOST_DEV: u64 = 31;

/// Where a timeline process sorts among the others (its `process_sort_index`, then its
/// device), read back from its pid: [`Timeline::pid`] keeps both in the low ten bits, and
/// the Perfetto trace's 31-bit pids keep them too.
pub fn process_order(pid: u64) -> u64 {
    pid & 0x3ff
}

impl Timeline {
    pub(super) fn pid(&self, sort: u64, dev: u64) -> u64 {
        (self.pid << 10) | (sort << 5) | dev
    }
    pub(super) fn ts(&self, mono: u64) -> String {
        us3(self.wall(mono))
    }
    /// Monotonic ns -> epoch ns.
    pub(super) fn wall(&self, mono: u64) -> u64 {
        (mono as i128 + self.offset).max(0) as u64
    }
    /// The Perfetto trace's errors name its own file.
    pub(super) fn pf_err(&self, r: std::io::Result<()>) -> std::io::Result<()> {
        r.map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", self.pf_path.display())))
    }
    pub(super) fn event(&mut self, body: &str) -> std::io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        self.w.write_all(body.as_bytes())
    }
    /// Names a process (once: later calls for the same pid do nothing).
    pub(super) fn process(
        &mut self,
        pid: u64,
        name: &str,
        label: &str,
        sort: u64,
    ) -> std::io::Result<()> {
        if !self.named.insert((pid, u64::MAX)) {
            return Ok(());
        }
        let r = self.pf.process(pid, name, label);
        self.pf_err(r)?;
        self.event(&format!(
            r#"{{"name":"process_name","pid":{pid},"tid":0,"ph":"M","args":{{"name":{}}}}}"#,
            jstr(name)
        ))?;
        self.event(&format!(
            r#"{{"name":"process_labels","pid":{pid},"tid":0,"ph":"M","args":{{"labels":{}}}}}"#,
            jstr(label)
        ))?;
        self.event(&format!(r#"{{"name":"process_sort_index","pid":{pid},"tid":0,"ph":"M","args":{{"sort_index":{sort}}}}}"#))
    }
    /// Names a thread (once per pid and tid).
    pub(super) fn thread(
        &mut self,
        pid: u64,
        tid: u64,
        name: &str,
        sort: u64,
    ) -> std::io::Result<()> {
        if !self.named.insert((pid, tid)) {
            return Ok(());
        }
        let r = self.pf.thread(pid, tid, name, sort);
        self.pf_err(r)?;
        self.event(&format!(
            r#"{{"name":"thread_name","pid":{pid},"tid":{tid},"ph":"M","args":{{"name":{}}}}}"#,
            jstr(name)
        ))?;
        self.event(&format!(r#"{{"name":"thread_sort_index","pid":{pid},"tid":{tid},"ph":"M","args":{{"sort_index":{sort}}}}}"#))
    }
    /// One value of counter `name` (a series of its own in the JSON, a counter track keyed
    /// by `tid` in the Perfetto trace) of process `pid`, from `at` on, as msprof writes its
    /// counters: args `{key: value}` with `decimals` places (`{"KB": 1.5}`,
    /// `{"Usage(%)": 12.5}`, `{"depth": 3}`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn counter(
        &mut self,
        pid: u64,
        tid: u64,
        name: &str,
        at: u64,
        key: &str,
        value: f64,
        decimals: usize,
    ) -> std::io::Result<()> {
        let wall = self.wall(at);
        // Both timelines hold the value as the JSON writes it.
        let scale = 10f64.powi(decimals as i32);
        let value = (value * scale).round() / scale;
        let r = self.pf.counter_track(pid, tid, name);
        self.pf_err(r)?;
        // Whole numbers as the Perfetto trace's integer counter values.
        let r = if decimals == 0 {
            self.pf.counter(pid, tid, wall, value.max(0.0) as u64)
        } else {
            self.pf.counter_f64(pid, tid, wall, value)
        };
        self.pf_err(r)?;
        let mut b = String::with_capacity(128);
        push_event_head(&mut b, name, pid, 0, wall);
        b.push_str(",\"ph\":\"C\",\"args\":{");
        push_json_str(&mut b, key);
        b.push_str(&format!(":{value:.decimals$}}}}}"));
        self.event(&b)
    }
    pub(super) fn slice(
        &mut self,
        name: &str,
        pid: u64,
        tid: u64,
        start: u64,
        dur_ns: u64,
        args: &[(&'static str, Arg)],
    ) -> std::io::Result<()> {
        let wall = self.wall(start);
        let r = self.pf.slice(name, pid, tid, wall, dur_ns, args);
        self.pf_err(r)?;
        let mut b = std::mem::take(&mut self.buf);
        b.clear();
        if !self.first {
            b.push_str(",\n");
        }
        self.first = false;
        push_event_head(&mut b, name, pid, tid, wall);
        b.push_str(",\"dur\":");
        push_us_trim(&mut b, dur_ns);
        b.push_str(",\"ph\":\"X\",\"args\":{");
        for (i, (k, v)) in args.iter().enumerate() {
            if i > 0 {
                b.push(',');
            }
            push_json_str(&mut b, k);
            b.push(':');
            match v {
                Arg::U(u) => push_u64(&mut b, *u, 1),
                Arg::S(t) => push_json_str(&mut b, t),
            }
        }
        b.push_str("}}");
        let r = self.w.write_all(b.as_bytes());
        self.buf = b;
        r
    }
}

/// The start of a JSON trace event: `{"name":…,"pid":…,"tid":…,"ts":"<µs>"`.
pub(super) fn push_event_head(b: &mut String, name: &str, pid: u64, tid: u64, wall: u64) {
    b.push_str("{\"name\":");
    push_json_str(b, name);
    b.push_str(",\"pid\":");
    push_u64(b, pid, 1);
    b.push_str(",\"tid\":");
    push_u64(b, tid, 1);
    b.push_str(",\"ts\":\"");
    push_us(b, wall, 3);
    b.push('"');
}
