//! The scan: records read in parts by as many workers as there are cores, each keeping its
//! groups or its top ops, merged at the end.

use super::*;

/// What a scan of the records needs to know of the query.
pub(super) struct How<'a> {
    pub(super) q: &'a Query,
    pub(super) windows: &'a [Option<(u64, u64)>],
    pub(super) col: Col,
    pub(super) ascending: bool,
    pub(super) keep: usize,
}

/// The operator memory a result directory recorded, by (device, op name): allocation times
/// and sizes, in time order. What `--order-by memory` ranks ops by when a run recorded
/// memory: each op's allocations made while it ran.
#[derive(Default)]
pub(super) struct Allocations(HashMap<OpOn, Vec<(u64, u64)>>);

/// An op name on a device.
type OpOn = (u32, Box<[u8]>);

impl Allocations {
    fn of(dir: &Path) -> Allocations {
        let mut m: HashMap<OpOn, Vec<(u64, u64)>> = HashMap::new();
        for e in crate::analyze::memory::read_log(dir).events {
            if e.pool == crate::formats::memory::Pool::Op && e.size > 0 {
                m.entry((e.device, e.name.as_bytes().into()))
                    .or_default()
                    .push((e.start, e.size.unsigned_abs()));
            }
        }
        for v in m.values_mut() {
            v.sort_unstable();
        }
        Allocations(m)
    }

    /// Bytes op `name` on `device` allocated from `start` to `end`; None if that op never
    /// allocated (its memory is unknown, not 0).
    fn during(&self, device: u32, name: &[u8], start: u64, end: u64) -> Option<u64> {
        let v = self.0.get(&(device, Box::from(name)))?;
        let from = v.partition_point(|a| a.0 < start);
        let to = v.partition_point(|a| a.0 <= end);
        Some(v[from..to].iter().map(|a| a.1).sum())
    }

    /// Per input, its result directory's allocations (each directory read once), when the
    /// query ranks by memory.
    fn per_input(how: &How<'_>, inputs: &[Input]) -> Vec<Option<std::sync::Arc<Allocations>>> {
        if how.col != Col::Memory {
            return Vec::new();
        }
        let mut read: HashMap<&Path, std::sync::Arc<Allocations>> = HashMap::new();
        inputs
            .iter()
            .map(|i| match i {
                Input::Device { dir, .. } => {
                    let a = read
                        .entry(dir.as_path())
                        .or_insert_with(|| std::sync::Arc::new(Allocations::of(dir)))
                        .clone();
                    (!a.0.is_empty()).then_some(a)
                }
                _ => None,
            })
            .collect()
    }
}

/// What one worker found in the inputs it read: groups, or the top ops, and the totals.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) groups: HashMap<Box<[u8]>, Group>,
    pub(super) heap: BinaryHeap<std::cmp::Reverse<Kept>>,
    pub(super) any_meta: bool,
    pub(super) ops: u64,
    pub(super) total_ns: u64,
    pub(super) valid: u64,
    pub(super) corrupt: u64,
    pub(super) key: Vec<u8>,
    /// The part being read and how many of its ops passed the filters (ties among the top
    /// ops go to the earlier part, then the earlier op, whichever worker read them).
    pub(super) part: usize,
    pub(super) passed: u64,
}

