//! The lines a viewer and the agent exchange over the watch socket, each encoded and parsed
//! here, side by side:
//!
//! * viewer → agent: `ATTACH <version>`, then any number of `MEMORY`;
//! * agent → viewer: `OK <version> <pid> <records per lane>` with the ring's descriptor, or
//!   `REFUSED <why>`; and for each `MEMORY`, `MEMORY` followed by one
//!   ` <device>:<pool>:<allocated>:<reserved>` per device memory pool.
//!
//! A line is at most [`MAX_LINE`] bytes from a viewer.

/// The protocol's version, in `ATTACH <v>` and the agent's `OK` line.
pub const VERSION: u32 = 1;

/// The longest line the agent reads from a viewer.
pub const MAX_LINE: u64 = 64;

/// What a viewer says first.
pub fn attach() -> String {
    format!("ATTACH {VERSION}\n")
}

/// Whether `line` is a viewer's [`attach`] in this version.
pub fn is_attach(line: &str) -> bool {
    line.trim() == format!("ATTACH {VERSION}")
}

/// The agent's yes, sent with the ring's descriptor.
pub fn ok(pid: u32, records: u64) -> String {
    format!("OK {VERSION} {pid} {records}\n")
}

/// The agent's no, and why.
pub fn refused(why: &str) -> String {
    format!("REFUSED {why}\n")
}

/// The agent's answer to [`attach`], as a viewer reads it: `Ok(())` for [`ok`], else why not.
pub fn parse_answer(line: &str) -> Result<(), String> {
    let line = line.trim_end();
    if line.starts_with("OK ") {
        Ok(())
    } else {
        Err(line.strip_prefix("REFUSED ").unwrap_or(line).to_string())
    }
}

/// A viewer's request for the device memory pools' totals.
pub const MEMORY: &str = "MEMORY";

/// Whether `line` is a viewer's [`MEMORY`] request.
pub fn is_memory(line: &str) -> bool {
    line.trim() == MEMORY
}

/// One device memory pool's totals, as the watched process has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolTotals {
    pub device: u32,
    /// `operator`, `application` or `model`.
    pub pool: String,
    pub allocated: u64,
    pub reserved: u64,
}

/// The agent's answer to [`MEMORY`].
pub fn memory(pools: &[PoolTotals]) -> String {
    let mut s = String::from(MEMORY);
    for p in pools {
        s.push_str(&format!(
            " {}:{}:{}:{}",
            p.device, p.pool, p.allocated, p.reserved
        ));
    }
    s.push('\n');
    s
}

/// The pools of an answer to [`MEMORY`]; None if `line` is not one. Malformed entries are
/// left out.
pub fn parse_memory(line: &str) -> Option<Vec<PoolTotals>> {
    let rest = line.trim_end().strip_prefix(MEMORY)?;
    Some(
        rest.split_whitespace()
            .filter_map(|e| {
                let mut f = e.split(':');
                Some(PoolTotals {
                    device: f.next()?.parse().ok()?,
                    pool: f.next()?.to_string(),
                    allocated: f.next()?.parse().ok()?,
                    reserved: f.next()?.parse().ok()?,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reads_back_as_written() {
        assert!(is_attach(&attach()));
        assert!(!is_attach("ATTACH 2\n"));
        assert_eq!(parse_answer(&ok(42, 4096)), Ok(()));
        assert_eq!(
            parse_answer(&refused("another viewer is watching")),
            Err("another viewer is watching".to_string())
        );
        assert_eq!(parse_answer("junk"), Err("junk".to_string()));
        assert!(is_memory("MEMORY\n"));
        let pools = vec![
            PoolTotals {
                device: 0,
                pool: "operator".into(),
                allocated: 1 << 20,
                reserved: 2 << 20,
            },
            PoolTotals {
                device: 3,
                pool: "model".into(),
                allocated: 0,
                reserved: 7,
            },
        ];
        assert_eq!(parse_memory(&memory(&pools)), Some(pools));
        assert_eq!(parse_memory(&memory(&[])), Some(Vec::new()));
        assert_eq!(parse_memory("OK 1"), None);
        assert_eq!(parse_memory("MEMORY 1:x:2 0:y:1:1").unwrap().len(), 1);
    }
}
