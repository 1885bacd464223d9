//! The host's resources as CANN writes them (`ACL_PROF_HOST_SYS`, `ACL_PROF_HOST_SYS_USAGE`):
//! the samples the sampler records, the columns of the `host_*_usage`, `cpu_usage`,
//! `process_cpu_usage`, `sys_mem` and `process_mem` files, and the timeline's processes.
//! How each figure is computed from `/proc` is in docs/compatibility.md, "Host resources".

use serde::{Deserialize, Serialize};

/// One sample of the host, taken at `start` (the library's clock, ns); rates and usages
/// are over the interval since the previous sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Sample {
    /// This process's use of each CPU, in % of that CPU (`host_sys` cpu).
    Cpu {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        cpus: Vec<f64>,
    },
    /// This process's resident memory and the machine's total, bytes (`host_sys` mem).
    Mem {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        used: u64,
        #[serde(default)]
        total: u64,
    },
    /// This process's disk reads and writes, bytes per second (`host_sys` disk).
    Disk {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        read: u64,
        #[serde(default)]
        write: u64,
    },
    /// The network's traffic (received and sent) and the fastest interface's speed, bytes
    /// per second (`host_sys` network).
    Net {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        used: u64,
        #[serde(default)]
        speed: u64,
    },
    /// The whole system's CPUs: per CPU, % user, sys, iowait, irq, soft, idle
    /// (`host_sys_usage` cpu).
    SysCpu {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        cpus: Vec<[f64; 6]>,
    },
    /// The whole system's memory, `sys_mem`'s columns after Device_id in their order
    /// (`host_sys_usage` mem).
    SysMem {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        values: Vec<u64>,
    },
    /// Every process: pid, name, CPU %, size, resident and shared pages.
    Procs {
        #[serde(default)]
        start: u64,
        #[serde(default)]
        procs: Vec<Proc>,
    },
    /// A kind this version does not know.
    #[serde(other)]
    Other,
}

/// One process of a [`Sample::Procs`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Proc {
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub cpu: f64,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub resident: u64,
    #[serde(default)]
    pub shared: u64,
}

impl Sample {
    pub fn start(&self) -> u64 {
        match self {
            Sample::Cpu { start, .. }
            | Sample::Mem { start, .. }
            | Sample::Disk { start, .. }
            | Sample::Net { start, .. }
            | Sample::SysCpu { start, .. }
            | Sample::SysMem { start, .. }
            | Sample::Procs { start, .. } => *start,
            Sample::Other => 0,
        }
    }
}

/// `ACL_PROF_HOST_SYS`'s items, as its value lists them.
pub const HOST_SYS_ITEMS: [&str; 5] = ["cpu", "mem", "disk", "network", "osrt"];
/// `ACL_PROF_HOST_SYS_USAGE`'s items.
pub const HOST_SYS_USAGE_ITEMS: [&str; 2] = ["cpu", "mem"];
/// The sampling frequency of `host_sys` (msprof's fixed 20 ms) and `host_sys_usage`'s
/// default, Hz.
pub const HOST_SYS_HZ: u32 = 50;

pub const HOST_CPU_USAGE: &[&str] = &[
    "Device_id",
    "Total Cpu Numbers",
    "Occupied Cpu Numbers",
    "Recommend Cpu Numbers",
];
pub const HOST_MEM_USAGE: &[&str] = &[
    "Device_id",
    "Total Memory(KB)",
    "Peak Used Memory(KB)",
    "Recommend Memory(KB)",
];
pub const HOST_DISK_USAGE: &[&str] = &[
    "Device_id",
    "Peak Disk Read(KB/s)",
    "Recommend Disk Read(KB/s)",
    "Peak Disk Write(KB/s)",
    "Recommend Disk Write(KB/s)",
];
pub const HOST_NETWORK_USAGE: &[&str] = &[
    "Device_id",
    "Netcard Speed(KB/s)",
    "Peak Used Speed(KB/s)",
    "Recommend Speed(KB/s)",
];
pub const CPU_USAGE: &[&str] = &[
    "Device_id",
    "Cpu Type",
    "User(%)",
    "Sys(%)",
    "IoWait(%)",
    "Irq(%)",
    "Soft(%)",
    "Idle(%)",
];
pub const PROCESS_CPU_USAGE: &[&str] = &["Device_id", "PID", "Name", "CPU(%)"];
pub const SYS_MEM: &[&str] = &[
    "Device_id",
    "Memory Total(kB)",
    "Memory Free(kB)",
    "Buffers(kB)",
    "Cached(kB)",
    "Share Memory(kB)",
    "Commit Limit(kB)",
    "Committed AS(kB)",
    "Huge Pages Total(pages)",
    "Huge Pages Free(pages)",
];
/// `/proc/meminfo`'s keys of [`SYS_MEM`]'s columns, in order.
pub const SYS_MEM_KEYS: [&str; 9] = [
    "MemTotal",
    "MemFree",
    "Buffers",
    "Cached",
    "Shmem",
    "CommitLimit",
    "Committed_AS",
    "HugePages_Total",
    "HugePages_Free",
];
pub const PROCESS_MEM: &[&str] = &[
    "Device_id",
    "PID",
    "Name",
    "Size(pages)",
    "Resident(pages)",
    "Shared(pages)",
];

/// The timeline's processes of host usage: (name, sort index).
pub const CPU_TRACK: (&str, u64) = ("CPU Usage", 9);
pub const MEM_TRACK: (&str, u64) = ("Memory Usage", 10);
pub const NET_TRACK: (&str, u64) = ("Network Usage", 11);
pub const DISK_TRACK: (&str, u64) = ("Disk Usage", 12);
/// Their counters' unit: args `{"Usage(%)": value}`.
pub const USAGE_UNIT: &str = "Usage(%)";

/// msprof's recommendation from samples of a usage: the 98th percentile over 0.8 (what
/// the run needs with 20 % headroom). 0 for no samples.
pub fn recommend(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 * 0.98).ceil() as usize).clamp(1, v.len()) - 1;
    v[i] / 0.8
}

/// A percentage or rate cell: two decimals, as msprof writes them.
pub fn pct(v: f64) -> String {
    format!("{v:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recommendation_is_the_98th_percentile_with_headroom() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(recommend(&v), 98.0 / 0.8);
        assert_eq!(recommend(&[40.0]), 50.0);
        assert_eq!(recommend(&[]), 0.0);
    }
}