impl Scan {
    pub(super) fn op(
        &mut self,
        h: &How<'_>,
        allocs: &[Option<std::sync::Arc<Allocations>>],
        o: &Origin<'_>,
        v: View<'_>,
    ) {
        let q = h.q;
        self.valid += 1;
        if q.rank.is_some() && q.rank != o.rank {
            return;
        }
        if q.step.is_some() {
            match h.windows.get(o.input).copied().flatten() {
                Some((a, b)) if v.start() >= a && v.start() < b => {}
                _ => return,
            }
        }
        let d = v.duration();
        if d < q.min_time_ns || d > q.max_time_ns || q.device.is_some_and(|dev| dev != v.dev_id()) {
            return;
        }
        let ty = v.op_type().unwrap_or_default();
        if !q.types.is_empty() && !q.types.iter().any(|t| t.as_bytes() == ty) {
            return;
        }
        if let Some(re) = &q.name {
            if !re.is_match(v.name().unwrap_or_default()) {
                return;
            }
        }
        let meta = o.meta(&v);
        if let Some(t) = &q.input_dtype {
            let has = meta.as_deref().is_some_and(|m| {
                m.input_types
                    .split(';')
                    .any(|x| x.trim().eq_ignore_ascii_case(t))
            });
            if !has {
                return;
            }
        }
        let allocated = allocs
            .get(o.input)
            .and_then(Option::as_ref)
            .and_then(|a| a.during(v.dev_id(), v.name().unwrap_or_default(), v.start(), v.end()));
        self.any_meta |= meta.is_some() || allocated.is_some();
        let cost = Cost::of(meta.as_deref(), allocated);
        self.ops += 1;
        self.passed += 1;
        self.total_ns = self.total_ns.saturating_add(d);
        match q.by {
            Some(k) => {
                key_text(k, &v, o.rank, meta.as_deref(), &mut self.key);
                let g = match self.groups.get_mut(self.key.as_slice()) {
                    Some(g) => g,
                    None => {
                        let g = self.groups.entry(self.key.as_slice().into()).or_default();
                        if k == Key::NameShape {
                            g.shapes = shapes_of(meta.as_deref());
                        }
                        g
                    }
                };
                g.first = if g.agg.count == 0 {
                    v.start()
                } else {
                    g.first.min(v.start())
                };
                g.cost.add(cost, g.agg.count == 0);
                g.agg.add(d);
            }
            None => {
                let full = self.heap.len() >= h.keep;
                let rank = Rank::of(h.col, h.ascending, &v, &cost);
                // An op ranking no higher than the lowest kept arrived later: it loses.
                if full && self.heap.peek().is_some_and(|m| m.0.rank >= rank) {
                    return;
                }
                let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                self.heap.push(std::cmp::Reverse(Kept {
                    rank,
                    seq: std::cmp::Reverse((self.part, self.passed)),
                    dur: d,
                    name: lossy(v.name().unwrap_or_default()),
                    op_type: lossy(ty),
                    dev: v.dev_id(),
                    stream: v.stream_id(),
                    model: v.model_id(),
                    start: v.start(),
                    wall_offset: o.wall_offset,
                    cost,
                    shapes: shapes_of(meta.as_deref()),
                }));
                if full {
                    self.heap.pop();
                }
            }
        }
    }

    /// Adds what another worker found.
    pub(super) fn merge(&mut self, other: Scan, keep: usize) {
        self.any_meta |= other.any_meta;
        self.ops += other.ops;
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.valid += other.valid;
        self.corrupt += other.corrupt;
        for (k, g) in other.groups {
            match self.groups.get_mut(&k) {
                None => {
                    self.groups.insert(k, g);
                }
                Some(mine) => {
                    mine.first = mine.first.min(g.first);
                    mine.cost.add(g.cost, false);
                    mine.agg.merge(&g.agg);
                }
            }
        }
        for k in other.heap {
            self.heap.push(k);
            if self.heap.len() > keep {
                self.heap.pop();
            }
        }
    }
}

/// The worker threads an analysis uses: `threads` (0: one per core), at most one per part.
pub(super) fn workers(threads: usize, inputs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t = if threads == 0 { cores } else { threads };
    t.min(inputs).max(1)
}

/// Records per extent a thread reads at a time (32 MiB): a large file is read by every core.
/// (The unit tests cut their small files into many pieces.)
pub(super) const PART_RECORDS: u64 = if cfg!(test) { 64 } else { 1 << 16 };

/// A extent of the inputs that one thread reads, from input `input`.
pub(super) struct Part<'a> {
    pub(super) input: usize,
    pub(super) extent: Extent<'a>,
}

