//! The model simulator (docs/design.md, "The emulated device"): loads a model description
//! and "executes" it by
//! reporting every op, in order, on the calling thread's stream.
//!
//! Two formats:
//! * JSON: `{"name": str, "device": int, "wait_us"?: number,
//!   "ops": [{"name": str, "type": str, "duration_us": number, "wait_us"?: number}, ...],
//!   "inputs"?: [bytes, ...], "outputs"?: [bytes, ...]}`
//! * an exported `op_summary_*.csv` (columns `Op Name`, `OP Type`, `Task Duration(us)`, and
//!   optionally `Task Wait Time(us)`, `Device_id`, `Model Name`), replayed row by row.
//!
//! One execution starts at the current time; each op starts its wait time (default 1 µs)
//! after the previous one ended. Execution is synchronous, like `aclmdlExecute`: the call
//! returns when the simulated model has finished (the clock has passed the last op's end).

use crate::error::{err, Result, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_MODEL_ID};
use crate::record::until_nul;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub const DEFAULT_WAIT_NS: u64 = 1_000;

#[derive(Clone, Debug, PartialEq)]
pub struct SimOp {
    pub name: String,
    pub op_type: String,
    pub duration_ns: u64,
    pub wait_ns: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SimModel {
    pub name: String,
    pub device: u32,
    pub ops: Vec<SimOp>,
    /// Byte sizes of the model's inputs and outputs (what aclmdlGetInputSizeByIndex and
    /// aclmdlGetOutputSizeByIndex report); none unless the description lists them.
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
}

fn bad<T>(path: &Path, why: impl std::fmt::Display) -> Result<T> {
    err(
        ACL_ERROR_INVALID_FILE,
        format!("model description {}: {why}", path.display()),
    )
}

fn us_to_ns(us: f64) -> Option<u64> {
    (0.0..1e12)
        .contains(&us)
        .then(|| (us * 1000.0).round() as u64)
}

pub fn parse_json(path: &Path, text: &str) -> Result<SimModel> {
    let v: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return bad(path, format!("not valid JSON: {e}")),
    };
    let name = match v.get("name").and_then(|n| n.as_str()) {
        Some(n) => n.to_string(),
        None => return bad(path, "missing string \"name\""),
    };
    let device = match v.get("device") {
        None => 0,
        Some(d) => match d.as_u64().and_then(|d| u32::try_from(d).ok()) {
            Some(d) => d,
            None => return bad(path, "\"device\" must be a non-negative integer"),
        },
    };
    let model_wait = match v.get("wait_us") {
        None => DEFAULT_WAIT_NS,
        Some(w) => match w.as_f64().and_then(us_to_ns) {
            Some(w) => w,
            None => return bad(path, "\"wait_us\" must be a non-negative number"),
        },
    };
    let Some(ops) = v.get("ops").and_then(|o| o.as_array()) else {
        return bad(path, "missing array \"ops\"");
    };
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let s = |k: &str| op.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let (Some(n), Some(t)) = (s("name"), s("type")) else {
            return bad(path, format!("ops[{i}] needs string \"name\" and \"type\""));
        };
        let Some(d) = op
            .get("duration_us")
            .and_then(|d| d.as_f64())
            .and_then(us_to_ns)
        else {
            return bad(
                path,
                format!("ops[{i}] needs a non-negative number \"duration_us\""),
            );
        };
        let w = match op.get("wait_us") {
            None => model_wait,
            Some(w) => match w.as_f64().and_then(us_to_ns) {
                Some(w) => w,
                None => {
                    return bad(
                        path,
                        format!("ops[{i}].wait_us must be a non-negative number"),
                    )
                }
            },
        };
        out.push(SimOp {
            name: n,
            op_type: t,
            duration_ns: d,
            wait_ns: w,
        });
    }
    let sizes = |key: &str| -> Result<Vec<u64>> {
        match v.get(key) {
            None => Ok(Vec::new()),
            Some(a) => a
                .as_array()
                .and_then(|a| a.iter().map(|x| x.as_u64()).collect::<Option<Vec<u64>>>())
                .map_or_else(
                    || bad(path, format!("\"{key}\" must be an array of byte sizes")),
                    Ok,
                ),
        }
    };
    Ok(SimModel {
        name,
        device,
        ops: out,
        inputs: sizes("inputs")?,
        outputs: sizes("outputs")?,
    })
}

