"""``aclprof.cluster``: the analysis of a cluster's ranks on Dask.

Each rank is read where it is by a Dask worker, from the Parquet dataset ``aclprof export
--format parquet`` writes (``DIR/<table>/rank=<N>/``; given a folder of result directories
instead, this converts it first, into a temporary directory, with the ``aclprof`` command). Per rank, a worker
sums its ops (count and device time, per op type), its step trace (computing, communication
not overlapped, overlapped, free, data wait), its communication (per group and op type, and
per link: bytes, time, bandwidth) and its memory peak, and returns those few figures; the
client puts the ranks together and names the slow rank, with why, and the slow link.

It runs on a Dask ``LocalCluster`` of this machine by default; ``scheduler=`` (or
``DASK_SCHEDULER_ADDRESS``) attaches to an existing cluster, whose workers must see the
dataset's path (a shared file system)::

    python -m aclprof.cluster DIR [--scheduler tcp://HOST:8786] [--format table|csv|json] [-o OUT]

``-o OUT`` writes each table as CSV and Parquet, and ``cluster_analysis.db`` with
msprof-analyze's ``ClusterStepTraceTime``, ``ClusterCommunicationMatrix`` and
``CommunicationGroupMapping`` tables, in the form MindStudio Insight's cluster views query
(docs/design.md, "Clusters on Dask").
Needs the ``cluster`` extra (``dask[distributed]``, ``pyarrow``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ._common import PathLike, slow_rank, slowest_link

#: The tables of the result, in the order they are shown.
TABLES = ("ranks", "op_types", "communication", "links")


def _read(dataset: str, table: str, rank: int, columns: Sequence[str]) -> Any:
    """One rank's partition of a table, as a pyarrow Table (None if the rank has none)."""
    import pyarrow.dataset as pads

    path = os.path.join(dataset, table, f"rank={rank}")
    if not os.path.isdir(path):
        return None
    return pads.dataset(path, format="parquet").to_table(columns=list(columns))


def _col(table: Any, name: str) -> List[Any]:
    return [] if table is None else list(table.column(name).to_pylist())


def rank_figures(dataset: str, rank: int) -> Dict[str, Any]:
    """What one rank contributes (runs on a worker): a few sums, never its rows."""
    import pyarrow.compute as pc

    out: Dict[str, Any] = {"rank": rank}
    # The ops analysis counts: compute tasks, and each communication op once.
    tasks = _read(dataset, "ops", rank, ["op_type", "duration_ns"])
    out["ops"] = 0 if tasks is None else tasks.num_rows
    out["device_ns"] = 0 if tasks is None else int(pc.sum(tasks.column("duration_ns")).as_py() or 0)
    types: Dict[str, List[int]] = {}
    if tasks is not None and tasks.num_rows:
        g = tasks.group_by("op_type").aggregate([("duration_ns", "sum"), ("duration_ns", "count")])
        for t, s, n in zip(_col(g, "op_type"), _col(g, "duration_ns_sum"),
                           _col(g, "duration_ns_count")):
            types[t or ""] = [int(n), int(s or 0)]
    out["types"] = types
    steps = _read(dataset, "steps", rank, ["step", "computing_ns",
                                           "communication_not_overlapped_ns", "overlapped_ns",
                                           "free_ns", "preparing_ns"])
    for k in ("computing_ns", "communication_not_overlapped_ns", "overlapped_ns", "free_ns",
              "preparing_ns"):
        out[k] = sum(int(v or 0) for v in _col(steps, k))
    out["steps"] = 0 if steps is None else steps.num_rows
    comm = _read(dataset, "communication", rank, ["group_name", "op_type", "duration_ns"])
    groups: Dict[str, List[int]] = {}
    for gname, t, d in zip(_col(comm, "group_name"), _col(comm, "op_type"),
                           _col(comm, "duration_ns")):
        e = groups.setdefault(f"{gname or ''}\t{t or ''}", [0, 0])
        e[0] += 1
        e[1] += int(d or 0)
    out["communication"] = groups
    links_t = _read(dataset, "communication_tasks", rank,
                    ["group_name", "src_rank", "dst_rank", "transport_type", "size_bytes",
                     "duration_ns"])
    links: Dict[str, List[int]] = {}
    for gname, s, d, tr, size, dur in zip(*(_col(links_t, c) for c in (
            "group_name", "src_rank", "dst_rank", "transport_type", "size_bytes", "duration_ns"))):
        if s is None or d is None or s == d:
            continue
        e = links.setdefault(f"{gname or ''}\t{s}\t{d}\t{tr or ''}", [0, 0])
        e[0] += int(size or 0)
        e[1] += int(dur or 0)
    out["links"] = links
    mem = _read(dataset, "memory", rank, ["total_allocated_bytes"])
    peaks = [v for v in _col(mem, "total_allocated_bytes") if v is not None]
    out["memory_peak_bytes"] = max(peaks) if peaks else None
    return out


