"""``aclprof.cluster`` on Dask: the four ranks of test_parquet (rank 2 three times slower) on a
LocalCluster and on a scheduler and two workers started as separate commands, with the same
results, equal to ``aclprof analyze --aggregate-by rank``; a planted slow link is named."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pyarrow as pa
import pytest
import pyarrow.parquet as pq

from aclprof import cluster
from test_parquet import REAL, RANKS, SLOW_RANK, analyze, dataset, ranks, ns  # noqa: F401
from test_top import aclprof_command

DASK = Path(sys.executable).with_name("dask")


def by_rank(c: cluster.Cluster) -> List[Any]:
    return [(r["rank"], r["ops"], r["device_ns"]) for r in c.ranks]


def test_local_cluster_agrees_with_analyze(ranks: Path, dataset: Path, tmp_path: Path) -> None:
    c = cluster.analyze(dataset, workers=2)
    want = sorted((r["Rank"], r["Count"], ns(r["Sum(us)"])) for r in analyze(ranks, "rank"))
    assert by_rank(c) == want
    assert c.slow_rank is not None and c.slow_rank["rank"] == SLOW_RANK
    assert "computing is the longest" in c.slow_rank["why"], c.slow_rank
    assert all(r["steps"] >= 1 for r in c.ranks)
    types = {t["op_type"]: t for t in c.op_types}
    assert types["hcom_allReduce_"]["ranks"] == RANKS
    assert all(t["max_rank"] == SLOW_RANK for t in c.op_types), c.op_types
    groups = {(g["group"], g["op_type"]): g for g in c.communication}
    assert [g["ops"] for g in groups.values()] == [5 * RANKS], groups
    # The folder of result directories itself: converted, the same figures, and nothing
    # written beside it.
    beside = sorted(p.name for p in ranks.parent.iterdir())
    again = cluster.analyze(ranks, workers=1)
    assert again.to_json() == c.to_json()
    assert sorted(p.name for p in ranks.parent.iterdir()) == beside
    # Written for msprof-analyze's readers (MindStudio Insight's cluster view).
    out = tmp_path / "out"
    cluster.write(c, out)
    db = sqlite3.connect(out / "cluster_analysis.db")
    rows = db.execute("SELECT [index], computing FROM ClusterStepTraceTime "
                      "WHERE type = 'rank' ORDER BY computing DESC").fetchall()
    assert len(rows) == RANKS and rows[0][0] == str(SLOW_RANK)
    # Insight lists the matrix's groups from CommunicationGroupMapping.
    groups = db.execute("SELECT rank_set, group_name FROM CommunicationGroupMapping").fetchall()
    assert [g[0] for g in groups] == ["(" + ",".join(map(str, range(RANKS))) + ")"], groups
    assert (out / "ranks.csv").read_text().startswith("rank,ops,device_ns")
    assert pq.read_table(out / "ranks.parquet").num_rows == RANKS


def plant_links(dataset: Path, ranks: int, slow: int) -> None:
    """Links in a dataset, as real databases have them (the simulator has none): 1 MB from
    each rank to the next in 100 us (10 GB/s), but in 1 ms (1 GB/s) from rank ``slow``."""
    tasks = dataset / "communication_tasks"
    schema = pq.read_schema(next(tasks.rglob("*.parquet")))
    for r in range(ranks):
        dur = 1_000_000 if r == slow else 100_000
        t = pa.Table.from_pylist([{
            "start_ns": 0, "end_ns": dur, "duration_ns": dur, "device": 0, "name": "link",
            "op_id": 1, "group_name": "world", "src_rank": r, "dst_rank": (r + 1) % ranks,
            "transport_type": "HCCS", "link_type": "HCCS", "size_bytes": 1_000_000,
            "bandwidth_gbps": None}], schema=schema)
        pq.write_table(t, tasks / f"rank={r}" / "planted.parquet")


def test_the_report_analyze_and_the_cluster_name_the_same_rank_and_link(
        ranks: Path, dataset: Path, tmp_path: Path) -> None:
    """The three that judge a cluster, on the same ranks: the report's cluster view,
    `aclprof analyze --communication` and aclprof.cluster on Dask."""
    import re
    page = tmp_path / "r.html"
    subprocess.run([aclprof_command(), "report", str(ranks), "-o", str(page)], check=True,
                   capture_output=True)
    m = re.search(r'id="slow-rank" data-rank="(\d+)"', page.read_text())
    comm = json.loads(subprocess.run(
        [aclprof_command(), "analyze", str(ranks), "--communication", "--format", "json"],
        check=True, capture_output=True, text=True).stdout)
    c = cluster.analyze(dataset, workers=1)
    assert m is not None and c.slow_rank is not None
    assert int(m.group(1)) == c.slow_rank["rank"] == SLOW_RANK
    link = comm["slowest_link"]
    assert (link is None) == (c.slow_link is None), (link, c.slow_link)
    if link is not None and c.slow_link is not None:
        assert (link["src_rank"], link["dst_rank"]) == (c.slow_link["src_rank"],
                                                        c.slow_link["dst_rank"])


def test_ops_are_what_analyze_counts_in_a_real_database(tmp_path: Path) -> None:
    # A real CANN database: its communication tasks (waits, copies) and tasks of other kinds
    # are not ops; analysis counts its compute tasks and communication ops.
    db = REAL / "msprof_full_db_msinsight.db"
    ds = cluster.export_dataset(db, tmp_path / "ds")
    figures = [cluster.rank_figures(str(ds), r) for r in cluster.ranks_of(ds)]
    got = [(f["ops"], f["device_ns"]) for f in figures]
    want = [(r["Count"], ns(r["Sum(us)"])) for r in analyze(db, "rank")]
    assert got == want and want[0][0] > 0
    types = {t: tuple(v) for t, v in figures[0]["types"].items()}
    assert types == {r["Type"]: (r["Count"], ns(r["Sum(us)"])) for r in analyze(db, "type")}


def test_a_planted_slow_link_is_named(dataset: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    shutil.copytree(dataset, planted)
    plant_links(planted, RANKS, slow=1)
    c = cluster.analyze(planted, workers=1)
    assert c.slow_link is not None
    assert (c.slow_link["src_rank"], c.slow_link["dst_rank"]) == (1, 2), c.slow_link
    assert c.slow_link["bandwidth_gbps"] == 1.0 and c.slow_link["median_bandwidth_gbps"] == 10.0


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Dask scheduler and two workers, each started as its own command."""
    file = tmp_path_factory.mktemp("dask") / "scheduler.json"
    procs = [subprocess.Popen([str(DASK), "scheduler", "--scheduler-file", str(file),
                               "--port", "0", "--no-dashboard", "--host", "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() or not file.read_text().strip():
            assert time.monotonic() < deadline, "the scheduler never wrote its address"
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen(
                [str(DASK), "worker", address, "--nworkers", "1", "--nthreads", "1",
                 "--no-dashboard", "--host", "127.0.0.1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=60)
        yield str(address)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def from_the_command_line(path: Path, address: str) -> List[Dict[str, Any]]:
    """``python -m aclprof.cluster PATH --format json`` through --scheduler, and through
    DASK_SCHEDULER_ADDRESS."""
    out = []
    for args, env in (([f"--scheduler={address}"], dict(os.environ)),
                      ([], dict(os.environ, DASK_SCHEDULER_ADDRESS=address))):
        r = subprocess.run([sys.executable, "-m", "aclprof.cluster", str(path), "--format",
                            "json", *args], env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr
        out.append(json.loads(r.stdout))
    return out


def test_a_separate_scheduler_and_workers_give_the_same_results(dataset: Path,
                                                                 scheduler: str) -> None:
    local = json.loads(json.dumps(cluster.analyze(dataset, workers=1).to_json()))
    assert from_the_command_line(dataset, scheduler) == [local, local]


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import bench_cluster  # noqa: E402

BIG_PROCESSES = bench_cluster.PROCESSES
DEVICES = bench_cluster.DEVICES
BIG_SLOW_RANK = bench_cluster.SLOW_RANK


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Path]:
    """2 048 simulated ranks (bench_cluster.make_ranks: 32 processes of 64 devices, each
    device a rank; rank BIG_SLOW_RANK three times slower). The simulator has no link model,
    so the links (each rank to the next, 1 MB) are planted in the dataset, with the one from
    rank 7 to 8 ten times slower."""
    folder = tmp_path_factory.mktemp("big") / "ranks"
    bench_cluster.make_ranks(folder, aclprof_command())
    ds = cluster.export_dataset(folder, folder.with_name("dataset"))
    plant_links(ds, BIG_PROCESSES * DEVICES, slow=7)
    return folder, ds


def check_big(c: Dict[str, Any], want: List[Any]) -> None:
    assert [(r["rank"], r["ops"], r["device_ns"]) for r in c["ranks"]] == want
    assert c["slow_rank"]["rank"] == BIG_SLOW_RANK
    assert (c["slow_link"]["src_rank"], c["slow_link"]["dst_rank"]) == (7, 8)


def test_two_thousand_ranks_on_a_local_cluster_and_on_separate_workers(
        big: Tuple[Path, Path], scheduler: str) -> None:
    folder, ds = big
    want = sorted((r["Rank"], r["Count"], ns(r["Sum(us)"])) for r in analyze(folder, "rank"))
    assert len(want) == BIG_PROCESSES * DEVICES
    local = json.loads(json.dumps(cluster.analyze(ds, workers=2).to_json()))
    check_big(local, want)
    for got in from_the_command_line(ds, scheduler):
        check_big(got, want)
        assert got == local


def test_no_rank_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    r = subprocess.run([sys.executable, "-m", "aclprof.cluster", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "no rank in the dataset" in r.stderr


def test_the_slow_rank_and_link_are_the_librarys_answer() -> None:
    """One rule, whoever asks: Python gets the library's verdict (the report's), so a rank
    just above the median (under 1.2x) is not named, as the report would not name it."""
    from aclprof._common import slow_rank, slowest_link
    assert slow_rank([0], [100], [0]) is None, "one rank is no cluster"
    assert slow_rank([0, 1, 2], [100, 100, 150], [50, 60, 0]) == (2, 1)
    assert slow_rank([0, 1, 2], [100, 110, 105], [10, 30, 10]) == (1, 2)
    assert slow_rank([0, 1, 2], [100, 110, 105], [10, 11, 10]) is None
    # The edge cases, as the library's own tests have them: two ranks, all equal, none.
    assert slow_rank([0, 1], [100, 130], [0, 0]) is None
    assert slow_rank([0, 1], [100, 200], [0, 0]) == (1, 1)
    assert slow_rank([0, 1, 2], [100, 100, 100], [5, 5, 5]) is None
    assert slow_rank([0, 1], [0, 0], [0, 0]) is None
    assert slowest_link([(100, 10)]) is None, "one link is nothing to compare"
    found = slowest_link([(100, 10), (0, 5), (20, 10), (100, 20)])
    assert found is not None and found[0] == 2 and abs(found[1] - 0.4) < 1e-9, found
    # The same as the report's cluster view on the same figures.
    c = cluster.combine([
        {"rank": r, "ops": 1, "device_ns": comp, "steps": 1, "computing_ns": comp,
         "communication_not_overlapped_ns": wait, "overlapped_ns": 0, "free_ns": 0,
         "preparing_ns": 0, "memory_peak_bytes": 0, "types": {}, "communication": {},
         "links": {}}
        for r, comp, wait in [(0, 100, 10), (1, 110, 11), (2, 105, 10)]])
    assert c.slow_rank is None, c.slow_rank
