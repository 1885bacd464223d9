"""The data pipeline: aclprof.pipeline's spans and queue samples are recorded in file mode,
drawn in the timeline, give each step its data wait, and ``aclprof analyze --pipeline``
finds the stage made slow (and none in a balanced pipeline)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

import acl
import aclprof
from aclprof import AclError, Model, Profiler
from conftest import REPO, RESNET50

US = 1000
STAGES = ["read", "decode", "batch", "transfer"]


def aclprof_command() -> str:
    built = REPO / "target" / "release" / "aclprof"
    return str(built if built.exists() else Path(__import__("sys").executable).with_name("aclprof"))


def simulate(slow: str = "") -> None:
    """200 items through four stages, each item 100 us per stage with two decode workers;
    the stage `slow` takes 400 us an item, so the queue into it fills and the one out of it
    empties. Times are made up (a fixed schedule), so the figures are exact."""
    t0 = aclprof.now_ns()
    n = 200
    per = {s: (400 if s == slow else 100) * US for s in STAGES}
    for i in range(n):
        for k, s in enumerate(STAGES):
            start = t0 + i * 250 * US + k * 10 * US
            aclprof.pipeline.span(s, start, start + per[s], worker=i % 2 if s == "decode" else 0)
        # Queue samples: each stage's output queue, 8 slots.
        for k, s in enumerate(STAGES):
            if slow:
                i_slow = STAGES.index(slow)
                depth = 8 if k < i_slow else 0
            else:
                depth = 4
            aclprof.pipeline.queue(s, depth, 8, t0 + i * 250 * US)


def run_pipeline(out: Path, slow: str = "", wait_s: float = 0.003) -> Path:
    """The pipeline above, then 4 steps (marked as CANN's samples mark them), each waiting
    `wait_s` for data before running the model (1.5 ms)."""
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    try:
        with Model.simulate(RESNET50) as model:
            with Profiler(out, data_types=aclprof.ACL_PROF_TASK_TIME | aclprof.ACL_PROF_TRAINING_TRACE):
                simulate(slow)
                for _ in range(4):
                    info = acl.prof.create_step_info()
                    assert acl.prof.get_step_timestamp(info, aclprof.ACL_STEP_START, stream) == 0
                    # The queue to the device as the step begins: empty when a stage is slow.
                    aclprof.pipeline.queue(STAGES[-1], 0 if slow else 4, 8)
                    # The wait is recorded as exactly `wait_s` (the sleep lasts at least
                    # that long), so that a loaded machine stretches the step, never the
                    # wait: its share of the step is what the data-bound rule judges.
                    t = aclprof.now_ns()
                    time.sleep(wait_s)
                    aclprof.pipeline.span(aclprof.pipeline.WAIT, t, t + int(wait_s * 1e9))
                    model.execute()
                    assert acl.prof.get_step_timestamp(info, aclprof.ACL_STEP_END, stream) == 0
                    acl.prof.destroy_step_info(info)
    finally:
        acl.rt.destroy_stream(stream)
        assert acl.rt.reset_device(0) == 0
    (prof,) = [p for p in out.glob("PROF_*")]
    return prof


def analyze(prof: Path) -> Dict:
    out = subprocess.run([aclprof_command(), "analyze", str(prof), "--pipeline", "--format", "json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_slow_stage_is_the_bottleneck_and_a_balanced_pipeline_has_none(tmp_path: Path) -> None:
    balanced = analyze(run_pipeline(tmp_path / "balanced"))
    assert balanced["bottleneck"] is None and balanced["findings"] == []
    assert [s["stage"] for s in balanced["stages"]] == STAGES
    assert balanced["stages"][1]["workers"] == 2
    assert balanced["waits"] == 4 and balanced["wait_us"] >= 4 * 2900

    slow = analyze(run_pipeline(tmp_path / "slow", "decode"))
    assert slow["bottleneck"]["stage"] == "decode" and slow["bottleneck"]["rule"] == "queues"
    assert "input queue (after read) is 100% full" in slow["bottleneck"]["evidence"]
    # Its two workers are busy 80 % of the time, and the queue to the device is empty: the
    # host cannot keep up.
    assert {f["rule"] for f in slow["findings"]} == {"busy-workers", "device-queue-empty"}
    busy = [f["evidence"] for f in slow["findings"] if f["rule"] == "busy-workers"][0]
    assert busy.startswith("decode: its 2 worker(s) are busy 80% of the time")


def test_the_timeline_and_step_trace_show_the_pipeline(tmp_path: Path) -> None:
    prof = run_pipeline(tmp_path / "run", "decode")
    out = prof / "mindstudio_profiler_output"
    (timeline,) = out.glob("msprof_*.json")
    events: List[Dict] = json.loads(timeline.read_text())
    pids = {e["pid"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"
            and e["args"]["name"] == "Data Pipeline"}
    assert len(pids) == 1
    threads = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"
               and e["pid"] in pids}
    assert {"read worker 0", "decode worker 0", "decode worker 1", "wait for data (training thread)"} <= threads
    spans = [e for e in events if e.get("ph") == "X" and e["pid"] in pids and e["name"] == "decode"]
    assert len(spans) == 200 and all(abs(float(e["dur"]) - 400.0) < 1e-6 for e in spans)
    counters = [e for e in events if e.get("ph") == "C" and e["name"] == "Queue read"]
    assert len(counters) == 200 and {e["args"]["depth"] for e in counters} == {8}
    # Each step's data wait is the training thread's wait in it (3 ms of sleep).
    (step_trace,) = [p for p in out.glob("step_trace_*.csv") if p.name != "step_trace_time.csv"]
    import csv
    rows = list(csv.DictReader(step_trace.open()))
    assert len(rows) == 4
    for r in rows:
        wait = float(r["Data Aug Bound(us)"])
        assert 2900 <= wait < float(r["Iteration Time(us)"]), r


def test_bad_pipeline_input_is_refused() -> None:
    with pytest.raises(AclError) as err:
        aclprof.pipeline.span("", 0, 1)
    assert err.value.code == aclprof.ACL_ERROR_INVALID_PARAM
    with pytest.raises(AclError):
        aclprof.pipeline.span("decode", 2, 1)
    with pytest.raises(AclError):
        aclprof.pipeline.queue("decode", 9, 8)
    # Outside file mode nothing is recorded, and nothing fails.
    aclprof.pipeline.span("decode", 1, 2)
    aclprof.pipeline.queue("decode", 1, 8)


def test_analyze_pipeline_without_events_is_one_clear_error(tmp_path: Path) -> None:
    with Model.simulate(RESNET50) as model, Profiler(tmp_path):
        model.execute()
    out = subprocess.run([aclprof_command(), "analyze", str(tmp_path), "--pipeline"],
                         capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "no data-pipeline events" in out.stderr


def report(prof: Path, page: Path) -> str:
    subprocess.run([aclprof_command(), "report", str(prof), "-o", str(page)], check=True,
                   capture_output=True)
    return page.read_text()


def test_the_report_shows_the_bottleneck_and_the_assistant_the_data_bound_run(tmp_path: Path) -> None:
    slow = report(run_pipeline(tmp_path / "slow", "decode"), tmp_path / "slow.html")
    assert 'id="bottleneck" class="advice" data-stage="decode" data-rule="queues"' in slow
    assert 'data-rule="data-bound"' in slow  # 3 ms of each 4.5 ms step waits for data
    # Every step had the queue to the device empty.
    assert 'id="empty-steps">4<' in slow
    assert slow.count('class="empty-queue"') == 4

    fed = report(run_pipeline(tmp_path / "fed", wait_s=0.0001), tmp_path / "fed.html")
    assert 'No stage holds the pipeline back.' in fed
    assert 'data-rule="data-bound"' not in fed
    assert 'id="empty-steps">0<' in fed
