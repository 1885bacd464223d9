//! Device memory as the emulated runtime, the simulator and other runtimes
//! (`aclprofExtMem*`) allocate it: the pools' rules (what an allocation does to the
//! totals), the simulator's executions and plans, and the extension's checks. The totals
//! and the session's memory log are `filemode::memlog`'s (docs/design.md, "Memory"): an
//! event is one lock and a copy into a buffer, no system call of its own. While no session
//! records memory, only the totals are kept, so that a session started later samples what
//! the process already holds.

use crate::filemode::memlog::{self, Change};
use crate::formats::host::HostEvent;
use crate::formats::memory::{PlanEntry, Pool};

pub use memlog::{recording, try_totals, Totals};

/// The operator pool holds device memory in blocks of this size, as a caching allocator
/// does: it grows when what is in use outgrows it and gives memory back only when the
/// pool empties.
pub const OP_BLOCK: u64 = 2 << 20;

/// One allocation (`size` > 0) or release (`size` < 0) of `size.abs()` bytes at `addr`,
/// owned by `name`, at `at` (the library's clock). `given`: the pool's totals after it, as
/// a runtime that keeps its own pool reports them; None: worked out here.
pub fn event(
    device: u32,
    pool: Pool,
    addr: u64,
    size: i64,
    name: &str,
    at: u64,
    given: Option<Totals>,
) {
    let c = Change {
        device,
        pool,
        addr,
        size,
        name,
        at,
    };
    memlog::change(&c, |t| given.unwrap_or_else(|| next(pool, t, size)));
}

/// A pool's totals after `size` bytes came (> 0) or went (< 0).
fn next(pool: Pool, t: Totals, size: i64) -> Totals {
    let allocated = t.allocated.saturating_add_signed(size);
    let reserved = match pool {
        Pool::Op if allocated == 0 => 0,
        Pool::Op => t.reserved.max(allocated.div_ceil(OP_BLOCK) * OP_BLOCK),
        Pool::App | Pool::Model => allocated,
    };
    Totals {
        allocated,
        reserved,
    }
}

/// Records every pool's totals as they stand (an event of size 0), so that a session
/// started after memory was allocated samples what the process holds.
pub fn snapshot() {
    memlog::snapshot(crate::clock::now_ns());
}

/// What a runtime that is not CANN reports of one allocation or release
/// (`aclprofExtMemReport`).
pub struct Report<'a> {
    pub device: u32,
    /// 0: operator memory; 1: the application's.
    pub pool: u32,
    pub addr: u64,
    pub size: i64,
    pub owner: &'a str,
    /// (allocated, reserved) after it; (0, 0): counted here.
    pub totals: (u64, u64),
    /// 0: now.
    pub at: u64,
}

/// Records a [`Report`] after checking it.
pub fn report(r: &Report) -> crate::error::Result<()> {
    use crate::error::{err, ACL_ERROR_INVALID_PARAM};
    let pool = match r.pool {
        0 => Pool::Op,
        1 => Pool::App,
        p => {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!("pool {p} is not 0 (operator) or 1 (application)"),
            )
        }
    };
    if r.size == 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            "size is 0 (> 0 allocates, < 0 releases)",
        );
    }
    if r.owner.len() > 255 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("owner is {} bytes long (at most 255)", r.owner.len()),
        );
    }
    let given = (r.totals != (0, 0)).then_some(Totals {
        allocated: r.totals.0,
        reserved: r.totals.1,
    });
    let at = if r.at == 0 {
        crate::clock::now_ns()
    } else {
        r.at
    };
    event(r.device, pool, r.addr, r.size, r.owner, at, given);
    Ok(())
}

/// Records the static memory plan of simulated model `id` (`static_op_mem`): each op's
/// outputs live from its node to the next (the last op's to the graph's end), its
/// workspace for its own node. Called at load, and at a session's start for the models
/// already loaded.
pub fn plan(id: u32, m: &crate::sim::import::SimModel) {
    use crate::formats::memory::UNTIL_GRAPH_END;
    // A replayed table with its run's own memory has no plan of ours.
    if !recording(Pool::Op) || !m.memory.is_empty() {
        return;
    }
    let last = m.ops.len().saturating_sub(1);
    for (i, op) in m.ops.iter().enumerate() {
        let (outputs, workspace) = op.memory();
        if outputs + workspace == 0 {
            continue;
        }
        let node = u32::try_from(i).unwrap_or(u32::MAX);
        crate::filemode::host_event(crate::formats::acl_prof::ACL_PROF_TASK_MEMORY, || {
            HostEvent::MemPlan(PlanEntry {
                device: m.device,
                first: node,
                graph: id,
                last: match (outputs, i == last) {
                    (0, _) => node,
                    (_, true) => UNTIL_GRAPH_END,
                    _ => node + 1,
                },
                model: m.name.clone(),
                name: op.name.clone(),
                size: outputs + workspace,
            })
        });
    }
}

