//! `aclprof capture PID --duration S -o DIR`: records every op a running process reports for
//! a while, through the watcher's ring (as `top` reads it), into a result directory laid out
//! as file mode lays one out, so that every reader of result directories reads it. The raw
//! records are written as they come, so a capture that is killed leaves a directory that
//! `aclprof export` completes; what the ring dropped is counted in the directory.

use aclprof::error::*;
use aclprof::formats::raw::is_intact;
use aclprof::formats::record::{View, OFF_DEV_ID, RECORD_SIZE};
use aclprof::transport::StreamFiles;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What one capture recorded.
pub struct Captured {
    pub pid: u32,
    pub dir: PathBuf,
    pub ops: u64,
    pub dropped: u64,
    pub corrupt: u64,
    pub ended: bool,
}

/// The rank the process's result directories record (its `RANK_ID`, else `RANK`), read from
/// its environment, which its user (or root) may read.
fn rank_of(pid: u32) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let var = |name: &str| {
        env.split(|&b| b == 0).find_map(|kv| {
            let kv = std::str::from_utf8(kv).ok()?;
            kv.strip_prefix(name)?
                .strip_prefix('=')?
                .trim()
                .parse()
                .ok()
        })
    };
    var("RANK_ID").or_else(|| var("RANK"))
}

/// Captures process `pid` (attached already) for `duration` into a new result directory
/// under `root`, then exports it.
pub fn capture(
    pid: u32,
    attached: aclprof::watch::Attached,
    duration: Duration,
    root: &Path,
    index: u64,
) -> Result<Captured> {
    use aclprof::formats::acl_prof::ACL_PROF_TASK_TIME;
    let config = aclprof::state::ProfConfig {
        data_type: ACL_PROF_TASK_TIME,
        ..Default::default()
    };
    let dir = root.join(aclprof::filemode::dir_name_of(index, pid));
    let mut layout = aclprof::filemode::lay_out(dir.clone(), pid, &config, &HashMap::new())?;
    let rank = rank_of(pid);
    // Each device's stream files, laid out when its first op comes (ranks as file mode
    // numbers them: RANK_ID, RANK_ID + 1, ... in the order devices appear).
    let mut devices: Vec<u32> = Vec::new();
    let mut files: HashMap<u32, StreamFiles> = HashMap::new();
    let reader = &attached.reader;
    let until = Instant::now() + duration;
    let (mut ops, mut corrupt, mut ended) = (0u64, 0u64, false);
    let mut said_dropped = 0;
    let mut batch: Vec<u8> = Vec::new();
    loop {
        let now = Instant::now();
        if now >= until {
            break;
        }
        match reader.acquire(2048, (until - now).min(Duration::from_millis(200))) {
            Ok(Some((p, len))) => {
                // SAFETY: the ring hands out `len` readable bytes at `p`, whole records,
                // valid until released.
                let bytes = unsafe { std::slice::from_raw_parts(p, len) };
                for rec in bytes.chunks_exact(RECORD_SIZE) {
                    if !is_intact(rec) {
                        corrupt += 1;
                        continue;
                    }
                    let d = View(rec.try_into().unwrap_or(&[0; RECORD_SIZE])).dev_id();
                    if let std::collections::hash_map::Entry::Vacant(e) = files.entry(d) {
                        let r = rank.map_or(d, |r| r.saturating_add(devices.len() as u32));
                        e.insert(StreamFiles::new(layout.add_device(d, r)?, None));
                        devices.push(d);
                    }
                    batch.extend_from_slice(rec);
                    ops += 1;
                }
                reader.release(len)?;
                write_batch(&mut batch, &mut files)?;
            }
            Ok(None) => {}
            Err(_) => {
                ended = true;
                break;
            }
        }
        let dropped = reader.ring.dropped();
        if dropped != said_dropped {
            // Kept up to date, so a capture killed now still counts what it missed.
            aclprof::filemode::write_lost(&dir, (dropped, DROPPED_WHY), (0, ""));
            said_dropped = dropped;
        }
    }
    let dropped = reader.ring.dropped();
    drop(attached);
    if dropped > 0 {
        aclprof::filemode::write_lost(&dir, (dropped, DROPPED_WHY), (0, ""));
    }
    aclprof::filemode::write_end_info(&dir, &devices)?;
    aclprof::filemode::export_quietly(&dir)?;
    Ok(Captured {
        pid,
        dir,
        ops,
        dropped,
        corrupt,
        ended,
    })
}

/// Appends `batch`'s records to their devices' stream files, one device at a time
/// (StreamFiles splits each device's by stream), and empties it.
fn write_batch(batch: &mut Vec<u8>, files: &mut HashMap<u32, StreamFiles>) -> Result<()> {
    let mut by_dev: HashMap<u32, Vec<u8>> = HashMap::new();
    for rec in batch.chunks_exact(RECORD_SIZE) {
        let d = aclprof::formats::record::get_u32(rec, OFF_DEV_ID);
        by_dev.entry(d).or_default().extend_from_slice(rec);
    }
    for (d, recs) in by_dev {
        if let Some(f) = files.get_mut(&d) {
            f.write(&recs).or_else(|e| {
                err(
                    ACL_ERROR_INVALID_FILE,
                    format!("writing device {d}'s records: {e}"),
                )
            })?;
        }
    }
    batch.clear();
    Ok(())
}

/// Why a capture's ring dropped records.
const DROPPED_WHY: &str =
    "the capture read the watched process's ring too slowly; the process never waits for it";
