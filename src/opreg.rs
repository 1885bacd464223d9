//! Ops registered once (docs/design.md, "Registered ops"), as CANN's runtime prepares one
//! record per node at model load: a runtime registers an op's name, type and metadata id
//! once and gets an id; each execution then reports that id and its times, and the hot path
//! copies the record's prepared strings ([`OpImage`]) instead of measuring and cutting them.
//!
//! The table only grows: an id stays valid for the life of the process (a forked child's
//! included) and is never reused. Entries are written under the registration lock and
//! published by a release store of the count, so readers take no lock. Equal registrations
//! get the same id, so a model loaded again does not grow the table.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM};
use crate::fork::{global, Mutex, Rank};
use crate::formats::record::OpImage;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

/// At most this many registered ops, and this many bytes of them, per process.
pub const MAX_OPS: usize = 1 << 20;
pub const MAX_BYTES: usize = 128 << 20;
/// Ids are this tag plus the op's 1-based index: an id of another table (a model's, a
/// metadata id) or a small integer is told apart from ours, not taken for another op.
pub const ID_TAG: u32 = 0x4F00_0000;
const INDEX_MASK: u32 = 0x00FF_FFFF;
const _: () = assert!(MAX_OPS as u32 <= INDEX_MASK);

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A registered op: its record image and its metadata id.
#[derive(Debug)]
pub struct Op {
    pub image: OpImage,
    /// The op's id in the op metadata table (`opmeta`), or 0.
    pub meta: u32,
}

/// The entries, in chunks of [`CHUNK`] allocated as the table grows and never freed: chunk
/// `c` holds indices `c * CHUNK ..`. A chunk pointer and an entry are written only under
/// [`TABLE`]'s lock, before [`COUNT`] is raised past the entry by a release store; a reader
/// that sees the count (acquire) sees both. A fork holds that lock, so a child never meets
/// an entry half written.
static CHUNKS: [AtomicPtr<Op>; MAX_OPS / CHUNK] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_OPS / CHUNK];
/// How many ops are registered (indices below it are set).
static COUNT: AtomicU32 = AtomicU32::new(0);
/// Whether the full table refused a registration yet (each caller is told; the first is
/// logged).
static REFUSED: AtomicBool = AtomicBool::new(false);

/// What makes two registrations one: name, type and metadata id.
type Key = (Box<[u8]>, Box<[u8]>, u32);

#[derive(Default)]
struct Table {
    ids: HashMap<Key, u32>,
    bytes: usize,
}

global! {
    /// Registration; a forked child keeps every entry, so its ids stay valid.
    static TABLE: Mutex<Option<Table>> = Mutex::new(Rank::OpReg, None);
}

/// Registers an op (`name` and `op_type` the bytes of C strings, `meta` an `opmeta` id or 0)
/// and returns its id: the same id for the same three. Errors when the table is full (the
/// first refusal is logged).
pub fn register(name: &[u8], op_type: &[u8], meta: u32) -> Result<u32> {
    let name = crate::names::kept(name);
    let op_type = crate::names::kept(op_type);
    let mut g = TABLE.lock();
    let t = g.get_or_insert_with(Table::default);
    let key = (Box::from(&*name), Box::from(&*op_type), meta);
    if let Some(&id) = t.ids.get(&key) {
        return Ok(id);
    }
    let image = OpImage::new(&name, &op_type);
    let size = image.size() + 2 * (name.len() + op_type.len()) + 64;
    let n = COUNT.load(Ordering::Relaxed) as usize;
    if n >= MAX_OPS || t.bytes + size > MAX_BYTES {
        if !REFUSED.swap(true, Ordering::Relaxed) {
            log::warn!(
                "registered op table full ({n} ops, {} bytes): report further ops by name \
                 (aclprofExtReportOp)",
                t.bytes
            );
        }
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("the registered op table is full ({n} ops)"),
        );
    }
    let slot = &CHUNKS[n >> CHUNK_BITS];
    let mut chunk = slot.load(Ordering::Relaxed);
    if chunk.is_null() {
        let fresh: Box<[std::mem::MaybeUninit<Op>]> = Box::new_uninit_slice(CHUNK);
        chunk = Box::leak(fresh).as_mut_ptr().cast::<Op>();
        slot.store(chunk, Ordering::Relaxed);
    }
    // SAFETY: `chunk` holds CHUNK entries; index `n` is written once, here, under the lock,
    // and read only once COUNT (stored below, with release) is past it.
    unsafe { chunk.add(n & (CHUNK - 1)).write(Op { image, meta }) };
    t.bytes += size;
    let id = ID_TAG | (n as u32 + 1);
    t.ids.insert(key, id);
    COUNT.store(n as u32 + 1, Ordering::Release);
    Ok(id)
}

