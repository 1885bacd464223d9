//! Op metadata: an op's input and output shapes, data types and formats, and its FLOPs and
//! bytes moved (docs/design.md, "Op metadata"). A record has room for none of it, so each
//! distinct description is interned once in a process-wide table and a record carries its
//! id. The export writes the ids its directory uses to `op_meta.tsv` beside the records, so
//! another process (a re-export, `aclprof analyze`) reads them too. A leaf.

use crate::fork::{global, Mutex, MutexGuard, Rank};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// An op's tensors as a real run wrote them (CANN's text, `;` between tensors; empty where
/// unknown) and its cost where known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpMeta {
    pub input_shapes: String,
    pub input_types: String,
    pub input_formats: String,
    pub output_shapes: String,
    pub output_types: String,
    pub output_formats: String,
    /// Floating-point operations of one execution.
    pub flops: Option<u64>,
    /// Bytes read and written by one execution (a communication op: bytes sent).
    pub bytes: Option<u64>,
    /// A communication op's link, where known: the rank it sends to, CANN's transport
    /// (ENUM_HCCL_TRANSPORT_TYPE's names: SDMA, RDMA, ...) and how long the transfer itself
    /// takes; the rest of the op is spent waiting for its peers (docs/design.md,
    /// "Communication").
    pub peer: Option<u32>,
    pub transport: String,
    pub transit_ns: Option<u64>,
}

impl OpMeta {
    /// None if every field is unknown (empty or "N/A").
    pub fn known(self) -> Option<OpMeta> {
        let unknown = |s: &&str| s.is_empty() || *s == "N/A";
        let any = !self.fields().iter().all(unknown)
            || self.flops.is_some()
            || self.bytes.is_some()
            || self.peer.is_some();
        any.then_some(self)
    }

    /// The text fields in op_summary's order: input shapes, types, formats, then output's.
    pub fn fields(&self) -> [&str; 6] {
        [
            &self.input_shapes,
            &self.input_types,
            &self.input_formats,
            &self.output_shapes,
            &self.output_types,
            &self.output_formats,
        ]
    }

    fn fields_mut(&mut self) -> [&mut String; 6] {
        [
            &mut self.input_shapes,
            &mut self.input_types,
            &mut self.input_formats,
            &mut self.output_shapes,
            &mut self.output_types,
            &mut self.output_formats,
        ]
    }

    fn size(&self) -> usize {
        std::mem::size_of::<OpMeta>()
            + self.fields().iter().map(|s| s.len()).sum::<usize>()
            + self.transport.len()
    }
}

/// A shapes field as CANN writes it in op_summary and its database: in double quotes
/// (`"1,3,224,224;64,3,7,7"`; msprof-analyze strips them). Unknown stays empty. What a
/// runtime or a description gives is stored this way; a replayed table's text is kept as
/// written.
pub fn cann_shapes(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_empty() || s == "N/A" || (s.len() >= 2 && s.starts_with('"') && s.ends_with('"')) {
        s.into()
    } else {
        format!("\"{s}\"").into()
    }
}

/// A shapes field as people read it (timelines, `aclprof analyze`, the report): without
/// CANN's quotes.
pub fn plain_shapes(s: &str) -> &str {
    match s.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(x) => x,
        None => s,
    }
}

/// At most this many distinct descriptions, and this many bytes of them, per process: a
/// runtime that makes a new one per op (a shape that never repeats) cannot grow the table
/// without bound. Past either, ops are reported without metadata and the refusals counted.
pub const MAX_METAS: usize = 1 << 20;
pub const MAX_BYTES: usize = 64 << 20;

#[derive(Default)]
struct Table {
    ids: HashMap<Arc<OpMeta>, u32>,
    metas: Vec<Arc<OpMeta>>,
    bytes: usize,
}

global! {
    /// Every description; a forked child keeps them, so its ids stay valid.
    static TABLE: Mutex<Option<Table>> = Mutex::new(Rank::OpMeta, None);
}
static REFUSED: AtomicU64 = AtomicU64::new(0);
/// How many descriptions the table holds (ids 1..=COUNT are valid).
static COUNT: AtomicU32 = AtomicU32::new(0);

fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock()
}

