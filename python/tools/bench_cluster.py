"""The cluster figures: ``aclprof export --format parquet`` (tasks/s) and ``aclprof.cluster``
on a Dask LocalCluster (1 and 2 workers) in ranks/s, against the one-process paths (the same
per-rank work in one process without Dask, and ``aclprof analyze --aggregate-by rank``).

    python python/tools/bench_cluster.py FOLDER [--runs 3]

FOLDER is made first if it does not exist: 2 048 simulated ranks (:func:`make_ranks`), which
tests/test_cluster.py also uses.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Callable, List

PROCESSES = 32
DEVICES = 64
SLOW_RANK = 1234
#: Ops each simulated rank reports per step: type and microseconds.
OPS = [("Conv2D", 20), ("Relu", 3), ("MatMul", 10), ("hcom_allReduce_", 7)]


def make_ranks(folder: Path, aclprof: str, processes: int = PROCESSES,
               devices: int = DEVICES, slow_rank: int = SLOW_RANK) -> None:
    """``processes`` x ``devices`` simulated ranks in ``folder``: each process (``aclprof
    record``, RANK_ID 0, 64, ...) reports, on each of its devices (a rank each), two steps of
    :data:`OPS`; rank ``slow_rank``'s ops take three times as long."""
    script = textwrap.dedent(f"""
        import os, aclprof
        base = int(os.environ["RANK_ID"])
        models = [aclprof.Model.register("m", device=d) for d in range({devices})]
        t = aclprof.now_ns()
        for step in range(2):
            for d, m in enumerate(models):
                f = 3 if base + d == {slow_rank} else 1
                at = t
                for i, (ty, us) in enumerate({OPS!r}):
                    m.report_op(f"{{ty}}_{{i}}", ty, at, at + us * 1000 * f)
                    at += us * 1000 * f + 1000
            t += 200_000
        aclprof.flush()
        """)
    running: List["subprocess.Popen[bytes]"] = []
    for k in range(processes):
        env = dict(os.environ, RANK_ID=str(k * devices), ACLPROF_DEVICE_COUNT=str(devices))
        running.append(subprocess.Popen([aclprof, "record", "-o", str(folder), "--",
                                         sys.executable, "-c", script], env=env,
                                        stdout=subprocess.DEVNULL))
        if len(running) >= 2:
            assert running.pop(0).wait(timeout=300) == 0
    assert all(p.wait(timeout=300) == 0 for p in running)


def main() -> None:
    from aclprof import cluster

    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    folder = Path(a.folder)
    exe = str(Path(sys.executable).with_name("aclprof"))
    if not folder.exists():
        make_ranks(folder, exe)

    def timed(f: Callable[[], object]) -> float:
        times = []
        for _ in range(a.runs):
            t = time.monotonic()
            f()
            times.append(time.monotonic() - t)
        return statistics.median(times)

    ds = folder.parent / (folder.name + ".parquet")

    def export() -> None:
        shutil.rmtree(ds, ignore_errors=True)
        subprocess.run([exe, "export", "--format", "parquet", str(folder), "-o", str(ds)],
                       capture_output=True, check=True)

    d = timed(export)
    tasks = sum(1 for _ in ds.glob("tasks/rank=*"))
    print(f"export --format parquet of {tasks} ranks: {d:.2f} s ({tasks / d:.0f} ranks/s)")
    n = len(cluster.ranks_of(ds))
    one = timed(lambda: cluster.combine([cluster.rank_figures(str(ds), r)
                                         for r in cluster.ranks_of(ds)]))
    print(f"{n} ranks, the per-rank work in one process without Dask: {one:.2f} s, "
          f"{n / one:.0f} ranks/s")
    cli = timed(lambda: subprocess.run([exe, "analyze", str(folder), "--aggregate-by", "rank",
                                        "-t", "0", "--format", "json"],
                                       capture_output=True, check=True))
    print(f"aclprof analyze --aggregate-by rank (op totals only): {cli:.2f} s, "
          f"{n / cli:.0f} ranks/s")
    for w in (1, 2):
        dd = timed(lambda: cluster.analyze(ds, workers=w))
        print(f"aclprof.cluster on a Dask LocalCluster of {w} worker process(es): {dd:.2f} s, "
              f"{n / dd:.0f} ranks/s, {one / dd:.2f}x the one-process path")


if __name__ == "__main__":
    main()
