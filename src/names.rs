//! Full names of ops whose name or type did not fit inline (docs/design.md, "The op record").
//!
//! Records carry at most 256 bytes of name and 64 of type. When more was reported, the whole
//! strings are kept here, keyed by `opIndex`, so the producing process can still read them.
//! The table is bounded: past [`CAPACITY`] entries the oldest are forgotten and readers get
//! the truncated inline text; and a string longer than [`MAX_KEPT`] bytes is kept as its
//! beginning, `~` and a hash of the whole string (so distinct names stay distinct). At most
//! 4096 × 2 × 4 KiB = 32 MiB, whatever names arrive. Only truncated ops touch this table (a
//! mutex is fine there).

use crate::fork::{global, Mutex, MutexGuard, Rank};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

pub const CAPACITY: usize = 4096;
/// The longest string kept whole, in bytes.
pub const MAX_KEPT: usize = 4096;

/// `s`, or for a string longer than [`MAX_KEPT`], its first bytes (cut at a character
/// boundary), `~` and the FNV-1a-64 hash of the whole string in 16 hex digits: exactly
/// [`MAX_KEPT`] bytes or fewer.
pub fn kept(s: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if s.len() <= MAX_KEPT {
        return s.into();
    }
    let hash = s.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let tail = format!("~{hash:016x}");
    let mut out = crate::formats::record::truncate_at_char(s, MAX_KEPT - tail.len()).to_vec();
    out.extend_from_slice(tail.as_bytes());
    out.into()
}

#[derive(Clone)]
pub struct Full {
    pub name: Arc<[u8]>,
    pub op_type: Arc<[u8]>,
}

#[derive(Default)]
struct Table {
    map: HashMap<u64, Full>,
    order: VecDeque<u64>,
}

global! {
    /// Long names by op; a forked child keeps them.
    static TABLE: Mutex<Option<Table>> = Mutex::new(Rank::Names, None);
}

fn lock() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock()
}

pub fn remember(op_index: u64, name: &[u8], op_type: &[u8]) {
    let mut g = lock();
    let t = g.get_or_insert_with(Table::default);
    if t.map.len() >= CAPACITY {
        if let Some(old) = t.order.pop_front() {
            t.map.remove(&old);
        }
    }
    if t.map
        .insert(
            op_index,
            Full {
                name: kept(name).as_ref().into(),
                op_type: kept(op_type).as_ref().into(),
            },
        )
        .is_none()
    {
        t.order.push_back(op_index);
    }
}

pub fn lookup(op_index: u64) -> Option<Full> {
    lock().as_ref()?.map.get(&op_index).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is process-wide: tests that fill it run one at a time.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn bounded_and_oldest_first() {
        let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
        let base = 1u64 << 60;
        for i in 0..(CAPACITY as u64 + 10) {
            remember(base + i, b"n", b"t");
        }
        // (Other tests may insert meanwhile: only what holds whatever they do is checked.)
        assert!(lookup(base).is_none());
        assert!(lookup(base + 9).is_none(), "the oldest go first");
        assert_eq!(&*lookup(base + CAPACITY as u64 + 9).unwrap().name, b"n");
        assert!(lock().as_ref().unwrap().map.len() <= CAPACITY);
    }

    #[test]
    fn long_strings_are_capped_and_stay_distinct() {
        let a = vec![b'a'; 256 * 1024];
        let mut b = a.clone();
        *b.last_mut().unwrap() = b'b';
        let (ka, kb) = (kept(&a), kept(&b));
        assert_eq!(ka.len(), MAX_KEPT);
        assert_ne!(ka, kb, "names that differ only past the cap stay distinct");
        assert_eq!(&ka[..100], &a[..100]);
        assert_eq!(kept(b"short").as_ref(), b"short");
        let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
        remember(u64::MAX - 1, &a, b"T");
        assert_eq!(lookup(u64::MAX - 1).unwrap().name.len(), MAX_KEPT);
    }
}
