//! The library's global locks, and `fork()`: a child starts with profiling state of its own.
//!
//! Python's `multiprocessing`, PyTorch's DataLoader workers and pre-forking servers fork
//! processes whose other threads may be inside the library. A lock another thread holds at
//! `fork()` stays held for ever in the child. So every global lock of the library is a
//! [`Mutex`] or [`RwLock`] of this module, declared with [`global!`], which registers it
//! when the library is loaded; there is no other way to declare one (`tests/layers.rs`
//! fails on a `static` lock of any other type). Before a fork, the forking thread takes every
//! registered lock in [`Rank`] order, the one order the code nests them in, so none is held
//! by a thread that will not exist in the child. The parent then simply releases them; the
//! child first runs each lock's reset ([`Mutex::reset_in_child`]), then releases it.
//!
//! A child is not initialised, has no subscriptions and no file-mode session, its
//! statistics start from zero, and the parent's subscriptions are orphaned: the child never
//! writes the parent's records, never closes its fds, and never exports its session. Loaded
//! models, configs, op metadata and other handles stay valid, so a child can subscribe a
//! model it inherited anew. See docs/design.md ("Fork").
//!
//! Debug builds (every test build) also check the order at run time: taking a lock while
//! holding one of the same or a later rank panics, naming both, so a new nesting that
//! contradicts [`Rank`] fails the first test that runs it rather than a user's fork.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

/// Every global lock of the library, outermost first: a thread holding one may take only
/// locks of later ranks. The fork handler takes them in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Rank {
    /// `profiler`: configs (`aclprofCreateConfig`).
    Configs,
    /// `profiler`: subscription configs.
    SubConfigs,
    /// `profiler`: the profiler (init, start, stop, subscriptions).
    Core,
    /// `profiler`: counts of ended subscriptions.
    Retired,
    /// `profiler`: live subscriptions.
    Live,
    /// `profiler`: the file-mode session.
    Session,
    /// `runtime`: contexts.
    Contexts,
    /// `runtime`: streams.
    Streams,
    /// `runtime`: data buffers.
    Buffers,
    /// `runtime`: datasets.
    Datasets,
    /// `runtime`: model descriptions.
    Descs,
    /// `runtime`: live allocations.
    Allocations,
    /// `filemode::memlog`: pool totals and the memory log.
    Pools,
    /// `tx`: msproftx stamps.
    Stamps,
    /// `tx`: step infos.
    Steps,
    /// `tx`: open ranges.
    Ranges,
    /// `registry`: loaded models.
    Registry,
    /// `hotpath`: listeners.
    Listeners,
    /// `hotpath`: subscriptions by model.
    Subs,
    /// `hotpath`: file-mode sinks by device.
    FileSinks,
    /// `hotpath`: the watcher's tap.
    Tap,
    /// `hotpath`: stream ids to reuse.
    FreeStreams,
    /// `filemode`: the host event log.
    Host,
    /// `transport::fd`: the fd stripes.
    FdStripes,
    /// `transport::flusher`: one start at a time.
    FlusherStart,
    /// `transport::flusher`: what is due.
    FlusherQueue,
    /// `names`: long names by op.
    Names,
    /// `opmeta`: op metadata.
    OpMeta,
    /// `opreg`: registered ops.
    OpReg,
    /// `ffi::ext_ring`: ring readers.
    RingReaders,
    /// `watch`: the agent's files.
    WatchFiles,
    /// `filemode::db`: SQLite's own global mutexes (its allocator's among them), taken
    /// inside SQLite's calls only.
    Sqlite,
}

impl Rank {
    /// Every rank, in order.
    pub const ALL: [Rank; 32] = [
        Rank::Configs,
        Rank::SubConfigs,
        Rank::Core,
        Rank::Retired,
        Rank::Live,
        Rank::Session,
        Rank::Contexts,
        Rank::Streams,
        Rank::Buffers,
        Rank::Datasets,
        Rank::Descs,
        Rank::Allocations,
        Rank::Pools,
        Rank::Stamps,
        Rank::Steps,
        Rank::Ranges,
        Rank::Registry,
        Rank::Listeners,
        Rank::Subs,
        Rank::FileSinks,
        Rank::Tap,
        Rank::FreeStreams,
        Rank::Host,
        Rank::FdStripes,
        Rank::FlusherStart,
        Rank::FlusherQueue,
        Rank::Names,
        Rank::OpMeta,
        Rank::OpReg,
        Rank::RingReaders,
        Rank::WatchFiles,
        Rank::Sqlite,
    ];
}

/// What the fork handler holds of one lock: called once with `true` in the child (reset,
/// then release) or `false` in the parent (release).
pub type Release = Box<dyn FnOnce(bool)>;

