//! A minimal stderr logger, installed only if the host application has not installed its own
//! `log` logger and `ACLPROF_LOG` asks for output. By default the library prints nothing.

use log::{LevelFilter, Log, Metadata, Record};
use std::io::Write;

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

pub fn init(level: LevelFilter) {
    if level != LevelFilter::Off && log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
