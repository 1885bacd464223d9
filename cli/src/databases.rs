//! The CANN databases a path holds: a database itself, or each result directory's
//! `msprof_<stamp>.db` (exported first where the run never was), for the commands that read
//! them with SQL (the Parquet export, the communication analysis).

use aclprof::error::*;
use std::path::{Path, PathBuf};

/// The databases `path` names with the result directory each belongs to (None for a
/// database given directly): a database itself, or the result directories in it, exported
/// first if they have no database yet.
pub fn databases(path: &Path) -> Result<Vec<(PathBuf, Option<PathBuf>)>> {
    if path.is_file() && aclprof::formats::layout::is_database(path) {
        return Ok(vec![(path.to_path_buf(), None)]);
    }
    let mut out = Vec::new();
    for dir in aclprof::analyze::result_dirs(path)? {
        let db = match database_in(&dir) {
            Some(db) => db,
            None => {
                aclprof::filemode::export_quietly(&dir)?;
                database_in(&dir).ok_or_else(|| {
                    Error::new(
                        ACL_ERROR_INVALID_FILE,
                        format!("{}: the export wrote no database", dir.display()),
                    )
                })?
            }
        };
        out.push((db, Some(dir)));
    }
    // (A folder with none is refused by result_dirs, in its own words.)
    Ok(out)
}

/// A result directory's database (`msprof_<stamp>.db` at its top).
fn database_in(dir: &Path) -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && aclprof::formats::layout::is_database(p))
        .collect();
    v.sort();
    v.pop()
}

pub fn sql_err(db: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::new(ACL_ERROR_INVALID_FILE, format!("{}: {e}", db.display()))
}
