//! The msprof timeline's process names that readers look for (the JSON timeline, its
//! Perfetto trace, and what reads them back: the simulator's replay, the report's timeline).

/// Device tasks, a thread per stream.
pub const HARDWARE_PROCESS: &str = "Ascend Hardware";
/// Communication tasks.
pub const HCCL_PROCESS: &str = "HCCL";
/// Host API calls (AscendCL and runtime), a thread per calling thread.
pub const CANN_PROCESS: &str = "CANN";
