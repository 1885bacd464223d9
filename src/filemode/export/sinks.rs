//! The threads the export hands batches to: the timeline writers and the database.

use super::*;
use crate::formats::timeline::{
    HARDWARE_PROCESS, HARDWARE_SORT, HCCL_PROCESS, HCCL_SORT, OVERLAP_SORT,
};

/// One op on its way to the timeline thread.
pub(super) struct TlOp {
    pub(super) kind: TlKind,
    /// End of the op's name, then of its task type, in [`TlBatch::names`].
    pub(super) name_end: usize,
    pub(super) type_end: usize,
    pub(super) dev: u32,
    pub(super) stream: u32,
    pub(super) model: u32,
    pub(super) task: u64,
    pub(super) start: u64,
    pub(super) end: u64,
    /// Communication (HCCL): its own track, and its own part of Overlap Analysis.
    pub(super) comm: bool,
    /// The op's shapes, types, formats and cost, shown in its slice's args.
    pub(super) meta: Option<std::sync::Arc<crate::opmeta::OpMeta>>,
}

/// Ops in merge order, their names back to back in one string; batches go back and forth
/// between the two threads so their buffers are reused.
#[derive(Default)]
pub(super) struct TlBatch {
    pub(super) names: String,
    pub(super) ops: Vec<TlOp>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TlKind {
    /// Not an op: the start of a device's ops.
    Device,
    /// The first op on its stream (the stream's track is named).
    FirstOnStream,
    Op,
}

pub(super) const TL_BATCH: usize = 4096;

impl TlBatch {
    pub(super) fn clear(&mut self) {
        self.names.clear();
        self.ops.clear();
    }
}

/// The timeline writer's state across batches: the device being written, its intervals
/// being merged for Overlap Analysis and its steps.
pub(super) struct TlState {
    pub(super) dev: Option<u32>,
    pub(super) overlap: Overlap,
    pub(super) steps: Steps,
}

/// Writes a finished Overlap Analysis piece and counts it into its steps.
pub(super) fn overlap_piece<'a>(
    tl: &'a mut Timeline,
    steps: &'a mut Steps,
    ov: u64,
    err: &'a mut std::io::Result<()>,
) -> impl FnMut(Track, u64, u64) + 'a {
    move |p, s, e| {
        let (name, tid) = p.track();
        if err.is_ok() {
            *err = tl.slice(name, ov, tid, s, e - s, &[]);
        }
        steps.add(p, s, e);
    }
}

impl TlState {
    pub(super) fn new(steps: Steps) -> TlState {
        TlState {
            dev: None,
            overlap: Overlap::default(),
            steps,
        }
    }

    /// The pids of the device's Ascend Hardware, HCCL and Overlap Analysis processes.
    pub(super) fn pids(tl: &Timeline, dev: u32) -> (u64, u64, u64) {
        let d = dev as u64;
        (
            tl.pid(HARDWARE_SORT, d),
            tl.pid(HCCL_SORT, d),
            tl.pid(OVERLAP_SORT, d),
        )
    }

