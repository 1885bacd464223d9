//! `aclprof capture PID --duration S -o DIR`: records every op a running process reports for
//! a while, through the watcher's ring (as `top` reads it), into a result directory laid out
//! as file mode lays one out, so that every reader of result directories reads it. The raw
//! records are written as they come, so a capture that is killed leaves a directory that
//! `aclprof export` completes; what the ring dropped is counted in the directory.

use crate::error::CliError;
use aclprof::error::*;
use aclprof::formats::raw::is_intact;
use aclprof::formats::record::{get_u32, OFF_DEV_ID, RECORD_SIZE};
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
    attached: crate::watch::Attached,
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
                // Each run of intact records of one device goes to its stream files
                // straight from the ring (StreamFiles splits a run by stream).
                let mut run: Option<(u32, usize, usize)> = None;
                for (i, rec) in bytes.chunks_exact(RECORD_SIZE).enumerate() {
                    let d = get_u32(rec, OFF_DEV_ID);
                    let intact = is_intact(rec);
                    if let Some((rd, from, to)) = run {
                        if !intact || rd != d {
                            write_run(&mut files, rd, &bytes[from..to])?;
                            run = None;
                        }
                    }
                    if !intact {
                        corrupt += 1;
                        continue;
                    }
                    if let std::collections::hash_map::Entry::Vacant(e) = files.entry(d) {
                        let r = rank.map_or(d, |r| r.saturating_add(devices.len() as u32));
                        e.insert(StreamFiles::new(layout.add_device(d, r)?, None));
                        devices.push(d);
                    }
                    let end = (i + 1) * RECORD_SIZE;
                    run =
                        Some(run.map_or((d, i * RECORD_SIZE, end), |(_, from, _)| (d, from, end)));
                    ops += 1;
                }
                if let Some((d, from, to)) = run {
                    write_run(&mut files, d, &bytes[from..to])?;
                }
                reader.release(len)?;
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
    if dropped != said_dropped {
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

/// `aclprof capture`: attaches to `pids` (or, with `all`, every watchable process) first, so
/// that their captures cover the same time, captures each on a thread of its own, and prints
/// what each recorded.
pub fn run(
    pids: Vec<u32>,
    all: bool,
    duration: Duration,
    output: &Path,
) -> crate::error::Result<std::process::ExitCode> {
    let pids = if all {
        let me = std::process::id();
        // SAFETY: geteuid has no preconditions.
        let found: Vec<u32> = crate::watch::list(unsafe { libc::geteuid() })
            .into_iter()
            .map(|w| w.pid)
            .filter(|&p| p != me)
            .collect();
        if found.is_empty() {
            return Err(CliError::process(
                "no process to capture: none that uses aclprof runs as this user",
            ));
        }
        found
    } else if pids.is_empty() {
        return Err(CliError::usage(
            "name the processes to capture (PID...), or --all",
        ));
    } else {
        pids
    };
    // Every process attached first, so that their captures cover the same time; the
    // output directory is made only then, so a capture that attaches to nothing leaves
    // nothing behind.
    let mut attached = Vec::new();
    for &pid in &pids {
        match crate::watch::attach(pid) {
            Ok(a) => attached.push((pid, a)),
            Err(e) if all => eprintln!("aclprof: {}", e.msg),
            Err(e) => return Err(e.into()),
        }
    }
    if attached.is_empty() {
        return Err(CliError::process(
            "no process to capture: none of them could be attached",
        ));
    }
    crate::record::make_output_dir(output)?;
    eprintln!(
        "aclprof: capturing {} for {:.1} s",
        attached
            .iter()
            .map(|(p, _)| format!("process {p}"))
            .collect::<Vec<_>>()
            .join(", "),
        duration.as_secs_f64()
    );
    let results: Vec<_> = std::thread::scope(|s| {
        let running: Vec<_> = attached
            .into_iter()
            .enumerate()
            .map(|(i, (pid, a))| s.spawn(move || capture(pid, a, duration, output, i as u64)))
            .collect();
        running.into_iter().map(|h| h.join()).collect()
    });
    let mut any_ops = false;
    let mut failed = None;
    for r in results {
        match r {
            Ok(Ok(c)) => {
                any_ops |= c.ops > 0;
                outln!(
                    "{}: process {}: {} ops captured{}{}{}",
                    c.dir.display(),
                    c.pid,
                    c.ops,
                    if c.dropped > 0 {
                        format!(", {} dropped (counted in the result directory)", c.dropped)
                    } else {
                        String::new()
                    },
                    if c.corrupt > 0 {
                        format!(", {}", aclprof::analyze::corrupt_skipped(c.corrupt))
                    } else {
                        String::new()
                    },
                    if c.ended { "; the process ended" } else { "" }
                );
            }
            Ok(Err(e)) => failed = Some(CliError::from(e)),
            Err(_) => failed = Some(CliError::process("a capture failed")),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if !any_ops {
        return Err(CliError::no_data(format!(
            "no op was reported in {:.1} s: the result directories hold none",
            duration.as_secs_f64()
        )));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Appends a run of device `d`'s records to its stream files.
fn write_run(files: &mut HashMap<u32, StreamFiles>, d: u32, recs: &[u8]) -> Result<()> {
    if let Some(f) = files.get_mut(&d) {
        f.write(recs).or_else(|e| {
            err(
                ACL_ERROR_INVALID_FILE,
                format!("writing device {d}'s records: {e}"),
            )
        })?;
    }
    Ok(())
}

/// Why a capture's ring dropped records.
const DROPPED_WHY: &str =
    "the capture read the watched process's ring too slowly; the process never waits for it";
