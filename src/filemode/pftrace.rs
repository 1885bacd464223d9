//! The timeline as a native Perfetto trace (`msprof_<stamp>.pftrace`), written beside the
//! msprof JSON from the same calls.
//!
//! Perfetto's JSON importer reads `ts` through a double, which at epoch-µs magnitudes rounds
//! to about 0.25 µs: adjacent slices closer than that overlap after import and are dropped.
//! The protobuf format carries integer nanoseconds, so nothing is lost (docs/design.md,
//! "Timelines"). Encoding is hand-written: the handful of messages below is all we emit, and
//! a protobuf crate would bring a code generator for them.
//!
//! Layout: one `TrackDescriptor` per process (a `ProcessDescriptor` with the JSON's process
//! name and label) and one named child track per JSON thread, ordered as the JSON's sort
//! indices order them; each slice is a `TYPE_SLICE_BEGIN` carrying the name and the JSON's
//! args as debug annotations, and a `TYPE_SLICE_END`. Timestamps are epoch nanoseconds, and a
//! clock snapshot tells the viewer they are wall-clock time.
//!
//! Slice names, annotation names and string annotation values are interned (written once in
//! the packet that first uses them, then referred to by id), as Perfetto's own SDK does: a
//! run repeats a few hundred op names and a handful of argument names millions of times. Each
//! table stops growing at [`INTERN_MAX`] strings; later new strings are written inline, so
//! memory stays bounded however many distinct names a run has.

use std::collections::{HashMap, HashSet};
use std::io::Write;

/// A slice argument: what the JSON timeline writes into `args`.
#[derive(Clone, Copy)]
pub enum Arg<'a> {
    U(u64),
    S(&'a str),
}

// Field numbers (public: the report's timeline reads these traces back), from Perfetto's protos/perfetto/trace (trace.proto, trace_packet.proto,
// track_event/*.proto, clock_snapshot.proto).
pub const TRACE_PACKET: u32 = 1;
pub const PKT_TIMESTAMP: u32 = 8;
pub const PKT_SEQUENCE_ID: u32 = 10;
pub const PKT_SEQUENCE_FLAGS: u32 = 13;
pub const PKT_CLOCK_SNAPSHOT: u32 = 6;
pub const PKT_TRACK_EVENT: u32 = 11;
pub const PKT_TRACK_DESCRIPTOR: u32 = 60;
pub const PKT_FIRST_ON_SEQUENCE: u32 = 87;
pub const PKT_INTERNED_DATA: u32 = 12;
pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
pub const ID_EVENT_NAMES: u32 = 2;
pub const ID_ANNOTATION_NAMES: u32 = 3;
pub const ID_ANNOTATION_STRINGS: u32 = 29;
pub const ENTRY_IID: u32 = 1;
pub const ENTRY_NAME: u32 = 2;
pub const CLOCKS: u32 = 1;
pub const CLOCK_ID: u32 = 1;
pub const CLOCK_TIMESTAMP: u32 = 2;
pub const CLOCK_REALTIME: u64 = 1;
pub const CLOCK_BOOTTIME: u64 = 6;
pub const TD_UUID: u32 = 1;
pub const TD_NAME: u32 = 2;
pub const TD_PROCESS: u32 = 3;
pub const TD_PARENT: u32 = 5;
pub const TD_CHILD_ORDERING: u32 = 11;
pub const TD_SIBLING_RANK: u32 = 12;
pub const TD_COUNTER: u32 = 8;
pub const TYPE_COUNTER: u64 = 4;
pub const TE_COUNTER_VALUE: u32 = 30;
pub const TE_DOUBLE_COUNTER_VALUE: u32 = 44;
pub const ORDER_EXPLICIT: u64 = 3;
pub const PD_PID: u32 = 1;
pub const PD_NAME: u32 = 6;
pub const PD_LABELS: u32 = 8;
pub const TE_TYPE: u32 = 9;
pub const TE_TRACK: u32 = 11;
pub const TE_NAME: u32 = 23;
pub const TE_NAME_IID: u32 = 10;
pub const TE_ANNOTATION: u32 = 4;
pub const TYPE_SLICE_BEGIN: u64 = 1;
pub const TYPE_SLICE_END: u64 = 2;
pub const DA_NAME: u32 = 10;
pub const DA_UINT: u32 = 3;
pub const DA_STRING: u32 = 6;
pub const DA_NAME_IID: u32 = 1;
pub const DA_STRING_IID: u32 = 17;
/// Strings each intern table holds at most.
pub const INTERN_MAX: usize = 1 << 16;

