//! `aclprof`: analyze what aclprof recorded, write an HTML report, re-export a result
//! directory or its timeline, and profile an unmodified program. The work is done by the library (`aclprof::analyze`,
//! `aclprof::filemode`); this file only reads arguments and prints.
// Unsafety is explicit, as in the library (docs/design.md, "The C boundary").
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
// A function fits on a screen, as in the library (clippy.toml).
#![warn(clippy::too_many_lines)]

/// Writes to standard output like `print!`, but a write that fails (a full disk, a closed
/// descriptor) ends the command with one line and exit 1 instead of a panic.
macro_rules! out {
    ($($t:tt)*) => { $crate::write_out(format_args!($($t)*)) };
}

/// [`out!`] with a newline, like `println!`.
macro_rules! outln {
    () => { $crate::write_out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::write_out(format_args!("{}\n", format_args!($($t)*))) };
}

mod advisor;
mod capture;
mod comm;
mod databases;
mod error;
mod exports;
mod input;
mod interrupt;
mod page;
mod parquet;
mod record;
mod serve;
mod top;
mod watch;

use aclprof::analyze::{self, Format, Func, Key, Query};
use aclprof::formats::text::count;
use aclprof::logging::{progress_bar, progress_done};
use clap::{Parser, Subcommand};
use error::{CliError, Result};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use exports::{export, export_parquet, timeline};
use input::spool_stdin;
use record::{record, RecordSwitches};

