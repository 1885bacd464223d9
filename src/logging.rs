//! A minimal stderr logger, installed only if the host application has not installed its own
//! `log` logger and `ACLPROF_LOG` asks for output. By default the library prints nothing but
//! one kind of line: records that were accepted and then lost ([`loss`]), which are never
//! silent unless `ACLPROF_LOG=off` says so.

use log::{LevelFilter, Log, Metadata, Record};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Loss notices go to stderr even with no logger (`ACLPROF_LOG` unset).
static LOSS_TO_STDERR: AtomicBool = AtomicBool::new(true);

struct Stderr;

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }
    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            // One write per line so lines from several threads do not interleave.
            let line = format!("[aclprof {}] {}\n", r.level(), r.args());
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
    fn flush(&self) {}
}

static LOGGER: Stderr = Stderr;

pub fn init(level: LevelFilter, explicit: bool) {
    LOSS_TO_STDERR.store(!explicit, Ordering::Relaxed);
    if level != LevelFilter::Off && log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}

/// Says that records were accepted and then lost: a warning through `log`, and on stderr
/// when nothing would print it (no `ACLPROF_LOG`, no logger of the host's).
pub fn loss(msg: &str) {
    if log::log_enabled!(log::Level::Warn) {
        log::warn!("aclprof: {msg}");
    } else if LOSS_TO_STDERR.load(Ordering::Relaxed) {
        let line = format!("[aclprof WARN] {msg}\n");
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// A progress bar on stderr, drawn only if stderr is a terminal: `f(done, expected)` redraws
/// it (`expected` 0: unknown, a count only). [`progress_done`] clears its line.
pub fn progress_bar(what: &'static str) -> impl FnMut(u64, u64) {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    move |done, expected| {
        if !tty {
            return;
        }
        let m = |n: u64| {
            if n >= 1_000_000 {
                format!("{:.1} M", n as f64 / 1e6)
            } else {
                n.to_string()
            }
        };
        let line = if expected == 0 {
            format!("\r{what}: {} ops", m(done))
        } else {
            let d = done.min(expected);
            let bar = (d * 30 / expected) as usize;
            format!(
                "\r{what}: [{}{}] {:3}%  {}/{} ops",
                "#".repeat(bar),
                ".".repeat(30 - bar),
                d * 100 / expected,
                m(done),
                m(expected)
            )
        };
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// Clears the line a [`progress_bar`] drew.
pub fn progress_done() {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let _ = std::io::stderr().lock().write_all(b"\r\x1b[K");
    }
}
