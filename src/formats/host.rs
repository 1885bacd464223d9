//! aclprof's own files in a result directory, typed: the host's events (one JSON line
//! each in [`super::layout::HOST_LOG`]) and the session's description
//! ([`super::layout::SESSION_FILE`]). What writes them and what reads them share these
//! types, so a field is renamed in one place. A new kind of host event is a new variant of
//! [`HostEvent`]; the export (`filemode::export::host`) turns each kind into its timeline
//! tracks, tables and database rows.
//!
//! Reading is lenient, as a file a killed process left may be: a missing number is 0, and
//! a line of a kind this version does not know is [`HostEvent::Other`] (skipped).

use super::memory::{MemEvent, PlanEntry};
use serde::{Deserialize, Serialize};

/// One event of the host's side of a session (times: the library's clock, ns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum HostEvent {
    /// An API call: AscendCL's (`ACL_PROF_ACL_API`, e.g. the simulator's `aclmdlExecute`)
    /// or the runtime's (`ACL_PROF_RUNTIME_API`, `level` "runtime").
    Api {
        #[serde(default)]
        end: u64,
        /// What the call worked on (the model's name).
        #[serde(default)]
        item: String,
        /// CANN's API level (ENUM_API_TYPE's name); empty is "acl".
        #[serde(default, skip_serializing_if = "String::is_empty")]
        level: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        tid: u64,
    },
    /// Device memory allocated or released (`ACL_PROF_TASK_MEMORY`, and the sampled
    /// memory).
    Mem(MemEvent),
    /// One entry of a static graph's memory plan, made when the model loads.
    MemPlan(PlanEntry),
    /// A sample of the host's resources (`ACL_PROF_HOST_SYS`, `ACL_PROF_HOST_SYS_USAGE`).
    Sys(super::host_sys::Sample),
    /// A sample of the data pipeline (`aclprofExtPipelineSpan`/`Queue`).
    Pipeline(PipelineEvent),
    /// One end of a step (`aclprofGetStepTimestamp`, `ACL_PROF_TRAINING_TRACE`).
    Step {
        #[serde(default)]
        index: u64,
        /// The time of this end.
        #[serde(default)]
        start: u64,
        tag: StepTag,
        #[serde(default)]
        tid: u64,
    },
    /// An msproftx mark or range (`ACL_PROF_MSPROFTX`).
    Tx {
        #[serde(default)]
        end: u64,
        #[serde(default)]
        name: String,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        tid: u64,
        #[serde(rename = "type")]
        kind: TxKind,
    },
    /// A kind this version does not know.
    #[serde(other)]
    Other,
}

/// A data-pipeline sample, as [`HostEvent::Pipeline`] records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PipelineEvent {
    /// The queue stage `name` writes to held `depth` of `capacity` items (0: unknown) at
    /// `start`.
    Queue {
        #[serde(default)]
        capacity: u32,
        #[serde(default)]
        depth: u32,
        name: String,
        #[serde(default)]
        start: u64,
    },
    /// Worker `worker` of stage `name` worked from `start` to `end`.
    Span {
        #[serde(default)]
        end: u64,
        name: String,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        tid: u64,
        #[serde(default)]
        worker: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepTag {
    Start,
    End,
}

/// msproftx's kinds of event, by the names msprof_tx's `event_type` column gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxKind {
    Mark,
    MarkEx,
    PushPop,
    Range,
    /// A kind this version does not know (shown as a mark).
    #[serde(other)]
    Unknown,
}

impl TxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TxKind::Mark => "mark",
            TxKind::MarkEx => "mark_ex",
            TxKind::PushPop => "push_pop",
            TxKind::Range => "range",
            TxKind::Unknown => "",
        }
    }
}

impl HostEvent {
    /// One line of the host log, without its newline.
    pub fn to_line(&self, out: &mut Vec<u8>) {
        // (Writing these types into a Vec cannot fail.)
        let _ = serde_json::to_writer(out, self);
    }

    /// The event a line of the host log holds; None if it is not one (a torn line).
    pub fn from_line(line: &str) -> Option<HostEvent> {
        serde_json::from_str(line).ok()
    }
}

