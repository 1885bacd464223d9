//! The msprof timeline's process names that readers look for (the JSON timeline, its
//! Perfetto trace, and what reads them back: the simulator's replay, the report's timeline).

/// Device tasks, a thread per stream.
pub const HARDWARE_PROCESS: &str = "Ascend Hardware";
/// Communication tasks.
pub const HCCL_PROCESS: &str = "HCCL";
/// Host API calls (AscendCL and runtime), a thread per calling thread.
pub const CANN_PROCESS: &str = "CANN";

/// The device's timeline processes' `process_sort_index`: Ascend Hardware, HCCL, and
/// Overlap Analysis (msprof's).
pub const HARDWARE_SORT: u64 = 14;
pub const HCCL_SORT: u64 = 15;
pub const OVERLAP_SORT: u64 = 31;

/// The host's timeline processes of the host log's events: (name, `process_sort_index`).
/// msprof's: msproftx's ranges and marks, a thread per calling thread.
pub const MSPROFTX_TRACK: (&str, u64) = ("MsprofTx", 6);
/// msprof's: the API calls.
pub const CANN_TRACK: (&str, u64) = (CANN_PROCESS, 7);
/// msprof's: the steps `aclprofGetStepTimestamp` marked, on one thread.
pub const STEP_TRACE_TRACK: (&str, u64) = ("Step Trace", 8);
/// aclprof's: the data pipeline's workers (a thread each) and queues (a counter each).
pub const DATA_PIPELINE_TRACK: (&str, u64) = ("Data Pipeline", 9);
