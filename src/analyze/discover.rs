//! Finding the records a path holds: result directories, their devices and ranks, raw
//! stream files and databases.

use super::*;

/// One place records come from, with what it knows about them.
#[derive(Debug)]
pub(super) enum Input {
    /// A device directory of a result directory: its stream files.
    Device {
        files: Vec<PathBuf>,
        rank: Option<u32>,
        steps: std::sync::Arc<Vec<(u64, u64, u64)>>,
        /// The session's `fp_point` op name, which cuts steps when the host marked none.
        fp: Option<std::sync::Arc<str>>,
        /// The session's `bp_point` op name (the end of a step's backward pass).
        bp: Option<std::sync::Arc<str>>,
        /// The op metadata its records' ids name (its `op_meta.tsv`).
        metas: std::sync::Arc<Metas>,
    },
    Raw(PathBuf),
    /// CANN's database (`msprof_*.db`, `ascend_pytorch_profiler_*.db`): its tasks, made
    /// records as they are read.
    Db(PathBuf),
    Stdin,
}

pub(super) fn io_err<T>(p: &Path, e: std::io::Error) -> Result<T> {
    err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", p.display()))
}

/// True if `p` is a result directory (`PROF_*`).
pub fn is_prof_dir(p: &Path) -> bool {
    p.join(crate::filemode::SESSION_FILE).is_file()
        || p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("PROF_"))
            && p.is_dir()
}

/// The rank a device directory's info.json names (`rank_id`).
pub(super) fn rank_of(device_dir: &Path) -> Option<u32> {
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

pub(super) fn prof_inputs(dir: &Path, out: &mut Vec<Input>) -> Result<()> {
    let steps = std::sync::Arc::new(crate::filemode::export::read_host_steps(dir));
    let session = std::fs::read(dir.join(crate::filemode::SESSION_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let point = |key: &str| -> Option<std::sync::Arc<str>> {
        session
            .as_ref()
            .and_then(|v| v[key].as_str().filter(|p| !p.is_empty()).map(Into::into))
    };
    let (fp, bp) = (point("fpPoint"), point("bpPoint"));
    for d in entries_named(dir, "device_").or_else(|e| io_err(dir, e))? {
        // A device that recorded nothing may have no data directory; any other failure to
        // list it is an error, not fewer ops.
        let data = d.join("data");
        let files = if data.exists() {
            crate::filemode::export::stream_files(&data)?
        } else {
            Vec::new()
        };
        let metas = std::sync::Arc::new(crate::opmeta::read(&data.join(crate::opmeta::FILE)));
        out.push(Input::Device {
            files,
            metas,
            rank: rank_of(&d),
            steps: steps.clone(),
            fp: fp.clone(),
            bp: bp.clone(),
        });
    }
    Ok(())
}

/// The result directories `path` names: itself if it is one, else every `PROF_*` directory
/// under it, at any depth (devices, ranks, repeated starts), sorted.
pub fn result_dirs(path: &Path) -> Result<Vec<PathBuf>> {
    if is_prof_dir(path) {
        return Ok(vec![path.to_path_buf()]);
    }
    if path.is_file() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: a file, not a PROF_* result directory or a folder of them",
                path.display()
            ),
        );
    }
    let mut stack = vec![path.to_path_buf()];
    let mut dirs = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).or_else(|e| io_err(&d, e))?.flatten() {
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
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: no PROF_* result directory in it (give a result directory, a folder \
                 of them, a file of records, or - for standard input)",
                path.display()
            ),
        );
    }
    Ok(dirs)
}

/// What `path` holds: "-" is standard input; a result directory; a folder of them; or a
/// file of records.
pub(super) fn inputs(path: &Path) -> Result<Vec<Input>> {
    if path == Path::new("-") {
        return Ok(vec![Input::Stdin]);
    }
    let meta = std::fs::metadata(path).or_else(|e| io_err(path, e))?;
    let mut v = Vec::new();
    if meta.is_file() {
        v.push(if crate::sim::import::is_database(path) {
            Input::Db(path.to_path_buf())
        } else {
            Input::Raw(path.to_path_buf())
        });
    } else {
        for d in result_dirs(path)? {
            prof_inputs(&d, &mut v)?;
        }
    }
    Ok(v)
}

/// Reads whole records from `r`, 2048 at a time; a torn tail is counted as corrupt.
pub(super) fn each_record(
    r: &mut dyn Read,
    what: &Path,
    corrupt: &mut u64,
    f: &mut dyn FnMut(View<'_>),
) -> Result<()> {
    let mut buf = vec![0u8; RECORD_SIZE * 2048];
    let mut filled = 0;
    loop {
        let n = match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return io_err(what, e),
        };
        filled += n;
        let whole = filled / RECORD_SIZE * RECORD_SIZE;
        for rec in buf[..whole].chunks_exact(RECORD_SIZE) {
            if record::get_u32(rec, 0) == record::signature_of(rec) {
                f(View(rec.try_into().unwrap()));
            } else {
                *corrupt += 1;
            }
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
    }
    if filled > 0 {
        *corrupt += 1;
    }
    Ok(())
}
