"""``aclprof export --format parquet``: a folder of ranks becomes one dataset partitioned by
rank, which DuckDB, Polars and pyarrow read, with the same figures as ``aclprof analyze``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any, Dict, List

import pytest

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds

from conftest import REPO, TINY

REAL = REPO / "tests" / "data" / "real"
from test_top import aclprof_command

RANKS = 4
SLOW_RANK = 2


def analyze(path: Path, by: str) -> List[Dict[str, Any]]:
    out = subprocess.run([aclprof_command(), "analyze", str(path), "--aggregate-by", by,
                          "-t", "0", "--format", "json"], capture_output=True, text=True, check=True)
    rows: List[Dict[str, Any]] = json.loads(out.stdout)["rows"]
    return rows


def ns(us: float) -> int:
    """analyze's microseconds (three decimals) as whole nanoseconds."""
    return int(Decimal(str(us)) * 1000)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four rank processes (RANK_ID) record one folder: tiny.json plus an allreduce, rank
    SLOW_RANK's ops three times longer."""
    root = tmp_path_factory.mktemp("parquet")
    folder = root / "ranks"
    model = json.loads(TINY.read_text())
    model["ops"].append({"name": "hcom_allReduce__101_0_1", "type": "hcom_allReduce_",
                         "duration_us": 7})
    procs = []
    for rank in range(RANKS):
        m = json.loads(json.dumps(model))
        if rank == SLOW_RANK:
            for op in m["ops"]:
                op["duration_us"] *= 3
        path = root / f"model{rank}.json"
        path.write_text(json.dumps(m))
        script = textwrap.dedent(f"""
            import aclprof
            with aclprof.Model.simulate({str(path)!r}) as model:
                model.execute(times=5)
            """)
        env = dict(os.environ, RANK_ID=str(rank))
        env.pop("ACLPROF_DEVICE_COUNT", None)
        procs.append(subprocess.Popen([aclprof_command(), "record", "-o", str(folder), "--",
                                       sys.executable, "-c", script], env=env,
                                      stdout=subprocess.DEVNULL))
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert len(list(folder.glob("PROF_*"))) == RANKS
    return folder


@pytest.fixture(scope="module")
def dataset(ranks: Path) -> Path:
    out = ranks.parent / "dataset"
    r = subprocess.run([aclprof_command(), "export", "--format", "parquet", str(ranks), "-o",
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"{RANKS} ranks" in r.stdout, r.stdout
    return out


def test_duckdb_reads_the_dataset_as_analyze_ranks_the_ranks(ranks: Path, dataset: Path) -> None:
    got = duckdb.sql(
        f"SELECT rank, count(*), sum(duration_ns) FROM read_parquet("
        f"'{dataset}/ops/**/*.parquet', hive_partitioning = true) "
        f"GROUP BY rank ORDER BY sum(duration_ns) DESC").fetchall()
    want = analyze(ranks, "rank")
    assert sorted((int(g[0]), g[1], int(g[2])) for g in got) == sorted(
        (r["Rank"], r["Count"], ns(r["Sum(us)"])) for r in want)
    assert int(got[0][0]) == SLOW_RANK == want[0]["Rank"]
    comm = duckdb.sql(
        f"SELECT rank, count(*), min(group_name) FROM read_parquet("
        f"'{dataset}/communication/**/*.parquet', hive_partitioning = true) GROUP BY rank"
    ).fetchall()
    assert len(comm) == RANKS and all(c[1] == 5 and c[2] for c in comm), comm


def test_polars_reads_the_dataset_as_analyze_groups_types(ranks: Path, dataset: Path) -> None:
    got = (pl.scan_parquet(str(dataset / "ops" / "**" / "*.parquet"), hive_partitioning=True)
           .group_by("op_type").agg(pl.len().alias("n"), pl.col("duration_ns").sum().alias("t"))
           .collect())
    mine = {row["op_type"]: (row["n"], row["t"]) for row in got.iter_rows(named=True)}
    want = {r["Type"]: (r["Count"], ns(r["Sum(us)"])) for r in analyze(ranks, "type")}
    assert mine == want


def test_pyarrow_reads_every_table_with_its_schema(dataset: Path) -> None:
    tasks = ds.dataset(str(dataset / "tasks"), format="parquet", partitioning="hive").to_table()
    assert tasks.schema.field("start_ns").type == pa.int64()
    assert tasks.schema.field("name").type == pa.string()
    assert sorted(set(tasks.column("rank").to_pylist())) == list(range(RANKS))
    assert all(d > 0 for d in tasks.column("duration_ns").to_pylist())
    for table in ("communication", "communication_tasks", "memory", "api", "msproftx", "steps"):
        t = ds.dataset(str(dataset / table), format="parquet", partitioning="hive").to_table()
        assert "rank" in t.schema.names, table
    steps = ds.dataset(str(dataset / "steps"), format="parquet",
                       partitioning="hive").to_table().to_pylist()
    assert {s["rank"] for s in steps} == set(range(RANKS))
    slow = max(steps, key=lambda s: s["computing_ns"])
    assert slow["rank"] == SLOW_RANK


def test_a_folder_with_no_run_is_one_clear_error(tmp_path: Path) -> None:
    r = subprocess.run([aclprof_command(), "export", "--format", "parquet", str(tmp_path),
                        "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "no PROF_* result directory" in r.stderr



def test_real_cann_databases_of_other_schemas_export(tmp_path: Path) -> None:
    """CANN's databases differ by version (columns missing, tables only when they have
    rows): every table is still written, and tasks has every TASK row, names resolved."""
    import sqlite3

    for db in sorted((REAL).glob("*.db")):
        out = tmp_path / db.stem
        r = subprocess.run([aclprof_command(), "export", "--format", "parquet", str(db), "-o",
                            str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        # (immutable: the checked-in database and its -shm file stay as they are)
        want = sqlite3.connect(f"file:{db}?immutable=1", uri=True).execute(
            "SELECT count(*) FROM TASK").fetchone()[0]
        tasks = ds.dataset(str(out / "tasks"), format="parquet", partitioning="hive").to_table()
        assert tasks.num_rows == want, db.name
        assert sum(n is not None for n in tasks.column("name").to_pylist()) > want // 2, db.name
