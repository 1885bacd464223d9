//! CANN's memory files, tables and tracks: the columns of `memory_record`,
//! `operator_memory`, `static_op_mem`, `npu_mem` and `npu_module_mem` (msprof's text
//! layout: a leading `Device_id`, KB with three decimals), the module ids of
//! `npu_module_mem`/`NPU_MODULE_MEM`, and the timeline's `NPU MEM` process. Where each
//! kind of allocation lands is in docs/compatibility.md, "Memory".

use serde::{Deserialize, Serialize};

/// Where an allocation was made, which decides the files it shows in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pool {
    /// For an operator (its workspace and outputs): `memory_record`, `operator_memory`,
    /// `NPU_OP_MEM`, component `GE`.
    Op,
    /// The application's own device memory (`aclrtMalloc`, datasets): `npu_mem` APP.
    App,
    /// A loaded model's work and weight memory: `npu_module_mem` GE.
    Model,
}

impl Pool {
    /// The pool's name where a person reads it (a metric's label, the watch protocol).
    pub fn label(self) -> &'static str {
        match self {
            Pool::Op => "operator",
            Pool::App => "application",
            Pool::Model => "model",
        }
    }
}

/// Device memory allocated (`size` > 0) or released (`size` < 0) at `start` (the library's
/// clock, ns), with its pool's totals after it; `size` 0 records the totals as they stood
/// when a session started. What the host log holds (`HostEvent::Mem`) and what every
/// reader of it takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemEvent {
    #[serde(default)]
    pub addr: u64,
    /// The pool's bytes in use after this event.
    #[serde(default)]
    pub allocated: u64,
    /// The component a replayed database gave (`PTA+GE`, `APP`); empty is
    /// [`OP_COMPONENT`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub component: String,
    #[serde(default)]
    pub device: u32,
    /// The op (or API call) that owns the memory.
    #[serde(default)]
    pub name: String,
    pub pool: Pool,
    /// The pool's bytes held from the device after this event.
    #[serde(default)]
    pub reserved: u64,
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub start: u64,
    #[serde(default)]
    pub tid: u64,
}

/// One entry of a static graph's memory plan, made when the model loads: op `name` needs
/// `size` bytes from node `first` to node `last` ([`UNTIL_GRAPH_END`]: to the end).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlanEntry {
    #[serde(default)]
    pub device: u32,
    #[serde(default)]
    pub first: u32,
    #[serde(default)]
    pub graph: u32,
    #[serde(default)]
    pub last: u32,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub size: u64,
}

/// The component `memory_record` and `NPU_OP_MEM` give operator memory in a CANN-only run.
pub const OP_COMPONENT: &str = "GE";

/// `memory_record_<ts>.csv`: one row per allocation or release.
pub const MEMORY_RECORD: &[&str] = &[
    "Device_id",
    "Component",
    "Timestamp(us)",
    "Total Allocated(KB)",
    "Total Reserved(KB)",
    "Device",
];

/// `operator_memory_<ts>.csv`: allocations paired with their releases.
pub const OPERATOR_MEMORY: &[&str] = &[
    "Device_id",
    "Name",
    "Size(KB)",
    "Allocation Time(us)",
    "Duration(us)",
    "Allocation Total Allocated(KB)",
    "Allocation Total Reserved(KB)",
    "Release Total Allocated(KB)",
    "Release Total Reserved(KB)",
    "Device",
];

/// `static_op_mem_<ts>.csv`: a static graph's memory plan, written at load.
pub const STATIC_OP_MEM: &[&str] = &[
    "Device_id",
    "Op Name",
    "Model Name",
    "Graph ID",
    "Node Index Start",
    "Node Index End",
    "Size(KB)",
];

/// `static_op_mem`'s last row names this op, with the plan's total size.
pub const STATIC_TOTAL: &str = "TOTAL";
/// `Node Index End` of memory that lives until the graph ends.
pub const UNTIL_GRAPH_END: u32 = u32::MAX;