    pub(super) fn write(&mut self, tl: &mut Timeline, b: &TlBatch) -> std::io::Result<()> {
        let mut name_start = 0;
        for op in &b.ops {
            if op.kind == TlKind::Device {
                self.finish(tl)?;
                self.dev = Some(op.dev);
                self.steps.begin_device();
                let (hw, _, ov) = Self::pids(tl, op.dev);
                tl.process(
                    hw,
                    HARDWARE_PROCESS,
                    &format!("NPU {}", op.dev),
                    HARDWARE_SORT,
                )?;
                tl.process(
                    ov,
                    "Overlap Analysis",
                    &format!("NPU {}", op.dev),
                    OVERLAP_SORT,
                )?;
                for p in [
                    Track::Computing,
                    Track::Communication,
                    Track::NotOverlapped,
                    Track::Free,
                ] {
                    let (name, tid) = p.track();
                    tl.thread(ov, tid, name, tid)?;
                }
                continue;
            }
            let (hw, hccl, ov) = Self::pids(tl, op.dev);
            let name = &b.names[name_start..op.name_end];
            let task_type = &b.names[op.name_end..op.type_end];
            name_start = op.type_end;
            let stream = op.stream as u64;
            // Communication goes to the HCCL process, as real runs show it.
            let (pid, tid) = if op.comm {
                tl.process(hccl, HCCL_PROCESS, &format!("NPU {}", op.dev), HCCL_SORT)?;
                tl.thread(hccl, 0, "Group 0 Communication", 0)?;
                (hccl, 0)
            } else {
                if op.kind == TlKind::FirstOnStream {
                    tl.thread(hw, stream, &format!("Stream {stream}"), stream)?;
                }
                (hw, stream)
            };
            let base = [
                ("Model Id", Arg::U(op.model as u64)),
                ("Task Type", Arg::S(task_type)),
                ("Physic Stream Id", Arg::U(stream)),
                ("Task Id", Arg::U(op.task)),
                ("Batch Id", Arg::U(0)),
                ("Subtask Id", Arg::U(u32::MAX as u64)),
            ];
            match op.meta.as_deref() {
                None => tl.slice(name, pid, tid, op.start, op.end - op.start, &base)?,
                Some(m) => {
                    // Then what is known of the op's tensors and cost.
                    let mut args = [("", Arg::U(0)); 6 + META_ARGS.len() + 2];
                    args[..6].copy_from_slice(&base);
                    let mut n = 6;
                    for (k, v) in META_ARGS.iter().zip(m.fields()) {
                        if !v.is_empty() && v != "N/A" {
                            args[n] = (k, Arg::S(crate::opmeta::plain_shapes(v)));
                            n += 1;
                        }
                    }
                    for (k, v) in [("FLOPs", m.flops), ("Bytes", m.bytes)] {
                        if let Some(v) = v {
                            args[n] = (k, Arg::U(v));
                            n += 1;
                        }
                    }
                    tl.slice(name, pid, tid, op.start, op.end - op.start, &args[..n])?
                }
            }
            self.steps.op(name, op.start, op.end);
            let mut r = Ok(());
            self.overlap.op(
                op.start,
                op.end,
                op.comm,
                &mut overlap_piece(tl, &mut self.steps, ov, &mut r),
            );
            r?;
        }
        Ok(())
    }

    /// Ends the current device: its last intervals and its steps.
    pub(super) fn finish(&mut self, tl: &mut Timeline) -> std::io::Result<()> {
        if let Some(dev) = self.dev.take() {
            let ov = Self::pids(tl, dev).2;
            let mut r = Ok(());
            self.overlap
                .finish(&mut overlap_piece(tl, &mut self.steps, ov, &mut r));
            self.steps.end_device(dev);
            r?;
        }
        Ok(())
    }
}

/// Where the merge loop sends timeline ops: the timeline thread, or (if it could not be
/// started) the timeline itself.
pub(super) enum TlSink<'a, 's> {
    Thread {
        tx: std::sync::mpsc::SyncSender<TlBatch>,
        back_rx: std::sync::mpsc::Receiver<TlBatch>,
        h: std::thread::ScopedJoinHandle<'s, std::io::Result<TlState>>,
        cur: TlBatch,
    },
    Inline {
        tl: &'a std::sync::Mutex<Timeline>,
        st: TlState,
        cur: TlBatch,
    },
}

impl TlSink<'_, '_> {
    /// Queues one op (or the start of a device).
    pub(super) fn push(&mut self, op: TlOp, name: &str, task_type: &str) -> std::io::Result<()> {
        let cur = match self {
            TlSink::Thread { cur, .. } | TlSink::Inline { cur, .. } => cur,
        };
        cur.names.push_str(name);
        let name_end = cur.names.len();
        cur.names.push_str(task_type);
        cur.ops.push(TlOp {
            name_end,
            type_end: cur.names.len(),
            ..op
        });
        if cur.ops.len() >= TL_BATCH {
            self.send()?;
        }
        Ok(())
    }

    pub(super) fn send(&mut self) -> std::io::Result<()> {
        match self {
            TlSink::Thread {
                tx, back_rx, cur, ..
            } => {
                if !hand_over(tx, back_rx, cur, TlBatch::clear) {
                    // The timeline thread stopped on an error; `finish` returns it.
                    return Err(std::io::Error::other("the timeline writer stopped"));
                }
                Ok(())
            }
            TlSink::Inline { tl, st, cur } => {
                let mut tl = tl.lock().unwrap_or_else(|p| p.into_inner());
                let r = st.write(&mut tl, cur);
                cur.clear();
                r
            }
        }
    }