/// The id of `meta` (1-based; the same id for equal descriptions), or None when the table is
/// full (counted in [`refused`], logged once).
pub fn intern(meta: OpMeta) -> Option<u32> {
    let mut g = table();
    let t = g.get_or_insert_with(Table::default);
    if let Some(&id) = t.ids.get(&meta) {
        return Some(id);
    }
    let size = meta.size();
    if t.metas.len() >= MAX_METAS || t.bytes + size > MAX_BYTES {
        if REFUSED.fetch_add(1, Ordering::Relaxed) == 0 {
            log::warn!(
                "op metadata table full ({} descriptions, {} bytes): further ops are recorded \
                 without shapes or cost",
                t.metas.len(),
                t.bytes
            );
        }
        return None;
    }
    let m = Arc::new(meta);
    t.metas.push(m.clone());
    t.bytes += size;
    let id = t.metas.len() as u32;
    t.ids.insert(m, id);
    COUNT.store(id, Ordering::Release);
    Some(id)
}

/// Whether `id` names a description of this process's table (0 never does). One atomic
/// load: the reporting path checks ids with it.
#[inline]
pub fn valid(id: u32) -> bool {
    id != 0 && id <= COUNT.load(Ordering::Acquire)
}

/// The description with id `id`, if this process interned it.
pub fn get(id: u32) -> Option<Arc<OpMeta>> {
    let i = (id as usize).checked_sub(1)?;
    table().as_ref()?.metas.get(i).cloned()
}

/// How many descriptions the full table refused.
pub fn refused() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// The file beside a directory's records that holds the descriptions they use.
const HEADER: &str = "id\tinput_shapes\tinput_types\tinput_formats\toutput_shapes\toutput_types\toutput_formats\tflops\tbytes\tpeer\ttransport\ttransit_ns";

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(c) => out.push(c),
            None => {}
        }
    }
    out
}

