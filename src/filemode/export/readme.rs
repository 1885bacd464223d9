//! The result directory's README.txt: what was collected, what was lost, and what the
//! emulated device does not collect.

use super::*;

/// Switches that ask for data an emulated device has none of: (bit, what, macro).
pub(super) const NOT_COLLECTED: [(u64, &str, &str); 5] = [
    (0x8, "AI CPU task details", "ACL_PROF_AICPU"),
    (0x10, "L2 cache hit rates", "ACL_PROF_L2CACHE"),
    (
        0x20,
        "HCCL task planes (communication ops themselves are on the HCCL track)",
        "ACL_PROF_HCCL_TRACE",
    ),
    (
        0x200 | 0x100_0000,
        "graph engine API calls",
        "ACL_PROF_GE_API_L0/L1",
    ),
    (0x4000, "operator attributes", "ACL_PROF_OP_ATTR"),
];

/// The switches this run turned on that collect nothing here, one per line.
pub(super) fn not_collected(data_type: u64, metric: u64) -> Vec<String> {
    let mut v: Vec<String> = NOT_COLLECTED
        .iter()
        .filter(|(bit, _, _)| data_type & bit != 0)
        .map(|(_, what, name)| format!("{what} ({name})"))
        .collect();
    if !pmu_columns(metric).is_empty() {
        v.push(
            "AI Core PMU counters (aicore_metrics): op_summary has the metric's columns, N/A \
             except values a replayed table carried"
                .into(),
        );
    }
    v
}

pub(super) fn write_readme(
    dir: &Path,
    out: &Path,
    stamp: &str,
    session: &crate::formats::host::Session,
    metric: u64,
) -> Result<()> {
    let data_type = session.data_type_config;
    let mut text = format!(
        "Exported by aclprof (emulated Ascend device) at {stamp}.\n\
         msprof_{stamp}.json       timeline (Chrome trace array: Perfetto, chrome://tracing, MindStudio Insight)\n\
         op_summary_{stamp}.csv    one row per op\n\
         op_statistic_{stamp}.csv  per op type (communication excluded)\n\
         task_time_{stamp}.csv     one row per task\n\
         step_trace_time.csv       per device and step: Computing, Communication, Free (Overlap Analysis)\n"
    );
    if data_type & crate::formats::acl_prof::ACL_PROF_ACL_API != 0 {
        text += &format!("api_statistic_{stamp}.csv per AscendCL API\n");
    }
    if data_type & crate::formats::acl_prof::ACL_PROF_TRAINING_TRACE != 0 {
        text += &format!("step_trace_{stamp}.csv    per step\n");
    }
    if data_type & crate::formats::acl_prof::ACL_PROF_MSPROFTX != 0 {
        text += &format!("msprof_tx_{stamp}.csv     msproftx marks and ranges\n");
    }
    // Memory and host resources: each file that the session's switches wrote.
    for (prefix, what) in [
        (
            "memory_record",
            "operator memory's totals at every allocation and release",
        ),
        (
            "operator_memory",
            "each operator allocation with its release",
        ),
        ("static_op_mem", "the static graphs' memory plans"),
        ("npu_mem", "device memory, sampled"),
        ("npu_module_mem", "each module's device memory, sampled"),
        ("host_cpu_usage", "this process's CPUs"),
        ("host_mem_usage", "this process's memory"),
        ("host_disk_usage", "this process's disk reads and writes"),
        ("host_network_usage", "the network"),
        ("cpu_usage", "the system's CPUs"),
        ("process_cpu_usage", "every process's CPU"),
        ("sys_mem", "the system's memory"),
        ("process_mem", "every process's memory"),
    ] {
        let name = format!("{prefix}_{stamp}.csv");
        if out.join(&name).exists() {
            text += &format!("{name:<25} {what}\n");
        }
    }
    if out.join(format!("memory_record_{stamp}.csv")).exists() {
        text += "MindStudio Insight's Memory tab reads these files, not the database: open this \
                 folder in it (opened from the result directory, it finds msprof_*.db and \
                 reads that instead).\n";
    }
    let mut missing = not_collected(data_type, metric);
    missing.extend(session.hardware_only.iter().cloned());
    if !missing.is_empty() {
        log::warn!(
            "aclprof: switched on but not collected on an emulated device: {}",
            missing.join("; ")
        );
        text += "\nNot collected (no Ascend hardware behind aclprof):\n";
        for m in &missing {
            text += &format!("  - {m}\n");
        }
    }
    if dir.join("host/data/aclprof_storage_limit_reached").exists() {
        text += "\nNOTE: ACL_PROF_STORAGE_LIMIT was reached; ops after it were not recorded.\n";
    }
    if let Ok(lost) = fs::read_to_string(dir.join(crate::filemode::LOST_OPS)) {
        let mut lines = lost.lines();
        let n = lines.next().unwrap_or("?");
        let why = lines.next().unwrap_or("");
        let hosts = lines.next().unwrap_or("0");
        let host_why = lines.next().unwrap_or("");
        text += &format!("\nlost_ops: {n}\nlost_host_events: {hosts}\n");
        if n != "0" {
            text += &format!(
                "NOTE: {n} ops were recorded but lost before they reached the disk ({why}).\n"
            );
        }
        if hosts != "0" {
            text += &format!(
                "NOTE: {hosts} host events (API calls, msproftx, steps) were lost ({host_why}).\n"
            );
        }
    }
    let p = out.join("README.txt");
    let mut f = io("cannot create", &p, create_output(&p))?;
    io("cannot write", &p, f.write_all(text.as_bytes()))
}
