//! The consumer side of a subscription: draining a lane into its destination (pipe,
//! socket or file, copied or spliced by `fd::piece`), and reclaiming the slots of spliced
//! records once the reader has read them.

use super::*;

impl Sub {
    /// Writes what `lane` holds (only whole batches if `full_only`), oldest first. Returns
    /// true if the lane is empty afterwards. The caller holds the lane's consumer lock.
    pub(super) fn drain(&self, lane: usize, c: &mut Cons, full_only: bool, wait: Wait) -> bool {
        let Some(m) = self.lanes[lane].used() else {
            return true;
        };
        // Closed: the destination may be gone (an unsubscribed pipe's fd is closed, and
        // its number may already be another file's), and closing drained everything.
        if self.finished() {
            return true;
        }
        self.reclaim_if_needed(m, c);
        loop {
            let (avail, mut n) = m.available(c, self.batch);
            if avail == 0 || (full_only && avail < self.batch) {
                return avail == 0;
            }
            // A batch with more behind it ends at a page of the lane, so that the next one
            // starts at one and goes into a pipe whole (`fd::piece`), not in three pieces.
            if n < avail && n > SLOTS_PER_PAGE {
                n -= (c.sent_slot + n) % SLOTS_PER_PAGE;
            }
            m.track_consume(c.sent_slot, n);
            if !self.is_broken() {
                self.sign(m, c, n);
            }
            // SAFETY: records [sent, sent + n) are published and contiguous from
            // c.sent_slot; the producer does not reuse them until the tail moves past them.
            let bytes = unsafe {
                std::slice::from_raw_parts(m.slot(c.sent_slot), n as usize * RECORD_SIZE)
            };
            // Records taken off the lane, how many of them reached the destination (the rest
            // are lost), whether the fd is full with records still waiting, and (spliced
            // into a pipe) the pipe's total written after them.
            let mut spliced_to = None;
            let (taken, arrived, full) = if self.is_broken() {
                (n, 0, false)
            } else {
                match &self.dest {
                    Dest::Fd {
                        fd, raises, kind, ..
                    } => {
                        let kind = match kind {
                            Kind::Pipe { .. } => Kind::Pipe {
                                splice: self.splicing.load(Ordering::Relaxed),
                            },
                            Kind::Stream => Kind::Stream,
                        };
                        let (k, how, to) = self.write_fd(*fd, *raises, kind, bytes, wait);
                        spliced_to = to;
                        match how {
                            Written::All => (k, k, false),
                            Written::Full => (k, k, true),
                            Written::Broken => (n, k, false),
                        }
                    }
                    Dest::Files(files) => {
                        match files.lock().unwrap_or_else(|p| p.into_inner()).write(bytes) {
                            Ok(k) => {
                                // Past ACL_PROF_STORAGE_LIMIT: a cap the user set, counted
                                // (and noted in the result directory), not an error.
                                self.over_limit.fetch_add(n - k, Ordering::Relaxed);
                                (n, n, false)
                            }
                            Err(e) => {
                                self.set_broken(&format!("cannot write the profiling data: {e}"));
                                (n, 0, false)
                            }
                        }
                    }
                    // never drained here: the reader consumes ring lanes
                    Dest::Ring(_) => (n, n, false),
                }
            };
            if arrived < taken {
                self.lost.fetch_add(taken - arrived, Ordering::Relaxed);
            }
            m.mark_sent(c, taken);
            self.lanes[lane].sent_total.store(c.sent, Ordering::Release);
            match spliced_to.or_else(|| c.in_pipe.back().map(|e| e.0)) {
                _ if taken == 0 => {}
                // Spliced, or behind records that were: in the pipe's order, freed by
                // `reclaim` once read. Broken too: a reader that outslept the unsubscribe
                // timeout may read the pipe yet, and the pages are the pipe's until then.
                Some(end) => match c.in_pipe.back_mut() {
                    Some(last) if last.0 == end => last.1 += taken,
                    _ => c.in_pipe.push_back((end, taken)),
                },
                // Written by copy, or dropped with nothing ahead in the pipe: free at once.
                None => m.consume(c, c.sent - c.tail),
            }
            if full {
                return false; // not waiting: the rest stays in the lane
            }
        }
    }

