//! msproftx stamps, marks, push/pop, ranges and step info.
//!
//! The stamp API is live only while a file-mode session started with `ACL_PROF_MSPROFTX`
//! and until `aclprofFinalize`, as in CANN. Every failure returns -1 (CANN's internal code).
//! Where CANN is memory-unsafe we validate instead (docs/design.md, "The state machine"):
//! stamp pointers are
//! looked up, never dereferenced; range ids are unique, and `aclprofRangeStop` accepts only
//! a started range; the push/pop stack is per thread.
//!
//! Finished events go to [`emit`], which records them in the running file-mode session's
//! host event log.

use crate::error::*;
use crate::fork::{global, Mutex, Rank};
use crate::formats::host::{HostEvent, StepTag, TxKind};
use crate::handles::Table;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Stamps alive at once (CANN's pool size).
pub const MAX_STAMPS: usize = 100;
/// Longest stamp or MarkEx message (the newest CANN rejects msgLen >= 128).
pub const MAX_MESSAGE: usize = 127;
/// Ranges started and not yet stopped, at most.
pub const MAX_OPEN_RANGES: usize = 65536;

#[derive(Clone, Debug, Default)]
pub struct Stamp {
    pub message: String,
    pub category: u32,
    pub payload_type: i32,
}

/// A finished msproftx event (what file mode will record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Mark {
        message: String,
        ns: u64,
        tid: u32,
    },
    MarkEx {
        message: String,
        ns: u64,
        tid: u32,
        id: u64,
    },
    PushPop {
        message: String,
        start_ns: u64,
        end_ns: u64,
        tid: u32,
    },
    Range {
        message: String,
        start_ns: u64,
        end_ns: u64,
        tid: u32,
        id: u32,
    },
}

static ENABLED: AtomicBool = AtomicBool::new(false);
global! {
    pub static STAMPS: Table<Stamp> = Table::new(Rank::Stamps);
}
global! {
    /// Open ranges; a forked child has none, and starts with msproftx off.
    static RANGES: Mutex<Option<HashMap<u32, (String, u64)>>> =
        Mutex::reset_in_child(Rank::Ranges, None, |r| {
            *r = None;
            set_enabled(false);
        });
}
static NEXT_RANGE: AtomicU32 = AtomicU32::new(1);
static NEXT_MARK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static STACK: RefCell<Vec<(String, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Called by file mode: start with ACL_PROF_MSPROFTX enables, finalize disables.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Release);
}

fn enabled() -> Result<()> {
    if ENABLED.load(Ordering::Acquire) {
        Ok(())
    } else {
        err(
            MSPROFTX_FAILED,
            "msproftx is off: aclprofStart a config with ACL_PROF_MSPROFTX first",
        )
    }
}

/// Records a finished event in the running file-mode session (ACL_PROF_MSPROFTX).
fn emit(e: Event) {
    log::trace!("aclprof msproftx event {e:?}");
    let (kind, message, start, end, tid) = match &e {
        Event::Mark { message, ns, tid } => (TxKind::Mark, message, *ns, *ns, *tid),
        Event::MarkEx {
            message, ns, tid, ..
        } => (TxKind::MarkEx, message, *ns, *ns, *tid),
        Event::PushPop {
            message,
            start_ns,
            end_ns,
            tid,
        } => (TxKind::PushPop, message, *start_ns, *end_ns, *tid),
        Event::Range {
            message,
            start_ns,
            end_ns,
            tid,
            ..
        } => (TxKind::Range, message, *start_ns, *end_ns, *tid),
    };
    crate::filemode::host_event(crate::formats::acl_prof::ACL_PROF_MSPROFTX, || {
        HostEvent::Tx {
            end,
            name: message.clone(),
            start,
            tid: u64::from(tid),
            kind,
        }
    });
}

fn stamp<R>(h: usize, f: impl FnOnce(&mut Stamp) -> R) -> Result<R> {
    STAMPS.with(h, f).map_or_else(
        || {
            err(
                MSPROFTX_FAILED,
                "not a live stamp (NULL, destroyed, or never created)",
            )
        },
        Ok,
    )
}

pub fn create_stamp() -> Result<usize> {
    enabled()?;
    if STAMPS.len() >= MAX_STAMPS {
        return err(
            MSPROFTX_FAILED,
            format!("{MAX_STAMPS} stamps are alive; destroy some first"),
        );
    }
    Ok(STAMPS.insert(Stamp::default()))
}

