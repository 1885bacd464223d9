#!/usr/bin/env python3
"""Subscription read throughput in Python, in ops (records) per second, in one run: the pipe
reader (os.read + the batch decoder) next to the shared-memory ring reader (acquire, decode
in place, release), in this process and in a second one.

Each case subscribes a simulated ResNet-50, executes it first (the library stages the
records), then times only the transport and the reader: from the moment the reader starts
until it has decoded the last record, while the library's writer pushes the staged records
through the pipe or the ring. The "ring*" lines time the reader alone: the whole run is in a
big enough ring, and the stream ended, before the timer starts (a pipe cannot hold a run).
Every case must see every op. Each figure is the best of several runs.

"columns" consumes what bench_decode.py's "columns only" does (model id, type and name
lists, start, end and duration columns); "records" builds an OpRecord per op; "duration sum"
touches numbers only (no strings are decoded), where a copy would show.

Run: .venv/bin/python python/bench_ring.py [EXECUTIONS]   (default 80: 10,000 ops)
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

import aclprof
from aclprof.errors import check

MODEL = Path(__file__).resolve().parent.parent / "models" / "resnet50.json"
REPEATS = 5
ACL_AICORE_NONE = 0xFF

CHILD = r"""
import sys, time
import aclprof
reader = aclprof.RingReader(path=sys.argv[1], max_records=int(sys.argv[2]))
print("attached", flush=True)
sys.stdin.readline()
n = 0
t0 = time.perf_counter()
for b in reader.views(idle_timeout=60):
    columns = (b.model_id, b.types, b.names, b.start, b.end, b.duration)
    n += len(b)
    del columns