/// A global lock as the fork handler sees it.
pub trait Global: Sync {
    fn rank(&self) -> Rank;
    /// Takes the lock (every part of it); the result releases it.
    fn hold(&'static self) -> Release;
}

const SLOTS: usize = Rank::ALL.len();
static REGISTERED: [OnceLock<&'static dyn Global>; SLOTS] = [const { OnceLock::new() }; SLOTS];
/// A rank registered twice (a mistake [`global!`]'s check test reports).
static DUPLICATE: OnceLock<Rank> = OnceLock::new();

/// Called by [`global!`] when the library is loaded.
#[doc(hidden)]
pub fn register(lock: &'static dyn Global) {
    if REGISTERED[lock.rank() as usize].set(lock).is_err() {
        let _ = DUPLICATE.set(lock.rank());
    }
    watch();
}

/// The registered lock of `rank`, if any.
#[cfg(test)]
pub fn registered(rank: Rank) -> Option<&'static dyn Global> {
    REGISTERED[rank as usize].get().copied()
}

/// A rank that two locks claimed, if any.
#[cfg(test)]
pub fn duplicate() -> Option<Rank> {
    DUPLICATE.get().copied()
}

/// Declares a global lock of the library and registers it with the fork handler when the
/// library is loaded (an `.init_array` entry, as C++ static constructors are).
macro_rules! global {
    ($($(#[$m:meta])* $v:vis static $name:ident: $ty:ty = $init:expr;)+) => {$(
        $(#[$m])* $v static $name: $ty = $init;
        const _: () = {
            extern "C" fn register() {
                $crate::fork::register(&$name);
            }
            #[used]
            #[link_section = ".init_array"]
            static REGISTER: extern "C" fn() = register;
        };
    )+};
}
pub(crate) use global;

thread_local! {
    static HELD: RefCell<Vec<Release>> = const { RefCell::new(Vec::new()) };
}

extern "C" fn prepare() {
    crate::panic::guard_void("aclprof fork handler", || {
        let held: Vec<Release> = REGISTERED
            .iter()
            .filter_map(|l| l.get())
            .map(|l| l.hold())
            .collect();
        HELD.with(|h| *h.borrow_mut() = held);
    });
}

fn release(child: bool) {
    crate::panic::guard_void("aclprof fork handler", || {
        let held = HELD.with(|h| std::mem::take(&mut *h.borrow_mut()));
        for r in held.into_iter().rev() {
            r(child);
        }
    });
}

extern "C" fn in_parent() {
    release(false);
}

extern "C" fn in_child() {
    crate::clock::forked();
    release(true);
}

/// Registers the fork handlers (once per process, when the first lock registers, or the
/// first time a thread's id is cached).
pub(crate) fn watch() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers plain extern "C" functions that never unwind.
        unsafe { libc::pthread_atfork(Some(prepare), Some(in_parent), Some(in_child)) };
    });
}

/// The ranks this thread holds, in debug builds: the run-time check of [`Rank`]'s order.
#[cfg(debug_assertions)]
mod order {
    use super::Rank;
    use std::cell::Cell;

    thread_local! {
        static HELD: Cell<u64> = const { Cell::new(0) };
    }

    /// Notes that `rank` is about to be taken; panics if a lock of the same or a later rank
    /// is held (a nesting [`Rank`] does not allow). `blocking`: a try-lock cannot deadlock,
    /// so it is only noted.
    pub fn enter(rank: Rank, blocking: bool) {
        let _ = HELD.try_with(|h| {
            let held = h.get();
            let later = held >> rank as u32;
            if blocking && later != 0 {
                let worst = Rank::ALL[(63 - held.leading_zeros()) as usize];
                panic!("lock order: {rank:?} taken while holding {worst:?} (see fork::Rank)");
            }
            h.set(held | 1 << rank as u32);
        });
    }

    pub fn leave(rank: Rank) {
        let _ = HELD.try_with(|h| h.set(h.get() & !(1 << rank as u32)));
    }
}

#[cfg(not(debug_assertions))]
mod order {
    use super::Rank;
    #[inline(always)]
    pub fn enter(_: Rank, _: bool) {}
    #[inline(always)]
    pub fn leave(_: Rank) {}
}

/// A global mutex (declare it with [`global!`]). `lock` never fails: a panic while it was
/// held (which the C boundary turned into an error) does not poison it.
pub struct Mutex<T> {
    rank: Rank,
    inner: std::sync::Mutex<T>,
    child: Option<fn(&mut T)>,
}

impl<T> Mutex<T> {
    pub const fn new(rank: Rank, value: T) -> Self {
        Mutex {
            rank,
            inner: std::sync::Mutex::new(value),
            child: None,
        }
    }

