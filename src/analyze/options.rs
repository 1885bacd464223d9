//! `aclprof analyze`'s options, one definition for every way they are given: the command
//! line (cli/ fills an [`Options`] from its arguments), the JSON object the C interface
//! (`aclprofExtAnalyze`) and Python take, and the names each choice accepts.

use super::*;

/// An option's values by name: parsing and the list an error shows, from one table.
pub struct Choices<T: 'static>(pub &'static [(&'static str, T)]);

impl<T: Copy + PartialEq> Choices<T> {
    pub fn parse(&self, s: &str) -> Option<T> {
        self.0.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }

    /// The names, aliases left out.
    pub fn names(&self) -> Vec<&'static str> {
        let mut seen: Vec<T> = Vec::new();
        let mut out = Vec::new();
        for (n, v) in self.0 {
            if !seen.contains(v) {
                seen.push(*v);
                out.push(*n);
            }
        }
        out
    }

    /// "one of a, b, c", for an error.
    pub fn one_of(&self) -> String {
        format!("one of {}", self.names().join(", "))
    }
}

/// The options as the user gives them (times in µs, the name as a regular expression):
/// [`Options::query`] checks them and makes the [`Query`].
#[derive(Clone, Debug)]
pub struct Options {
    pub top: usize,
    pub aggregate_by: Option<Key>,
    pub aggregate: Func,
    pub order_by: Option<String>,
    pub min_time_us: f64,
    pub max_time_us: Option<f64>,
    pub types: Vec<String>,
    pub name: Option<String>,
    pub device: Option<u32>,
    pub rank: Option<u32>,
    pub step: Option<u64>,
    pub input_dtype: Option<String>,
    pub threads: usize,
    pub format: Format,
}

impl Default for Options {
    fn default() -> Options {
        let q = Query::default();
        Options {
            top: q.top,
            aggregate_by: q.by,
            aggregate: q.func,
            order_by: None,
            min_time_us: 0.0,
            max_time_us: None,
            types: Vec::new(),
            name: None,
            device: None,
            rank: None,
            step: None,
            input_dtype: None,
            threads: q.threads,
            format: Format::Table,
        }
    }
}

impl Options {
    /// The query these options ask for; an error names the option as the command line
    /// spells it (`--min-time`) if `cli`, else as the JSON query does (`min_time`).
    pub fn query(&self, cli: bool) -> std::result::Result<Query, String> {
        let option = |o: &str| {
            if cli {
                format!("--{}", o.replace('_', "-"))
            } else {
                o.to_string()
            }
        };
        let name = match &self.name {
            Some(n) => {
                Some(Query::name_regex(n).map_err(|e| if cli { format!("--{e}") } else { e })?)
            }
            None => None,
        };
        let min_time_ns = Query::time_ns(&option("min_time"), self.min_time_us)?;
        let max_time_ns = match self.max_time_us {
            Some(t) => Query::time_ns(&option("max_time"), t)?,
            None => u64::MAX,
        };
        if min_time_ns > max_time_ns {
            return Err(format!(
                "{} {} is above {} {}: no op could be kept",
                option("min_time"),
                self.min_time_us,
                option("max_time"),
                self.max_time_us.unwrap_or_default()
            ));
        }
        Ok(Query {
            top: self.top,
            by: self.aggregate_by,
            func: self.aggregate,
            order_by: self.order_by.clone(),
            min_time_ns,
            max_time_ns,
            types: self.types.clone(),
            name,
            device: self.device,
            rank: self.rank,
            step: self.step,
            input_dtype: self.input_dtype.clone(),
            threads: self.threads,
        })
    }

    /// Options from a JSON object with the command line's options as keys (`top`,
    /// `aggregate_by`, `aggregate`, `order_by`, `min_time` and `max_time` in µs, `type` (a
    /// string or a list), `name`, `device`, `rank`, `step`, `input_dtype`, `threads`,
    /// `format`; null is "not given"). What the C and Python interfaces take; the format
    /// defaults to JSON. An unknown key or a value of the wrong kind is an error naming it.
    pub fn from_json(v: &serde_json::Value) -> std::result::Result<Options, String> {
        let mut o = Options {
            format: Format::Json,
            ..Options::default()
        };
        let obj = match v {
            serde_json::Value::Null => return Ok(o),
            serde_json::Value::Object(obj) => obj,
            _ => return Err("the query is not a JSON object".into()),
        };
        let bad = |k: &str, what: &str| format!("{k}: expected {what}");
        let uint =
            |k: &str, x: &serde_json::Value| x.as_u64().ok_or_else(|| bad(k, "a whole number"));
        let num = |k: &str, x: &serde_json::Value| x.as_f64().ok_or_else(|| bad(k, "a number"));
        let text = |k: &str, x: &serde_json::Value| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(k, "a string"))
        };
        let id = |k: &str, x: &serde_json::Value| {
            uint(k, x).and_then(|n| u32::try_from(n).map_err(|_| bad(k, "a 32-bit id")))
        };
        for (k, x) in obj {
            if x.is_null() {
                continue;
            }
            match k.as_str() {
                "top" => o.top = uint(k, x)? as usize,
                "aggregate_by" => {
                    o.aggregate_by = Some(
                        Key::parse(&text(k, x)?).ok_or_else(|| bad(k, &Key::CHOICES.one_of()))?,
                    )
                }
                "aggregate" => {
                    o.aggregate =
                        Func::parse(&text(k, x)?).ok_or_else(|| bad(k, &Func::CHOICES.one_of()))?
                }
                "order_by" => o.order_by = Some(text(k, x)?),
                "min_time" => o.min_time_us = num(k, x)?,
                "max_time" => o.max_time_us = Some(num(k, x)?),
                "type" => {
                    o.types = match x {
                        serde_json::Value::Array(a) => a
                            .iter()
                            .map(|t| text(k, t))
                            .collect::<std::result::Result<_, _>>()?,
                        _ => vec![text(k, x)?],
                    }
                }
                "name" => o.name = Some(text(k, x)?),
                "device" => o.device = Some(id(k, x)?),
                "rank" => o.rank = Some(id(k, x)?),
                "step" => o.step = Some(uint(k, x)?),
                "input_dtype" => o.input_dtype = Some(text(k, x)?),
                "threads" => o.threads = uint(k, x)? as usize,
                "format" => {
                    o.format = Format::parse(&text(k, x)?)
                        .ok_or_else(|| bad(k, &Format::CHOICES.one_of()))?
                }
                _ => return Err(format!("unknown option {k:?}")),
            }
        }
        Ok(o)
    }
}

impl Query {
    /// A query and an output format from the JSON object [`Options::from_json`] reads.
    pub fn from_json(v: &serde_json::Value) -> std::result::Result<(Query, Format), String> {
        let o = Options::from_json(v)?;
        Ok((o.query(false)?, o.format))
    }
}
