//! What the library derives from CANN's profiling numbers ([`super::acl_prof`]): kept out
//! of that file because cbindgen copies everything there into `acl/acl_prof.h`.

use super::acl_prof::*;

/// The `aclprofSetConfig` types as the C `int` the call takes.
pub mod config_type {
    use super::super::acl_prof::aclprofConfigTypeValues as T;
    pub const STORAGE_LIMIT: i32 = T::ACL_PROF_STORAGE_LIMIT as i32;
    pub const SYS_HARDWARE_MEM_FREQ: i32 = T::ACL_PROF_SYS_HARDWARE_MEM_FREQ as i32;
    pub const LLC_MODE: i32 = T::ACL_PROF_LLC_MODE as i32;
    pub const SYS_IO_FREQ: i32 = T::ACL_PROF_SYS_IO_FREQ as i32;
    pub const SYS_INTERCONNECTION_FREQ: i32 = T::ACL_PROF_SYS_INTERCONNECTION_FREQ as i32;
    pub const DVPP_FREQ: i32 = T::ACL_PROF_DVPP_FREQ as i32;
    pub const HOST_SYS: i32 = T::ACL_PROF_HOST_SYS as i32;
    pub const HOST_SYS_USAGE: i32 = T::ACL_PROF_HOST_SYS_USAGE as i32;
    pub const HOST_SYS_USAGE_FREQ: i32 = T::ACL_PROF_HOST_SYS_USAGE_FREQ as i32;
    pub const LOW_POWER_FREQ: i32 = T::ACL_PROF_LOW_POWER_FREQ as i32;
    /// Valid types are 1..ARGS_MAX.
    pub const ARGS_MAX: i32 = T::ACL_PROF_ARGS_MAX as i32;
}

/// Not a CANN bit: set beside a session's `ACL_PROF_*` bits (never in its config) while it
/// samples device memory (`ACL_PROF_SYS_HARDWARE_MEM_FREQ`), so that the application's and
/// the models' allocations are recorded for `npu_mem` and `npu_module_mem`.
pub const MEM_SAMPLED: u64 = 1 << 63;

/// `ACL_AICORE_NONE` as the `u32` the records and configs carry.
pub const AICORE_NONE: u32 = aclprofAicoreMetricsValues::ACL_AICORE_NONE as u32;

/// `ACL_PROF_*` bits accepted by start/stop (CANN's 0x59FF plus the newest header's bits).
pub const DATA_TYPE_MASK: u64 = ACL_PROF_ACL_API
    | ACL_PROF_TASK_TIME
    | ACL_PROF_AICORE_METRICS
    | ACL_PROF_AICPU
    | ACL_PROF_L2CACHE
    | ACL_PROF_HCCL_TRACE
    | ACL_PROF_TRAINING_TRACE
    | ACL_PROF_MSPROFTX
    | ACL_PROF_RUNTIME_API
    | ACL_PROF_GE_API_L0
    | ACL_PROF_TASK_TIME_L0
    | ACL_PROF_TASK_MEMORY
    | ACL_PROF_GE_API_L1
    | ACL_PROF_TASK_TIME_L2
    | ACL_PROF_OP_ATTR
    | ACL_PROF_TASK_TIME_L3
    | ACL_PROF_API_STATS;

#[cfg(test)]
mod tests {
    #[test]
    fn the_accepted_bits_are_cann_s_mask_and_the_newest_header_s() {
        assert_eq!(
            super::DATA_TYPE_MASK,
            0x59FF | 0x200 | 0x2000 | 0x8000 | 0x0100_0000 | 0x4_0000_0000
        );
    }
}
