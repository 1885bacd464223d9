"""Memory from Python: pyACL's ``acl.rt.malloc`` and ``aclprof.memory`` land in CANN's
memory files, and ``aclprof.analyze(path, memory=True)`` gives what ``aclprof analyze
--memory`` gives: the leak planted in every step, what was never released, the peak and the
op that reached it."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import List

import pytest

import acl
import aclprof
from aclprof import AclError, Profiler
from test_pipeline import aclprof_command

KB = 1024


def run(out: Path) -> Path:
    """Four steps; each allocates 64 KB of application memory and frees none (the leak), and
    an operator's 8 KB workspace comes and goes; in the second, also a 1 MB one-off (the
    peak)."""
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    data = (aclprof.ACL_PROF_TASK_TIME | aclprof.ACL_PROF_TASK_MEMORY
            | aclprof.ACL_PROF_TRAINING_TRACE | aclprof.ACL_PROF_RUNTIME_API)
    leaked: List[int] = []
    try:
        with Profiler(out, data_types=data, options={aclprof.ACL_PROF_SYS_HARDWARE_MEM_FREQ: "10"}):
            for step in range(4):
                info = acl.prof.create_step_info()
                assert acl.prof.get_step_timestamp(info, aclprof.ACL_STEP_START, stream) == 0
                ptr, ret = acl.rt.malloc(64 * KB, 0)
                assert ret == 0
                leaked.append(ptr)
                aclprof.memory.allocate(0x1000, 8 * KB, "conv1")
                aclprof.memory.free(0x1000, 8 * KB, "conv1")
                if step == 1:
                    aclprof.memory.allocate(0x9000, 1024 * KB, "big_concat")
                    aclprof.memory.free(0x9000, 1024 * KB, "big_concat")
                assert acl.prof.get_step_timestamp(info, aclprof.ACL_STEP_END, stream) == 0
                acl.prof.destroy_step_info(info)
    finally:
        for p in leaked:
            acl.rt.free(p)
        acl.rt.destroy_stream(stream)
        assert acl.rt.reset_device(0) == 0
    (prof,) = list(out.glob("PROF_*"))
    return prof


def test_memory_rows_match_the_command_and_find_the_leak(tmp_path: Path) -> None:
    prof = run(tmp_path)
    rows = aclprof.analyze(prof, memory=True)
    assert [r["Op"] for r in rows] == ["big_concat", "conv1"]
    assert rows[1]["Allocations"] == 4 and rows[1]["Max(KB)"] == 8.0
    (dev,) = rows.devices
    assert dev["peak_allocated"] == 1024 * KB and dev["peak_op"] == "big_concat"
    assert [u["bytes"] for u in dev["unreleased"]] == [64 * KB] * 4
    assert [s["in_use_end"] - s["in_use_start"] for s in dev["steps"]] == [64 * KB] * 4
    assert [rule for rule, _ in rows.findings] == ["leak"]
    # The same as the command's JSON and CSV.
    cmd = subprocess.run([aclprof_command(), "analyze", str(prof), "--memory", "--format", "json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(cmd.stdout)["devices"] == rows.devices
    cmd = subprocess.run([aclprof_command(), "analyze", str(prof), "--memory", "--format", "csv"],
                         capture_output=True, text=True, check=True)
    table = list(csv.DictReader(cmd.stdout.splitlines()))
    assert [(r["Op"], float(r["Max(KB)"])) for r in table] == [(r["Op"], r["Max(KB)"]) for r in rows]
    # CANN's files: the operator memory, paired; the runtime calls at the runtime level.
    out = prof / "mindstudio_profiler_output"
    (paired,) = list(out.glob("operator_memory_*.csv"))
    with open(paired, newline="") as f:
        names = [r["Name"] for r in csv.DictReader(f)]
    assert names == ["conv1", "conv1", "big_concat", "conv1", "conv1"]
    (api,) = list(out.glob("api_statistic_*.csv"))
    with open(api, newline="") as f:
        calls = {(r["Level"], r["API Name"]): int(r["Count"]) for r in csv.DictReader(f)}
    assert calls[("runtime", "aclrtMalloc")] == 4


def test_bad_memory_reports_raise_and_runs_without_memory_say_so(tmp_path: Path) -> None:
    with pytest.raises(AclError):
        aclprof.memory.report(0, 0x10, "x")
    with pytest.raises(AclError):
        aclprof.memory.report(16, 0x10, "x", pool=7)
    with Profiler(tmp_path, data_types=aclprof.ACL_PROF_TASK_TIME):
        pass
    (prof,) = list(tmp_path.glob("PROF_*"))
    with pytest.raises(AclError, match="no memory was recorded"):
        aclprof.analyze(prof, memory=True)