/// One intern table: string -> iid (from 1).
#[derive(Default)]
// FxHash (rustc-hash): the keys are our own op and argument names, so no hash-flooding
// defence is needed, and std's SipHash made interning cost more than it saved in bytes.
struct Interned(HashMap<Box<str>, u64, rustc_hash::FxBuildHasher>);

impl Interned {
    /// The iid of `s`, adding it (and its entry to `out`, in the InternedData field
    /// `table`) if new; None once the table is full and `s` is not in it.
    fn iid(&mut self, s: &str, out: &mut Vec<u8>, table: u32, tmp: &mut Vec<u8>) -> Option<u64> {
        if let Some(&iid) = self.0.get(s) {
            return Some(iid);
        }
        if self.0.len() >= INTERN_MAX {
            return None;
        }
        let iid = self.0.len() as u64 + 1;
        self.0.insert(s.into(), iid);
        nested(out, tmp, table, |e| {
            uint(e, ENTRY_IID, iid);
            bytes(e, ENTRY_NAME, s.as_bytes());
        });
        Some(iid)
    }
}

fn varint(o: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        o.push(v as u8 | 0x80);
        v >>= 7;
    }
    o.push(v as u8);
}

fn uint(o: &mut Vec<u8>, field: u32, v: u64) {
    varint(o, (field as u64) << 3);
    varint(o, v);
}

fn double(o: &mut Vec<u8>, field: u32, v: f64) {
    varint(o, u64::from(field) << 3 | 1);
    o.extend_from_slice(&v.to_le_bytes());
}

fn bytes(o: &mut Vec<u8>, field: u32, b: &[u8]) {
    varint(o, (field as u64) << 3 | 2);
    varint(o, b.len() as u64);
    o.extend_from_slice(b);
}

/// Writes a length-delimited field whose body `f` appends to `o`. Bodies here are short (a
/// slice with its annotations), so the body is built in `tmp` and copied once.
fn nested(o: &mut Vec<u8>, tmp: &mut Vec<u8>, field: u32, f: impl FnOnce(&mut Vec<u8>)) {
    tmp.clear();
    f(tmp);
    bytes(o, field, tmp);
}

/// The protobuf timeline writer; see the module documentation.
pub struct Pftrace<W: Write> {
    w: W,
    pkt: Vec<u8>,
    body: Vec<u8>,
    inner: Vec<u8>,
    /// A slice's TrackEvent and one of its annotations, being built.
    event: Vec<u8>,
    ann: Vec<u8>,
    /// Track uuids by (pid, tid); a process is (pid, u64::MAX).
    tracks: HashMap<(u64, u64), u64>,
    /// Tracks whose descriptor was written (a track's uuid may be handed out first, to a
    /// slice or a child, before its own descriptor is).
    described: HashSet<(u64, u64)>,
    started: bool,
    /// The InternedData of the packet being built, and the intern tables.
    interned: Vec<u8>,
    event_names: Interned,
    annotation_names: Interned,
    annotation_strings: Interned,
    /// Annotation names are string literals: their iids by address, looked up before
    /// hashing (a literal's address holds the same text for the life of the program).
    static_names: Vec<(usize, usize, u64)>,
}

