//! aclprof's extension for runtimes that are not CANN: their device memory, allocation by
//! allocation, into the files CANN writes for operator memory (docs/compatibility.md,
//! "Memory").

use super::base::aclError;
use super::{entry, invalid};
use std::ffi::c_char;

/// Operator memory: an op's workspace and outputs (memory_record, operator_memory).
pub const ACLPROF_EXT_MEM_OPERATOR: u32 = 0;
/// The application's own device memory (npu_mem APP).
pub const ACLPROF_EXT_MEM_APP: u32 = 1;

/// One allocation or release of device memory, for aclprofExtMemReport.
#[repr(C)]
pub struct aclprofExtMemEvent {
    /// The device the memory is on.
    pub deviceId: u32,
    /// ACLPROF_EXT_MEM_OPERATOR or ACLPROF_EXT_MEM_APP.
    pub pool: u32,
    /// The memory's address (pairs a release with its allocation).
    pub addr: u64,
    /// Bytes allocated (> 0) or released (< 0).
    pub size: i64,
    /// The op (or call) that owns the memory; NULL or "" is unnamed.
    pub owner: *const c_char,
    /// The pool's bytes in use and held from the device after this event, as the runtime's
    /// allocator counts them; both 0: aclprof counts them from the events.
    pub totalAllocated: u64,
    pub totalReserved: u64,
    /// When (aclprofExtNowNs's clock); 0 is now.
    pub timeNs: u64,
}

/// Reports one allocation or release of device memory. Recorded while a file-mode session
/// records ACL_PROF_TASK_MEMORY (or samples memory, for ACLPROF_EXT_MEM_APP), buffered with
/// the host's other events (no system call of its own); otherwise only the pool's totals
/// are kept. Errors: NULL or misaligned `event`, size 0, an unknown pool, or an owner that
/// is not UTF-8 or longer than 255 bytes -> ACL_ERROR_INVALID_PARAM.
///
/// # Safety
/// `event` is NULL or points to an aclprofExtMemEvent whose `owner` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn aclprofExtMemReport(event: *const aclprofExtMemEvent) -> aclError {
    entry(
        "aclprofExtMemReport",
        crate::error::ACL_ERROR_PROFILING_FAILURE,
        || {
            // SAFETY: `event` is NULL or valid for reads (the C contract).
            let ev = unsafe { super::input(event, "event") }?;
            let owner = if ev.owner.is_null() {
                ""
            } else {
                // SAFETY: `owner` is not NULL, so a C string (the C contract).
                std::str::from_utf8(unsafe { std::ffi::CStr::from_ptr(ev.owner) }.to_bytes())
                    .map_err(|_| invalid("owner is not UTF-8"))?
            };
            crate::memory::report(&crate::memory::Report {
                device: ev.deviceId,
                pool: ev.pool,
                addr: ev.addr,
                size: ev.size,
                owner,
                totals: (ev.totalAllocated, ev.totalReserved),
                at: ev.timeNs,
            })
        },
    )
}
