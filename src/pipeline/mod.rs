//! The data pipeline that feeds a model: its stages' work (spans per worker: read, decode,
//! transform, batch, transfer to device) and its queues (samples of depth and capacity),
//! reported by the host's input pipeline through `aclprofExtPipelineSpan` and
//! `aclprofExtPipelineQueue` (Python: `aclprof.pipeline`) and recorded in file mode beside
//! the host's other events. Their analysis is in [`analysis`] (docs/design.md, "The data
//! pipeline").

pub mod analysis;

use crate::error::*;
use crate::formats::host::{HostEvent, PipelineEvent};
use std::path::Path;

/// The stage name of the training thread's wait for its next batch: the per-step data wait
/// (step_trace's `Data Aug Bound`).
pub const WAIT: &str = "wait";
/// Longest stage name.
pub const MAX_STAGE: usize = 127;

fn stage_name(stage: &[u8]) -> Result<&str> {
    let s = std::str::from_utf8(stage)
        .or_else(|_| err(ACL_ERROR_INVALID_PARAM, "stage is not UTF-8"))?;
    if s.is_empty() || s.len() > MAX_STAGE {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("stage must be 1 to {MAX_STAGE} bytes, not {}", s.len()),
        );
    }
    Ok(s)
}

/// Checks a span (`worker` of `stage` worked from `start` to `end`, ns) and returns what
/// makes its host event, built only if file mode records it.
pub fn span(
    stage: &[u8],
    worker: u32,
    start: u64,
    end: u64,
) -> Result<impl FnOnce() -> HostEvent + '_> {
    if end < start {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("endNs {end} is before startNs {start}"),
        );
    }
    let stage = stage_name(stage)?;
    Ok(move || {
        HostEvent::Pipeline(PipelineEvent::Span {
            end,
            name: stage.to_string(),
            start,
            tid: u64::from(crate::clock::thread_id()),
            worker,
        })
    })
}

/// Checks a queue sample (the queue `stage` writes its output to held `depth` of
/// `capacity` items at `ns`; capacity 0: unknown) and returns what makes its host event.
pub fn queue(
    stage: &[u8],
    depth: u32,
    capacity: u32,
    ns: u64,
) -> Result<impl FnOnce() -> HostEvent + '_> {
    if capacity > 0 && depth > capacity {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("depth {depth} is above capacity {capacity}"),
        );
    }
    let stage = stage_name(stage)?;
    Ok(move || {
        HostEvent::Pipeline(PipelineEvent::Queue {
            capacity,
            depth,
            name: stage.to_string(),
            start: ns,
        })
    })
}

/// One recorded pipeline event (ns).
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Span {
        stage: String,
        worker: u32,
        tid: u64,
        start: u64,
        end: u64,
    },
    Queue {
        stage: String,
        depth: u32,
        capacity: u32,
        ns: u64,
    },
}

/// The pipeline event a host event is, if it is one.
pub fn parse(ev: &HostEvent) -> Option<Event> {
    let HostEvent::Pipeline(p) = ev else {
        return None;
    };
    Some(match p {
        PipelineEvent::Span {
            end,
            name,
            start,
            tid,
            worker,
        } => Event::Span {
            stage: name.clone(),
            worker: *worker,
            tid: *tid,
            start: *start,
            end: (*end).max(*start),
        },
        PipelineEvent::Queue {
            capacity,
            depth,
            name,
            start,
        } => Event::Queue {
            stage: name.clone(),
            depth: *depth,
            capacity: *capacity,
            ns: *start,
        },
    })
}

/// The pipeline events in the host event log `log`, in the order they were recorded.
pub fn read(log: &Path) -> Vec<Event> {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open(log) else {
        return Vec::new();
    };
    std::io::BufReader::new(f)
        .lines()
        .map_while(std::result::Result::ok)
        // Most host events are API calls: only pipeline lines are parsed.
        .filter(|l| l.contains("\"pipeline\""))
        .filter_map(|l| HostEvent::from_line(&l))
        .filter_map(|v| parse(&v))
        .collect()
}

/// The data wait (the training thread's `wait` spans) inside [start, end), ns.
pub fn wait_in(events: &[Event], start: u64, end: u64) -> u64 {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Span {
                stage,
                start: s,
                end: e,
                ..
            } if stage == WAIT => Some(e.min(&end).saturating_sub(*s.max(&start))),
            _ => None,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_checked_and_parsed_back() {
        assert!(span(b"", 0, 0, 1).is_err());
        assert!(span(b"decode", 0, 2, 1).is_err());
        assert!(span(&[0xff], 0, 0, 1).is_err());
        assert!(queue(b"decode", 11, 10, 0).is_err());
        let v = span(b"decode", 3, 10, 20).unwrap()();
        match parse(&v).unwrap() {
            Event::Span {
                stage,
                worker,
                start,
                end,
                ..
            } => assert_eq!((stage.as_str(), worker, start, end), ("decode", 3, 10, 20)),
            e => panic!("{e:?}"),
        }
        let v = queue(b"batch", 4, 8, 99).unwrap()();
        assert_eq!(
            parse(&v),
            Some(Event::Queue {
                stage: "batch".into(),
                depth: 4,
                capacity: 8,
                ns: 99
            })
        );
    }
}