    /// Signs the records of `[sent, sent + n)` not signed yet (a write cut short leaves
    /// signed records behind for the next one). The bytes leave the library through this
    /// consumer's write, so it signs them, not the reporting thread (docs/design.md, "The
    /// signature").
    fn sign(&self, m: &Mem, c: &mut Cons, n: u64) {
        let from = c.signed.max(c.sent);
        for i in from..c.sent + n {
            let slot = (c.sent_slot + (i - c.sent)) % m.cap;
            // SAFETY: published records this consumer holds (below head, not yet sent):
            // the producer does not touch them until the tail moves past them.
            let rec = unsafe { &mut *(m.slot(slot) as *mut record::Record) };
            record::sign_fresh(rec);
        }
        c.signed = c.signed.max(c.sent + n);
    }

    /// [`Sub::reclaim`], once the lane is half taken. Asking the pipe how far it was read
    /// takes the pipe's lock, which its reader and writers contend for; spliced records
    /// are at most a pipe's worth, so a lane with half its slots free has no need of theirs.
    /// Also where a pipe its reader made too large for the lanes stops being spliced into.
    pub(super) fn reclaim_if_needed(&self, m: &Mem, c: &mut Cons) {
        if m.ctl().head.load(Ordering::Acquire) - c.tail >= self.lane_cap / 2 {
            if let Dest::Fd { fd, .. } = self.dest {
                if self.splicing.load(Ordering::Relaxed) && !lanes_hold_pipe(fd, self.lane_cap) {
                    self.splicing.store(false, Ordering::Relaxed);
                    log::info!(
                        "aclprof: {}: its pipe is now {} bytes, more than half a lane of {} \
                         records can hold with a batch beside it; records go in by write() \
                         from now on",
                        self.describe(),
                        fd::pipe_size(fd),
                        self.lane_cap
                    );
                }
            }
            self.reclaim(m, c);
        }
    }

    /// Frees the slots of spliced records the pipe's reader has read (the consumer lock is
    /// held). A pipe that cannot say how far it was read frees nothing: the slots wait.
    pub(super) fn reclaim(&self, m: &Mem, c: &mut Cons) {
        let Some(&(first, _)) = c.in_pipe.front() else {
            return;
        };
        let Dest::Fd { fd, .. } = &self.dest else {
            return;
        };
        let Some(read) = fd::read_position(*fd) else {
            return;
        };
        if read < first {
            return;
        }
        while let Some(&(end, n)) = c.in_pipe.front() {
            if end > read {
                break;
            }
            c.in_pipe.pop_front();
            m.consume(c, n);
        }
    }

    /// Whole records to the fd, as many as it takes (waiting as `wait` says): how many
    /// went out, and whether that was all of them, the fd is full, or the subscription
    /// broke (its reader is gone, or did not drain in time).
    /// Also returns, if any of them went by `vmsplice()`, the fd's total written after the
    /// last that did (see `fd::read_position`).
    pub(super) fn write_fd(
        &self,
        fd: c_int,
        raises: fd::Signals,
        kind: Kind,
        bytes: &[u8],
        wait: Wait,
    ) -> (u64, Written, Option<u64>) {
        let n = (bytes.len() / RECORD_SIZE) as u64;
        let mut done = 0u64;
        let mut end = None;
        let mut waited = Waited::start(wait);
        loop {
            match fd::write_records(fd, raises, &bytes[done as usize * RECORD_SIZE..], kind) {
                Ok(t) => {
                    done += (t.bytes / RECORD_SIZE) as u64;
                    end = t.spliced_to.or(end);
                    if done == n {
                        return (done, Written::All, end);
                    }
                }
                Err(fd::WriteError::Broken(why)) => {
                    self.set_broken(&why);
                    return (done, Written::Broken, end);
                }
                Err(fd::WriteError::Full) => {}
            }
            let give_up = match wait {
                Wait::No => return (done, Written::Full, end),
                Wait::Until(t) => Instant::now() >= t,
                Wait::Backpressure(t) => self.deadline_passed() || Instant::now() >= t,
            };
            if give_up {
                if !self.accepting() {
                    self.set_broken(
                        "the reader did not drain the pipe before the unsubscribe \
                         timeout (ACLPROF_UNSUBSCRIBE_TIMEOUT_MS)",
                    );
                    return (done, Written::Broken, end);
                }
                return (done, Written::Full, end);
            }
            waited.wait(|| fd::wait_writable(fd, 20));
        }
    }
}