pub fn destroy_stamp(h: usize) -> Result<()> {
    if STAMPS.remove(h) {
        Ok(())
    } else {
        err(
            MSPROFTX_FAILED,
            "not a live stamp (already destroyed, or never created)",
        )
    }
}

pub fn check_message(msg: &[u8]) -> Result<String> {
    if msg.is_empty() || msg.len() > MAX_MESSAGE {
        return err(
            MSPROFTX_FAILED,
            format!(
                "the message must be 1..={MAX_MESSAGE} bytes, not {}",
                msg.len()
            ),
        );
    }
    if msg.contains(&0) {
        return err(MSPROFTX_FAILED, "msgLen counts past the message's NUL");
    }
    Ok(String::from_utf8_lossy(msg).into_owned())
}

pub fn set_message(h: usize, msg: &[u8]) -> Result<()> {
    enabled()?;
    let m = if msg.is_empty() {
        String::new()
    } else {
        check_message(msg)?
    };
    stamp(h, |s| s.message = m)
}

pub fn set_category(h: usize, category: u32) -> Result<()> {
    enabled()?;
    stamp(h, |s| s.category = category)
}

pub fn set_payload(h: usize, ty: i32) -> Result<()> {
    enabled()?;
    stamp(h, |s| s.payload_type = ty)
}

pub fn mark(h: usize) -> Result<()> {
    enabled()?;
    let message = stamp(h, |s| s.message.clone())?;
    emit(Event::Mark {
        message,
        ns: crate::clock::now_ns(),
        tid: crate::clock::thread_id(),
    });
    Ok(())
}

pub fn mark_ex(msg: &[u8]) -> Result<()> {
    enabled()?;
    let message = check_message(msg)?;
    let id = NEXT_MARK.fetch_add(1, Ordering::Relaxed);
    emit(Event::MarkEx {
        message,
        ns: crate::clock::now_ns(),
        tid: crate::clock::thread_id(),
        id,
    });
    Ok(())
}

pub fn push(h: usize) -> Result<()> {
    enabled()?;
    let message = stamp(h, |s| s.message.clone())?;
    push_message(message)
}

pub fn push_message(message: String) -> Result<()> {
    enabled()?;
    STACK.with(|st| {
        let mut st = st.borrow_mut();
        if st.len() >= MAX_OPEN_RANGES {
            return err(MSPROFTX_FAILED, "too many nested pushes on this thread");
        }
        st.push((message, crate::clock::now_ns()));
        Ok(())
    })
}

pub fn pop() -> Result<()> {
    enabled()?;
    let Some((message, start_ns)) = STACK.with(|st| st.borrow_mut().pop()) else {
        return err(
            MSPROFTX_FAILED,
            "aclprofPop without a matching aclprofPush on this thread",
        );
    };
    emit(Event::PushPop {
        message,
        start_ns,
        end_ns: crate::clock::now_ns(),
        tid: crate::clock::thread_id(),
    });
    Ok(())
}

pub fn range_start(h: usize) -> Result<u32> {
    enabled()?;
    let message = stamp(h, |s| s.message.clone())?;
    let mut g = RANGES.lock();
    let m = g.get_or_insert_with(HashMap::new);
    if m.len() >= MAX_OPEN_RANGES {
        return err(
            MSPROFTX_FAILED,
            format!("{MAX_OPEN_RANGES} ranges are open; stop some first"),
        );
    }
    let mut id = NEXT_RANGE.fetch_add(1, Ordering::Relaxed);
    while id == 0 || m.contains_key(&id) {
        id = NEXT_RANGE.fetch_add(1, Ordering::Relaxed);
    }
    m.insert(id, (message, crate::clock::now_ns()));
    Ok(id)
}

pub fn range_stop(id: u32) -> Result<()> {
    enabled()?;
    let open = RANGES.lock().as_mut().and_then(|m| m.remove(&id));
    let Some((message, start_ns)) = open else {
        return err(
            MSPROFTX_FAILED,
            format!("range {id} was not started (or was already stopped)"),
        );
    };
    emit(Event::Range {
        message,
        start_ns,
        end_ns: crate::clock::now_ns(),
        tid: crate::clock::thread_id(),
        id,
    });
    Ok(())
}

