"""Shared-memory ring subscriptions from Python: RingSubscription, RingReader, RingBatch.

A reader in a second process decodes every op of a simulated model run through the ring,
nothing lost; a reader thread in this process does too; zero-copy batches really are views of
the shared mapping, and they cannot be used (or overwritten under the user) after release."""

from __future__ import annotations

import ctypes
import gc
import json
import mmap
import os
import subprocess
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path

import pytest

import aclprof
from conftest import RESNET50, TINY, model_ops

RECORD = aclprof.RECORD_SIZE
HEADER = 4096  # src/transport/ring.rs: the header page, then the lanes' control blocks
LANES = 8  # lanes per ring: records start at DATA, lane after lane of `capacity` records
DATA = 8192
OFF_DURATION = 24  # aclprof.RECORD_DTYPE.fields["duration"]

# The second-process reader: attaches by path or by an inherited fd, says so, reads to the
# end of the stream and prints what it decoded as one JSON line.
CHILD_READER = r"""
import json, sys
import aclprof
how, target, style = sys.argv[1:4]
reader = aclprof.RingReader(fd=int(target)) if how == "fd" else aclprof.RingReader(path=target)
print("attached", flush=True)
out = {"names": [], "types": [], "durations": [], "model_ids": [], "op_index": [],
       "batches": 0, "largest": 0, "in_place": True}
with reader:
    source = reader.views(idle_timeout=60) if style == "views" else reader.batches(idle_timeout=60)
    for batch in source:
        out["batches"] += 1
        out["largest"] = max(out["largest"], len(batch))
        if style == "views":
            out["in_place"] &= batch.array.__array_interface__["data"][0] == batch.address
        out["names"] += batch.names
        out["types"] += batch.types
        out["durations"] += batch.duration.tolist()
        out["model_ids"] += batch.model_id.tolist()
        out["op_index"] += batch.op_index.tolist()
    out["ended"] = reader.ended
print(json.dumps(out), flush=True)
"""

# A producer that dies: subscribes a model to a ring, reports 5 ops, prints where to attach,
# then waits to be killed.
CHILD_PRODUCER = r"""
import sys
import aclprof
model = aclprof.Model.register("dying")
sub = aclprof.RingSubscription(model.id, capacity=64).start()
for i in range(5):
    model.report_op(f"op{i}", "Add", 10 * i, 10 * i + 5)
aclprof.flush()
print(sub.attach_path, flush=True)
sys.stdin.read()
"""


