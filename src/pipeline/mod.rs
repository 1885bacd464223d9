//! The data pipeline that feeds a model: its stages' work (spans per worker: read, decode,
//! transform, batch, transfer to device) and its queues (samples of depth and capacity),
//! reported by the host's input pipeline through `aclprofExtPipelineSpan` and
//! `aclprofExtPipelineQueue` (Python: `aclprof.pipeline`) and recorded in file mode beside
//! the host's other events. Their analysis is in [`analysis`] (docs/design.md, "The data
//! pipeline").

pub mod analysis;

use crate::error::*;
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
) -> Result<impl FnOnce() -> serde_json::Value + '_> {
    if end < start {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("endNs {end} is before startNs {start}"),
        );
    }
    let stage = stage_name(stage)?;
    Ok(move || {
        let tid = crate::clock::thread_id();
        serde_json::json!({"kind": "pipeline", "type": "span", "name": stage, "worker": worker,
            "tid": tid, "start": start, "end": end})
    })
}

/// Checks a queue sample (the queue `stage` writes its output to held `depth` of
/// `capacity` items at `ns`; capacity 0: unknown) and returns what makes its host event.
pub fn queue(
    stage: &[u8],
    depth: u32,
    capacity: u32,
    ns: u64,
) -> Result<impl FnOnce() -> serde_json::Value + '_> {
    if capacity > 0 && depth > capacity {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("depth {depth} is above capacity {capacity}"),
        );
    }
    let stage = stage_name(stage)?;
    Ok(move || {
        serde_json::json!({"kind": "pipeline", "type": "queue", "name": stage, "depth": depth,
            "capacity": capacity, "start": ns})
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

/// The pipeline events in a host event line, if it is one.
pub fn parse(ev: &serde_json::Value) -> Option<Event> {
    if ev["kind"].as_str() != Some("pipeline") {
        return None;
    }
    let stage = ev["name"].as_str()?.to_string();
    let start = ev["start"].as_u64().unwrap_or(0);
    match ev["type"].as_str()? {
        "span" => Some(Event::Span {
            stage,
            worker: ev["worker"].as_u64().unwrap_or(0) as u32,
            tid: ev["tid"].as_u64().unwrap_or(0),
            start,
            end: ev["end"].as_u64().unwrap_or(start).max(start),
        }),
        "queue" => Some(Event::Queue {
            stage,
            depth: ev["depth"].as_u64().unwrap_or(0) as u32,
            capacity: ev["capacity"].as_u64().unwrap_or(0) as u32,
            ns: start,
        }),
        _ => None,
    }
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
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
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