/// The index of `id` if it is one of this process's ids: one acquire load.
#[inline(always)]
fn index(id: u32) -> Option<usize> {
    let i = (id & INDEX_MASK).wrapping_sub(1) as usize;
    (id & !INDEX_MASK == ID_TAG && i < COUNT.load(Ordering::Acquire) as usize).then_some(i)
}

/// Whether this process registered `id`.
#[inline(always)]
pub fn valid(id: u32) -> bool {
    index(id).is_some()
}

/// The op registered with `id`, if this process registered it. No lock: one acquire load
/// and one of the chunk's pointer.
#[inline(always)]
pub fn get(id: u32) -> Option<&'static Op> {
    let i = index(id)?;
    let chunk = CHUNKS[i >> CHUNK_BITS].load(Ordering::Relaxed);
    // SAFETY: `i` is below COUNT, read with acquire: its chunk pointer and entry were
    // written before COUNT passed it (release) and are never written again or freed.
    Some(unsafe { &*chunk.add(i & (CHUNK - 1)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_distinct_and_checked() {
        let a = register(b"opreg/a", b"Conv2D", 0).unwrap();
        let b = register(b"opreg/b", b"Conv2D", 0).unwrap();
        let c = register(b"opreg/a", b"Conv2D", 7).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(register(b"opreg/a", b"Conv2D", 0).unwrap(), a);
        assert_eq!(get(c).unwrap().meta, 7);
        assert_eq!(get(a).unwrap().image, OpImage::new(b"opreg/a", b"Conv2D"));
        // Not ours: 0, an untagged index, an index past the table, another tag.
        for bad in [
            0,
            a & INDEX_MASK,
            ID_TAG | INDEX_MASK,
            ID_TAG,
            a ^ 0x1000_0000,
        ] {
            assert!(get(bad).is_none(), "{bad:#x}");
        }
    }

    /// Readers that find an id as soon as it is published see its whole entry (under
    /// ThreadSanitizer, `scripts/tsan`, a write not ordered before the read is reported).
    #[test]
    fn an_entry_is_whole_when_its_id_is_seen() {
        let first = register(b"opreg/published/first", b"T", 0).unwrap();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut id = first;
                    let mut seen = 0;
                    while seen < 500 {
                        match get(id) {
                            Some(op) => {
                                let (n, t) = op.image.strings();
                                assert_eq!(op.image, OpImage::new(n, t));
                                id += 1;
                                seen += 1;
                            }
                            None => std::thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        for i in 0..600 {
            register(format!("opreg/published/{i}").as_bytes(), b"Add", 0).unwrap();
        }
        for r in readers {
            r.join().unwrap();
        }
    }

    #[test]
    fn registrations_from_many_threads_each_get_their_own_entry() {
        let ids: Vec<Vec<(u32, String)>> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..300)
                        .map(|i| {
                            let n = format!("opreg/threads/{t}/{i}");
                            (register(n.as_bytes(), b"T", 0).unwrap(), n)
                        })
                        .collect()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let mut seen = std::collections::HashSet::new();
        for (id, n) in ids.iter().flatten() {
            assert!(seen.insert(*id), "id {id:#x} given twice");
            assert_eq!(get(*id).unwrap().image, OpImage::new(n.as_bytes(), b"T"));
        }
    }
}
