//! Attaching a ring reader to arbitrary bytes (a hostile or corrupt ring file): an error,
//! or a reader whose acquire and release stay inside the mapping. Never a crash.
//! Run: `scripts/fuzz` (or `cargo fuzz run ring_headers`).
#![no_main]

use aclprof::transport::ring::{Reader, Ring};
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    // SAFETY: memfd_create with a valid name; the fd is owned by `file` below.
    let fd = unsafe { libc::memfd_create(c"fuzz-ring".as_ptr(), 0) };
    assert!(fd >= 0);
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    // The header page comes from the input; what follows is zero (sparse) up to a size
    // the input also chooses, so large declared geometries can be valid too.
    file.write_all(data).unwrap();
    let extra = data.get(..2).map_or(0, |b| u16::from_le_bytes([b[0], b.get(1).copied().unwrap_or(0)])) as u64;
    let _ = file.set_len(data.len() as u64 + extra * 4096);
    let Ok(ring) = Ring::open(None, Some(file.as_raw_fd())) else {
        return;
    };
    let Ok(reader) = Reader::attach(ring) else {
        return;
    };
    for _ in 0..4 {
        match reader.acquire(64, Duration::ZERO) {
            Ok(Some((p, len))) => {
                // SAFETY: acquire hands out a range inside the mapping.
                let recs = unsafe { std::slice::from_raw_parts(p, len) };
                let _ = aclprof::accessor::op_num(recs);
                let _ = reader.release(len);
            }
            _ => break,
        }
    }
    reader.detach();
});
