//! CANN's op_summary schema: its columns, the PMU columns per metric, and the task type and
//! block dim an op is shown with.

/// The accelerator and block count an op is shown with. The emulated device does not
/// schedule blocks, so these follow the op type: matrix ops run on every AI Core, the
/// vector ops of a typical inference graph on half of them (docs/compatibility.md, `mindstudio_profiler_output/`).
pub fn task_type_and_block_dim(op_type: &str) -> (&'static str, u32) {
    const CUBE: [&str; 8] = [
        "Conv2D",
        "Conv2DBackpropInput",
        "Conv3D",
        "MatMul",
        "MatMulV2",
        "BatchMatMul",
        "BatchMatMulV2",
        "FullyConnection",
    ];
    if CUBE.contains(&op_type) {
        ("AI_CORE", AI_CORE_NUM)
    } else {
        ("AI_VECTOR_CORE", AI_CORE_NUM / 2)
    }
}

/// AI Cores of the emulated device (its `info.json` `DeviceInfo`).
pub const AI_CORE_NUM: u32 = 8;
/// AI Vector cores of the emulated device.
pub const AIV_NUM: u32 = 7;

pub const OP_SUMMARY_HEADER: [&str; 21] = [
    "Device_id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Op Name",
    "OP Type",
    "OP State",
    "Task Type",
    "Task Start Time(us)",
    "Task Duration(us)",
    "Task Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
];

/// The PMU columns op_summary has for each `aclprofAicoreMetrics` value, as Ascend 910B
/// runs of CANN 8 write them (from real op_summary files: tests/data/real/SOURCES.md).
/// PipelineExecuteUtilization (7) and MemoryAccess (8) get the common four: we have no
/// real table of theirs to copy.
pub(super) const PMU_COLUMNS: [&[&str]; 9] = [
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aic_mac_fp16_ratio",
        "aic_mac_int8_ratio",
        "aic_cube_fops",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_vec_fp32_ratio",
        "aiv_vec_fp16_ratio",
        "aiv_vec_int32_ratio",
        "aiv_vec_misc_ratio",
        "aiv_vector_fops",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aic_mac_time(us)",
        "aic_mac_ratio",
        "aic_scalar_time(us)",
        "aic_scalar_ratio",
        "aic_mte1_time(us)",
        "aic_mte1_ratio",
        "aic_mte2_time(us)",
        "aic_mte2_ratio",
        "aic_fixpipe_time(us)",
        "aic_fixpipe_ratio",
        "aic_icache_miss_rate",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_vec_time(us)",
        "aiv_vec_ratio",
        "aiv_scalar_time(us)",
        "aiv_scalar_ratio",
        "aiv_mte2_time(us)",
        "aiv_mte2_ratio",
        "aiv_mte3_time(us)",
        "aiv_mte3_ratio",
        "aiv_icache_miss_rate",
        "cube_utilization(%)",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aic_l1_read_bw(GB/s)",
        "aic_l1_write_bw(GB/s)",
        "aic_main_mem_read_bw(GB/s)",
        "aic_main_mem_write_bw(GB/s)",
        "aic_l2_read_bw(GB/s)",
        "aic_l2_write_bw(GB/s)",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_ub_read_bw(GB/s)",
        "aiv_ub_write_bw(GB/s)",
        "aiv_main_mem_read_bw(GB/s)",
        "aiv_main_mem_write_bw(GB/s)",
        "aiv_l2_read_bw(GB/s)",
        "aiv_l2_write_bw(GB/s)",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aic_l0a_read_bw(GB/s)",
        "aic_l0a_write_bw(GB/s)",
        "aic_l0b_read_bw(GB/s)",
        "aic_l0b_write_bw(GB/s)",
        "aic_l0c_read_bw_cube(GB/s)",
        "aic_l0c_write_bw_cube(GB/s)",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_l0c_read_bw(GB/s)",
        "aiv_l0c_write_bw(GB/s)",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_vec_bankgroup_cflt_ratio",
        "aiv_vec_bank_cflt_ratio",
        "aiv_vec_resc_cflt_ratio",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aic_ub_read_bw_scalar(GB/s)",
        "aic_ub_write_bw_scalar(GB/s)",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_ub_read_bw_vector(GB/s)",
        "aiv_ub_write_bw_vector(GB/s)",
        "aiv_ub_read_bw_scalar(GB/s)",
        "aiv_ub_write_bw_scalar(GB/s)",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aic_write_cache_hit",
        "aic_write_cache_miss_allocate",
        "aic_r0_read_cache_hit",
        "aic_r0_read_cache_miss_allocate",
        "aic_r1_read_cache_hit",
        "aic_r1_read_cache_miss_allocate",
        "aiv_time(us)",
        "aiv_total_cycles",
        "aiv_write_cache_hit",
        "aiv_write_cache_miss_allocate",
        "aiv_r0_read_cache_hit",
        "aiv_r0_read_cache_miss_allocate",
        "aiv_r1_read_cache_hit",
        "aiv_r1_read_cache_miss_allocate",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aiv_time(us)",
        "aiv_total_cycles",
    ],
    &[
        "aicore_time(us)",
        "aic_total_cycles",
        "aiv_time(us)",
        "aiv_total_cycles",
    ],
];

/// op_summary's PMU columns for a config's `aclprofAicoreMetrics` (none for ACL_AICORE_NONE).
pub fn pmu_columns(metric: u64) -> &'static [&'static str] {
    PMU_COLUMNS.get(metric as usize).copied().unwrap_or(&[])
}

/// step_trace_time.csv's columns (microseconds but for the ids), in CANN's order.
pub const STEP_TRACE_TIME_HEADER: [&str; 11] = [
    "Device_id",
    "Step",
    "Computing",
    "Communication(Not Overlapped)",
    "Overlapped",
    "Communication",
    "Free",
    "Stage",
    "Bubble",
    "Communication(Not Overlapped and Exclude Receive)",
    "Preparing",
];