impl<W: Write> Pftrace<W> {
    pub fn new(w: W) -> Self {
        Pftrace {
            w,
            pkt: Vec::with_capacity(512),
            body: Vec::with_capacity(512),
            inner: Vec::with_capacity(256),
            event: Vec::with_capacity(256),
            ann: Vec::with_capacity(128),
            tracks: HashMap::new(),
            described: HashSet::new(),
            started: false,
            interned: Vec::with_capacity(256),
            event_names: Interned::default(),
            annotation_names: Interned::default(),
            annotation_strings: Interned::default(),
            static_names: Vec::new(),
        }
    }

    /// The iid of annotation name `k` (see `static_names`), None once the table is full.
    fn annotation_name(&mut self, k: &'static str, interned: &mut Vec<u8>) -> Option<u64> {
        let key = (k.as_ptr() as usize, k.len());
        if let Some(&(_, _, iid)) = self.static_names.iter().find(|e| (e.0, e.1) == key) {
            return Some(iid);
        }
        let iid = self
            .annotation_names
            .iid(k, interned, ID_ANNOTATION_NAMES, &mut self.inner)?;
        if self.static_names.len() < 64 {
            self.static_names.push((key.0, key.1, iid));
        }
        Some(iid)
    }

    /// Writes one packet: `f` appends its payload fields to the packet body. `incremental`:
    /// the packet refers to interned strings.
    fn packet(
        &mut self,
        incremental: bool,
        f: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>),
    ) -> std::io::Result<()> {
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        uint(&mut body, PKT_SEQUENCE_ID, 1);
        let mut flags = if incremental {
            SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            0
        };
        if !self.started {
            self.started = true;
            flags |= SEQ_INCREMENTAL_STATE_CLEARED;
            uint(&mut body, PKT_FIRST_ON_SEQUENCE, 1);
        }
        if flags != 0 {
            uint(&mut body, PKT_SEQUENCE_FLAGS, flags);
        }
        f(&mut body, &mut self.inner);
        self.pkt.clear();
        bytes(&mut self.pkt, TRACE_PACKET, &body);
        self.body = body;
        self.w.write_all(&self.pkt)
    }

    /// Declares that timestamps are wall-clock (epoch) nanoseconds, from `ts` on.
    pub fn clock(&mut self, ts: u64) -> std::io::Result<()> {
        self.packet(false, |b, t| {
            let mut clocks = Vec::new();
            for id in [CLOCK_BOOTTIME, CLOCK_REALTIME] {
                nested(&mut clocks, t, CLOCKS, |c| {
                    uint(c, CLOCK_ID, id);
                    uint(c, CLOCK_TIMESTAMP, ts);
                });
            }
            uint(b, PKT_TIMESTAMP, ts);
            bytes(b, PKT_CLOCK_SNAPSHOT, &clocks);
        })
    }

    fn uuid(&mut self, pid: u64, tid: u64) -> u64 {
        let n = self.tracks.len() as u64 + 1;
        *self.tracks.entry((pid, tid)).or_insert(n)
    }

    /// The track's uuid, and whether its descriptor is still to be written (then it counts
    /// as written).
    fn describing(&mut self, pid: u64, tid: u64) -> (u64, bool) {
        (self.uuid(pid, tid), self.described.insert((pid, tid)))
    }

    /// A process track, named and labelled as in the JSON timeline. The JSON's pids are
    /// 64-bit; the descriptor's is 32-bit, so the top bits (the host pid's highest) go.
    pub fn process(&mut self, pid: u64, name: &str, label: &str) -> std::io::Result<()> {
        let (uuid, new) = self.describing(pid, u64::MAX);
        if !new {
            return Ok(());
        }
        self.packet(false, |b, t| {
            nested(b, t, PKT_TRACK_DESCRIPTOR, |d| {
                uint(d, TD_UUID, uuid);
                uint(d, TD_CHILD_ORDERING, ORDER_EXPLICIT);
                let mut p = Vec::new();
                uint(&mut p, PD_PID, pid & 0x7fff_ffff);
                bytes(&mut p, PD_NAME, name.as_bytes());
                bytes(&mut p, PD_LABELS, label.as_bytes());
                bytes(d, TD_PROCESS, &p);
            })
        })
    }

    /// A track inside process `pid` (the JSON's thread), placed by `sort`.
    pub fn thread(&mut self, pid: u64, tid: u64, name: &str, sort: u64) -> std::io::Result<()> {
        self.child_track(pid, tid, name, |d| {
            uint(d, TD_SIBLING_RANK, sort.min(i32::MAX as u64))
        })
    }

    /// A counter track inside process `pid` (the JSON's `"ph": "C"` series), keyed like a
    /// thread by `tid`.
    pub fn counter_track(&mut self, pid: u64, tid: u64, name: &str) -> std::io::Result<()> {
        self.child_track(pid, tid, name, |d| bytes(d, TD_COUNTER, &[]))
    }

    /// Describes track (`pid`, `tid`) once, as a child of its process's track; `more` adds
    /// the fields that make it a thread's or a counter's.
    fn child_track(
        &mut self,
        pid: u64,
        tid: u64,
        name: &str,
        more: impl FnOnce(&mut Vec<u8>),
    ) -> std::io::Result<()> {
        let parent = self.uuid(pid, u64::MAX);
        let (uuid, new) = self.describing(pid, tid);
        if !new {
            return Ok(());
        }
        self.packet(false, |b, t| {
            nested(b, t, PKT_TRACK_DESCRIPTOR, |d| {
                uint(d, TD_UUID, uuid);
                uint(d, TD_PARENT, parent);
                bytes(d, TD_NAME, name.as_bytes());
                more(d);
            })
        })
    }

    /// The counter of track (`pid`, `tid`) is `value` from `ts` ns on.
    pub fn counter(&mut self, pid: u64, tid: u64, ts: u64, value: u64) -> std::io::Result<()> {
        self.counter_event(pid, tid, ts, |e| uint(e, TE_COUNTER_VALUE, value))
    }

    /// One counter event on (`pid`, `tid`)'s track at `ts`; `value` writes its value.
    fn counter_event(
        &mut self,
        pid: u64,
        tid: u64,
        ts: u64,
        value: impl FnOnce(&mut Vec<u8>),
    ) -> std::io::Result<()> {
        let track = self.uuid(pid, tid);
        self.packet(false, |b, t| {
            uint(b, PKT_TIMESTAMP, ts);
            nested(b, t, PKT_TRACK_EVENT, |e| {
                uint(e, TE_TYPE, TYPE_COUNTER);
                uint(e, TE_TRACK, track);
                value(e);
            });
        })
    }

    /// One value of a counter whose values are not whole numbers (a percentage, KB).
    pub fn counter_f64(&mut self, pid: u64, tid: u64, ts: u64, value: f64) -> std::io::Result<()> {
        self.counter_event(pid, tid, ts, |e| double(e, TE_DOUBLE_COUNTER_VALUE, value))
    }

    /// One slice on the track of (`pid`, `tid`): begin at `ts` ns, end `dur` ns later.
    pub fn slice(
        &mut self,
        name: &str,
        pid: u64,
        tid: u64,
        ts: u64,
        dur: u64,
        args: &[(&'static str, Arg)],
    ) -> std::io::Result<()> {
        let track = self.uuid(pid, tid);
        // The event body, with each annotation built in `ann` and copied in once, and the
        // strings first seen here in `interned`.
        let (mut ev, mut ann, mut interned) = (
            std::mem::take(&mut self.event),
            std::mem::take(&mut self.ann),
            std::mem::take(&mut self.interned),
        );
        ev.clear();
        interned.clear();
        uint(&mut ev, TE_TYPE, TYPE_SLICE_BEGIN);
        uint(&mut ev, TE_TRACK, track);
        match self
            .event_names
            .iid(name, &mut interned, ID_EVENT_NAMES, &mut self.inner)
        {
            Some(iid) => uint(&mut ev, TE_NAME_IID, iid),
            None => bytes(&mut ev, TE_NAME, name.as_bytes()),
        }
        for (k, v) in args {
            ann.clear();
            match self.annotation_name(k, &mut interned) {
                Some(iid) => uint(&mut ann, DA_NAME_IID, iid),
                None => bytes(&mut ann, DA_NAME, k.as_bytes()),
            }
            match v {
                Arg::U(u) => uint(&mut ann, DA_UINT, *u),
                Arg::S(s) => {
                    match self.annotation_strings.iid(
                        s,
                        &mut interned,
                        ID_ANNOTATION_STRINGS,
                        &mut self.inner,
                    ) {
                        Some(iid) => uint(&mut ann, DA_STRING_IID, iid),
                        None => bytes(&mut ann, DA_STRING, s.as_bytes()),
                    }
                }
            }
            bytes(&mut ev, TE_ANNOTATION, &ann);
        }
        let r = self.packet(true, |b, _| {
            uint(b, PKT_TIMESTAMP, ts);
            if !interned.is_empty() {
                bytes(b, PKT_INTERNED_DATA, &interned);
            }
            bytes(b, PKT_TRACK_EVENT, &ev);
        });
        (self.event, self.ann, self.interned) = (ev, ann, interned);
        r?;
        self.packet(false, |b, t| {
            uint(b, PKT_TIMESTAMP, ts.saturating_add(dur));
            nested(b, t, PKT_TRACK_EVENT, |e| {
                uint(e, TE_TYPE, TYPE_SLICE_END);
                uint(e, TE_TRACK, track);
            });
        })
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field's value: a varint, or bytes.
    type Value = Result<u64, Vec<u8>>;

    /// A minimal protobuf reader for the test: (field, value) pairs.
    fn fields(mut b: &[u8]) -> Vec<(u32, Value)> {
        fn rd(b: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            let mut s = 0;
            loop {
                let x = b[0];
                *b = &b[1..];
                v |= ((x & 0x7f) as u64) << s;
                s += 7;
                if x & 0x80 == 0 {
                    return v;
                }
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let k = rd(&mut b);
            match k & 7 {
                0 => out.push(((k >> 3) as u32, Ok(rd(&mut b)))),
                2 => {
                    let n = rd(&mut b) as usize;
                    out.push(((k >> 3) as u32, Err(b[..n].to_vec())));
                    b = &b[n..];
                }
                w => panic!("wire type {w}"),
            }
        }
        out
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut o = Vec::new();
            uint(&mut o, 1, v);
            assert_eq!(fields(&o), vec![(1, Ok(v))]);
        }
    }

    #[test]
    fn slices_carry_exact_nanoseconds_and_every_argument() {
        let mut t = Pftrace::new(Vec::new());
        t.process(7 << 10, "Ascend Hardware", "NPU 0").unwrap();
        t.thread(7 << 10, 3, "Stream 3", 3).unwrap();
        let long = "x".repeat(200);
        let ts = 1_795_464_029_244_930_115;
        t.slice(
            "Conv2D",
            7 << 10,
            3,
            ts,
            1,
            &[("Model Id", Arg::U(4)), ("Task Type", Arg::S(&long))],
        )
        .unwrap();
        let packets: Vec<Vec<u8>> = fields(&t.w)
            .into_iter()
            .map(|(f, v)| {
                assert_eq!(f, TRACE_PACKET);
                v.unwrap_err()
            })
            .collect();
        assert_eq!(packets.len(), 4);
        let begin = fields(&packets[2]);
        assert!(begin.contains(&(PKT_TIMESTAMP, Ok(ts))));
        let ev = begin
            .iter()
            .find(|f| f.0 == PKT_TRACK_EVENT)
            .unwrap()
            .1
            .clone()
            .unwrap_err();
        let ev = fields(&ev);
        assert!(ev.contains(&(TE_TYPE, Ok(TYPE_SLICE_BEGIN))));
        assert!(ev.contains(&(TE_NAME_IID, Ok(1))));
        let ann: Vec<_> = ev
            .iter()
            .filter(|f| f.0 == TE_ANNOTATION)
            .map(|f| fields(f.1.as_ref().unwrap_err()))
            .collect();
        assert_eq!(ann[0], vec![(DA_NAME_IID, Ok(1)), (DA_UINT, Ok(4))]);
        assert_eq!(ann[1], vec![(DA_NAME_IID, Ok(2)), (DA_STRING_IID, Ok(1))]);
        // The strings themselves, in the same packet's InternedData.
        let interned = begin
            .iter()
            .find(|f| f.0 == PKT_INTERNED_DATA)
            .unwrap()
            .1
            .clone()
            .unwrap_err();
        let entries: Vec<(u32, Vec<(u32, Value)>)> = fields(&interned)
            .into_iter()
            .map(|(table, e)| (table, fields(&e.unwrap_err())))
            .collect();
        let entry = |iid, s: &[u8]| vec![(ENTRY_IID, Ok(iid)), (ENTRY_NAME, Err(s.to_vec()))];
        assert_eq!(
            entries,
            vec![
                (ID_EVENT_NAMES, entry(1, b"Conv2D")),
                (ID_ANNOTATION_NAMES, entry(1, b"Model Id")),
                (ID_ANNOTATION_NAMES, entry(2, b"Task Type")),
                (ID_ANNOTATION_STRINGS, entry(1, long.as_bytes())),
            ]
        );
        let end = fields(&packets[3]);
        assert!(end.contains(&(PKT_TIMESTAMP, Ok(ts + 1))));
        // The thread's track is a child of the process's, and descriptors are written once.
        t.thread(7 << 10, 3, "Stream 3", 3).unwrap();
        t.process(7 << 10, "Ascend Hardware", "NPU 0").unwrap();
        assert_eq!(fields(&t.w).len(), 4);
        // A second slice with the same strings carries no InternedData, only their ids.
        t.slice(
            "Conv2D",
            7 << 10,
            3,
            ts + 5,
            1,
            &[("Model Id", Arg::U(4)), ("Task Type", Arg::S(&long))],
        )
        .unwrap();
        let all = fields(&t.w);
        let second = fields(all[4].1.as_ref().unwrap_err());
        assert!(!second.iter().any(|f| f.0 == PKT_INTERNED_DATA));
        assert!(second.contains(&(PKT_SEQUENCE_FLAGS, Ok(SEQ_NEEDS_INCREMENTAL_STATE))));
    }

    #[test]
    fn a_track_used_before_it_is_described_is_still_described_once() {
        let mut t = Pftrace::new(Vec::new());
        t.slice("op", 1, 2, 10, 1, &[]).unwrap();
        t.thread(1, 2, "Stream 2", 2).unwrap();
        t.process(1, "Ascend Hardware", "NPU 0").unwrap();
        t.process(1, "again", "").unwrap();
        t.thread(1, 2, "again", 2).unwrap();
        let described: Vec<u64> = fields(&t.w)
            .into_iter()
            .filter_map(|(_, p)| {
                let p = fields(&p.unwrap_err());
                let d = p.iter().find(|f| f.0 == PKT_TRACK_DESCRIPTOR)?.1.clone();
                let d = fields(&d.unwrap_err());
                d.iter().find(|f| f.0 == TD_UUID)?.1.clone().ok()
            })
            .collect();
        // The slice's track (uuid 1), then the process (uuid 2), each described once.
        assert_eq!(described, vec![1, 2]);
    }

    #[test]
    fn intern_tables_stop_growing_at_their_bound() {
        let (mut table, mut out, mut tmp) = (Interned::default(), Vec::new(), Vec::new());
        for i in 0..INTERN_MAX {
            assert_eq!(
                table.iid(&i.to_string(), &mut out, 2, &mut tmp),
                Some(i as u64 + 1)
            );
        }
        assert_eq!(
            table.iid("one more", &mut out, 2, &mut tmp),
            None,
            "inline from now on"
        );
        assert_eq!(
            table.iid("7", &mut out, 2, &mut tmp),
            Some(8),
            "known strings keep ids"
        );
        assert_eq!(table.0.len(), INTERN_MAX);
    }
}
