//! torch_npu's profiler output, the layout PyTorch-on-Ascend users open (msprof-analyze's
//! compare, advisor and cluster, MindStudio Insight): a `{worker}_{pid}_{time}_ascend_pt/`
//! folder with `ASCEND_PROFILER_OUTPUT/` and `profiler_info_{rank}.json`. Names, columns and
//! text forms are torch_npu 2.1.0.post17's analysis code's (`torch_npu/profiler/analysis/`),
//! checked against the real files in tests/data/real; docs/compatibility.md says which
//! files aclprof writes and why the others are not.

/// The folder's suffix; readers find rank folders by it.
pub const FOLDER_SUFFIX: &str = "_ascend_pt";
/// The folder of tables and the timeline readers open.
pub const OUTPUT_DIR: &str = "ASCEND_PROFILER_OUTPUT";

pub const KERNEL_DETAILS: &str = "kernel_details.csv";
pub const OPERATOR_DETAILS: &str = "operator_details.csv";
pub const TRACE_VIEW: &str = "trace_view.json";
pub const OP_STATISTIC: &str = "op_statistic.csv";
pub const API_STATISTIC: &str = "api_statistic.csv";
pub const STEP_TRACE_TIME: &str = "step_trace_time.csv";
pub const OPERATOR_MEMORY: &str = "operator_memory.csv";
pub const MEMORY_RECORD: &str = "memory_record.csv";
pub const NPU_MODULE_MEM: &str = "npu_module_mem.csv";
pub const COMMUNICATION: &str = "communication.json";
pub const COMMUNICATION_MATRIX: &str = "communication_matrix.json";
/// Beside [`OUTPUT_DIR`]: what torch_npu and the environment were (single line).
pub const METADATA: &str = "profiler_metadata.json";

/// `{worker}_{pid}_{YYYYmmddHHMMSSmmm}_ascend_pt`: readers take the time as the third field
/// from the end, so the worker may hold `_` and the time may not.
pub fn folder_name(worker: &str, pid: u64, local_millis: &str) -> String {
    format!("{worker}_{pid}_{local_millis}{FOLDER_SUFFIX}")
}

/// `profiler_info_{rank}.json`: readers take the rank from this name (cluster analysis skips
/// a folder whose file has none).
pub fn info_file(rank: u32) -> String {
    format!("profiler_info_{rank}.json")
}

/// op_summary's headers that kernel_details renames; the others it keeps.
pub const KERNEL_RENAMES: [(&str, &str); 6] = [
    ("Op Name", "Name"),
    ("OP Type", "Type"),
    ("Task Type", "Accelerator Core"),
    ("Task Start Time(us)", "Start Time(us)"),
    ("Task Duration(us)", "Duration(us)"),
    ("Task Wait Time(us)", "Wait Time(us)"),
];

/// One row per framework op.
pub const OPERATOR_DETAILS_HEADER: [&str; 9] = [
    "Name",
    "Input Shapes",
    "Call Stack",
    "Host Self Duration(us)",
    "Host Total Duration(us)",
    "Device Self Duration(us)",
    "Device Total Duration(us)",
    "Device Self Duration With AICore(us)",
    "Device Total Duration With AICore(us)",
];

/// One row per allocation, sizes in KB, totals in MB.
pub const OPERATOR_MEMORY_HEADER: [&str; 15] = [
    "Name",
    "Size(KB)",
    "Allocation Time(us)",
    "Release Time(us)",
    "Active Release Time(us)",
    "Duration(us)",
    "Active Duration(us)",
    "Allocation Total Allocated(MB)",
    "Allocation Total Reserved(MB)",
    "Allocation Total Active(MB)",
    "Release Total Allocated(MB)",
    "Release Total Reserved(MB)",
    "Release Total Active(MB)",
    "Stream Ptr",
    "Device Type",
];

/// One row per change of a component's totals, in MB.
pub const MEMORY_RECORD_HEADER: [&str; 7] = [
    "Component",
    "Timestamp(us)",
    "Total Allocated(MB)",
    "Total Reserved(MB)",
    "Total Active(MB)",
    "Stream Ptr",
    "Device Type",
];

/// One row per module's sample, in MB.
pub const NPU_MODULE_MEM_HEADER: [&str; 5] = [
    "Device_id",
    "Component",
    "Timestamp(us)",
    "Total Reserved(MB)",
    "Device",
];

