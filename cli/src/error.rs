//! The command line's one error type, [`CliError`], and its one exit code.
//!
//! A failure is said in one line, `aclprof: ` and the error's [`Display`](std::fmt::Display),
//! and the command exits with [`CliError::exit_code`] (`main.rs`, `fail`). The words are
//! each error's own: a library failure keeps the library's message, an I/O failure reads
//! `{what}: {error}`.

use std::fmt;
use std::path::Path;

/// What a command fails with.
#[derive(Debug)]
pub enum CliError {
    /// The command was asked for something it cannot do: an option's value out of range,
    /// options that do not go together, an option missing, an input or output of a kind the
    /// command does not take (clap finds the rest itself and exits 2).
    Usage(String),
    /// The input holds nothing to work on: no op record, no task, no op reported.
    NoData(String),
    /// Reading or writing failed: `what` is what the I/O was on, as the user knows it (a
    /// path as displayed, `standard input`, `--serve ADDR`, `cannot write the output`).
    Io {
        what: String,
        source: std::io::Error,
    },
    /// The library failed (reading a run, analysing it, exporting it, attaching to a
    /// process): its message as it is.
    Library(aclprof::error::Error),
    /// A process could not be run or captured: the program `record` runs did not start, no
    /// process to capture could be attached, a capture's thread failed.
    Process {
        msg: String,
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

/// The command line's results: [`CliError`] unless said otherwise.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

impl CliError {
    /// A [`CliError::Usage`].
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError::Usage(msg.into())
    }

    /// A [`CliError::NoData`].
    pub fn no_data(msg: impl Into<String>) -> Self {
        CliError::NoData(msg.into())
    }

    /// An I/O failure on `path`: `{path}: {e}`.
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        Self::io_on(path.display().to_string(), e)
    }

    /// An I/O failure on what is not a path (standard input, a listening address):
    /// `{what}: {e}`.
    pub fn io_on(what: impl Into<String>, e: std::io::Error) -> Self {
        CliError::Io {
            what: what.into(),
            source: e,
        }
    }

    /// A [`CliError::Process`] with no cause beside its words.
    pub fn process(msg: impl Into<String>) -> Self {
        CliError::Process {
            msg: msg.into(),
            source: None,
        }
    }

    /// A [`CliError::Process`] caused by `e` (which `msg` already words).
    pub fn process_caused_by(
        msg: impl Into<String>,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        CliError::Process {
            msg: msg.into(),
            source: Some(Box::new(e)),
        }
    }

    /// The code a command exits with when it fails: 1, whatever failed. (clap's own usage
    /// errors exit 2; `diff --fail-above` exits 3 when NEW regressed, a result, not an
    /// error.)
    pub fn exit_code(&self) -> u8 {
        1
    }

    /// The same error with `from` (a path as displayed) said as `to` in its words: a file
    /// the user did not name (standard input's spooled copy) named as the user knows it.
    pub fn renamed(self, from: &str, to: &str) -> Self {
        match self {
            CliError::Usage(m) => CliError::Usage(m.replace(from, to)),
            CliError::NoData(m) => CliError::NoData(m.replace(from, to)),
            CliError::Io { what, source } => CliError::Io {
                what: what.replace(from, to),
                source,
            },
            CliError::Library(mut e) => {
                e.msg = e.msg.replace(from, to);
                CliError::Library(e)
            }
            CliError::Process { msg, source } => CliError::Process {
                msg: msg.replace(from, to),
                source,
            },
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::NoData(m) | CliError::Process { msg: m, .. } => {
                f.write_str(m)
            }
            CliError::Io { what, source } => write!(f, "{what}: {source}"),
            CliError::Library(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Usage(_) | CliError::NoData(_) => None,
            CliError::Io { source, .. } => Some(source),
            CliError::Library(e) => Some(e),
            CliError::Process { source, .. } => source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
        }
    }
}

impl From<aclprof::error::Error> for CliError {
    fn from(e: aclprof::error::Error) -> Self {
        CliError::Library(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn messages_are_the_errors_own_and_causes_are_kept() {
        let e = CliError::io(
            Path::new("/x/y"),
            std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        );
        assert_eq!(e.to_string(), "/x/y: gone");
        assert!(e.source().is_some());
        let lib = aclprof::error::Error::new(aclprof::error::ACL_ERROR_INVALID_FILE, "bad run");
        let e = CliError::from(lib);
        assert_eq!(e.to_string(), "bad run");
        assert_eq!(e.source().unwrap().to_string(), "bad run");
        assert_eq!(CliError::usage("--top: no").to_string(), "--top: no");
        assert!(CliError::usage("x").source().is_none());
        assert_eq!(CliError::usage("x").exit_code(), 1);
    }

    #[test]
    fn renamed_names_the_file_as_the_user_knows_it() {
        let e = CliError::from(aclprof::error::Error::new(
            aclprof::error::ACL_ERROR_INVALID_FILE,
            "/tmp/a/stdin: no ops",
        ));
        assert_eq!(
            e.renamed("/tmp/a/stdin", "standard input").to_string(),
            "standard input: no ops"
        );
    }
}