/// Replays a recorded run's operator memory (a replayed table's `operator_memory`) on
/// `device` (the model's, as its ops are) with an execution that starts at `call_start`:
/// each event at its offset, with its totals.
pub fn replay(events: &[crate::sim::import::memory::Replayed], device: u32, call_start: u64) {
    if !recording(Pool::Op) {
        return;
    }
    for (offset, e) in events {
        let at = (i128::from(call_start) + i128::from(*offset)).max(0) as u64;
        let totals = Totals {
            allocated: e.allocated,
            reserved: e.reserved,
        };
        event(device, Pool::Op, e.addr, e.size, &e.name, at, Some(totals));
    }
}

/// The operator memory of one execution of a simulated model, as a caching allocator
/// hands it out: each op's workspace and outputs are allocated when it starts; the
/// workspace is released when it ends, the outputs when their consumer (the next op) has
/// ended, the last op's when the execution ends. Events go out in time order (a replayed
/// table's streams overlap). Nothing is done unless a session records operator memory.
pub struct Execution {
    device: u32,
    /// (time, size, op index, which: 0 output / 1 workspace)
    steps: Vec<(u64, i64, usize, u8)>,
    pending: Option<(usize, u64)>,
}

impl Execution {
    pub fn begin(device: u32) -> Option<Execution> {
        recording(Pool::Op).then(|| Execution {
            device,
            steps: Vec::new(),
            pending: None,
        })
    }

    /// Op `index` (with `outputs` and `workspace` bytes) ran from `start` to `end`.
    pub fn op(&mut self, index: usize, outputs: u64, workspace: u64, start: u64, end: u64) {
        let s = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
        if workspace > 0 {
            self.steps.push((start, s(workspace), index, 1));
            self.steps.push((end, -s(workspace), index, 1));
        }
        if outputs > 0 {
            self.steps.push((start, s(outputs), index, 0));
        }
        // The previous op's outputs are consumed by this op.
        if let Some((prev, bytes)) = self.pending.take() {
            self.steps.push((end, -s(bytes), prev, 0));
        }
        if outputs > 0 {
            self.pending = Some((index, outputs));
        }
    }

    /// The execution ended at `at`: records every event, in time order (`names`: an op's
    /// name by its index).
    pub fn finish<'a>(mut self, at: u64, names: impl Fn(usize) -> &'a str) {
        if let Some((prev, bytes)) = self.pending.take() {
            self.steps
                .push((at, -i64::try_from(bytes).unwrap_or(i64::MAX), prev, 0));
        }
        // By time; at one instant, releases first (an op's end before the next's start).
        self.steps.sort_by_key(|&(t, size, _, _)| (t, size > 0));
        let mut addrs: std::collections::HashMap<(usize, u8), u64> = Default::default();
        let mut next = 0x1_0000_0000u64 * (u64::from(self.device) + 1);
        for (t, size, op, which) in self.steps {
            let addr = if size > 0 {
                let a = next;
                next += size.unsigned_abs().div_ceil(512) * 512;
                addrs.insert((op, which), a);
                a
            } else {
                addrs.remove(&(op, which)).unwrap_or(0)
            };
            event(self.device, Pool::Op, addr, size, names(op), t, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_pool_reserves_in_blocks_and_empties_whole() {
        let mut t = Totals::default();
        t = next(Pool::Op, t, 1000);
        assert_eq!(
            t,
            Totals {
                allocated: 1000,
                reserved: OP_BLOCK
            }
        );
        t = next(Pool::Op, t, OP_BLOCK as i64);
        assert_eq!(t.reserved, 2 * OP_BLOCK);
        // Freed memory stays reserved until the pool is empty.
        t = next(Pool::Op, t, -(OP_BLOCK as i64));
        assert_eq!(
            t,
            Totals {
                allocated: 1000,
                reserved: 2 * OP_BLOCK
            }
        );
        t = next(Pool::Op, t, -1000);
        assert_eq!(t, Totals::default());
        // The application's memory is reserved as it is allocated.
        let a = next(Pool::App, Totals::default(), 4096);
        assert_eq!(
            a,
            Totals {
                allocated: 4096,
                reserved: 4096
            }
        );
    }
}