def child_env() -> dict:
    """The child imports the same aclprof package (and so the same library) as we do."""
    env = dict(os.environ)
    package_root = str(Path(aclprof.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


def spawn(script: str, *args: str, pass_fds=(), stdin=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdin=stdin, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, pass_fds=pass_fds, env=child_env(), cwd="/")


class Reader:
    """The second-process reader, waited for on a thread: a child that dies is reaped at
    once (a zombie would look like a live reader to the producer), its output drained."""

    def __init__(self, *args: str, pass_fds=()):
        self.child = spawn(CHILD_READER, *args, pass_fds=pass_fds)
        line = self.child.stdout.readline()
        if line != "attached\n":
            self.child.kill()
            pytest.fail(f"the reader did not attach: {line!r} {self.child.communicate()[1]}")
        self.out = self.err = None
        self.thread = threading.Thread(target=self._wait, daemon=True)
        self.thread.start()

    def _wait(self):
        self.out, self.err = self.child.communicate()

    def result(self) -> dict:
        self.thread.join(120)
        assert not self.thread.is_alive(), "the reader did not finish"
        assert self.child.returncode == 0, self.err
        return json.loads(self.out)


def expected(path: Path, executions: int):
    ops = model_ops(path)
    return (
        [o["name"] for o in ops] * executions,
        [o["type"] for o in ops] * executions,
        [round(o["duration_us"] * 1000) for o in ops] * executions,
    )


def check_everything_arrived(got: dict, model, path: Path, executions: int) -> None:
    names, types, durations = expected(path, executions)
    assert len(got["names"]) == len(names)
    assert got["names"] == names
    assert got["types"] == types
    assert got["durations"] == durations
    assert set(got["model_ids"]) == {model.id}
    # One reporting thread: its op indices increase (they jump where another thread of this
    # process took a block of indices, so they need not be contiguous; design.md).
    idx = got["op_index"]
    assert all(a < b for a, b in zip(idx, idx[1:])), "reordered"
    assert got["ended"] is True


def mapping_of(address: int):
    """(start, end, file offset, pathname) of the mapping of this process holding address."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                name = fields[5].strip() if len(fields) > 5 else ""
                return lo, hi, int(fields[2], 16), name
    raise AssertionError(f"{address:#x} is in no mapping")


@pytest.fixture
def shm_path():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    path = Path("/dev/shm") / f"aclprof-test-{os.getpid()}-{uuid.uuid4().hex}"
    yield path
    if path.exists():
        path.unlink()


@pytest.fixture
def registered():
    model = aclprof.Model.register("ring-test")
    yield model
    model.unload()


def report(model, names, duration=1000):
    for name in names:
        t0 = aclprof.now_ns()
        model.report_op(name, "Add", t0, t0 + duration)


# ---- a second process ----


def test_second_process_reads_every_op_by_proc_path():
    """A reader in another process attaches by /proc/<pid>/fd/<fd> of a memfd ring of 64
    slots (the ResNet-50 run wraps it ~16 times) and decodes every op, zero-copy."""
    executions = 8
    before = aclprof.stats()
    with aclprof.Model.simulate(RESNET50) as model:
        with aclprof.RingSubscription(model.id, capacity=64) as sub:
            assert sub.attach_path == f"/proc/{os.getpid()}/fd/{sub.fd}"
            child = Reader("path", sub.attach_path, "views")
            model.execute(times=executions)
        got = child.result()
        check_everything_arrived(got, model, RESNET50, executions)
    after = aclprof.stats()
    n = executions * len(model_ops(RESNET50))
    assert after.reported - before.reported == n
    assert after.delivered - before.delivered == n
    assert after.dropped == before.dropped, "the default policy is lossless"
    assert got["in_place"] is True
    assert got["largest"] <= 64  # a batch never crosses the ring's end
    assert got["batches"] >= n // 64


@pytest.mark.parametrize("how", ["shm", "fd"])
def test_second_process_by_shm_file_or_inherited_fd(how, shm_path):
    """By a named file under /dev/shm (read zero-copy) or an fd the child inherited (read
    as owned copies), through an 8-slot ring: every op, in order; the file is removed at stop."""
    executions = 30
    path = shm_path if how == "shm" else None
    with aclprof.Model.simulate(TINY) as model:
        with aclprof.RingSubscription(model.id, capacity=8, path=path) as sub:
            if how == "shm":
                assert sub.attach_path == str(shm_path) and shm_path.stat().st_size == DATA + LANES * 8 * RECORD
                child = Reader("path", str(shm_path), "views")
            else:
                child = Reader("fd", str(sub.fd), "batches", pass_fds=(sub.fd,))
            model.execute(times=executions)
        got = child.result()
        check_everything_arrived(got, model, TINY, executions)
    assert got["largest"] <= 8
    assert not shm_path.exists(), "stop() removes the ring's file"


def test_reader_sees_the_end_when_the_producer_dies():
    producer = spawn(CHILD_PRODUCER, stdin=subprocess.PIPE)
    try:
        where = producer.stdout.readline().strip()
        assert where.startswith(f"/proc/{producer.pid}/fd/"), producer.stderr.read()
        with aclprof.RingReader(path=where) as reader:
            with reader.acquire(timeout=10) as batch:
                assert batch.names == [f"op{i}" for i in range(5)]
                assert batch.duration.tolist() == [5] * 5
            idle = reader.acquire(timeout=0.05)
            assert idle is not None and len(idle) == 0 and not reader.ended  # alive, quiet
            producer.kill()
            producer.wait(timeout=10)
            t0 = time.monotonic()
            assert reader.acquire(timeout=20) is None, "a dead producer is the end of the stream"
            assert time.monotonic() - t0 < 5
            assert reader.ended
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.wait()
        producer.stdout.close()
        producer.stderr.close()
        producer.stdin.close()


# ---- this process ----


def test_reader_thread_collects_and_calls_back():
    """collect=True / on_batch: a reader thread in this process gets every op; on_batch sees
    zero-copy RingBatches that are released after the call, collected batches are copies."""
    executions = 4
    seen = []

    def on_batch(batch):
        assert not batch.released
        seen.append((batch, len(batch), batch.address, mapping_of(batch.address)[3]))

    with aclprof.Model.simulate(RESNET50) as model:
        with aclprof.RingSubscription(model.id, capacity=16, collect=True, on_batch=on_batch) as sub:
            model.execute(times=executions)
        records = sub.records
        names, types, durations = expected(RESNET50, executions)
        assert [r.name for r in records] == names
        assert [r.type for r in records] == types
        assert [r.duration for r in records] == durations
        assert {r.model_id for r in records} == {model.id}
    assert sum(n for _, n, _, _ in seen) == len(names)
    assert all(name.startswith("/memfd:aclprof-ring") for _, _, _, name in seen)
    assert all(b.released for b, _, _, _ in seen)
    with pytest.raises(ValueError, match="released"):
        seen[0][0].start
    for kept in sub.batches:
        assert type(kept) is aclprof.OpBatch  # an owned copy, not a view of the ring
        address = kept.array.__array_interface__["data"][0]
        assert not mapping_of(address)[3].startswith("/memfd:aclprof-ring")


def test_a_failing_callback_is_reported_and_the_ring_still_drains(registered):
    """on_batch raising: stop() raises that error, and the reader thread kept draining, so a
    producer with far more records than the 8-slot ring holds was never stalled."""
    calls = []

    def on_batch(batch):
        calls.append(len(batch))
        raise KeyError("callback broke")

    before = aclprof.stats()
    sub = aclprof.RingSubscription(registered.id, capacity=8, on_batch=on_batch).start()
    report(registered, [f"op{i}" for i in range(200)])
    t0 = time.monotonic()
    with pytest.raises(KeyError, match="callback broke"):
        sub.stop()
    assert time.monotonic() - t0 < 5
    assert len(calls) == 1
    after = aclprof.stats()
    assert after.delivered - before.delivered == 200 and after.dropped == before.dropped


def test_a_failing_callback_holding_a_view_does_not_stall_the_ring(registered):
    """on_batch raising while its frame holds a view of the batch: the error kept for stop()
    does not keep that view (so the records) alive, the reader thread still drains, and
    stop() raises that error with its message."""

    def on_batch(batch):
        column = batch.start  # noqa: F841 - a view of the ring, alive in this frame
        raise KeyError("callback broke")

    before = aclprof.stats()
    sub = aclprof.RingSubscription(registered.id, capacity=8, on_batch=on_batch).start()
    t0 = time.monotonic()
    report(registered, [f"op{i}" for i in range(200)])
    with pytest.raises(KeyError, match="callback broke") as e:
        sub.stop()
    assert time.monotonic() - t0 < 5
    assert any(f.name == "on_batch" for f in traceback.extract_tb(e.value.__traceback__))
    after = aclprof.stats()
    assert after.delivered - before.delivered == 200 and after.dropped == before.dropped


def test_own_reader_thread_with_views(registered):
    """A user's reader thread over RingReader.views() while this thread reports ops, some with
    names longer than a record holds (decoded whole, in place, through the accessors)."""
    long_name = "layer/" + "x" * 300
    names = [f"op{i}" if i % 10 else f"{long_name}{i}" for i in range(500)]
    got, errors = [], []
    with aclprof.RingSubscription(registered.id, capacity=32) as sub:
        reader = sub.reader(max_records=7)

        def read():
            try:
                with reader:
                    for batch in reader.views(idle_timeout=30):
                        assert 1 <= len(batch) <= 7
                        got.extend(batch.names)
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        thread = threading.Thread(target=read)
        thread.start()
        report(registered, names)
    thread.join(30)
    assert not thread.is_alive() and not errors, errors
    assert got == names
    assert reader.closed and reader.ended


# ---- zero copy ----


def test_zero_copy_views_are_the_shared_mapping(registered, shm_path):
    """The batch's columns start at the address acquire gave, inside this process's mapping
    of the ring's file; a byte changed through another mapping of the file shows through
    them at once, but not in a copy."""
    with aclprof.RingSubscription(registered.id, capacity=16, path=shm_path) as sub:
        report(registered, ["a", "b", "c"], duration=777)
        aclprof.flush()
        with sub.reader() as reader:
            with reader.acquire(timeout=5) as batch:
                address, nbytes = batch.address, batch.nbytes
                assert len(batch) == 3 and nbytes == 3 * RECORD
                assert batch.array.__array_interface__["data"][0] == address
                assert batch.start.__array_interface__["data"][0] == address + 32
                assert batch.duration.__array_interface__["data"][0] == address + OFF_DURATION
                lo, hi, offset, name = mapping_of(address)
                assert name == str(shm_path)
                assert address + nbytes <= hi
                file_offset = address - lo + offset
                assert file_offset >= HEADER and (file_offset - HEADER) % RECORD == 0
                assert not batch.array.flags.writeable  # nobody scribbles on shared memory

                copy = batch.copy()
                assert copy.duration.tolist() == [777] * 3
                with open(shm_path, "r+b") as f, mmap.mmap(f.fileno(), 0) as other:
                    at = file_offset + OFF_DURATION
                    original = other[at:at + 8]
                    other[at:at + 8] = (123456789).to_bytes(8, "little")
                    seen = int(batch.duration[0])
                    other[at:at + 8] = original
                assert seen == 123456789, "the view is the ring's memory"
                assert copy.duration.tolist() == [777] * 3, "copy() owns its data"
                assert int(batch.duration[0]) == 777
            assert batch.released


def test_released_batch_cannot_be_used(registered):
    with aclprof.RingSubscription(registered.id, capacity=16) as sub:
        report(registered, ["x", "y"])
        aclprof.flush()
        with sub.reader(max_records=1) as reader:
            with reader.acquire(timeout=5) as untouched:
                assert len(untouched) == 1
            for use in (lambda: untouched.array, lambda: untouched.start, untouched.copy,
                        lambda: untouched.names, untouched.records, lambda: untouched[0]):
                with pytest.raises(ValueError, match="released"):
                    use()
            assert len(untouched) == 1 and untouched.released

            with reader.acquire(timeout=5) as decoded:
                records = decoded.records()  # copies, decoded before the release
            assert [r.name for r in records] == decoded.names == ["y"]
            assert decoded[0].name == "y"
            with pytest.raises(ValueError, match="released"):
                decoded.duration


def test_a_kept_view_holds_the_records(registered):
    """A column kept past the with block: releasing raises BufferError and the records are
    not given back, so the producer cannot overwrite them: the reporting thread's 8-slot
    lane stays full and it waits; once the column is gone, reading goes on with the next
    record, nothing lost or repeated."""
    import queue
    jobs: "queue.Queue" = queue.Queue()

    def worker():  # one reporting thread, so both batches go to the same lane
        for names in iter(jobs.get, None):
            report(registered, names)
            jobs.task_done()

    w = threading.Thread(target=worker)
    w.start()
    try:
        with aclprof.RingSubscription(registered.id, capacity=8) as sub:
            reader = sub.reader()
            before = aclprof.stats()
            jobs.put([f"first{i}" for i in range(8)])
            jobs.join()
            starts = None
            try:
                with pytest.raises(BufferError, match="still alive"):
                    with reader.acquire(timeout=5) as batch:
                        assert len(batch) == 8
                        starts = batch.start  # a view, kept past the block
                        first_starts = starts.tolist()
                assert batch.released

                jobs.put([f"second{i}" for i in range(8)])
                time.sleep(0.3)  # the reporter would overwrite slots 0..7 if they were free
                assert jobs.unfinished_tasks == 1, "the reporter waits while the view holds its lane"
                assert aclprof.stats().delivered - before.delivered == 8, "the lane stayed full"
                assert starts.tolist() == first_starts
                with pytest.raises(BufferError):
                    reader.acquire(timeout=0)
            finally:
                # (Even when an assertion fails: a held full lane would stall the reporter.)
                del starts
                batch = None

            # The next acquire releases the first batch (room again), then reads what the
            # reporter writes, possibly over several batches.
            names, index, second_starts = [], [], []
            while len(names) < 8:
                with reader.acquire(timeout=5) as batch:
                    assert batch is not None
                    names += batch.names
                    index += batch.op_index.tolist()
                    second_starts += batch.start.tolist()
            assert names == [f"second{i}" for i in range(8)]
            assert index == list(range(index[0], index[0] + 8))
            assert second_starts[0] > first_starts[-1]
            jobs.join()
            assert aclprof.stats().delivered - before.delivered == 16
            reader.close()
    finally:
        jobs.put(None)
        w.join(timeout=10)


def test_views_iterator_releases_each_batch_and_refuses_a_leak(registered):
    with aclprof.RingSubscription(registered.id, capacity=64) as sub:
        report(registered, [f"op{i}" for i in range(30)])
        aclprof.flush()
        with sub.reader(max_records=10) as reader:
            iterator = reader.views(idle_timeout=5)
            first = next(iterator)
            kept = first.op_index
            with pytest.raises(BufferError):
                next(iterator)
            assert first.released
            del kept
            got = []
            for batch in reader.views(idle_timeout=5):  # the held batch goes back first
                got += batch.names
                if len(got) == 20:
                    break  # leaving the loop releases the batch
            assert got == [f"op{i}" for i in range(10, 30)]
            assert len(reader.acquire(timeout=0.05)) == 0  # all read, nothing held


def test_close_with_a_live_view_defers_the_detach(registered):
    lib = aclprof.load()
    with aclprof.RingSubscription(registered.id, capacity=16) as sub:
        report(registered, ["only"], duration=4242)
        aclprof.flush()
        reader = sub.reader()
        handle = reader._handle
        batch = reader.acquire(timeout=5)
        durations = batch.duration
        with pytest.warns(ResourceWarning, match="still view"):
            reader.close()
        assert reader.closed and batch.released
        assert lib.aclprofExtRingRelease(handle, 0) == 0, "still attached: the mapping lives"
        assert durations.tolist() == [4242]  # readable, no crash
        del durations
        gc.collect()
        assert lib.aclprofExtRingRelease(handle, 0) == aclprof.ACL_ERROR_INVALID_PARAM, "detached"
        with pytest.raises(ValueError, match="closed"):
            reader.acquire(timeout=0)


# ---- end of stream ----


def test_end_of_stream_after_unsubscribe(registered):
    sub = aclprof.RingSubscription(registered.id, capacity=16).start()
    reader = sub.reader()
    t0 = time.monotonic()
    idle = reader.acquire(timeout=0.1)
    assert idle is not None and len(idle) == 0 and not reader.ended
    assert time.monotonic() - t0 >= 0.09
    report(registered, ["p", "q", "r"])
    sub.stop()  # everything reported is in the ring, then the end
    assert not sub.active and sub.fd == -1
    with reader.acquire(timeout=5) as batch:
        assert batch.names == ["p", "q", "r"]
    assert reader.acquire(timeout=5) is None
    assert reader.ended
    assert reader.acquire(timeout=5) is None  # and stays ended
    assert list(reader.views()) == [] and list(reader) == []
    reader.close()


def test_reader_iteration_yields_every_record_then_stops(registered):
    with aclprof.RingSubscription(registered.id, capacity=8) as sub:
        reader = sub.reader(max_records=3)
        report(registered, [f"n{i}" for i in range(6)])
    # unsubscribed with 6 records in the ring: an attached reader reads them, then stops
    records = list(reader)
    assert [r.name for r in records] == [f"n{i}" for i in range(6)]
    assert all(isinstance(r, aclprof.OpRecord) for r in records)
    reader.close()


def test_idle_timeout(registered):
    with aclprof.RingSubscription(registered.id, capacity=8) as sub:
        with sub.reader() as reader:
            t0 = time.monotonic()
            with pytest.raises(TimeoutError):
                next(reader.batches(idle_timeout=0.2))
            assert 0.15 <= time.monotonic() - t0 < 5
            with pytest.raises(TimeoutError):
                next(reader.views(idle_timeout=0.05))


# ---- bad arguments ----


def test_bad_arguments(registered, tmp_path):
    codes = aclprof
    with pytest.raises(aclprof.AclError) as e:
        aclprof.RingSubscription(999999).start()
    assert e.value.code == codes.ACL_ERROR_INVALID_MODEL_ID
    # The header's range, 8 .. 4194304 records, checked before the library is asked (which
    # refuses the same: asked directly here), and never silently truncated to a uint32.
    for capacity in (-1, 0, 4, 7, (1 << 22) + 1, (1 << 32) + 64):
        with pytest.raises(ValueError, match="between 8 and 4194304"):
            aclprof.RingSubscription(registered.id, capacity=capacity)
    for capacity in (0, 7, (1 << 22) + 1):
        fd = ctypes.c_int32(-1)
        ret = aclprof.load().aclprofExtRingSubscribe(registered.id, None, capacity,
                                                      ctypes.byref(fd))
        assert ret == codes.ACL_ERROR_INVALID_PARAM
    assert aclprof.RingSubscription(registered.id, capacity=1 << 22).capacity == 1 << 22
    with pytest.raises(ValueError):
        aclprof.RingSubscription(registered.id, max_records=0)

    taken = tmp_path / "exists"
    taken.write_bytes(b"")
    with pytest.raises(aclprof.AclError) as e:
        aclprof.RingSubscription(registered.id, path=taken).start()
    assert e.value.code == codes.ACL_ERROR_INVALID_FILE

    stopped = aclprof.RingSubscription(registered.id)
    with pytest.raises(RuntimeError):
        stopped.stop()
    with pytest.raises(RuntimeError):
        stopped.attach_path
    with aclprof.RingSubscription(registered.id, capacity=8) as sub:
        with pytest.raises(RuntimeError):
            sub.start()
        with pytest.raises(aclprof.AclError) as e:
            aclprof.RingSubscription(registered.id).start()
        assert e.value.code == codes.ACL_ERROR_PROF_REPEAT_SUBSCRIBE
        with pytest.raises(aclprof.AclError) as e:
            aclprof.Subscription(registered.id).start()
        assert e.value.code == codes.ACL_ERROR_PROF_REPEAT_SUBSCRIBE
        with sub.reader() as reader:
            report(registered, ["op0"])
            aclprof.flush()
            batch = reader.acquire(timeout=10)
            assert batch is not None and len(batch) == 1
            with pytest.raises(ValueError):
                reader.acquire(max_records=0)
            with pytest.raises(ValueError):
                reader.acquire(timeout=-1)
            assert not batch.released  # bad arguments change nothing
            assert batch.names == ["op0"]
    with aclprof.Subscription(registered.id):
        with pytest.raises(aclprof.AclError) as e:
            aclprof.RingSubscription(registered.id).start()
        assert e.value.code == codes.ACL_ERROR_PROF_REPEAT_SUBSCRIBE

    with pytest.raises(ValueError):
        aclprof.RingReader()
    with pytest.raises(ValueError):
        aclprof.RingReader(fd=0, path="/dev/shm/x")
    with pytest.raises(ValueError):
        aclprof.RingReader(fd=-1)
    with pytest.raises(ValueError):
        aclprof.RingReader(path="/dev/shm/x", max_records=1 << 32)
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(aclprof.AclError) as e:
        aclprof.RingReader(fd=r)  # closed
    assert e.value.code == codes.ACL_ERROR_INVALID_PARAM
    not_a_ring = tmp_path / "zeros"
    not_a_ring.write_bytes(bytes(HEADER + 8 * RECORD))
    for path in ("/proc/self/status", tmp_path / "missing", not_a_ring):
        with pytest.raises(aclprof.AclError) as e:
            aclprof.RingReader(path=path)
        assert e.value.code == codes.ACL_ERROR_INVALID_FILE