dt = time.perf_counter() - t0
reader.close()
print(n, dt, flush=True)
"""


def columns(batch) -> int:
    kept = (batch.model_id, batch.types, batch.names, batch.start, batch.end, batch.duration)
    del kept  # views of a ring batch must be gone before it is released
    return len(batch)


def numeric(batch) -> int:
    """Numbers only (no strings decoded): where a copy would show."""
    int(batch.duration.sum())
    return len(batch)


def records(batch) -> int:
    return len(batch.records())


def pipe(model, executions, consume, per_read):
    lib = aclprof.load()
    r, w = os.pipe()
    write_fd = ctypes.c_int(w)  # the library takes the write end over, and closes it
    config = lib.aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, ctypes.byref(write_fd))
    check("aclprofModelSubscribe", lib.aclprofModelSubscribe(model.id, config))
    model.execute(times=executions)
    n = 0
    t0 = time.perf_counter()
    stop = threading.Thread(target=lambda: check(
        "aclprofModelUnSubscribe", lib.aclprofModelUnSubscribe(model.id)))
    stop.start()
    for batch in aclprof.OpReader(r, records_per_read=per_read).batches():
        n += consume(batch)
    dt = time.perf_counter() - t0
    stop.join()
    os.close(r)
    check("aclprofDestroySubscribeConfig", lib.aclprofDestroySubscribeConfig(config))
    return n, dt


def ring(model, executions, consume, per_read, capacity, copy=False):
    sub = aclprof.RingSubscription(model.id, capacity=capacity).start()
    reader = sub.reader(max_records=per_read)
    model.execute(times=executions)
    n = 0
    t0 = time.perf_counter()
    stop = threading.Thread(target=sub.stop)
    stop.start()
    for batch in (reader.batches() if copy else reader.views()):
        n += consume(batch)
    dt = time.perf_counter() - t0
    stop.join()
    reader.close()
    return n, dt


def ring_prefilled(model, executions, consume, per_read, capacity, copy=False):
    """The reader alone: every record is in the ring (and the stream ended) before timing."""
    sub = aclprof.RingSubscription(model.id, capacity=capacity).start()
    reader = sub.reader(max_records=per_read)
    model.execute(times=executions)
    sub.stop()
    n = 0
    t0 = time.perf_counter()
    for batch in (reader.batches() if copy else reader.views()):
        n += consume(batch)
    dt = time.perf_counter() - t0
    reader.close()
    return n, dt


def ring_second_process(model, executions, per_read, capacity):
    sub = aclprof.RingSubscription(model.id, capacity=capacity).start()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, sub.attach_path, str(per_read)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "attached\n"
    model.execute(times=executions)
    child.stdin.write("go\n")
    child.stdin.flush()
    result = {}
    waiter = threading.Thread(target=lambda: result.update(out=child.communicate()[0]))
    waiter.start()  # reaps the child as soon as it exits
    sub.stop()
    waiter.join()
    n, dt = result["out"].split()
    return int(n), float(dt)


def best(run, n_expected):
    times = []
    for _ in range(REPEATS):
        n, dt = run()
        assert n == n_expected, f"{n} records read, {n_expected} reported"
        times.append(dt)
    return n_expected / min(times)


def main() -> None:
    executions = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    with aclprof.Model.simulate(MODEL) as model:
        n = executions * model_op_count(model)
        big = 1 << (n - 1).bit_length()  # a ring that holds the whole run
        if big > aclprof.ring.MAX_CAPACITY:
            sys.exit(f"{n} records do not fit in one ring; run fewer executions")
        before = aclprof.stats()
        cases = [
            ("pipe", "OpReader -> records()", 128, lambda: pipe(model, executions, records, 128)),
            ("pipe", "OpReader -> columns", 128, lambda: pipe(model, executions, columns, 128)),
            ("pipe", "OpReader -> duration sum", 128, lambda: pipe(model, executions, numeric, 128)),
            ("ring", "views() -> records() (zero-copy)", 128,
             lambda: ring(model, executions, records, 128, 4096)),
            ("ring", "views() -> columns (zero-copy)", 128,
             lambda: ring(model, executions, columns, 128, 4096)),
            ("ring", "batches() -> records() (copy)", 128,
             lambda: ring(model, executions, records, 128, 4096, copy=True)),
            ("ring", "views() -> columns (zero-copy)", 4096,
             lambda: ring(model, executions, columns, 4096, 4096)),
            ("ring", "2nd process views() -> columns", 4096,
             lambda: ring_second_process(model, executions, 4096, 4096)),
            ("ring*", "views() -> records() (zero-copy)", 128,
             lambda: ring_prefilled(model, executions, records, 128, big)),
            ("ring*", "views() -> columns (zero-copy)", 128,
             lambda: ring_prefilled(model, executions, columns, 128, big)),
            ("ring*", "batches() -> columns (copy)", 128,
             lambda: ring_prefilled(model, executions, columns, 128, big, copy=True)),
            ("ring*", "views() -> columns (zero-copy)", 4096,
             lambda: ring_prefilled(model, executions, columns, 4096, big)),
            ("ring*", "views() -> duration sum (zero-copy)", 4096,
             lambda: ring_prefilled(model, executions, numeric, 4096, big)),
            ("ring*", "batches() -> duration sum (copy)", 4096,
             lambda: ring_prefilled(model, executions, numeric, 4096, big, copy=True)),
        ]
        print(f"{n} op records per run ({executions} executions of {MODEL.name}), best of "
              f"{REPEATS} runs, Python {sys.version.split()[0]}, numpy {np.__version__}\n")
        print(f"{'transport':<9} {'reader':<36} {'records/batch':>13} {'ops/s':>12} {'vs pipe':>8}")
        print(f"{'-' * 9} {'-' * 36} {'-' * 13} {'-' * 12} {'-' * 8}")
        base = None
        for transport, label, per_read, run in cases:
            rate = best(run, n)
            base = base or rate
            print(f"{transport:<9} {label:<36} {per_read:>13} {rate:>12,.0f} {rate / base:>7.1f}x")
        print("\nring*: the reader alone, draining a ring that already holds every record (the"
              "\nother lines include the library's writer moving the staged records meanwhile)")
        after = aclprof.stats()
        assert after.dropped == before.dropped, "records were dropped"


def model_op_count(model) -> int:
    """Ops per execution of the model, counted through a subscription."""
    with aclprof.Subscription(model.id) as sub:
        model.execute()
    return len(sub.records)


if __name__ == "__main__":
    main()