def ranks_figures(dataset: str, ranks: Sequence[int]) -> List[Dict[str, Any]]:
    """:func:`rank_figures` of several ranks: one Dask task."""
    return [rank_figures(dataset, r) for r in ranks]


@dataclass
class Cluster:
    """The analysis: each table as a list of rows (dicts), the slow rank and the slow link."""

    ranks: List[Dict[str, Any]] = field(default_factory=list)
    op_types: List[Dict[str, Any]] = field(default_factory=list)
    communication: List[Dict[str, Any]] = field(default_factory=list)
    links: List[Dict[str, Any]] = field(default_factory=list)
    slow_rank: Optional[Dict[str, Any]] = None
    slow_link: Optional[Dict[str, Any]] = None
    #: Each communication group's ranks.
    groups: Dict[str, List[int]] = field(default_factory=dict)

    def table(self, name: str) -> List[Dict[str, Any]]:
        rows: List[Dict[str, Any]] = getattr(self, name)
        return rows

    def to_json(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {t: self.table(t) for t in TABLES}
        d["slow_rank"] = self.slow_rank
        d["slow_link"] = self.slow_link
        d["groups"] = self.groups
        return d


def _ms(ns: int) -> float:
    return round(ns / 1e6, 6)


def combine(figures: Sequence[Dict[str, Any]]) -> Cluster:
    """Puts the ranks' figures together (the client's part)."""
    c = Cluster()
    figures = sorted(figures, key=lambda f: int(f["rank"]))
    for f in figures:
        c.ranks.append({
            "rank": f["rank"], "ops": f["ops"], "device_ns": f["device_ns"],
            "steps": f["steps"],
            "computing_ms": _ms(f["computing_ns"]),
            "communication_not_overlapped_ms": _ms(f["communication_not_overlapped_ns"]),
            "overlapped_ms": _ms(f["overlapped_ns"]),
            "free_ms": _ms(f["free_ns"]),
            "data_wait_ms": _ms(f["preparing_ns"]),
            "memory_peak_bytes": f["memory_peak_bytes"],
        })
    verdict = slow_rank([int(f["rank"]) for f in figures],
                        [int(f["computing_ns"]) for f in figures],
                        [int(f["communication_not_overlapped_ns"]) for f in figures])
    if verdict is not None:
        rank, reason = verdict
        slow = next(r for r in c.ranks if int(r["rank"]) == rank)
        median = statistics.median(r["computing_ms"] for r in c.ranks)
        waits = statistics.median(r["communication_not_overlapped_ms"] for r in c.ranks)
        if reason == 1:
            why = (f"its computing is the longest: {slow['computing_ms']:.3f} ms, "
                   f"{slow['computing_ms'] / median if median else 0:.2f}x the median rank's "
                   f"{median:.3f} ms; the other ranks wait for it in communication")
        else:
            why = (f"it waits in communication for another rank: "
                   f"{slow['communication_not_overlapped_ms']:.3f} ms not overlapped with "
                   f"computing, against the median rank's {waits:.3f} ms, while its computing "
                   f"is no longer than the others': look at its links")
        c.slow_rank = {"rank": slow["rank"], "why": why}
    per_type: Dict[str, List[Tuple[int, int, int]]] = {}
    for f in figures:
        for t, (n, ns) in f["types"].items():
            per_type.setdefault(t, []).append((int(f["rank"]), n, ns))
    for t, rows in per_type.items():
        times = [ns for _, _, ns in rows]
        top = max(rows, key=lambda r: r[2])
        mean = statistics.fmean(times)
        c.op_types.append({
            "op_type": t, "ranks": len(rows), "ops": sum(n for _, n, _ in rows),
            "total_ms": _ms(sum(times)), "mean_rank_ms": round(mean / 1e6, 6),
            "min_rank_ms": _ms(min(times)), "max_rank_ms": _ms(max(times)),
            "max_rank": top[0],
            "spread": round((max(times) - min(times)) / mean, 6) if mean else 0.0,
        })
    c.op_types.sort(key=lambda r: (-r["total_ms"], r["op_type"]))
    members: Dict[str, set[int]] = {}
    groups: Dict[str, List[int]] = {}
    for f in figures:
        for k, (n, ns) in f["communication"].items():
            members.setdefault(k.split("\t")[0], set()).add(int(f["rank"]))
            e = groups.setdefault(k, [0, 0, 0])
            e[0] += n
            e[1] += ns
            e[2] += 1
    for k, (n, ns, ranks) in sorted(groups.items()):
        g, t = k.split("\t")
        c.communication.append({"group": g, "op_type": t, "ranks": ranks, "ops": n,
                                "total_ms": _ms(ns)})
    links: Dict[str, List[int]] = {}
    for f in figures:
        for k, (size, ns) in f["links"].items():
            g, s, d, _ = k.split("\t")
            members.setdefault(g, set()).update((int(s), int(d)))
            e = links.setdefault(k, [0, 0])
            e[0] += size
            e[1] += ns
    for k, (size, ns) in sorted(links.items()):
        g, s, d, tr = k.split("\t")
        c.links.append({"group": g, "src_rank": int(s), "dst_rank": int(d), "transport": tr,
                        "bytes": size, "time_ms": _ms(ns),
                        "bandwidth_gbps": round(size / ns, 6) if ns else 0.0})
    c.groups = {g: sorted(r) for g, r in members.items() if g}
    found = slowest_link([(size, ns) for _, (size, ns) in sorted(links.items())])
    if found is not None:
        i, of_median = found
        slow_link = c.links[i]
        c.slow_link = dict(slow_link, of_median=round(of_median, 6),
                           median_bandwidth_gbps=round(slow_link["bandwidth_gbps"] / of_median, 6)
                           if of_median else 0.0)
    return c


def _aclprof_command() -> str:
    beside = Path(sys.executable).with_name("aclprof")
    found = str(beside) if beside.exists() else shutil.which("aclprof")
    if not found:
        raise FileNotFoundError("the aclprof command is not installed: give a Parquet dataset "
                                "(aclprof export --format parquet) instead")
    return found


def export_dataset(path: PathLike, out: PathLike) -> Path:
    """Writes the Parquet dataset of the result directories under ``path`` to ``out``
    (``aclprof export --format parquet``) and returns ``out``."""
    r = subprocess.run([_aclprof_command(), "export", "--format", "parquet", str(path), "-o",
                        str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise ValueError(r.stderr.strip() or f"{path}: cannot make a Parquet dataset of it")
    return Path(out)


@contextlib.contextmanager
def dataset_of(path: PathLike) -> Iterator[Path]:
    """The Parquet dataset at ``path``; for a folder of result directories, one made in a
    temporary directory for as long as the block runs (nothing is written beside the
    input)."""
    p = Path(path)
    if (p / "tasks").is_dir():
        yield p
        return
    with tempfile.TemporaryDirectory(prefix="aclprof-cluster-") as tmp:
        yield export_dataset(p, Path(tmp) / "dataset")


def ranks_of(dataset: Path) -> List[int]:
    ranks = sorted(int(d.name.split("=", 1)[1]) for d in (dataset / "tasks").glob("rank=*"))
    if not ranks:
        raise ValueError(f"{dataset}: no rank in the dataset (no tasks/rank=N/)")
    return ranks


def analyze(path: PathLike, scheduler: Optional[str] = None, workers: Optional[int] = None
            ) -> Cluster:
    """The cluster analysis of the ranks at ``path`` (a Parquet dataset, or a folder of
    result directories), on the Dask cluster at ``scheduler`` (default
    ``DASK_SCHEDULER_ADDRESS``, else a LocalCluster of ``workers`` processes)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise ImportError("aclprof.cluster runs on Dask, which is not installed: "
                          "pip install \"aclprof[cluster]\" (dask[distributed], pyarrow)") from e
    with dataset_of(path) as dataset:
        dataset = dataset.resolve()
        ranks = ranks_of(dataset)
        scheduler = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
        local = None
        if scheduler:
            client = Client(scheduler)
        else:
            local = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                 processes=True, dashboard_address=":0")
            client = Client(local)
        try:
            # A few tasks per worker, each of many ranks: a task costs the scheduler about a
            # millisecond, as much as a small rank's reading.
            n = max(1, len(client.scheduler_info().get("workers", {})))
            per = max(1, len(ranks) // (n * 8))
            chunks = [ranks[i:i + per] for i in range(0, len(ranks), per)]
            futures = client.map(ranks_figures, [str(dataset)] * len(chunks), chunks,
                                 pure=False)
            figures = [f for part in client.gather(futures) for f in part]
        finally:
            client.close()
            if local is not None:
                local.close()
    return combine(figures)


def _csv(rows: List[Dict[str, Any]]) -> str:
    if not rows:
        return ""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def render(c: Cluster, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(c.to_json(), indent=2) + "\n"
    parts = []
    for t in TABLES:
        rows = c.table(t)
        if fmt == "csv":
            parts.append(f"# {t}\n{_csv(rows)}")
            continue
        if not rows:
            continue
        cols = list(rows[0])
        cells = [[str(r[k]) if r[k] is not None else "" for k in cols] for r in rows]
        width = [max(len(k), *(len(x[i]) for x in cells)) for i, k in enumerate(cols)]
        lines = ["  ".join(k.ljust(w) for k, w in zip(cols, width)),
                 "  ".join("-" * w for w in width)]
        lines += ["  ".join(x.ljust(w) for x, w in zip(row, width)) for row in cells]
        parts.append(f"{t}\n" + "\n".join(lines) + "\n")
    if fmt != "csv":
        if c.slow_rank:
            parts.append(f"slow rank: {c.slow_rank['rank']}: {c.slow_rank['why']}\n")
        if c.slow_link:
            li = c.slow_link
            parts.append(f"slow link: {li['src_rank']} -> {li['dst_rank']} in {li['group']} "
                         f"({li['transport']}): {li['bandwidth_gbps']:.3f} GB/s against a median "
                         f"of {li['median_bandwidth_gbps']:.3f} GB/s\n")
    return "\n".join(parts)


def write(c: Cluster, out: PathLike) -> None:
    """Each table as CSV and Parquet under ``out``, and ``cluster_analysis.db`` with
    msprof-analyze's ClusterStepTraceTime (microseconds) and ClusterCommunicationMatrix
    (MB, ms, GB/s) tables, as MindStudio Insight's cluster view reads them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    o = Path(out)
    o.mkdir(parents=True, exist_ok=True)
    for t in TABLES:
        rows = c.table(t)
        (o / f"{t}.csv").write_text(_csv(rows))
        if rows:
            pq.write_table(pa.Table.from_pylist(rows), o / f"{t}.parquet")
    db = o / "cluster_analysis.db"
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE ClusterStepTraceTime (step TEXT, type TEXT, [index] TEXT, "
                "computing NUMERIC, communication_not_overlapped NUMERIC, overlapped NUMERIC, "
                "communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
                "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC, "
                "dp_index INTEGER, pp_index INTEGER, tp_index INTEGER)")
    for r in c.ranks:
        comp = r["computing_ms"] * 1000
        cno = r["communication_not_overlapped_ms"] * 1000
        ov = r["overlapped_ms"] * 1000
        free = r["free_ms"] * 1000
        con.execute("INSERT INTO ClusterStepTraceTime VALUES (?, 'rank', ?, ?, ?, ?, ?, ?, ?, 0, "
                    "?, ?, NULL, NULL, NULL)",
                    ("", str(r["rank"]), comp, cno, ov, cno + ov, free, comp + cno + free, cno,
                     r["data_wait_ms"] * 1000))
    con.execute("CREATE TABLE ClusterCommunicationMatrix (step TEXT, hccl_op_name TEXT, "
                "group_name TEXT, src_rank TEXT, dst_rank TEXT, transit_size NUMERIC, "
                "transit_time NUMERIC, bandwidth NUMERIC, transport_type TEXT, op_name TEXT)")
    # Insight asks for the matrix of step "step" + the step trace's step ("" here).
    for li in c.links:
        con.execute("INSERT INTO ClusterCommunicationMatrix VALUES ('step', 'Total Op Info', ?, "
                    "?, ?, ?, ?, ?, ?, '')",
                    (li["group"], str(li["src_rank"]), str(li["dst_rank"]), li["bytes"] / 1e6,
                     li["time_ms"], li["bandwidth_gbps"], li["transport"]))
    # The groups Insight lists for the matrix, each with its ranks as "(0,1,...)".
    con.execute("CREATE TABLE CommunicationGroupMapping (type TEXT, rank_set TEXT, "
                "group_name TEXT, pg_name TEXT)")
    for g, ranks in sorted(c.groups.items()):
        con.execute("INSERT INTO CommunicationGroupMapping VALUES ('collective', ?, ?, ?)",
                    ("(" + ",".join(str(r) for r in sorted(ranks)) + ")", g, g))
    con.commit()
    con.close()


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m aclprof.cluster", description=(
        "Analyse a cluster's ranks on Dask: per rank its step trace, op types across ranks, "
        "communication per group and link, data wait and memory peak; the slow rank and why, "
        "and the slow link."))
    p.add_argument("path", help="a Parquet dataset (aclprof export --format parquet) or a "
                                "folder of result directories")
    p.add_argument("--scheduler", help="the Dask scheduler to use (default: "
                                       "DASK_SCHEDULER_ADDRESS, else a LocalCluster)")
    p.add_argument("--workers", type=int, help="a LocalCluster's worker processes "
                                               "(default: one per core)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("-o", "--output", help="write the tables (CSV, Parquet) and "
                                          "cluster_analysis.db into this directory")
    a = p.parse_args(argv)
    try:
        c = analyze(a.path, scheduler=a.scheduler, workers=a.workers)
    except (ValueError, ImportError, OSError) as e:
        print(f"aclprof.cluster: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(render(c, a.format))
    if a.output:
        write(c, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
