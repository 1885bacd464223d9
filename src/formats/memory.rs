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

/// The memory log (`super::layout::MEM_LOG`): what a session records of each allocation,
/// in a fixed binary form, so that recording one costs a copy, not a line of JSON. The
/// file starts with [`MEM_LOG_MAGIC`]; then each event is [`MEM_HEAD`] bytes (little
/// endian: `addr`, `allocated`, `reserved`, `size`, `start`, `tid` as 8 bytes each,
/// `device` as 4, the pool as 1 ([`Pool::code`]), 1 unused, the name's length as 2), its
/// name, and zeros up to a multiple of 8. A torn last event (a crash, a full disk) is left
/// out when read.
pub const MEM_LOG_MAGIC: &[u8; 8] = b"ACLMEM1\n";
/// Bytes of an event before its name.
pub const MEM_HEAD: usize = 56;

/// An event of the memory log as the recording thread has it: its name borrowed.
#[derive(Clone, Copy, Debug)]
pub struct MemStamp<'a> {
    pub addr: u64,
    pub allocated: u64,
    pub reserved: u64,
    pub size: i64,
    pub start: u64,
    pub tid: u64,
    pub device: u32,
    pub pool: Pool,
    /// Cut to 65535 bytes (at a character's boundary).
    pub name: &'a str,
}

impl Pool {
    /// The pool's byte in the memory log.
    pub fn code(self) -> u8 {
        match self {
            Pool::Op => 0,
            Pool::App => 1,
            Pool::Model => 2,
        }
    }

    fn from_code(c: u8) -> Option<Pool> {
        [Pool::Op, Pool::App, Pool::Model]
            .get(usize::from(c))
            .copied()
    }
}

impl MemStamp<'_> {
    /// Appends the event to `out`.
    pub fn put(&self, out: &mut Vec<u8>) {
        let mut n = self.name.len().min(usize::from(u16::MAX));
        while !self.name.is_char_boundary(n) {
            n -= 1;
        }
        let mut head = [0u8; MEM_HEAD];
        let fields = [
            self.addr,
            self.allocated,
            self.reserved,
            self.size as u64,
            self.start,
            self.tid,
        ];
        for (i, f) in fields.iter().enumerate() {
            head[i * 8..i * 8 + 8].copy_from_slice(&f.to_le_bytes());
        }
        head[48..52].copy_from_slice(&self.device.to_le_bytes());
        head[52] = self.pool.code();
        head[54..56].copy_from_slice(&(n as u16).to_le_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(&self.name.as_bytes()[..n]);
        out.resize(out.len() + (8 - n % 8) % 8, 0);
    }
}

/// The events of a memory log's bytes, in the order they were recorded; empty if `bytes`
/// is not one. Reading stops at a torn or unreadable event.
pub fn read_mem_log(bytes: &[u8]) -> Vec<MemEvent> {
    let mut out = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(MEM_LOG_MAGIC.as_slice()) else {
        return out;
    };
    while rest.len() >= MEM_HEAD {
        let u =
            |i: usize| u64::from_le_bytes(rest[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        let n = usize::from(u16::from_le_bytes([rest[54], rest[55]]));
        let whole = MEM_HEAD + n.div_ceil(8) * 8;
        let Some(pool) = Pool::from_code(rest[52]) else {
            break;
        };
        if rest.len() < whole {
            break;
        }
        out.push(MemEvent {
            addr: u(0),
            allocated: u(1),
            component: String::new(),
            device: u32::from_le_bytes(rest[48..52].try_into().unwrap_or_default()),
            name: String::from_utf8_lossy(&rest[MEM_HEAD..MEM_HEAD + n]).into_owned(),
            pool,
            reserved: u(2),
            size: u(3) as i64,
            start: u(4),
            tid: u(5),
        });
        rest = &rest[whole..];
    }
    out
}

/// The events of result directory `dir`'s memory log, if it has one.
pub fn mem_log_of(dir: &std::path::Path) -> Vec<MemEvent> {
    std::fs::read(dir.join(super::layout::MEM_LOG))
        .map_or_else(|_| Vec::new(), |b| read_mem_log(&b))
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
    fn the_memory_log_reads_back_what_was_put_and_stops_at_a_torn_end() {
        let long = "é".repeat(40_000); // 80000 bytes: cut to a character's boundary
        let names = ["conv1", "", "12345678", long.as_str()];
        let mut log = MEM_LOG_MAGIC.to_vec();
        for (i, name) in names.iter().enumerate() {
            MemStamp {
                addr: 0x1000 + i as u64,
                allocated: 1 << 40,
                reserved: u64::MAX,
                size: -4096 * i as i64,
                start: 7 + i as u64,
                tid: 99,
                device: 3,
                pool: [Pool::Op, Pool::App, Pool::Model, Pool::Op][i],
                name,
            }
            .put(&mut log);
            assert_eq!(log.len() % 8, 0);
        }
        let back = read_mem_log(&log);
        assert_eq!(back.len(), 4);
        for (i, e) in back.iter().enumerate() {
            assert_eq!(
                (
                    e.addr,
                    e.allocated,
                    e.reserved,
                    e.size,
                    e.start,
                    e.tid,
                    e.device
                ),
                (
                    0x1000 + i as u64,
                    1 << 40,
                    u64::MAX,
                    -4096 * i as i64,
                    7 + i as u64,
                    99,
                    3
                )
            );
        }
        assert_eq!(back[0].name, "conv1");
        assert_eq!((back[1].name.as_str(), back[1].pool), ("", Pool::App));
        assert_eq!(
            (back[2].name.as_str(), back[2].pool),
            ("12345678", Pool::Model)
        );
        assert_eq!(back[3].name.len(), 65534);
        assert!(long.starts_with(&back[3].name));
        // A torn last event is left out; what is not a memory log gives nothing.
        assert_eq!(read_mem_log(&log[..log.len() - 1]).len(), 3);
        assert_eq!(read_mem_log(&log[..MEM_LOG_MAGIC.len() + 10]).len(), 0);
        assert!(read_mem_log(b"{\"kind\":\"mem\"}\n").is_empty());
    }

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