pub fn parse_csv(path: &Path, text: &str) -> Result<SimModel> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers = match rd.headers() {
        Ok(h) => h.clone(),
        Err(e) => return bad(path, format!("not a CSV file: {e}")),
    };
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(c_name), Some(c_type), Some(c_dur)) =
        (col("Op Name"), col("OP Type"), col("Task Duration(us)"))
    else {
        return bad(path, "an op_summary CSV needs the columns \"Op Name\", \"OP Type\" and \"Task Duration(us)\"");
    };
    let c_wait = col("Task Wait Time(us)");
    let c_dev = col("Device_id");
    let c_model = col("Model Name");
    let num = |s: &str| s.trim().parse::<f64>().ok().and_then(us_to_ns);
    let mut ops = Vec::new();
    let mut device = None;
    let mut model_name = None;
    for (i, row) in rd.records().enumerate() {
        let row = match row {
            Ok(r) => r,
            Err(e) => return bad(path, format!("row {}: {e}", i + 2)),
        };
        let get = |c: usize| row.get(c).unwrap_or("");
        let Some(d) = num(get(c_dur)) else {
            return bad(
                path,
                format!(
                    "row {}: Task Duration(us) {:?} is not a number",
                    i + 2,
                    get(c_dur)
                ),
            );
        };
        let w = c_wait.and_then(|c| num(get(c))).unwrap_or(DEFAULT_WAIT_NS);
        if device.is_none() {
            device = c_dev.and_then(|c| get(c).trim().parse::<u32>().ok());
        }
        if model_name.is_none() {
            model_name = c_model
                .map(|c| get(c).to_string())
                .filter(|s| !s.is_empty());
        }
        ops.push(SimOp {
            name: get(c_name).to_string(),
            op_type: get(c_type).to_string(),
            duration_ns: d,
            wait_ns: w,
        });
    }
    let name = model_name.unwrap_or_else(|| {
        path.file_stem()
            .map_or("model".into(), |s| s.to_string_lossy().into_owned())
    });
    Ok(SimModel {
        name,
        device: device.unwrap_or(0),
        ops,
        inputs: Vec::new(),
        outputs: Vec::new(),
    })
}

/// Reads a description, choosing the format by content (JSON starts with `{`, after an
/// optional UTF-8 byte-order mark, which editors on Windows write).
pub fn parse_file(path: &Path) -> Result<SimModel> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return bad(path, format!("cannot read: {e}")),
    };
    parse_text(path, &text)
}

fn parse_text(path: &Path, text: &str) -> Result<SimModel> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        parse_json(path, text)
    } else {
        parse_csv(path, text)
    }
}

static MODELS: Mutex<Option<HashMap<u32, Arc<SimModel>>>> = Mutex::new(None);

fn models() -> std::sync::MutexGuard<'static, Option<HashMap<u32, Arc<SimModel>>>> {
    MODELS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Holds the simulated models' lock across `fork()` (see [`crate::fork`]); a leaf lock.
pub(crate) fn fork_prepare() -> crate::fork::Release {
    let g = models();
    Box::new(move |_child| drop(g))
}

/// Loads the description as a model of the emulated runtime; returns its model id.
pub fn load(path: &Path) -> Result<u32> {
    load_on(path, None)
}

/// Loads the description onto `device`, or the device it names if `None`.
pub fn load_on(path: &Path, device: Option<u32>) -> Result<u32> {
    let mut m = parse_file(path)?;
    m.device = device.unwrap_or(m.device);
    let id = crate::api::model_load(&m.name, m.device)?;
    models()
        .get_or_insert_with(HashMap::new)
        .insert(id, Arc::new(m));
    Ok(id)
}