    /// A mutex whose value a forked child resets with `f` before it is released.
    pub const fn reset_in_child(rank: Rank, value: T, f: fn(&mut T)) -> Self {
        Mutex {
            rank,
            inner: std::sync::Mutex::new(value),
            child: Some(f),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, T> {
        order::enter(self.rank, true);
        MutexGuard {
            rank: self.rank,
            g: Some(self.inner.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }

    /// The lock if no one holds it.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        order::enter(self.rank, false);
        Some(MutexGuard {
            rank: self.rank,
            g: Some(g),
        })
    }
}

impl<T: Send> Global for Mutex<T> {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn hold(&'static self) -> Release {
        releaser(self.lock(), self.child)
    }
}

/// What releases a held lock `g`: in a forked child, after resetting its value with `child`.
fn releaser<G: DerefMut + 'static>(mut g: G, child: Option<fn(&mut G::Target)>) -> Release {
    Box::new(move |in_child| {
        if let (true, Some(f)) = (in_child, child) {
            f(&mut g);
        }
    })
}

/// A striped set of global mutexes of one rank, never nested with each other; the fork
/// handler takes them all, in index order.
impl<T: Send, const N: usize> Global for [Mutex<T>; N] {
    fn rank(&self) -> Rank {
        self[0].rank
    }

    fn hold(&'static self) -> Release {
        // One rank for all: they are taken together here only, in index order.
        order::enter(self[0].rank, true);
        let mut held: Vec<_> = self
            .iter()
            .map(|m| (m.inner.lock().unwrap_or_else(|p| p.into_inner()), m.child))
            .collect();
        let rank = self[0].rank;
        Box::new(move |in_child| {
            while let Some((mut g, child)) = held.pop() {
                if let (true, Some(f)) = (in_child, child) {
                    f(&mut g);
                }
            }
            order::leave(rank);
        })
    }
}

pub struct MutexGuard<'a, T> {
    rank: Rank,
    /// Always `Some` but while a condition variable waits with it.
    g: Option<std::sync::MutexGuard<'a, T>>,
}

impl<'a, T> MutexGuard<'a, T> {
    /// Releases the lock while `cv` waits (up to `timeout`, if given), and takes it again.
    pub fn wait(mut self, cv: &std::sync::Condvar, timeout: Option<std::time::Duration>) -> Self {
        let g = self.g.take().expect("a guard holds its lock");
        let g = match timeout {
            None => cv.wait(g).unwrap_or_else(|p| p.into_inner()),
            Some(t) => cv.wait_timeout(g, t).unwrap_or_else(|p| p.into_inner()).0,
        };
        self.g = Some(g);
        self
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        self.g.as_ref().expect("a guard holds its lock")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        self.g.as_mut().expect("a guard holds its lock")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.g = None;
        order::leave(self.rank);
    }
}

/// A global reader-writer lock (declare it with [`global!`]); never poisoned, as [`Mutex`].
/// The fork handler takes it for writing.
pub struct RwLock<T> {
    rank: Rank,
    inner: std::sync::RwLock<T>,
    child: Option<fn(&mut T)>,
}

impl<T> RwLock<T> {
    pub const fn new(rank: Rank, value: T) -> Self {
        RwLock {
            rank,
            inner: std::sync::RwLock::new(value),
            child: None,
        }
    }

    /// A lock whose value a forked child resets with `f` before it is released.
    pub const fn reset_in_child(rank: Rank, value: T, f: fn(&mut T)) -> Self {
        RwLock {
            rank,
            inner: std::sync::RwLock::new(value),
            child: Some(f),
        }
    }

    pub fn read(&self) -> Guard<std::sync::RwLockReadGuard<'_, T>> {
        order::enter(self.rank, true);
        Guard {
            rank: self.rank,
            g: self.inner.read().unwrap_or_else(|p| p.into_inner()),
        }
    }

    pub fn write(&self) -> Guard<std::sync::RwLockWriteGuard<'_, T>> {
        order::enter(self.rank, true);
        Guard {
            rank: self.rank,
            g: self.inner.write().unwrap_or_else(|p| p.into_inner()),
        }
    }
}

impl<T: Send + Sync> Global for RwLock<T> {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn hold(&'static self) -> Release {
        releaser(self.write(), self.child)
    }
}

/// A held [`RwLock`], for reading or writing.
pub struct Guard<G> {
    rank: Rank,
    g: G,
}

impl<G: Deref> Deref for Guard<G> {
    type Target = G::Target;
    #[inline(always)]
    fn deref(&self) -> &G::Target {
        &self.g
    }
}

impl<G: DerefMut> DerefMut for Guard<G> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.g
    }
}

impl<G> Drop for Guard<G> {
    fn drop(&mut self) {
        order::leave(self.rank);
    }
}

#[cfg(test)]
mod tests;