pub(super) enum Extent<'a> {
    /// A database, read whole.
    Db(&'a Path),
    Stdin,
    /// `len` bytes of a record file from `start`.
    Bytes(&'a Path, u64, u64),
}

/// The inputs cut into [`Part`]s, in input, file and offset order (the order one thread
/// reading everything would see the records in).
pub(super) fn parts_of(inputs: &[Input]) -> Vec<Part<'_>> {
    let step = PART_RECORDS * RECORD_SIZE as u64;
    let mut parts = Vec::new();
    for (input, i) in inputs.iter().enumerate() {
        let files: &[PathBuf] = match i {
            Input::Device { files, .. } => files,
            Input::Raw(p) => std::slice::from_ref(p),
            Input::Db(p) => {
                parts.push(Part {
                    input,
                    extent: Extent::Db(p),
                });
                continue;
            }
            Input::Stdin => {
                parts.push(Part {
                    input,
                    extent: Extent::Stdin,
                });
                continue;
            }
        };
        for p in files {
            let size = std::fs::metadata(p).map_or(0, |m| m.len());
            let mut start = 0;
            loop {
                // The last extent takes the rest, a torn tail included.
                let len = (size - start).min(step);
                parts.push(Part {
                    input,
                    extent: Extent::Bytes(p, start, len),
                });
                start += len;
                if start >= size {
                    break;
                }
            }
        }
    }
    parts
}

/// Calls `f` with every verified record of `part`, counting corrupt ones.
pub(super) fn each_part_op(
    inputs: &[Input],
    part: &Part<'_>,
    corrupt: &mut u64,
    f: &mut dyn FnMut(&Origin<'_>, View<'_>),
) -> Result<()> {
    let input = &inputs[part.input];
    let origin = origin_of(part.input, input);
    let mut on_record = |v: View<'_>| f(&origin, v);
    match part.extent {
        Extent::Bytes(p, start, len) => {
            let mut file = crate::error::io("", p, std::fs::File::open(p))?;
            crate::error::io(
                "",
                p,
                std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(start)),
            )?;
            each_record(&mut file.take(len), p, corrupt, &mut on_record)
        }
        Extent::Db(p) => db_records(p, &mut on_record),
        Extent::Stdin => {
            let stdin = std::io::stdin();
            each_record(&mut stdin.lock(), Path::new("-"), corrupt, &mut on_record)
        }
    }
}

/// Scans every input under `path` on [`workers`] threads that each take the next
/// [`Part`] (so a large file is read by every core, and memory holds what the pieces being
/// read need, not the whole cluster), and merges what they found in part order.
pub(super) fn scan_parallel(
    path: &Path,
    how: &How<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Scan> {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
    let inputs = inputs(path)?;
    let allocs = Allocations::per_input(how, &inputs);
    let parts = parts_of(&inputs);
    let expected = expected_records(&inputs);
    progress(0, expected);
    let n = workers(how.q.threads, parts.len());
    let next = AtomicUsize::new(0);
    let read = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let main = std::thread::current();
    let work = || -> Result<Scan> {
        let mut scan = Scan::default();
        let result = (|| {
            while !failed.load(Relaxed) {
                let i = next.fetch_add(1, Relaxed);
                let Some(part) = parts.get(i) else { break };
                scan.part = i;
                scan.passed = 0;
                let mut corrupt = 0;
                let mut local = 0u64;
                each_part_op(&inputs, part, &mut corrupt, &mut |o, v| {
                    scan.op(how, &allocs, o, v);
                    local += 1;
                    if local % 4096 == 0 {
                        read.fetch_add(4096, Relaxed);
                    }
                })?;
                read.fetch_add(local % 4096, Relaxed);
                scan.corrupt += corrupt;
            }
            Ok(())
        })();
        if result.is_err() {
            failed.store(true, Relaxed);
        }
        main.unpark();
        result.map(|()| scan)
    };
    let scans: Vec<Result<Scan>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .map(|_| std::thread::Builder::new().spawn_scoped(sc, work))
            .collect();
        let mut last = 0;
        while handles
            .iter()
            .any(|h| h.as_ref().is_ok_and(|h| !h.is_finished()))
        {
            std::thread::park_timeout(std::time::Duration::from_millis(100));
            let now = read.load(Relaxed);
            if now / (1 << 18) != last / (1 << 18) {
                progress(now, expected);
                last = now;
            }
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    err(
                        crate::error::ACL_ERROR_INTERNAL_ERROR,
                        "an analysis thread panicked",
                    )
                }),
                Err(e) => err(
                    crate::error::ACL_ERROR_INTERNAL_ERROR,
                    format!("cannot start an analysis thread: {e}"),
                ),
            })
            .collect()
    });
    progress(read.load(Relaxed), expected);
    let mut all = Scan::default();
    for s in scans {
        all.merge(s?, how.keep);
    }
    Ok(all)
}