pub fn get(id: u32) -> Option<Arc<SimModel>> {
    models().as_ref()?.get(&id).cloned()
}

/// Forgets a simulated model (after `aclprofExtModelUnload`).
pub fn forget(id: u32) {
    if let Some(m) = models().as_mut() {
        m.remove(&id);
    }
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
    for op in &m.ops {
        let start = t + op.wait_ns;
        let end = start + op.duration_ns;
        crate::report::report_op(
            id,
            until_nul(op.name.as_bytes()),
            until_nul(op.op_type.as_bytes()),
            start,
            end,
        )?;
        t = end;
    }
    crate::clock::sleep_until(t);
    // The host side of the call, as CANN's ACL_PROF_ACL_API trace shows aclmdlExecute.
    crate::filemode::host_event(
        0x1,
        serde_json::json!({"kind": "api", "name": "aclmdlExecute", "item": m.name,
                           "tid": crate::clock::thread_id(), "start": call_start, "end": crate::clock::now_ns()}),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_descriptions() {
        let p = Path::new("m.json");
        let m = parse_json(
            p,
            r#"{"name":"m","device":0,"wait_us":2,"ops":[
            {"name":"a","type":"Conv2D","duration_us":10.5},
            {"name":"b","type":"Relu","duration_us":1,"wait_us":0}]}"#,
        )
        .unwrap();
        assert_eq!(
            m.ops[0],
            SimOp {
                name: "a".into(),
                op_type: "Conv2D".into(),
                duration_ns: 10_500,
                wait_ns: 2_000
            }
        );
        assert_eq!(m.ops[1].wait_ns, 0);
        let no_wait = parse_json(
            p,
            r#"{"name":"m","ops":[{"name":"a","type":"T","duration_us":1}]}"#,
        )
        .unwrap();
        assert_eq!(no_wait.ops[0].wait_ns, DEFAULT_WAIT_NS);
        for bad in [
            "{",
            r#"{"ops":[]}"#,
            r#"{"name":"m","ops":[{"name":"a","duration_us":1}]}"#,
            r#"{"name":"m","ops":[{"name":"a","type":"T","duration_us":-1}]}"#,
            r#"{"name":"m","device":-1,"ops":[]}"#,
        ] {
            assert_eq!(
                parse_json(p, bad).unwrap_err().code,
                ACL_ERROR_INVALID_FILE,
                "{bad}"
            );
        }
    }

    #[test]
    fn op_summary_csv_replays_names_types_durations_and_waits() {
        let text = "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim,Input Shapes\n\
                    1,1,3,2,conv1,Conv2D,static,AI_CORE,1700000000000.000\t,12.345,0,8,\"\"\"1,3,224,224\"\"\"\n\
                    1,1,4,2,relu1,Relu,static,AI_VECTOR_CORE,1700000000013.345\t,2.000,1.000000,4,N/A\n";
        let m = parse_csv(Path::new("/x/op_summary_20260101000000.csv"), text).unwrap();
        assert_eq!(m.device, 1);
        assert_eq!(m.name, "op_summary_20260101000000");
        assert_eq!(m.ops.len(), 2);
        assert_eq!(
            m.ops[0],
            SimOp {
                name: "conv1".into(),
                op_type: "Conv2D".into(),
                duration_ns: 12_345,
                wait_ns: 0
            }
        );
        assert_eq!(m.ops[1].wait_ns, 1_000);
        assert!(parse_csv(Path::new("x.csv"), "a,b\n1,2\n").is_err());
        let bom = format!("\u{FEFF}{text}");
        assert_eq!(parse_text(Path::new("x.csv"), &bom).unwrap().ops.len(), 2);
    }

    #[test]
    fn a_byte_order_mark_is_not_content() {
        let json =
            "\u{FEFF}{\"name\":\"m\",\"ops\":[{\"name\":\"a\",\"type\":\"T\",\"duration_us\":1}]}";
        let m = parse_text(Path::new("m.json"), json).unwrap();
        assert_eq!((m.name.as_str(), m.ops.len()), ("m", 1));
    }
}
