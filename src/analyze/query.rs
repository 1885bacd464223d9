//! What `aclprof analyze` is asked: which ops count (the [`Query`]), how they are grouped
//! ([`Key`]) and how a group's times become its Time column ([`Func`]).

use super::*;

/// What ops are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Type,
    Name,
    Device,
    Stream,
    Model,
    Rank,
    /// The op's name and input shapes: one group per shape an op ran with.
    NameShape,
}

impl Key {
    /// The names `--aggregate-by` (and the JSON query's `aggregate_by`) take.
    pub const CHOICES: Choices<Key> = Choices(&[
        ("type", Key::Type),
        ("name", Key::Name),
        ("name+shape", Key::NameShape),
        ("device", Key::Device),
        ("stream", Key::Stream),
        ("model", Key::Model),
        ("rank", Key::Rank),
    ]);

    pub fn parse(s: &str) -> Option<Key> {
        Key::CHOICES.parse(s)
    }
    pub(super) fn title(self) -> &'static str {
        match self {
            Key::Type => "Type",
            Key::Name => "Name",
            Key::Device => "Device",
            Key::Stream => "Stream",
            Key::Model => "Model",
            Key::Rank => "Rank",
            Key::NameShape => "Name",
        }
    }
}

/// How a group's op times become its Time column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Sum,
    Mean,
    Max,
    Min,
    Count,
}

impl Func {
    /// The names `--aggregate` (and the JSON query's `aggregate`) take.
    pub const CHOICES: Choices<Func> = Choices(&[
        ("sum", Func::Sum),
        ("mean", Func::Mean),
        ("max", Func::Max),
        ("min", Func::Min),
        ("count", Func::Count),
    ]);

    pub fn parse(s: &str) -> Option<Func> {
        Func::CHOICES.parse(s)
    }
}

/// Which ops count and how they are shown.
#[derive(Clone, Debug)]
pub struct Query {
    /// Rows shown (0: all; without grouping at most [`MAX_LISTED`] ops).
    pub top: usize,
    pub by: Option<Key>,
    pub func: Func,
    /// A column title (case-insensitive): "time" (default), "count", "total", "mean", "min",
    /// "max", "share", "name", or the key's title.
    pub order_by: Option<String>,
    /// Ops shorter than this are left out.
    pub min_time_ns: u64,
    /// Ops longer than this are left out.
    pub max_time_ns: u64,
    /// Only these op types (any of them), if any are given.
    pub types: Vec<String>,
    pub name: Option<regex::bytes::Regex>,
    pub device: Option<u32>,
    pub rank: Option<u32>,
    /// Only ops that start inside this step, numbered as step_trace_time.csv numbers them.
    pub step: Option<u64>,
    /// Only ops one of whose inputs has this data type (case-insensitive, "float16").
    pub input_dtype: Option<String>,
    /// Threads reading inputs (result directories' devices, files) at once; 0: one per core.
    pub threads: usize,
}

impl Default for Query {
    fn default() -> Query {
        Query {
            top: 10,
            by: None,
            func: Func::Sum,
            order_by: None,
            min_time_ns: 0,
            max_time_ns: u64::MAX,
            types: Vec::new(),
            name: None,
            device: None,
            rank: None,
            step: None,
            input_dtype: None,
            threads: 0,
        }
    }
}

impl Query {
    /// A time option (`--min-time`, `--max-time`) given in µs, checked; `option` names it in
    /// the error.
    pub fn time_ns(option: &str, us: f64) -> std::result::Result<u64, String> {
        if us >= 0.0 && us.is_finite() {
            Ok((us * 1000.0).round() as u64)
        } else {
            Err(format!(
                "{option} {us} is not a non-negative number of microseconds"
            ))
        }
    }

    /// `--name`: a regular expression over op names.
    pub fn name_regex(re: &str) -> std::result::Result<regex::bytes::Regex, String> {
        regex::bytes::Regex::new(re).map_err(|e| {
            // The regex crate draws the pattern with a caret under the fault, over several
            // lines; an error here is one line: the fault's description.
            let text = e.to_string();
            let why = text
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("error: "))
                .unwrap_or_else(|| text.lines().next().unwrap_or_default());
            format!("name {re:?}: not a regular expression: {why}")
        })
    }
}