/// `npu_mem_<ts>.csv`: device memory sampled at the configured frequency.
pub const NPU_MEM: &[&str] = &[
    "Device_id",
    "event",
    "ddr(KB)",
    "hbm(KB)",
    "memory(KB)",
    "timestamp(us)",
];

/// `npu_mem`'s events (and `NPU_MEM.type`'s values, lower-cased there).
pub const NPU_MEM_APP: &str = "APP";
pub const NPU_MEM_DEVICE: &str = "Device";

/// `npu_module_mem_<ts>.csv`: each module's reserved memory, sampled.
pub const NPU_MODULE_MEM: &[&str] = &[
    "Device_id",
    "Component",
    "Timestamp(us)",
    "Total Reserved(KB)",
    "Device",
];

/// CANN's `ENUM_MODULE` ids of the modules that hold memory here, with their names.
pub const MODULE_RUNTIME: (i64, &str) = (7, "RUNTIME");
pub const MODULE_GE: (i64, &str) = (45, "GE");

/// The timeline's process of the sampled device memory, its sort index, and its counters'
/// unit (args `{"KB": value}`).
pub const NPU_MEM_TRACK: &str = "NPU MEM";
pub const NPU_MEM_SORT: u64 = 17;
pub const NPU_MEM_UNIT: &str = "KB";

/// Bytes as msprof's KB cells: bytes / 1024 with three decimals.
pub fn kb(bytes: u64) -> String {
    format!("{:.3}", bytes as f64 / 1024.0)
}

/// The `Device` cell of a device's rows.
pub fn device_cell(dev: u32) -> String {
    format!("NPU:{dev}")
}

/// Bytes of one element of CANN's data type `name` (as op_summary writes it), if known.
pub fn dtype_bytes(name: &str) -> Option<u64> {
    Some(match name.trim().to_ascii_uppercase().as_str() {
        "BOOL" | "INT8" | "UINT8" | "HIF8" | "FLOAT8_E4M3FN" | "FLOAT8_E5M2" => 1,
        "FLOAT16" | "FP16" | "BF16" | "BFLOAT16" | "INT16" | "UINT16" => 2,
        "FLOAT" | "FLOAT32" | "FP32" | "INT32" | "UINT32" => 4,
        "DOUBLE" | "FLOAT64" | "INT64" | "UINT64" | "COMPLEX64" => 8,
        "COMPLEX128" => 16,
        _ => return None,
    })
}

/// The bytes of each tensor of op_summary's `shapes` ("1,3,224,224;64") and `types`
/// ("FLOAT16;FLOAT") cells; a tensor whose shape or type is unknown is left out. A scalar
/// (empty shape) is one element.
pub fn tensor_bytes(shapes: &str, types: &str) -> Vec<u64> {
    if shapes.trim().is_empty() && types.trim().is_empty() {
        return Vec::new();
    }
    shapes
        .split(';')
        .zip(types.split(';'))
        .filter_map(|(s, t)| {
            let elem = dtype_bytes(t)?;
            let s = s.trim().trim_matches('"');
            let mut n: u64 = 1;
            for d in s.split(',').filter(|d| !d.trim().is_empty()) {
                n = n.checked_mul(d.trim().parse::<u64>().ok()?)?;
            }
            n.checked_mul(elem)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_sizes_follow_shapes_and_types() {
        assert_eq!(
            tensor_bytes("1,3,224,224;64", "FLOAT16;FLOAT"),
            vec![3 * 224 * 224 * 2, 256]
        );
        // An unknown type or a dynamic dimension leaves that tensor out; a scalar is one.
        assert_eq!(tensor_bytes("2,-1;4;", "FLOAT;MYSTERY;INT64"), vec![8]);
        assert!(tensor_bytes("", "").is_empty());
        assert_eq!(kb(1536), "1.500");
        assert_eq!(device_cell(3), "NPU:3");
    }
}
