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
        /// Its result directory (whose host log holds the session's memory).
        dir: PathBuf,
        /// The session's epoch minus its records' clock ([`Origin::wall_offset`]).
        wall_offset: i128,
    },
    Raw(PathBuf),
    /// CANN's database (`msprof_*.db`, `ascend_pytorch_profiler_*.db`): its tasks, made
    /// records as they are read.
    Db(PathBuf),
    Stdin,
}

use crate::formats::layout::entries_named;
use crate::formats::layout::rank_of;

pub(super) fn prof_inputs(dir: &Path, out: &mut Vec<Input>) -> Result<()> {
    let steps = std::sync::Arc::new(crate::filemode::export::read_host_steps(dir));
    let session = std::fs::read_to_string(dir.join(crate::formats::layout::SESSION_FILE))
        .ok()
        .and_then(|t| crate::formats::host::Session::from_json(&t).ok());
    let point = |p: Option<&String>| -> Option<std::sync::Arc<str>> {
        p.filter(|p| !p.is_empty()).map(|p| p.as_str().into())
    };
    let (fp, bp) = match &session {
        Some(s) => (point(s.fp_point.as_ref()), point(s.bp_point.as_ref())),
        None => (None, None),
    };
    let wall_offset = session
        .as_ref()
        .filter(|s| s.wall_clock_ns != 0 && s.imported_from.is_none())
        .map_or(0, |s| {
            s.wall_clock_ns as i128 - s.clock_monotonic_raw as i128
        });
    for d in crate::error::io("", dir, entries_named(dir, "device_"))? {
        // A device that recorded nothing may have no data directory; any other failure to
        // list it is an error, not fewer ops.
        let data = d.join("data");
        let files = if data.exists() {
            crate::filemode::export::stream_files(&data)?
        } else {
            Vec::new()
        };
        let metas = std::sync::Arc::new(crate::opmeta::read(
            &data.join(crate::formats::layout::OP_META_FILE),
        ));
        out.push(Input::Device {
            files,
            metas,
            rank: rank_of(&d),
            steps: steps.clone(),
            fp: fp.clone(),
            bp: bp.clone(),
            dir: dir.to_path_buf(),
            wall_offset,
        });
    }
    Ok(())
}

/// The result directories `path` names ([`crate::formats::layout::result_dirs`]).
pub fn result_dirs(path: &Path) -> Result<Vec<PathBuf>> {
    crate::formats::layout::result_dirs(path).map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::InvalidInput {
            ACL_ERROR_INVALID_PARAM
        } else {
            ACL_ERROR_INVALID_FILE
        };
        crate::error::Error::new(code, e.to_string())
    })
}

/// What `path` holds: "-" is standard input; a result directory; a folder of them; or a
/// file of records.
pub(super) fn inputs(path: &Path) -> Result<Vec<Input>> {
    if path == Path::new("-") {
        return Ok(vec![Input::Stdin]);
    }
    let meta = crate::error::io("", path, std::fs::metadata(path))?;
    let mut v = Vec::new();
    if meta.is_file() {
        v.push(if crate::formats::layout::is_database(path) {
            Input::Db(path.to_path_buf())
        } else {
            Input::Raw(path.to_path_buf())
        });
    } else {
        let dirs = result_dirs(path).map_err(|mut e| {
            e.msg = format!(
                "{}: no PROF_* result directory in it (give a result directory, a folder of \
                 them, a CANN database, a file of records, or - for standard input)",
                path.display()
            );
            e
        })?;
        for d in dirs {
            prof_inputs(&d, &mut v)?;
        }
    }
    Ok(v)
}

/// Reads whole records from `r` ([`crate::formats::raw::each_record`]).
pub(super) fn each_record(
    r: &mut dyn Read,
    what: &Path,
    corrupt: &mut u64,
    f: &mut dyn FnMut(View<'_>),
) -> Result<()> {
    crate::error::io("", what, crate::formats::raw::each_record(r, corrupt, f))
}
