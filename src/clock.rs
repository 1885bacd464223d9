//! The library's clock: nanoseconds on CLOCK_MONOTONIC_RAW (docs/design.md, "Time").

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC_RAW always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the clock reads `t` (no-op if it already has).
pub fn sleep_until(t: u64) {
    let now = now_ns();
    if t > now {
        std::thread::sleep(std::time::Duration::from_nanos(t - now));
    }
}

/// The calling thread's OS thread id (a system call: cache it on hot paths).
pub fn thread_id() -> u32 {
    // The raw system call, not glibc's gettid() wrapper: that wrapper is glibc 2.30, and the
    // library supports glibc 2.28 (docs/design.md, "Building and installing").
    // SAFETY: SYS_gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}
