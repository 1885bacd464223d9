//! The library's clock: nanoseconds on CLOCK_MONOTONIC_RAW, and the wall clock beside it
//! (docs/design.md, "Time").
//!
//! `ACLPROF_CLOCK=virtual` (read once, at the first reading) replaces both with a virtual
//! clock for tests: it starts at a fixed time, moves only when [`sleep_until`] is asked to
//! wait (the emulated device's op times and gaps), and never sleeps, so a simulated run
//! writes the same bytes on any machine at any load.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Where the virtual monotonic clock starts (1000 s after boot).
const VIRTUAL_START_NS: u64 = 1_000_000_000_000;
/// The virtual wall clock at [`VIRTUAL_START_NS`]: 2026-01-01T00:00:00Z.
const VIRTUAL_WALL_NS: u64 = 1_767_225_600_000_000_000;

const UNKNOWN: u8 = 0;
const REAL: u8 = 1;
const VIRTUAL: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);
static VIRTUAL_NOW: AtomicU64 = AtomicU64::new(VIRTUAL_START_NS);

fn is_virtual() -> bool {
    match MODE.load(Ordering::Relaxed) {
        REAL => false,
        VIRTUAL => true,
        _ => {
            let v = std::env::var_os("ACLPROF_CLOCK").is_some_and(|v| v == "virtual");
            MODE.store(if v { VIRTUAL } else { REAL }, Ordering::Relaxed);
            v
        }
    }
}

pub fn now_ns() -> u64 {
    if is_virtual() {
        return VIRTUAL_NOW.load(Ordering::Relaxed);
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC_RAW always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch.
pub fn wall_ns() -> u64 {
    if is_virtual() {
        return VIRTUAL_WALL_NS + (VIRTUAL_NOW.load(Ordering::Relaxed) - VIRTUAL_START_NS);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Sleeps until the clock reads `t` (no-op if it already has); the virtual clock moves to
/// `t` at once.
pub fn sleep_until(t: u64) {
    if is_virtual() {
        VIRTUAL_NOW.fetch_max(t, Ordering::Relaxed);
        return;
    }
    let now = now_ns();
    if t > now {
        std::thread::sleep(std::time::Duration::from_nanos(t - now));
    }
}

/// `secs` since the epoch as [year, month, day, hour, minute, second]: local time (the `TZ`
/// the process has, as CANN names its result directories) or UTC. libc's conversions, for
/// both.
fn calendar(secs: u64, local: bool) -> [i32; 6] {
    let t = secs as libc::time_t;
    // SAFETY: an all-zero tm is a valid value to be overwritten.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers; the _r variants are thread-safe.
    unsafe {
        if local {
            libc::localtime_r(&t, &mut tm);
        } else {
            libc::gmtime_r(&t, &mut tm);
        }
    }
    [
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    ]
}

/// Local time now as `YYYYMMDDhhmmss`, plus `mmm` milliseconds when `millis` (result
/// directories' and exports' stamps).
pub fn local_stamp(millis: bool) -> String {
    local_stamp_at(wall_ns(), millis)
}

/// [`local_stamp`] of the moment `epoch_ns`.
pub fn local_stamp_at(epoch_ns: u64, millis: bool) -> String {
    let now = std::time::Duration::from_nanos(epoch_ns);
    let [y, mo, d, h, mi, s] = calendar(now.as_secs(), true);
    let base = format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}");
    if millis {
        format!("{base}{:03}", now.subsec_millis())
    } else {
        base
    }
}

/// Seconds since the epoch as `YYYY-MM-DD hh:mm:ss`, UTC.
pub fn utc_date_time(secs: u64) -> String {
    let [y, mo, d, h, mi, s] = calendar(secs, false);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// The calling thread's OS thread id: a system call the first time a thread asks (and the
/// first time after a `fork`, where the thread has a new id), a thread-local read after.
pub fn thread_id() -> u32 {
    thread_local! {
        /// (the fork generation it was read in, the id)
        static TID: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((u32::MAX, 0)) };
    }
    let gen = FORKS.load(Ordering::Relaxed);
    TID.with(|c| {
        let (g, tid) = c.get();
        if g == gen {
            return tid;
        }
        // A child must bump the generation: the handler that does is registered first.
        crate::fork::watch();
        // The raw system call, not glibc's gettid() wrapper: that wrapper is glibc 2.30,
        // and the library supports glibc 2.28 (docs/design.md, "Building and installing").
        // SAFETY: SYS_gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) as u32 };
        c.set((gen, tid));
        tid
    })
}

/// Bumped in a forked child (by `crate::fork`'s handler), so that cached thread ids are
/// read again.
static FORKS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Called in a forked child, before anything else of the library runs there.
pub(crate) fn forked() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc_date_time(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc_date_time(1_795_653_693), "2026-11-26 00:41:33");
        assert_eq!(super::utc_date_time(951_782_400), "2000-02-29 00:00:00");
    }
}
