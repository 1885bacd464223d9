//! The model simulator (docs/design.md, "The emulated device"): loads a model description
//! and "executes" it by reporting every op, in order, on the calling thread's stream.
//!
//! The descriptions themselves (formats, parsing, the table of loaded ones) are in
//! [`desc`].

pub mod desc;
pub use desc::*;

use crate::error::{err, Result, ACL_ERROR_INVALID_MODEL_ID};
use crate::record::until_nul;
use std::path::Path;

/// Loads the description as a model of the emulated runtime; returns its model id.
pub fn load(path: &Path) -> Result<u32> {
    load_on(path, None)
}

/// Loads the description onto `device`, or the device it names if `None`.
pub fn load_on(path: &Path, device: Option<u32>) -> Result<u32> {
    let mut m = parse_file(path)?;
    m.device = device.unwrap_or(m.device);
    for op in &mut m.ops {
        op.meta_id = op
            .meta
            .as_deref()
            .and_then(|d| crate::opmeta::intern(d.clone()))
            .unwrap_or(0);
    }
    let id = crate::api::model_load(&m.name, m.device)?;
    desc::insert(id, m);
    Ok(id)
}

/// Executes a loaded simulated model once; returns when its last op has ended.
pub fn execute(id: u32) -> Result<()> {
    let Some(m) = get(id) else {
        return err(
            ACL_ERROR_INVALID_MODEL_ID,
            format!("model {id} is not a loaded simulated model"),
        );
    };
    if crate::registry::get(id).is_none() {
        return err(
            ACL_ERROR_INVALID_MODEL_ID,
            format!("model {id} was unloaded"),
        );
    }
    let call_start = crate::clock::now_ns();
    let mut t = call_start;
    for (i, op) in m.ops.iter().enumerate() {
        // A replayed table keeps its start times; a description chains its ops.
        let start = match op.offset_ns {
            Some(o) => call_start + o,
            None => t + op.wait_ns,
        };
        let end = start + op.duration_ns;
        let replay = crate::report::Replay {
            stream: op.task.as_ref().and_then(|t| t.stream_id),
            sim_op: u32::try_from(i + 1).unwrap_or(0),
            meta: op.meta_id,
        };
        crate::report::report_op(
            id,
            until_nul(op.name.as_bytes()),
            until_nul(op.op_type.as_bytes()),
            start,
            end,
            replay,
        )?;
        t = t.max(end);
    }
    crate::clock::sleep_until(t);
    // The host side of the call, as CANN's ACL_PROF_ACL_API trace shows aclmdlExecute.
    crate::filemode::host_event(0x1, || {
        serde_json::json!({"kind": "api", "name": "aclmdlExecute", "item": m.name,
                           "tid": crate::clock::thread_id(), "start": call_start, "end": crate::clock::now_ns()})
    });
    Ok(())
}