    /// Sends what is left and waits for the timeline to be written; returns the steps.
    pub(super) fn finish(mut self) -> std::io::Result<Steps> {
        let sent = self.send();
        match self {
            TlSink::Thread { tx, h, .. } => {
                drop(tx);
                let written = h
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the timeline writer panicked")));
                sent?;
                written.map(|st| st.steps)
            }
            TlSink::Inline { tl, mut st, .. } => {
                sent?;
                st.finish(&mut tl.lock().unwrap_or_else(|p| p.into_inner()))?;
                Ok(st.steps)
            }
        }
    }
}

/// Sends the filled batch `cur` to a writer thread and takes, to fill next, a batch it has
/// written (cleared), or a new one; false if the writer has stopped.
pub(super) fn hand_over<T: Default>(
    tx: &std::sync::mpsc::SyncSender<T>,
    back_rx: &std::sync::mpsc::Receiver<T>,
    cur: &mut T,
    clear: fn(&mut T),
) -> bool {
    let mut next = back_rx.try_recv().unwrap_or_default();
    clear(&mut next);
    tx.send(std::mem::replace(cur, next)).is_ok()
}

/// Where the merge loop sends the database's rows: a thread that writes them (SQLite's
/// inserts are as much work as the rest of the export), or, if none can be started, the
/// database itself.
pub(super) enum DbSink<'s> {
    Thread {
        tx: std::sync::mpsc::SyncSender<DbBatch>,
        back_rx: std::sync::mpsc::Receiver<DbBatch>,
        h: std::thread::ScopedJoinHandle<'s, Result<Db>>,
        cur: DbBatch,
    },
    Inline {
        db: Box<Db>,
        cur: DbBatch,
    },
}

pub(super) const DB_BATCH: usize = 8192;

impl<'s> DbSink<'s> {
    pub(super) fn start<'e>(scope: &'s std::thread::Scope<'s, 'e>, db: Db) -> DbSink<'s> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<DbBatch>(2);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<DbBatch>();
        let (db_tx, db_rx) = std::sync::mpsc::channel::<Db>();
        let spawned = std::thread::Builder::new()
            .name("aclprof-db".into())
            .spawn_scoped(scope, move || {
                let mut db = db_rx.recv().map_err(|_| {
                    crate::error::Error::new(
                        ACL_ERROR_INVALID_FILE,
                        "the database writer got no database",
                    )
                })?;
                for b in rx {
                    db.write(&b)?;
                    let _ = back_tx.send(b);
                }
                Ok(db)
            });
        match spawned {
            Ok(h) => {
                let _ = db_tx.send(db);
                DbSink::Thread {
                    tx,
                    back_rx,
                    h,
                    cur: DbBatch::default(),
                }
            }
            Err(e) => {
                log::warn!("aclprof: the database is written inline (cannot start a thread: {e})");
                DbSink::Inline {
                    db: Box::new(db),
                    cur: DbBatch::default(),
                }
            }
        }
    }

    pub(super) fn batch(&mut self) -> &mut DbBatch {
        match self {
            DbSink::Thread { cur, .. } | DbSink::Inline { cur, .. } => cur,
        }
    }

    pub(super) fn send_if_full(&mut self) -> Result<()> {
        if self.batch().len() >= DB_BATCH {
            self.send()?;
        }
        Ok(())
    }

    pub(super) fn send(&mut self) -> Result<()> {
        match self {
            DbSink::Thread {
                tx, back_rx, cur, ..
            } => {
                // A closed channel: the writer stopped on an error, which `finish` returns.
                let _ = hand_over(tx, back_rx, cur, DbBatch::clear);
                Ok(())
            }
            DbSink::Inline { db, cur } => {
                let r = db.write(cur);
                cur.clear();
                r
            }
        }
    }

    /// Writes what is left; the database, for the host's events and the session's tables.
    pub(super) fn finish(mut self) -> Result<Db> {
        let sent = self.send();
        match self {
            DbSink::Thread { tx, h, .. } => {
                drop(tx);
                let written = h.join().unwrap_or_else(|_| {
                    err(ACL_ERROR_INVALID_FILE, "the database writer panicked")
                });
                sent?;
                written
            }
            DbSink::Inline { db, .. } => {
                sent?;
                Ok(*db)
            }
        }
    }
}
