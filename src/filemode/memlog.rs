//! Device memory's pools as the session sees them: each pool's totals, always kept, and
//! while a session records memory, each allocation's event in the memory log
//! ([`crate::formats::layout::MEM_LOG`], binary: [`crate::formats::memory::MemStamp`]).
//! One lock covers both, so an event is one lock, a copy of about 64 bytes into a buffer,
//! and a write of the buffer each 64 KiB (docs/design.md, "Memory"). The rules of the
//! pools (what an allocation does to the totals) are in `src/memory.rs`.

use crate::fork::{global, Mutex, Rank};
use crate::formats::memory::{MemStamp, Pool, MEM_LOG_MAGIC};
use std::io::Write;

/// A pool's totals: bytes in use and bytes held from the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub allocated: u64,
    pub reserved: u64,
}

struct Pools {
    /// By (device, pool); a handful, so a list beats a map.
    totals: Vec<((u32, Pool), Totals)>,
    /// The running session's memory log, if it records memory.
    log: Option<Log>,
}

global! {
    /// A forked child keeps the parent's totals (its memory is a copy) but not its log:
    /// the buffer is the parent's, never written by the child.
    static POOLS: Mutex<Pools> = Mutex::reset_in_child(
        Rank::Pools,
        Pools { totals: Vec::new(), log: None },
        |p| std::mem::forget(p.log.take()),
    );
}

/// The memory log of the running session, and what it lost.
struct Log {
    file: std::fs::File,
    /// Whole events not written yet, and how many they are.
    buf: Vec<u8>,
    pending: u64,
    /// Bytes in the file (0: not even its magic yet): a failed write is cut back to them,
    /// so no torn event is read.
    written: u64,
    /// Events lost to write errors, and why; `reported` of them already said by a flush.
    lost: u64,
    reported: u64,
    why: String,
}

/// Events are written in batches of about this many bytes.
const BATCH: usize = 64 * 1024;

impl Log {
    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let (file, buf, first) = (&mut self.file, &self.buf, self.written == 0);
        let r = crate::transport::fd::quietly(crate::transport::fd::Signals::FSIZE, || {
            // The file begins with its magic, written with the first batch that lands.
            if first {
                file.write_all(MEM_LOG_MAGIC)?;
            }
            file.write_all(buf)
        });
        match r {
            Ok(()) => {
                let magic = if first { MEM_LOG_MAGIC.len() } else { 0 };
                self.written += (magic + self.buf.len()) as u64;
            }
            Err(e) => {
                let _ = self.file.set_len(self.written);
                self.lost += self.pending;
                self.why = format!("memory events: {e}");
            }
        }
        self.buf.clear();
        self.pending = 0;
    }
}

/// The switches under which a pool's events are recorded.
fn bits(pool: Pool) -> u64 {
    use crate::formats::acl_prof::ACL_PROF_TASK_MEMORY;
    match pool {
        Pool::Op => ACL_PROF_TASK_MEMORY,
        Pool::App | Pool::Model => ACL_PROF_TASK_MEMORY | crate::formats::prof_values::MEM_SAMPLED,
    }
}

/// True while a session records `pool`'s events.
pub fn recording(pool: Pool) -> bool {
    super::recording(bits(pool))
}

/// One allocation or release of device memory, as the memory module reports it.
pub struct Change<'a> {
    pub device: u32,
    pub pool: Pool,
    pub addr: u64,
    /// > 0 allocates, < 0 releases.
    pub size: i64,
    pub name: &'a str,
    /// The library's clock.
    pub at: u64,
}

/// Applies `c` to its pool's totals (`next` gives them after it) and, if a session records
/// the pool, logs it with them.
pub fn change(c: &Change, next: impl FnOnce(Totals) -> Totals) {
    let mut p = POOLS.lock();
    let key = (c.device, c.pool);
    let i = match p.totals.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            p.totals.push((key, Totals::default()));
            p.totals.len() - 1
        }
    };
    let t = next(p.totals[i].1);
    p.totals[i].1 = t;
    if recording(c.pool) {
        if let Some(log) = p.log.as_mut() {
            push(log, c, t);
        }
    }
}

fn push(log: &mut Log, c: &Change, t: Totals) {
    MemStamp {
        addr: c.addr,
        allocated: t.allocated,
        reserved: t.reserved,
        size: c.size,
        start: c.at,
        tid: u64::from(crate::clock::thread_id()),
        device: c.device,
        pool: c.pool,
        name: c.name,
    }
    .put(&mut log.buf);
    log.pending += 1;
    if log.buf.len() >= BATCH {
        log.flush();
    }
}

/// Every pool's totals now, by device, or None if a thread holds the pools this instant:
/// a reader (the watcher) that must never make the program wait asks again later.
pub fn try_totals() -> Option<Vec<(u32, Pool, Totals)>> {
    let p = POOLS.try_lock()?;
    let mut all: Vec<_> = p
        .totals
        .iter()
        .map(|&((d, pool), t)| (d, pool, t))
        .collect();
    all.sort_unstable_by_key(|&(d, pool, _)| (d, pool));
    Some(all)
}

/// Logs every pool's totals as they stand at `at` (an event of size 0), so that a session
/// started after memory was allocated samples what the process holds.
pub fn snapshot(at: u64) {
    let mut p = POOLS.lock();
    let Pools { totals, log } = &mut *p;
    let Some(log) = log.as_mut() else { return };
    let mut held: Vec<_> = totals
        .iter()
        .filter(|(_, t)| *t != Totals::default())
        .collect();
    held.sort_unstable_by_key(|(k, _)| *k);
    for &&((device, pool), t) in &held {
        if recording(pool) {
            let c = Change {
                device,
                pool,
                addr: 0,
                size: 0,
                name: "",
                at,
            };
            push(log, &c, t);
        }
    }
}

/// Starts the memory log at `path` (a new session's that records memory).
pub(super) fn open(path: &std::path::Path) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    POOLS.lock().log = Some(Log {
        file,
        buf: Vec::with_capacity(BATCH + 1024),
        pending: 0,
        written: 0,
        lost: 0,
        reported: 0,
        why: String::new(),
    });
    Ok(())
}

/// Writes the buffered events; returns those lost since the last call, and why.
pub(super) fn flush() -> Option<(u64, String)> {
    let mut p = POOLS.lock();
    let log = p.log.as_mut()?;
    log.flush();
    let new = log.lost - log.reported;
    log.reported = log.lost;
    (new > 0).then(|| (new, log.why.clone()))
}

/// Closes the log, writing what it holds; returns the events it lost and why.
pub(super) fn close() -> (u64, String) {
    let log = POOLS.lock().log.take();
    log.map(|mut l| {
        l.flush();
        (l.lost, l.why)
    })
    .unwrap_or_default()
}

/// Drops the log unwritten (a session that failed to start or was dropped).
pub(super) fn discard() {
    drop(POOLS.lock().log.take());
}
