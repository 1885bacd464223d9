//! A command's input as the user named it, standard input (`-`) included.

use crate::error::{CliError, Result};
use std::path::{Path, PathBuf};

/// A command's input: the path given, or for `-` standard input copied into a file named
/// `stdin` in a temporary folder of its own (removed when this is dropped), for the
/// commands that read their input more than once.
pub enum Input {
    Path(PathBuf),
    Spooled { dir: PathBuf, file: PathBuf },
}

impl Input {
    pub fn path(&self) -> &Path {
        match self {
            Input::Path(p) | Input::Spooled { file: p, .. } => p,
        }
    }

    /// An error about the input as the user gave it: the spooled copy is "standard input".
    pub fn named(&self, e: CliError) -> CliError {
        match self {
            Input::Path(_) => e,
            Input::Spooled { file, .. } => e.renamed(&file.display().to_string(), "standard input"),
        }
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if let Input::Spooled { dir, .. } = self {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

pub fn spool_stdin(path: &Path) -> Result<Input> {
    use std::os::unix::fs::DirBuilderExt;
    if path != Path::new("-") {
        return Ok(Input::Path(path.to_path_buf()));
    }
    let mut n = 0u32;
    let dir = loop {
        let d = std::env::temp_dir().join(format!("aclprof-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => break d,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(CliError::io(&d, e)),
        }
    };
    let file = dir.join("stdin");
    let input = Input::Spooled {
        dir,
        file: file.clone(),
    };
    let mut f = std::fs::File::create(&file).map_err(|e| CliError::io(&file, e))?;
    std::io::copy(&mut std::io::stdin().lock(), &mut f)
        .map_err(|e| CliError::io_on("standard input", e))?;
    Ok(input)
}