/// Writes `metas` (by id) to `path`, replacing it atomically.
pub fn write(path: &Path, metas: &[(u32, Arc<OpMeta>)]) -> std::io::Result<()> {
    let mut text = String::from(HEADER);
    text.push('\n');
    for (id, m) in metas {
        text.push_str(&id.to_string());
        for f in m.fields() {
            text.push('\t');
            escape(f, &mut text);
        }
        for n in [m.flops, m.bytes, m.peer.map(u64::from)] {
            text.push('\t');
            if let Some(n) = n {
                text.push_str(&n.to_string());
            }
        }
        text.push('\t');
        escape(&m.transport, &mut text);
        text.push('\t');
        if let Some(n) = m.transit_ns {
            text.push_str(&n.to_string());
        }
        text.push('\n');
    }
    let tmp = path.with_extension("tsv.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// Reads a file [`write`] wrote; lines that do not parse are skipped.
pub fn read(path: &Path) -> Metas {
    let mut out = HashMap::new();
    let Ok(f) = std::fs::File::open(path) else {
        return out;
    };
    for line in std::io::BufReader::new(f).lines().skip(1) {
        let Ok(line) = line else { break };
        let cols: Vec<&str> = line.split('\t').collect();
        // (Nine columns: written before communication links were known.)
        if cols.len() != 9 && cols.len() != 12 {
            continue;
        }
        let Ok(id) = cols[0].parse::<u32>() else {
            continue;
        };
        let mut m = OpMeta::default();
        for (f, c) in m.fields_mut().into_iter().zip(&cols[1..7]) {
            *f = unescape(c);
        }
        m.flops = cols[7].parse().ok();
        m.bytes = cols[8].parse().ok();
        if let [peer, transport, transit] = cols[9..] {
            m.peer = peer.parse().ok();
            m.transport = unescape(transport);
            m.transit_ns = transit.parse().ok();
        }
        out.insert(id, Arc::new(m));
    }
    out
}

/// Descriptions by id, as a directory's `op_meta.tsv` holds them.
pub type Metas = HashMap<u32, Arc<OpMeta>>;

/// The description record id `id` names: from `file` (the records' directory's
/// `op_meta.tsv`) when it has it, else from this process's table when `pid` (the process that
/// wrote the records) is this one.
pub fn find(file: Option<&Metas>, id: u32, pid: u32) -> Option<Arc<OpMeta>> {
    if id == 0 {
        return None;
    }
    if let Some(m) = file.and_then(|f| f.get(&id)) {
        return Some(m.clone());
    }
    (pid == std::process::id()).then(|| get(id)).flatten()
}

/// [`find`] for one directory's records, each id looked up once; remembers the ids found,
/// for [`Lookup::write`].
pub struct Lookup {
    file: Option<Metas>,
    pid: u32,
    found: HashMap<u32, Option<Arc<OpMeta>>>,
}

impl Lookup {
    /// For records in `dir` written by process `pid`.
    pub fn new(dir: &Path, pid: u32) -> Lookup {
        let p = dir.join(crate::formats::layout::OP_META_FILE);
        Lookup {
            file: p.exists().then(|| read(&p)),
            pid,
            found: HashMap::new(),
        }
    }

    pub fn get(&mut self, id: u32) -> Option<Arc<OpMeta>> {
        if id == 0 {
            return None;
        }
        let (file, pid) = (self.file.as_ref(), self.pid);
        self.found
            .entry(id)
            .or_insert_with(|| find(file, id, pid))
            .clone()
    }

    /// Writes the descriptions looked up so far to `path` (if any), ordered by id.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut metas: Vec<(u32, Arc<OpMeta>)> = self
            .found
            .iter()
            .filter_map(|(&id, m)| Some((id, m.clone()?)))
            .collect();
        if metas.is_empty() {
            return Ok(());
        }
        metas.sort_unstable_by_key(|m| m.0);
        write(path, &metas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv() -> OpMeta {
        OpMeta {
            input_shapes: "1,3,224,224;64,3,7,7".into(),
            input_types: "FLOAT16;FLOAT16".into(),
            input_formats: "NCHW;NCHW".into(),
            output_shapes: "1,64,112,112".into(),
            output_types: "FLOAT16".into(),
            output_formats: "NC1HWC0".into(),
            flops: Some(236_027_904),
            bytes: Some(1_906_688),
            ..OpMeta::default()
        }
    }

    #[test]
    fn equal_descriptions_share_an_id() {
        let a = intern(conv()).unwrap();
        assert_eq!(intern(conv()), Some(a));
        let mut other = conv();
        other.flops = None;
        let b = intern(other.clone()).unwrap();
        assert_ne!(a, b);
        assert_eq!(*get(a).unwrap(), conv());
        assert_eq!(*get(b).unwrap(), other);
        assert_eq!(get(0), None);
        assert!(valid(a) && valid(b) && !valid(0) && !valid(u32::MAX));
        assert_eq!(get(u32::MAX), None);
    }

    #[test]
    fn the_file_round_trips_every_field() {
        let dir = std::env::temp_dir().join(format!("aclprof-opmeta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut odd = conv();
        odd.input_shapes = "a\tb\\c\nd".into();
        odd.bytes = None;
        let link = OpMeta {
            bytes: Some(1 << 20),
            peer: Some(3),
            transport: "RDMA".into(),
            transit_ns: Some(52_000),
            ..OpMeta::default()
        };
        let ids = [
            intern(conv()).unwrap(),
            intern(odd.clone()).unwrap(),
            intern(link.clone()).unwrap(),
        ];
        let mut here = Lookup::new(&dir, std::process::id());
        for id in [ids[1], ids[0], ids[1], 0, ids[2]] {
            here.get(id);
        }
        here.write(&dir.join(crate::formats::layout::OP_META_FILE))
            .unwrap();
        let back = read(&dir.join(crate::formats::layout::OP_META_FILE));
        assert_eq!(back.len(), 3);
        assert_eq!(*back[&ids[0]], conv());
        assert_eq!(*back[&ids[1]], odd);
        assert_eq!(*back[&ids[2]], link);
        // A file written before links were known (nine columns) still reads.
        let old = dir.join("old.tsv");
        std::fs::write(
            &old,
            "id\tinput_shapes\tinput_types\tinput_formats\toutput_shapes\toutput_types\t\
             output_formats\tflops\tbytes\n7\t1,3\t\t\t\t\t\t5\t6\n",
        )
        .unwrap();
        let o = &read(&old)[&7];
        assert_eq!(
            (o.input_shapes.as_str(), o.flops, o.bytes, o.peer),
            ("1,3", Some(5), Some(6), None)
        );
        // Another process's records find them through the file only.
        let mut other = Lookup::new(&dir, u32::MAX);
        assert_eq!(other.get(ids[1]).as_deref(), Some(&odd));
        assert_eq!(Lookup::new(&dir.join("none"), u32::MAX).get(ids[0]), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shapes_are_quoted_as_cann_writes_them_and_shown_plain() {
        assert_eq!(cann_shapes("1,3;4"), "\"1,3;4\"");
        assert_eq!(cann_shapes("\"1,3\""), "\"1,3\"");
        assert_eq!(cann_shapes(""), "");
        assert_eq!(plain_shapes("\"1,3\""), "1,3");
        assert_eq!(plain_shapes("1,3"), "1,3");
        assert_eq!(plain_shapes("\""), "\"");
    }

    #[test]
    fn unknown_fields_are_not_a_description() {
        let mut m = OpMeta {
            input_shapes: "N/A".into(),
            ..OpMeta::default()
        };
        assert_eq!(m.clone().known(), None);
        m.bytes = Some(0);
        assert!(m.known().is_some());
    }
}