/// The environment variables `profiler_metadata.json` reports, in torch_npu's order.
pub const ENV_VARIABLES: [&str; 9] = [
    "ASCEND_GLOBAL_LOG_LEVEL",
    "HCCL_RDMA_TC",
    "HCCL_RDMA_SL",
    "ACLNN_CACHE_LIMIT",
    "HOST_CACHE_CAPACITY",
    "ASCEND_ENHANCE_ENABLE",
    "PYTORCH_NPU_ALLOC_CONF",
    "ASCEND_LAUNCH_BLOCKING",
    "HCCL_ALGO",
];

/// The timeline's framework process ("Python", sort index 0), its ops' category, and the flow
/// that links a framework op to the kernel it launched.
pub const PYTHON_PROCESS: &str = "Python";
pub const CPU_OP: &str = "cpu_op";
pub const FLOW_CATEGORY: &str = "async_npu";
pub const FLOW_NAME: &str = "torch_to_npu";

/// torch_npu's name of an `aclprofAicoreMetrics` value (`_aic_metrics` in profiler_info):
/// the header's own enumerator names.
pub fn aic_metrics_name(value: u64) -> &'static str {
    const NAMES: [&str; 9] = [
        "ACL_AICORE_ARITHMETIC_UTILIZATION",
        "ACL_AICORE_PIPE_UTILIZATION",
        "ACL_AICORE_MEMORY_BANDWIDTH",
        "ACL_AICORE_L0B_AND_WIDTH",
        "ACL_AICORE_RESOURCE_CONFLICT_RATIO",
        "ACL_AICORE_MEMORY_UB",
        "ACL_AICORE_L2_CACHE",
        "ACL_AICORE_PIPE_EXECUTE_UTILIZATION",
        "ACL_AICORE_MEMORY_ACCESS",
    ];
    usize::try_from(value)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("ACL_AICORE_NONE")
}

/// Whether a communication op is point-to-point (communication.json's "p2p"), not
/// collective: torch_npu's rule, by its name.
pub fn is_p2p(op: &str) -> bool {
    let n = op.to_ascii_lowercase();
    ["hcom_send", "hcom_receive", "hcom_batchsendrecv"]
        .iter()
        .any(|p| n.starts_with(p))
}

/// A time in µs as torch_npu writes it in its own CSV columns: epoch ns with a `.` before
/// the last three digits, and a TAB after (so spreadsheets keep every digit).
pub fn us_cell(ns: u64) -> String {
    format!("{}.{:03}\t", ns / 1000, ns % 1000)
}

/// Epoch ns from a µs text with up to three decimals ("1698220811392354.694", a TAB or
/// spaces around it allowed); `None` for anything else ("N/A", "").
pub fn ns_of_us(text: &str) -> Option<u64> {
    let t = text.trim();
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if int.is_empty() || frac.len() > 3 || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ns_frac: u64 = format!("{frac:0<3}").parse().ok()?;
    int.parse::<u64>()
        .ok()?
        .checked_mul(1000)?
        .checked_add(ns_frac)
}

/// CANN's shapes text ("\"1,3,224,224;64,3,7,7\"" in op_summary) as torch_npu's `Input Dims`
/// ("1,3,224,224;\r\n64,3,7,7"); "" when unknown.
pub fn input_dims(cann: &str) -> String {
    let t = cann.trim().trim_matches('"');
    if t.is_empty() || t == "N/A" {
        return String::new();
    }
    t.replace(';', ";\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_in_torch_npus_form() {
        assert_eq!(
            ns_of_us("1698220811392354.694\t"),
            Some(1_698_220_811_392_354_694)
        );
        assert_eq!(ns_of_us("12.5"), Some(12_500));
        assert_eq!(ns_of_us("7"), Some(7_000));
        assert_eq!(ns_of_us("N/A"), None);
        assert_eq!(ns_of_us("1.2345"), None);
        assert_eq!(us_cell(1_698_220_811_392_354_694), "1698220811392354.694\t");
        assert_eq!(us_cell(12_050), "12.050\t");
        assert_eq!(input_dims("\"1,3;64\""), "1,3;\r\n64");
        assert_eq!(input_dims("N/A"), "");
        assert_eq!(
            folder_name("node_1", 42, "20261129014500123"),
            "node_1_42_20261129014500123_ascend_pt"
        );
    }
}
