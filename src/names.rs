//! Full names of ops whose name or type did not fit inline (contract item 2).
//!
//! Records carry at most 256 bytes of name and 64 of type. When more was reported, the whole
//! strings are kept here, keyed by `opIndex`, so the producing process can still read them.
//! The table is bounded: past [`CAPACITY`] entries the oldest are forgotten and readers get
//! the truncated inline text. Only truncated ops touch this table (a mutex is fine there).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

pub const CAPACITY: usize = 4096;

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

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Holds the table's lock across `fork()` (see [`crate::fork`]).
pub(crate) fn fork_prepare() -> crate::fork::Release {
    let g = lock();
    Box::new(move |_child| drop(g))
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
                name: name.into(),
                op_type: op_type.into(),
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

    #[test]
    fn bounded_and_oldest_first() {
        let base = 1u64 << 60;
        for i in 0..(CAPACITY as u64 + 10) {
            remember(base + i, b"n", b"t");
        }
        assert!(lookup(base).is_none());
        assert!(lookup(base + 9).is_none());
        assert_eq!(&*lookup(base + 10).unwrap().name, b"n");
        assert!(lock().as_ref().unwrap().map.len() <= CAPACITY);
    }
}