#[derive(Parser)]
#[command(name = "aclprof", version, about = "Look at what aclprof recorded", long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
struct AnalyzeArgs {
    /// Rows to show (0: all groups; single ops are listed 100 000 at most)
    #[arg(short = 't', long = "top", default_value_t = 10)]
    top: usize,
    /// Group ops by: type, name, name+shape (name and input shapes), device, stream, model or
    /// rank (default: list single ops)
    #[arg(long = "aggregate-by", value_parser = parse_key)]
    aggregate_by: Option<Key>,
    /// How a group's times become its time column: sum, mean, max, min or count
    #[arg(
        long = "aggregate",
        default_value = "sum",
        value_parser = parse_func,
        requires = "aggregate_by"
    )]
    aggregate: Func,
    /// Column to sort by, by name or heading ("Mean(us)"); numbers descending, start, names
    /// and ids ascending, +COLUMN ascending, -COLUMN descending: time, count, total, share,
    /// mean, min, max, start, name, the --aggregate-by key; without it type, device, stream
    /// and model; for ops that carry their cost, computation (FLOPs), flops (per second),
    /// memory (bytes; in a run that recorded memory, the device memory each op allocated
    /// while it ran) or bandwidth
    #[arg(long = "order-by", allow_hyphen_values = true)]
    order_by: Option<String>,
    /// Leave out ops shorter than this many microseconds
    #[arg(long = "min-time", default_value_t = 0.0)]
    min_time: f64,
    /// Leave out ops longer than this many microseconds
    #[arg(long = "max-time")]
    max_time: Option<f64>,
    /// Only ops of this type (repeatable)
    #[arg(long = "type")]
    types: Vec<String>,
    /// Only ops whose name matches this regular expression
    #[arg(long = "name")]
    name: Option<String>,
    /// Only ops of this device
    #[arg(long)]
    device: Option<u32>,
    /// Only ops of this rank (info.json rank_id)
    #[arg(long)]
    rank: Option<u32>,
    /// Only ops that start inside this step: the steps of step_trace_time.csv, from
    /// aclprofGetStepTimestamp, else cut at each fp_point op (1, 2, ...)
    #[arg(long)]
    step: Option<u64>,
    /// Only ops with an input of this data type (for example float16)
    #[arg(long = "input-dtype")]
    input_dtype: Option<String>,
    /// Threads reading the inputs at once (each device's files, and large files in 32 MiB
    /// pieces); 0: one per core
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Output format: table, csv, json or markdown
    #[arg(long, default_value = "table", value_parser = parse_format)]
    format: Format,
    /// Analyse the data pipeline instead (aclprofExtPipelineSpan/Queue, aclprof.pipeline,
    /// the DataLoader bridge): per stage its workers' busy time and its queue, and the
    /// stage that holds the pipeline back, with the rule and its evidence (table or json)
    #[arg(long)]
    pipeline: bool,
    /// Analyse device memory instead (recorded with ACL_PROF_TASK_MEMORY, task_memory or
    /// record --memory): per device the peaks and the op that reached them, memory per op,
    /// allocations never released, growth per step, and the findings (a leak,
    /// fragmentation, a peak far above the steady state)
    #[arg(long, conflicts_with = "pipeline")]
    memory: bool,
    /// Analyse communication instead (CANN's COMMUNICATION_OP and its tasks, from each
    /// rank's database): per group and op type the time split into transfer and wait, per
    /// rank the same, per link (sender, receiver, transport) bytes, time and bandwidth as
    /// msprof-analyze's communication matrix computes them, the slowest link and the rank
    /// that waits most
    #[arg(long, conflicts_with_all = ["pipeline", "memory"])]
    communication: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Rank ops, or groups of them, by device time
    ///
    /// PATH is a PROF_* result directory, a folder of them, a file of raw records (what a
    /// subscription wrote), CANN's database (msprof_*.db, ascend_pytorch_profiler_*.db), or
    /// - for standard input.
    Analyze {
        /// A result directory, a folder of them, a file of records, a database, or -
        path: PathBuf,
        #[command(flatten)]
        args: AnalyzeArgs,
    },
    /// Write a run's files again (msprof's layout), or a Parquet dataset of many runs
    ///
    /// Writes mindstudio_profiler_output/ again from the raw data of a result directory, or
    /// of each in a folder (for example what a killed process left). Files keep the names
    /// (time stamp) of the export they replace, so links to them stay valid. Given CANN's
    /// database (msprof_*.db, ascend_pytorch_profiler_*.db), make a result directory from
    /// its first device under -o DIR (default: NAME_aclprof/ in the current directory) and
    /// export that; exporting it again replaces that result directory.
    /// With --format parquet, write one Parquet dataset for everything in PATH (result
    /// directories, a folder of ranks, a database) to -o DIR instead: ops (what analyze
    /// counts), tasks, communication, communication_tasks, memory, api, msproftx and steps,
    /// each partitioned by rank
    /// (DIR/TABLE/rank=N/*.parquet), for DuckDB, Polars, pyarrow, Spark or Dask.
    Export {
        /// A result directory, a folder of them, or a database
        #[arg(value_name = "PATH")]
        dir: PathBuf,
        /// Where a database's result directory goes; with --format parquet, the dataset;
        /// with --format torch_npu, the folder the *_ascend_pt folders go into (default: the
        /// current directory)
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// What to write: msprof (the result directory's files, the default), parquet, or
        /// torch_npu (each run as torch_npu writes a PyTorch run: a *_ascend_pt folder for
        /// msprof-analyze compare, advisor and cluster, and MindStudio Insight)
        #[arg(long, default_value = "msprof", value_parser = ["msprof", "parquet", "torch_npu"])]
        format: String,
    },
    /// Write an HTML report: one page for a run, or a site comparing many
    ///
    /// With -o FILE.html one self-contained page for the run at PATH; with
    /// -o DIR a site for the runs in PATH (each entry a result directory, a folder of them,
    /// a database or a file of records): an index of runs, a page per run and a page that
    /// compares any two. A run's page has its timeline (every track, drawn in the page from
    /// files beside it: NAME.timeline/), the overall split of device time, the assistant's
    /// suggestions, op types as bars or pie with drill-down to their ops, the step trace
    /// with a step selector and curves, for several ranks a cluster view (and a page per
    /// rank), for communication a view of transfer, wait and each link's bandwidth, busy and
    /// free time per device, rank and stream, a per-op table that sorts and fuzzy-searches,
    /// and links to the timeline files.
    Report {
        /// What analyze takes (a result directory, a folder of them, a file of records, a
        /// database, or -); for a site, a folder of runs
        path: PathBuf,
        /// The page to write (FILE.html), or the directory of the site
        #[arg(short = 'o', long = "output", default_value = "report.html")]
        output: PathBuf,
    },
    /// Write a run's timeline for Perfetto and MindStudio Insight, and say where it is
    ///
    /// Writes the timeline again, as msprof JSON and as a native Perfetto trace (.pftrace),
    /// for a result directory or every one in a folder; prints where they are. Like export,
    /// it rewrites mindstudio_profiler_output/ under the names it had. A database is
    /// exported as `export` does it.
    Timeline {
        /// A result directory, a folder of them, or a database
        path: PathBuf,
        /// Where a database's result directory goes
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Compare two runs, largest change first
    ///
    /// The overall split of device time (computing by class of op type,
    /// communication not overlapped, free), then op types, ops (by name), steps and, when
    /// both recorded it, device memory, each row with base, new, difference and ratio,
    /// largest change first. BASE and NEW are what
    /// analyze takes (a result directory, a folder of them, a file of records, a database).
    #[command(visible_alias = "compare")]
    Diff {
        /// The run to compare against (what analyze takes; - for standard input)
        base: PathBuf,
        /// The run compared (what analyze takes; - for standard input)
        new: PathBuf,
        /// Rows per section but the overall one (0: all)
        #[arg(short = 't', long = "top", default_value_t = 20)]
        top: usize,
        /// Output format: table, csv, json or markdown
        #[arg(long, default_value = "table", value_parser = parse_format)]
        format: Format,
        /// Exit with code 3 when end-to-end time or any op type's total time (of types both
        /// runs have) is more than PCT percent slower in NEW, or a device's peak memory (when
        /// both recorded memory) more than PCT percent larger
        #[arg(long = "fail-above", value_name = "PCT")]
        fail_above: Option<f64>,
    },
    /// Watch a running process live, or serve its figures to Prometheus
    ///
    /// Watches a running process that uses aclprof (C, Python, aclprof record): ops/s, device
    /// time per op type over the last interval and since attaching, the longest ops, busy
    /// streams and records dropped, refreshed every interval. Without PID, list the
    /// processes that can be watched. Only the process's user (or root) may watch it.
    Top {
        /// The process to watch; without it, list those that can be watched
        pid: Option<u32>,
        /// Seconds between refreshes
        #[arg(short = 'i', long, default_value_t = 1.0)]
        interval: f64,
        /// Stop after this many seconds
        #[arg(short = 'd', long)]
        duration: Option<f64>,
        /// Print one view (of --duration, else of one interval) and exit
        #[arg(long)]
        once: bool,
        /// Output format: table or json
        #[arg(long, default_value = "table", value_parser = parse_table_or_json)]
        format: Format,
        /// Serve Prometheus metrics of the process (ops, device seconds and a histogram of
        /// op durations per model, device and op type; records dropped) at
        /// http://[ADDR:]PORT/metrics instead of showing the view; loopback unless ADDR is
        /// given; port 0 picks a free one
        #[arg(long, value_name = "[ADDR:]PORT", conflicts_with_all = ["once", "format", "duration"])]
        serve: Option<String>,
        /// With --serve: every process of this user that can be watched, and those that
        /// start later
        #[arg(long, requires = "serve", conflicts_with = "pid")]
        all: bool,
    },
    /// Record running processes for a while, without restarting them
    ///
    /// Records every op running processes report for a while, with no restart and no change
    /// to them, into a result directory each (PROF_*, read by analyze, report, export,
    /// msprof-analyze and MindStudio Insight) under DIR. What the capture could not read in
    /// time is counted there. One viewer (top or capture) watches a process at a time, and
    /// only the process's user (or root) may capture it.
    Capture {
        /// The processes (see `aclprof top` for those that can be watched)
        pids: Vec<u32>,
        /// Every process of this user that can be watched
        #[arg(long, conflicts_with = "pids")]
        all: bool,
        /// Seconds to record
        #[arg(short = 'd', long)]
        duration: f64,
        /// The folder the result directories go to
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Profile an unmodified program, then summarise what it recorded
    ///
    /// Runs the program with PROFILING_MODE=true into DIR, then prints the per-type summary
    /// of what it recorded, and exits with the program's exit code.
    Record {
        /// The folder the result directories go to
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// AI Core metric group (PROFILING_OPTIONS aic_metrics), e.g. PipeUtilization
        #[arg(long = "aic-metrics")]
        aic_metrics: Option<String>,
        /// Record device memory: every operator allocation (task_memory) and the memory
        /// the process holds, sampled at 50 Hz (sys_hardware_mem_freq)
        #[arg(long)]
        memory: bool,
        /// Record the runtime's calls at CANN's runtime level too (runtime_api)
        #[arg(long = "runtime-api")]
        runtime_api: bool,
        /// Sample the host: this process's cpu, mem, disk, network (host_sys), e.g.
        /// cpu,mem
        #[arg(long = "host-sys", value_name = "ITEMS")]
        host_sys: Option<String>,
        /// Sample the whole system's cpu and mem, and every process (host_sys_usage)
        #[arg(long = "host-sys-usage", value_name = "ITEMS")]
        host_sys_usage: Option<String>,
        /// The program and its arguments
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

// The choices and their names are the library's (analyze::Options), as the JSON query's.
// Their errors clap says after the value and the option (`invalid value 'x' for ...: `).
fn parse_key(s: &str) -> Result<Key> {
    Key::parse(s).ok_or_else(|| CliError::usage(Key::CHOICES.one_of()))
}
fn parse_func(s: &str) -> Result<Func> {
    Func::parse(s).ok_or_else(|| CliError::usage(Func::CHOICES.one_of()))
}
fn parse_format(s: &str) -> Result<Format> {
    Format::parse(s).ok_or_else(|| CliError::usage(Format::CHOICES.one_of()))
}
/// `--format` of the commands that write only a table or JSON.
fn parse_table_or_json(s: &str) -> Result<Format> {
    match Format::parse(s) {
        Some(f @ (Format::Table | Format::Json)) => Ok(f),
        _ => Err(CliError::usage("one of: table, json")),
    }
}

impl AnalyzeArgs {
    /// The options as the library defines them; it checks them into the query.
    fn options(&self) -> analyze::Options {
        analyze::Options {
            top: self.top,
            aggregate_by: self.aggregate_by,
            aggregate: self.aggregate,
            order_by: self.order_by.clone(),
            min_time_us: self.min_time,
            max_time_us: self.max_time,
            types: self.types.clone(),
            name: self.name.clone(),
            device: self.device,
            rank: self.rank,
            step: self.step,
            input_dtype: self.input_dtype.clone(),
            threads: self.threads,
            format: self.format,
        }
    }

    fn query(&self) -> Result<Query> {
        self.options().query(true).map_err(CliError::Usage)
    }
}

pub(crate) fn run_analyze(path: &Path, q: &Query, format: Format) -> Result<String> {
    let r = analyze::analyze_with_progress(path, q, &mut progress_bar("reading"));
    progress_done();
    let r = r?;
    if let Some(why) = unknown_cost_order(q, &r) {
        eprintln!("aclprof: {why}");
    }
    Ok(analyze::render(&r, format))
}

/// Why `--order-by` a cost column ordered nothing: no op shown carries that cost.
fn unknown_cost_order(q: &Query, r: &analyze::Report) -> Option<String> {
    let col = q.order_by.as_deref()?;
    let name = col.trim_start_matches('+').to_ascii_lowercase();
    let (known, what) = match name.as_str() {
        "computation" | "flops" => (r.rows.iter().any(|x| x.flops.is_some()), "FLOPs"),
        "memory" => (
            r.rows
                .iter()
                .any(|x| x.bytes.is_some() || x.allocated.is_some()),
            "bytes",
        ),
        "bandwidth" => (r.rows.iter().any(|x| x.bytes.is_some()), "bytes"),
        _ => return None,
    };
    (!known && !r.rows.is_empty()).then(|| {
        format!(
            "--order-by {col}: none of these ops carries its {what} (a model description's \
             \"flops\"/\"bytes\", aclprofExtOpMetaCreate or a bridge give them), so the \
             rows are in the order they were read"
        )
    })
}

fn seconds(what: &str, s: f64) -> Result<std::time::Duration> {
    if s.is_finite() && s > 0.0 && s < 1e7 {
        Ok(std::time::Duration::from_secs_f64(s))
    } else {
        Err(CliError::usage(format!(
            "{what}: a number of seconds above 0, not {s}"
        )))
    }
}

fn top(
    pid: Option<u32>,
    interval: f64,
    duration: Option<f64>,
    once: bool,
    format: Format,
) -> Result<ExitCode> {
    if !matches!(format, Format::Table | Format::Json) {
        return Err(CliError::usage("--format: table or json"));
    }
    let Some(pid) = pid else {
        // SAFETY: geteuid has no preconditions.
        let procs = crate::watch::list(unsafe { libc::geteuid() });
        if format == Format::Json {
            let v: Vec<serde_json::Value> = procs
                .iter()
                .map(|p| serde_json::json!({"pid": p.pid, "command": p.command}))
                .collect();
            outln!("{}", serde_json::Value::from(v));
            return Ok(ExitCode::SUCCESS);
        }
        if procs.is_empty() {
            outln!("No process to watch: none that uses aclprof is running as this user.");
        }
        for p in procs {
            outln!("{:>8}  {}", p.pid, p.command);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let interval = seconds("--interval", interval)?;
    let duration = match duration {
        Some(d) => Some(seconds("--duration", d)?),
        None if once => Some(interval),
        None => None,
    };
    let command = crate::watch::command_of(pid);
    let live = !once && std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    use std::io::Write as _;
    let mut show = |w: &top::Window, total: &top::Window, dropped: u64| {
        if once {
            return;
        }
        // JSON is one object per line; a table on a terminal is redrawn in place, in a pipe
        // one view follows another after a blank line.
        let text = match format {
            Format::Json => format!("{}\n", top::json(pid, w, total, dropped)),
            _ if live => format!(
                "\x1b[H\x1b[2J{}",
                top::text(pid, &command, w, total, dropped)
            ),
            _ => format!("\n{}", top::text(pid, &command, w, total, dropped)),
        };
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            output_failed(e);
        }
    };
    let attached = crate::watch::attach(pid)?;
    eprintln!("aclprof: watching process {pid} ({command})");
    let mut last = None;
    let end = top::watch(attached, interval, duration, &mut |w, t, d| {
        show(w, t, d);
        last = Some((w.clone(), t.clone(), d));
    })?;
    if once {
        // One view: of everything seen (--duration may span several intervals).
        if let Some((_, total, dropped)) = last {
            match format {
                Format::Json => outln!("{}", top::json(pid, &total, &total, dropped)),
                _ => out!("{}", top::text(pid, &command, &total, &total, dropped)),
            }
        }
    }
    if end == top::End::ProcessEnded {
        eprintln!("aclprof: process {pid} ended");
    }
    Ok(ExitCode::SUCCESS)
}

/// Exit code of `diff --fail-above` when NEW regressed (1 is an error, 2 bad usage).
const REGRESSED: u8 = 3;

fn diff(
    base: &Path,
    new: &Path,
    top: usize,
    format: Format,
    fail_above: Option<f64>,
) -> Result<ExitCode> {
    if fail_above.is_some_and(|p| !p.is_finite() || p < 0.0) {
        return Err(CliError::usage("--fail-above: a percentage, 0 or more"));
    }
    let read = aclprof::runstats::RunStats::of;
    let mut d = aclprof::diff::diff(&read(base)?, &read(new)?);
    let regressed = fail_above.map(|p| d.regressions(p)).unwrap_or_default();
    d.cut(top);
    out!("{}", aclprof::diff::render(&d, format));
    if regressed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for r in &regressed {
        eprintln!(
            "aclprof: slower by more than {}%: {r}",
            fail_above.unwrap_or(0.0)
        );
    }
    Ok(ExitCode::from(REGRESSED))
}

/// `aclprof analyze`: the pipeline, communication or memory analysis, else the ops.
fn analyze_command(path: &Path, args: &AnalyzeArgs) -> Result<ExitCode> {
    if args.pipeline && !matches!(args.format, Format::Table | Format::Json) {
        return Err(CliError::usage(
            "--pipeline writes a table or JSON: --format table or json",
        ));
    } else if args.pipeline {
        use aclprof::pipeline::analysis;
        let a = analysis::analyze(&analysis::events_of(path)?);
        out!("{}", analysis::render(&a, args.format == Format::Json));
    } else if args.communication {
        out!("{}", comm::render(&comm::analyze(path)?, args.format));
    } else if args.memory {
        use aclprof::analyze::memory;
        let (ev, steps) = memory::events_of(path)?;
        out!(
            "{}",
            memory::render(&memory::analyze(&ev, &steps), args.format)
        );
    } else {
        let q = args.query()?;
        out!("{}", run_analyze(path, &q, args.format)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// `aclprof report`: writes the page or the site for `input`, and says what it holds.
fn report(input: &input::Input, output: &Path) -> Result<ExitCode> {
    let r = page::write(input.path(), output, &mut progress_bar("reading"));
    progress_done();
    let w = r.map_err(|e| input.named(e.into()))?;
    if page::is_site(output) {
        outln!(
            "{}: {}, {}; {}, {:.1} MB",
            output.join("index.html").display(),
            count(w.runs as u64, "run", "runs"),
            count(w.ops, "op", "ops"),
            count(w.pages as u64, "page", "pages"),
            w.bytes as f64 / 1e6
        );
    } else {
        let timeline = if w.timeline_tracks == 0 {
            "no timeline (the input has no trace: a result directory has)".into()
        } else {
            format!(
                "a timeline of {} on {}",
                count(w.timeline_slices as u64, "slice", "slices"),
                count(w.timeline_tracks as u64, "track", "tracks")
            )
        };
        outln!(
            "{}: {} ({} in the table), {}, {}, {timeline}; {:.1} MB",
            output.display(),
            count(w.ops, "op", "ops"),
            w.table_ops,
            count(w.types as u64, "op type", "op types"),
            count(w.steps as u64, "step", "steps"),
            w.bytes as f64 / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What [`out!`] and [`outln!`] do.
fn write_out(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        output_failed(e);
    }
}

/// A write to standard output failed: the command ends there, as [`fail`] ends it.
fn output_failed(e: std::io::Error) -> ! {
    let code = fail(&CliError::io_on("cannot write the output", e));
    std::process::exit(code.into())
}

/// The one way a command ends in failure: says `e` on standard error in one line,
/// `aclprof: ` and its message, and gives the code to exit with ([`CliError::exit_code`]).
fn fail(e: &CliError) -> u8 {
    eprintln!("aclprof: {e}");
    e.exit_code()
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of our output goes away
    // (`aclprof analyze ... | head`) rather than panic on EPIPE.
    // SAFETY: restores the default action of one signal before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // Help and usage errors, reported like every other output.
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        if let Err(w) = e.print() {
            output_failed(w);
        }
        std::process::exit(e.exit_code())
    });
    let r = match cli.cmd {
        Cmd::Analyze { path, args } => analyze_command(&path, &args),
        Cmd::Export {
            dir,
            output,
            format,
        } if format == "parquet" => export_parquet(&dir, output.as_deref()),
        Cmd::Export {
            dir,
            output,
            format,
        } if format == "torch_npu" => exports::export_torch_npu(&dir, output.as_deref()),
        Cmd::Export { dir, output, .. } => export(&dir, output.as_deref()),
        Cmd::Top {
            pid,
            interval,
            duration,
            once,
            format,
            serve,
            all,
        } => match serve {
            Some(addr) => serve::run(pid, all, &addr).map(|()| ExitCode::SUCCESS),
            None => top(pid, interval, duration, once, format),
        },
        Cmd::Capture {
            pids,
            all,
            duration,
            output,
        } => seconds("--duration", duration).and_then(|d| capture::run(pids, all, d, &output)),
        Cmd::Diff {
            base,
            new,
            top,
            format,
            fail_above,
        } => match (spool_stdin(&base), spool_stdin(&new)) {
            (Ok(_), Ok(_)) if base == Path::new("-") && new == Path::new("-") => Err(
                CliError::usage("standard input can be read once: give - for one of the runs"),
            ),
            (Ok(b), Ok(n)) => {
                diff(b.path(), n.path(), top, format, fail_above).map_err(|e| n.named(b.named(e)))
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        Cmd::Timeline { path, output } => timeline(&path, output.as_deref()),
        Cmd::Report { path, output } => {
            interrupt::clean_up_when_interrupted();
            spool_stdin(&path).and_then(|input| report(&input, &output))
        }
        Cmd::Record {
            output,
            aic_metrics,
            memory,
            runtime_api,
            host_sys,
            host_sys_usage,
            command,
        } => record(
            &output,
            &RecordSwitches {
                aic_metrics: aic_metrics.as_deref(),
                memory,
                runtime_api,
                host_sys: host_sys.as_deref(),
                host_sys_usage: host_sys_usage.as_deref(),
            },
            &command,
        ),
    };
    // What is still buffered goes out now, where a failure can be reported.
    if let Err(e) = std::io::Write::flush(&mut std::io::stdout()) {
        output_failed(e);
    }
    r.unwrap_or_else(|e| ExitCode::from(fail(&e)))
}
