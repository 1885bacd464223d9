//! `aclprof export` and `aclprof timeline`: the result files written again from a run's raw
//! data (a database first made a result directory), and the Parquet dataset.

use crate::error::{CliError, Result};
use aclprof::analyze;
use aclprof::formats::text::count;
use aclprof::logging::{progress_bar, progress_done};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `export --format parquet`: the dataset of everything in `path`, at `output`.
pub fn export_parquet(path: &Path, output: Option<&Path>) -> Result<ExitCode> {
    let Some(out) = output else {
        return Err(CliError::usage(
            "--format parquet: say where the dataset goes with -o DIR",
        ));
    };
    if out.exists() && std::fs::read_dir(out).map_or(true, |mut d| d.next().is_some()) {
        return Err(CliError::usage(format!(
            "{}: exists and is not empty; the dataset goes into a new or empty directory",
            out.display()
        )));
    }
    if path.is_dir() {
        refuse_without_records(path)?;
    }
    let made = !out.exists();
    let w = crate::parquet::export(path, out, &mut |_| {})?;
    if w.rows.get("tasks").copied().unwrap_or(0) == 0 {
        if made {
            let _ = std::fs::remove_dir_all(out);
        }
        return Err(CliError::no_data(format!(
            "{}: no tasks in it, so no dataset (nothing was recorded)",
            path.display()
        )));
    }
    outln!(
        "{}: {}, {}; {}",
        out.display(),
        count(w.ranks.len() as u64, "rank", "ranks"),
        count(w.files as u64, "file", "files"),
        w.rows
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// Re-exports one result directory, with a progress bar on a terminal.
fn export_one(dir: &Path) -> Result<aclprof::filemode::export::Summary> {
    let r = aclprof::filemode::export_quietly_with_progress(dir, &mut progress_bar("exporting"));
    progress_done();
    Ok(r?)
}

/// A result directory to export, and its export's summary when making it exported it
/// already (a database's import).
type ToExport = (PathBuf, Option<aclprof::filemode::export::Summary>);

/// What exporting `dir` wrote: the import's own export, or a re-export.
fn exported(
    dir: &Path,
    imported: Option<aclprof::filemode::export::Summary>,
) -> Result<aclprof::filemode::export::Summary> {
    match imported {
        Some(s) => Ok(s),
        None => export_one(dir),
    }
}

/// The result directories `path` names; a database is first made one under `output`
/// (default: `NAME_aclprof/` in the current directory) and exported (once: the import
/// exports it); exporting the same database again replaces its result directory there.
fn result_dirs_of(path: &Path, output: Option<&Path>) -> Result<Vec<ToExport>> {
    let is_db = path.is_file() && aclprof::formats::layout::is_database(path);
    if path == Path::new("-") || (path.is_file() && !is_db) {
        return Err(CliError::usage(format!(
            "{}: timeline and export read a result directory, a folder of them or a CANN \
             database; op records alone are read by analyze, report and diff",
            path.display()
        )));
    }
    if is_db {
        let out = match output {
            Some(o) => o.to_path_buf(),
            // In the current directory: nothing is written beside the user's input.
            None => {
                let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                PathBuf::from(format!("{stem}_aclprof"))
            }
        };
        let r = aclprof::sim::import_db(path, &out, &mut progress_bar("exporting"));
        progress_done();
        return r.map(|(d, s)| vec![(d, Some(s))]).map_err(|mut e| {
            // Named once: the library's message may already start with it.
            let name = path.display().to_string();
            if !e.msg.contains(&name) {
                e.msg = format!("{name}: {}", e.msg);
            }
            CliError::from(e)
        });
    }
    if output.is_some() {
        return Err(CliError::usage(
            "-o is for a database; a result directory is exported in place",
        ));
    }
    let dirs = analyze::result_dirs(path)?;
    refuse_without_records(path)?;
    Ok(dirs.into_iter().map(|d| (d, None)).collect())
}

/// Checked before anything is written: an export of a run that holds no op record would
/// replace its files with empty ones.
fn refuse_without_records(path: &Path) -> Result<()> {
    if analyze::holds_records(path)? {
        Ok(())
    } else {
        Err(CliError::no_data(analyze::why_no_records(path)))
    }
}

/// Re-exports every result directory in `path` (one, or a folder of them, as `timeline`
/// takes).
pub fn export(path: &Path, output: Option<&Path>) -> Result<ExitCode> {
    for (d, imported) in result_dirs_of(path, output)? {
        let s = exported(&d, imported)?;
        let ops: u64 = s.ops.values().sum();
        outln!(
            "{}: {ops} ops exported to mindstudio_profiler_output/ (stamp {}){}",
            d.display(),
            s.stamp,
            if s.corrupt > 0 {
                format!(", {}", analyze::corrupt_skipped(s.corrupt))
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Re-exports every result directory in `path` and names its two timeline files.
pub fn timeline(path: &Path, output: Option<&Path>) -> Result<ExitCode> {
    for (d, imported) in result_dirs_of(path, output)? {
        let s = exported(&d, imported)?;
        let out = d.join("mindstudio_profiler_output");
        outln!(
            "{}\t(Perfetto: ui.perfetto.dev, trace_processor; nanosecond timestamps)",
            out.join(format!("msprof_{}.pftrace", s.stamp)).display()
        );
        outln!(
            "{}\t(MindStudio Insight, msprof-analyze, chrome://tracing)",
            out.join(format!("msprof_{}.json", s.stamp)).display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `export --format torch_npu`: each result directory in `path` (one, a folder of them, or a
/// database, imported first) as torch_npu writes a PyTorch run, a `*_ascend_pt` folder each,
/// under `output` (default: the current directory). The runs themselves are only read.
pub fn export_torch_npu(path: &Path, output: Option<&Path>) -> Result<ExitCode> {
    let out = output.unwrap_or(Path::new("."));
    let is_db = path.is_file() && aclprof::formats::layout::is_database(path);
    // A database becomes a result directory first, in a folder of its own that goes away.
    let scratch = is_db.then(|| {
        let n = std::process::id();
        std::env::temp_dir().join(format!("aclprof-torch-npu-{n}"))
    });
    let r = (|| {
        let dirs = match &scratch {
            Some(s) => result_dirs_of(path, Some(s))?,
            None => result_dirs_of(path, None)?,
        };
        std::fs::create_dir_all(out).map_err(|e| CliError::io(out, e))?;
        for (d, imported) in dirs {
            if imported.is_none() && !d.join("mindstudio_profiler_output").is_dir() {
                export_one(&d)?;
            }
            let pt = aclprof::torch_npu::export_into(&d, out)?;
            // (A database's result directory was a scratch one: name the database.)
            let of = if scratch.is_some() { path } else { d.as_path() };
            outln!("{}: torch_npu's layout of {}", pt.display(), of.display());
        }
        Ok(ExitCode::SUCCESS)
    })();
    if let Some(s) = scratch {
        let _ = std::fs::remove_dir_all(s);
    }
    r
}