/// The session's description, written at `aclprofStart` (or by an import) so that an
/// export can rebuild everything from disk, even after a crash.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The config's `aclprofAicoreMetrics` (`ACL_AICORE_NONE` when missing).
    #[serde(default = "aicore_none")]
    pub aicore_metrics: u64,
    #[serde(default)]
    pub bp_point: Option<String>,
    /// The library's clock at the start, paired with `wall_clock_ns`.
    #[serde(default)]
    pub clock_monotonic_raw: u64,
    /// The `ACL_PROF_*` bits.
    #[serde(default)]
    pub data_type_config: u64,
    #[serde(default)]
    pub devices: Vec<u32>,
    #[serde(default)]
    pub fp_point: Option<String>,
    /// `ACL_PROF_HOST_SYS`'s items ("cpu,mem,disk,network,osrt"), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_sys: Option<String>,
    /// `ACL_PROF_HOST_SYS_USAGE`'s items ("cpu,mem"), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_sys_usage: Option<String>,
    /// How often the host is sampled, Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_sys_hz: Option<u32>,
    /// The database an import made the directory from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// What the session asked for that only an NPU's hardware has (docs/c.md lists them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hardware_only: Vec<String>,
    /// How often device memory is sampled (`ACL_PROF_SYS_HARDWARE_MEM_FREQ`), Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_freq_hz: Option<u32>,
    #[serde(default)]
    pub pid: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_limit_bytes: Option<u64>,
    /// The run `aclprof record` started (its `ACLPROF_RECORD` token), so that it finds its
    /// own result directories among those other processes write into the same folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    #[serde(default)]
    pub wall_clock_ns: u64,
}

fn aicore_none() -> u64 {
    u64::from(super::prof_values::AICORE_NONE)
}

impl Session {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    pub fn from_json(text: &str) -> Result<Session, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_back_as_written_and_old_lines_still_read() {
        let evs = [
            HostEvent::Api {
                end: 9,
                item: "m".into(),
                level: String::new(),
                name: "aclmdlExecute".into(),
                start: 1,
                tid: 7,
            },
            HostEvent::Api {
                end: 9,
                item: String::new(),
                level: "runtime".into(),
                name: "aclrtMalloc".into(),
                start: 2,
                tid: 7,
            },
            HostEvent::Mem(MemEvent {
                addr: 0x1000,
                allocated: 4096,
                component: String::new(),
                device: 1,
                name: "conv1".into(),
                pool: crate::formats::memory::Pool::Op,
                reserved: 2 << 20,
                size: -4096,
                start: 3,
                tid: 7,
            }),
            HostEvent::MemPlan(PlanEntry {
                device: 0,
                first: 1,
                graph: 1,
                last: crate::formats::memory::UNTIL_GRAPH_END,
                model: "m".into(),
                name: "conv1".into(),
                size: 512,
            }),
            HostEvent::Sys(crate::formats::host_sys::Sample::Cpu {
                start: 4,
                cpus: vec![12.5, 0.0],
            }),
            HostEvent::Pipeline(PipelineEvent::Span {
                end: 5,
                name: "decode".into(),
                start: 2,
                tid: 3,
                worker: 1,
            }),
            HostEvent::Pipeline(PipelineEvent::Queue {
                capacity: 8,
                depth: 2,
                name: "decode".into(),
                start: 4,
            }),
            HostEvent::Step {
                index: 1,
                start: 6,
                tag: StepTag::End,
                tid: 7,
            },
            HostEvent::Tx {
                end: 8,
                name: "r".into(),
                start: 3,
                tid: 7,
                kind: TxKind::PushPop,
            },
        ];
        for ev in &evs {
            let mut line = Vec::new();
            ev.to_line(&mut line);
            let line = String::from_utf8(line).unwrap();
            assert_eq!(HostEvent::from_line(&line).as_ref(), Some(ev), "{line}");
        }
        // What earlier versions wrote (keys sorted), and a kind from a later one.
        let old = r#"{"end":12,"kind":"tx","name":"n","start":10,"tid":4,"type":"range"}"#;
        assert_eq!(
            HostEvent::from_line(old),
            Some(HostEvent::Tx {
                end: 12,
                name: "n".into(),
                start: 10,
                tid: 4,
                kind: TxKind::Range
            })
        );
        let later = r#"{"kind":"warp","bytes":4096,"start":1}"#;
        assert_eq!(HostEvent::from_line(later), Some(HostEvent::Other));
        assert_eq!(HostEvent::from_line(r#"{"kind":"api","na"#), None);
    }

    #[test]
    fn a_session_without_optional_keys_reads_with_defaults() {
        let s =
            Session::from_json(r#"{"pid": 5, "devices": [0, 1], "dataTypeConfig": 2}"#).unwrap();
        assert_eq!(
            (s.pid, s.devices.clone(), s.data_type_config),
            (5, vec![0, 1], 2)
        );
        assert_eq!(s.aicore_metrics, 0xFF);
        assert_eq!(Session::from_json(&s.to_json()).unwrap(), s);
    }
}
