#!/usr/bin/env python3
"""Decoding speed of subscription data in Python, in ops (records) per second, in one run:
the official sample's per-accessor loop next to aclprof's batch decoder.

The data is real: a simulated ResNet-50 executed under a subscription. Every method turns
the same bytes into the same per-op values (model id, type, name, start, end, duration),
which is checked before timing. Each figure is the best of several runs.

Run: .venv/bin/python python/bench_decode.py [EXECUTIONS]   (default 80: 10,000 ops)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import acl
import aclprof

MODEL = Path(__file__).resolve().parent.parent / "models" / "resnet50.json"
REPEATS = 5


def capture(executions: int) -> bytes:
    with aclprof.Model.simulate(MODEL) as model:
        with aclprof.Subscription(model.id) as sub:
            model.execute(times=executions)
    return b"".join(batch.array.tobytes() for batch in sub.batches)


def chunks(data: bytes, records: int):
    size = records * aclprof.RECORD_SIZE
    return [data[i:i + size] for i in range(0, len(data), size)]


def official_sample(reads):
    """The subscription sample's get_model_info, per read (acl.prof call per field)."""
    out = []
    for data in reads:
        np_data = np.array(data)
        ptr = acl.util.numpy_to_ptr(np_data)
        size = np_data.itemsize * np_data.size
        op_number, ret = acl.prof.get_op_num(ptr, size)
        for i in range(op_number):
            model_id = acl.prof.get_model_id(ptr, size, i)
            op_type, ret = acl.prof.get_op_type_v2(ptr, size, i)
            op_name, ret = acl.prof.get_op_name_v2(ptr, size, i)
            op_start = acl.prof.get_op_start(ptr, size, i)
            op_end = acl.prof.get_op_end(ptr, size, i)
            op_duration = acl.prof.get_op_duration(ptr, size, i)
            out.append((model_id, op_type, op_name, op_start, op_end, op_duration))
    return out


def batch_records(reads):
    """aclprof.decode per read, then OpRecord tuples."""
    out = []
    for data in reads:
        out.extend(aclprof.decode(data).records())
    return out


def batch_columns(reads):
    """aclprof.decode per read, numpy columns and name lists only (no per-op objects)."""
    out = []
    for data in reads:
        batch = aclprof.decode(data)
        out.append((batch.model_id, batch.types, batch.names, batch.start, batch.end, batch.duration))
    return out


def best_time(fn, arg) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    executions = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    data = capture(executions)
    n = len(data) // aclprof.RECORD_SIZE

    reference = official_sample(chunks(data, 10))
    decoded = batch_records([data])
    assert len(reference) == len(decoded) == n
    assert reference == [(r.model_id, r.type, r.name, r.start, r.end, r.duration) for r in decoded]
    del reference, decoded  # long-lived objects would slow every timed run's garbage collection

    cases = [
        ("official sample: acl.prof accessor loop", official_sample, 10),
        ("aclprof.decode(...).records()", batch_records, 10),
        ("aclprof.decode(...).records()", batch_records, 128),
        ("aclprof.decode(...).records()", batch_records, n),
        ("aclprof.decode(...) columns only", batch_columns, 128),
        ("aclprof.decode(...) columns only", batch_columns, n),
    ]
    print(f"{n} op records ({executions} executions of {MODEL.name}), best of {REPEATS} runs, "
          f"Python {sys.version.split()[0]}, numpy {np.__version__}\n")
    print(f"{'method':<42} {'records/read':>12} {'ops/s':>12} {'vs sample':>10}")
    print(f"{'-' * 42} {'-' * 12} {'-' * 12} {'-' * 10}")
    base = None
    for label, fn, per_read in cases:
        rate = n / best_time(fn, chunks(data, per_read))
        base = base or rate
        reads = "all" if per_read == n else str(per_read)
        print(f"{label:<42} {reads:>12} {rate:>12,.0f} {rate / base:>9.1f}x")


if __name__ == "__main__":
    main()