/// 64-bit FNV-1a: a stable id for a string (`aclprofStr2Id`).
pub fn str_to_id(s: &[u8]) -> u64 {
    s.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `aclprofStepInfo`.
#[derive(Debug, Default)]
pub struct StepInfo {
    pub index: u64,
    pub started: bool,
    pub ended: bool,
}

global! {
    pub static STEPS: Table<StepInfo> = Table::new(Rank::Steps);
}
static NEXT_STEP: AtomicU64 = AtomicU64::new(1);

pub fn create_step() -> usize {
    STEPS.insert(StepInfo {
        index: NEXT_STEP.fetch_add(1, Ordering::Relaxed),
        ..Default::default()
    })
}

/// `aclprofGetStepTimestamp`: tag 0 is START, anything else END (as in CANN).
pub fn step_timestamp(h: usize, tag: u32) -> Result<(u64, bool, u64)> {
    let r = STEPS.with(h, |s| {
        let start = tag == 0;
        if start && s.started || !start && s.ended {
            return err(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "step {} already has its {} timestamp",
                    s.index,
                    if start { "START" } else { "END" }
                ),
            );
        }
        if start {
            s.started = true;
        } else {
            s.ended = true;
        }
        let now = crate::clock::now_ns();
        crate::filemode::host_event(crate::formats::acl_prof::ACL_PROF_TRAINING_TRACE, || {
            HostEvent::Step {
                index: s.index,
                start: now,
                tag: if start { StepTag::Start } else { StepTag::End },
                tid: u64::from(crate::clock::thread_id()),
            }
        });
        Ok((s.index, start, now))
    });
    r.unwrap_or_else(|| {
        err(
            ACL_ERROR_INVALID_PARAM,
            "not a live aclprofStepInfo (NULL, destroyed, or never created)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything here runs in one test because the enabled switch is process-wide.
    #[test]
    fn msproftx_state_and_validation() {
        set_enabled(false);
        assert_eq!(create_stamp().unwrap_err().code, -1);
        assert_eq!(pop().unwrap_err().code, -1);
        assert_eq!(mark_ex(b"hi").unwrap_err().code, -1);
        set_enabled(true);
        let s = create_stamp().unwrap();
        assert!(set_message(s, b"phase-1").is_ok());
        assert_eq!(set_message(s, &[b'x'; 128]).unwrap_err().code, -1);
        assert!(mark(s).is_ok());
        assert_eq!(mark(s + 1).unwrap_err().code, -1, "foreign pointer");
        assert_eq!(pop().unwrap_err().code, -1, "empty stack");
        push(s).unwrap();
        std::thread::spawn(|| {
            assert_eq!(pop().unwrap_err().code, -1, "the stack is per thread");
        })
        .join()
        .unwrap();
        pop().unwrap();
        let a = range_start(s).unwrap();
        let b = range_start(s).unwrap();
        assert_ne!(a, b, "range ids are unique");
        range_stop(a).unwrap();
        assert_eq!(range_stop(a).unwrap_err().code, -1, "double stop");
        range_stop(b).unwrap();
        assert_eq!(mark_ex(b"").unwrap_err().code, -1);
        assert_eq!(mark_ex(b"a\0b").unwrap_err().code, -1);
        mark_ex(b"ok").unwrap();
        destroy_stamp(s).unwrap();
        assert_eq!(destroy_stamp(s).unwrap_err().code, -1, "double destroy");
        let many: Vec<usize> = (0..MAX_STAMPS).map(|_| create_stamp().unwrap()).collect();
        assert!(create_stamp().is_err(), "pool of 100");
        for h in many {
            destroy_stamp(h).unwrap();
        }
        set_enabled(false);
    }

    #[test]
    fn steps() {
        let h = create_step();
        let (i, start, _) = step_timestamp(h, 0).unwrap();
        assert!(start && i >= 1);
        assert_eq!(step_timestamp(h, 0).unwrap_err().code, 100000);
        assert!(!step_timestamp(h, 7).unwrap().1, "any tag but 0 is END");
        assert_eq!(step_timestamp(h, 1).unwrap_err().code, 100000);
        assert!(STEPS.remove(h));
        assert_eq!(step_timestamp(h, 0).unwrap_err().code, 100000);
        assert_ne!(str_to_id(b"a"), str_to_id(b"b"));
    }
}
