"""Ranks per second of ``aclprof.cluster`` on a Dask LocalCluster (1 and 2 workers) against
the one-process paths (``aclprof analyze --aggregate-by rank``, and the same per-rank work in
one process without Dask), on a folder of ranks or a Parquet dataset.

    python python/bench_cluster.py FOLDER_OR_DATASET [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path


def main() -> None:
    from aclprof import cluster

    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    ds = cluster.dataset_of(a.path)
    n = len(cluster.ranks_of(ds))

    def timed(f: object) -> float:
        times = []
        for _ in range(a.runs):
            t = time.monotonic()
            f()  # type: ignore[operator]
            times.append(time.monotonic() - t)
        return statistics.median(times)

    one = timed(lambda: cluster.combine([cluster.rank_figures(str(ds), r)
                                         for r in cluster.ranks_of(ds)]))
    print(f"{n} ranks; per-rank work in one process, no Dask: {one:.2f} s, {n / one:.0f} ranks/s")
    folder = Path(a.path)
    if not (folder / "tasks").is_dir():
        exe = Path(sys.executable).with_name("aclprof")
        cli = timed(lambda: subprocess.run([str(exe), "analyze", str(folder), "--aggregate-by",
                                            "rank", "-t", "0", "--format", "json"],
                                           capture_output=True, check=True))
        print(f"aclprof analyze --aggregate-by rank, one process: {cli:.2f} s, "
              f"{n / cli:.0f} ranks/s")
    for w in (1, 2):
        d = timed(lambda: cluster.analyze(ds, workers=w))
        print(f"Dask LocalCluster, {w} worker process(es): {d:.2f} s, {n / d:.0f} ranks/s, "
              f"{one / d:.2f}x the one-process path")


if __name__ == "__main__":
    main()
