//! Opaque C handles (`aclprofConfig *`, `aclprofSubscribeConfig *`, `aclprofStepInfo *`)
//! that are validated before use.
//!
//! A handle is the address of a boxed Rust value owned by a [`Table`]. The table never
//! dereferences the pointer it is given: it looks the address up, so a dangling, foreign or
//! already-destroyed pointer is simply "not found": CANN crashes or double-frees there; we
//! return the error the surrounding check uses.

use crate::fork::{Global, Mutex, MutexGuard, Rank, Release};
use std::collections::HashMap;

/// A table of handles; a global one is declared with [`crate::fork::global!`]. Handles stay
/// valid in a forked child.
pub struct Table<T> {
    live: Mutex<Option<HashMap<usize, Box<T>>>>,
}

impl<T: Send> Global for Table<T> {
    fn rank(&self) -> Rank {
        self.live.rank()
    }

    fn hold(&'static self) -> Release {
        self.live.hold()
    }
}

impl<T> Table<T> {
    pub const fn new(rank: Rank) -> Self {
        Table {
            live: Mutex::new(rank, None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<usize, Box<T>>>> {
        self.live.lock()
    }

    /// Takes ownership of `value` and returns its handle (never null).
    pub fn insert(&self, value: T) -> usize {
        let b = Box::new(value);
        let addr = &*b as *const T as usize;
        self.lock().get_or_insert_with(HashMap::new).insert(addr, b);
        addr
    }

    /// Runs `f` on the value behind `handle`, or returns `None` if it is not a live handle.
    pub fn with<R>(&self, handle: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut g = self.lock();
        g.as_mut()?.get_mut(&handle).map(|b| f(b))
    }

    /// Destroys the value behind `handle`; false if it was not a live handle.
    pub fn remove(&self, handle: usize) -> bool {
        let removed = self.lock().as_mut().and_then(|m| m.remove(&handle));
        removed.is_some()
    }

    pub fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let t: Table<u32> = Table::new(Rank::Configs);
        let h = t.insert(5);
        assert_ne!(h, 0);
        assert_eq!(t.with(h, |v| *v), Some(5));
        assert_eq!(t.with(h + 1, |v| *v), None);
        assert!(t.remove(h));
        assert!(!t.remove(h), "double destroy is detected");
        assert_eq!(t.with(h, |v| *v), None);
        assert_eq!(t.len(), 0);
    }
}
