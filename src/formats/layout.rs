//! What a result directory (`PROF_*`) holds, and where: CANN's layout plus aclprof's own
//! files in it, and how to find result directories and databases. Everything that writes
//! or reads a result directory names its files from here.

use std::path::{Path, PathBuf};

/// The host's events of a session (JSON lines).
pub const HOST_LOG: &str = "host/data/aclprof_host.jsonl";
/// The session's device memory events, in binary (`super::memory::read_mem_log`).
pub const MEM_LOG: &str = "host/data/aclprof_mem.bin";
/// The session's description.
pub const SESSION_FILE: &str = "host/data/aclprof_session.json";
/// Op metadata (shapes, data types, costs) the records of a device's `data` directory
/// name by id, one op per line.
pub const OP_META_FILE: &str = "op_meta.tsv";
/// Where the export writes the tables and timelines people read.
pub const OUTPUT_DIR: &str = "mindstudio_profiler_output";

/// The names the export writes into [`OUTPUT_DIR`] (a new output file adds its prefix here:
/// a re-export replaces exactly these).
pub fn is_output_name(n: &str) -> bool {
    const PREFIXES: [&str; 20] = [
        "msprof_",
        "op_summary_",
        "op_statistic_",
        "task_time_",
        "api_statistic_",
        "step_trace_",
        "msprof_tx_",
        "memory_record_",
        "operator_memory_",
        "static_op_mem_",
        "npu_mem_",
        "npu_module_mem_",
        "host_cpu_usage_",
        "host_mem_usage_",
        "host_disk_usage_",
        "host_network_usage_",
        "cpu_usage_",
        "process_cpu_usage_",
        "sys_mem_",
        "process_mem_",
    ];
    n == "README.txt" || PREFIXES.iter().any(|p| n.starts_with(p))
}

/// The first bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// True if the file at `p` starts as an SQLite database does.
pub fn is_database(p: &Path) -> bool {
    let mut magic = [0u8; 16];
    std::fs::File::open(p)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|_| &magic == SQLITE_MAGIC)
}

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

/// True if `p` is a result directory (`PROF_*`).
pub fn is_prof_dir(p: &Path) -> bool {
    p.join(SESSION_FILE).is_file()
        || p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("PROF_"))
            && p.is_dir()
}

/// The rank a device directory's info.json names (`rank_id`).
pub fn rank_of(device_dir: &Path) -> Option<u32> {
    let entries = std::fs::read_dir(device_dir).ok()?;
    for e in entries.flatten() {
        let n = e.file_name();
        if n.to_str().is_some_and(|n| n.starts_with("info.json")) {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok()?;
            return v["rank_id"].as_u64().and_then(|r| u32::try_from(r).ok());
        }
    }
    None
}

/// The ranks of result directory `dir`'s devices (those whose info.json gives one).
pub fn ranks_of(dir: &Path) -> Vec<u32> {
    entries_named(dir, "device_")
        .unwrap_or_default()
        .iter()
        .filter_map(|d| rank_of(d))
        .collect()
}

/// The entries of `dir` whose names start with `prefix`, sorted.
pub fn entries_named(dir: &Path, prefix: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// The result directories `path` names: itself if it is one, else every `PROF_*` directory
/// under it, at any depth (devices, ranks, repeated starts), sorted. A file, or a folder
/// with none, is an `InvalidInput` error.
pub fn result_dirs(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if is_prof_dir(path) {
        return Ok(vec![path.to_path_buf()]);
    }
    if path.is_file() {
        return Err(invalid(format!(
            "{}: a file, not a PROF_* result directory or a folder of them",
            path.display()
        )));
    }
    let mut stack = vec![path.to_path_buf()];
    let mut dirs = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", d.display())))?
            .flatten()
        {
            let p = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if is_prof_dir(&p) {
                dirs.push(p);
            } else {
                stack.push(p);
            }
        }
    }
    dirs.sort();
    if dirs.is_empty() {
        return Err(invalid(format!(
            "{}: no PROF_* result directory in it (give a result directory or a folder of \
             them)",
            path.display()
        )));
    }
    Ok(dirs)
}
