"""aclprof.mindspore: a script written for mindspore.Profiler, with only the import changed,
on a simulated model; and the API's errors where MindSpore raises them."""

from __future__ import annotations

import csv
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aclprof
import aclprof.mindspore
from aclprof.mindspore import Profiler

from conftest import TINY, model_ops

OPS = model_ops(TINY)


def step(model: aclprof.Model) -> None:
    model.execute()


class StopAtStep:
    """MindSpore's documented callback (an ms.Callback there), profiling steps 2..4."""

    def __init__(self, start_step: int, stop_step: int, output_path: str):
        self.start_step = start_step
        self.stop_step = stop_step
        self.profiler = Profiler(start_profile=False, output_path=output_path)

    def on_train_step_begin(self, cur_step: int) -> None:
        if cur_step == self.start_step:
            self.profiler.start()

    def on_train_step_end(self, cur_step: int) -> None:
        if cur_step == self.stop_step:
            self.profiler.stop()

    def on_train_end(self) -> None:
        self.profiler.analyse()


def profiled_files(out: Path) -> Path:
    d = out / "profiler"
    assert len(list(d.glob("PROF_*"))) == 1
    return d


def test_start_at_construction_then_analyse(tmp_path: Path) -> None:
    out = tmp_path / "data"
    profiler = Profiler(output_path=str(out))
    with aclprof.Model.simulate(TINY) as model:
        for _ in range(3):
            step(model)
    profiler.add_metadata("test_key", "test_value")
    profiler.add_metadata_json("test_key_json", json.dumps({"key1": 1, "key2": 2}))
    profiler.analyse()
    d = profiled_files(out)
    timeline = json.loads((d / "ascend_timeline_display_0.json").read_text())
    assert sum(1 for e in timeline if e.get("ph") == "X" and e.get("args", {}).get("Task Type")) \
        >= 3 * len(OPS)
    with open(d / "op_statistic_0.csv") as f:
        stats = {r["op_type"]: int(r["execution_frequency"]) for r in csv.DictReader(f)}
    for t in {op["type"] for op in OPS}:
        assert stats[t] == 3 * sum(1 for op in OPS if op["type"] == t)
    meta = json.loads((d / "profiler_metadata.json").read_text())
    assert meta == {"test_key": "test_value", "test_key_json": {"key1": 1, "key2": 2}}


def test_step_callback_and_step_list(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cb = StopAtStep(2, 5, str(tmp_path))
    with aclprof.Model.simulate(TINY) as model:
        for cur in range(1, 7):
            cb.on_train_step_begin(cur)
            step(model)
            cb.on_train_step_end(cur)
    cb.on_train_end()
    d = profiled_files(tmp_path)
    with open(d / "op_statistic_0.csv") as f:
        total = sum(int(r["execution_frequency"]) for r in csv.DictReader(f))
    assert total == 4 * len(OPS), "steps 2..5 only"
    # Offline, as a separate process would: MindSpore's step_list, pretty JSON. This run
    # marked no steps (aclprofGetStepTimestamp), so the list cannot apply, and says so.
    with caplog.at_level(logging.WARNING, logger="aclprof.mindspore"):
        Profiler.offline_analyse(str(tmp_path), pretty=True, step_list=[2, 3, 4])
    info = json.loads((d / "profiler_info_0.json").read_text())
    assert info["step_list"] == [2, 3, 4] and info["step_list_applied"] is False
    assert "step_list ignored" in caplog.text
    assert (d / "ascend_timeline_display_0.json").read_text().startswith("[\n")


def test_start_stop_errors_as_mindspore(tmp_path: Path) -> None:
    p = Profiler(output_path=str(tmp_path), start_profile=False)
    with pytest.raises(RuntimeError, match="has not started, so can not stop"):
        p.stop()
    p.start()
    with pytest.raises(RuntimeError, match="has already started. Do not turn on again"):
        p.start()
    p.stop()
    p.start()  # start, stop, start again: MindSpore 2.4 allows it
    p.stop()
    assert len(list((tmp_path / "profiler").glob("PROF_*"))) == 2
    started = Profiler(output_path=str(tmp_path))  # start_profile=True started it already
    with pytest.raises(RuntimeError, match="has already started"):
        started.start()
    started.stop()
    with pytest.raises(TypeError, match="start_profile must be bool"):
        Profiler(start_profile="yes")


def test_options_checked_and_mapped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="aclprof.mindspore"):
        p = Profiler(output_path=str(tmp_path), start_profile=False, aicore_metrics=9,
                     op_time="yes", profiler_level=aclprof.mindspore.ProfilerLevel.Level1,
                     timeline_limit=0, no_such_option=1)
    assert p.options["aicore_metrics"] == 0 and p.options["op_time"] is True
    assert p.options["timeline_limit"] == 500
    assert p.options["profiler_level"] is aclprof.mindspore.ProfilerLevel.Level1
    for named in ("aicore_metrics", "op_time", "timeline_limit",
                  "no_such_option is an invalid param"):
        assert named in caplog.text
    level0 = Profiler(output_path=str(tmp_path), start_profile=False, aicore_metrics=1,
                      profiler_level=aclprof.mindspore.ProfilerLevel.Level0)
    assert level0.options["aicore_metrics"] == -1, "Level0 collects no AI Core metrics"
    assert aclprof.mindspore.AICORE_METRICS[1] == "PipeUtilization"


def test_timeline_limit_counts_what_it_leaves_out(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    p = Profiler(output_path=str(tmp_path))
    with aclprof.Model.simulate(aclprof_resnet()) as model:
        model.execute(20)
    p.stop()
    p.options["timeline_limit"] = 1
    with caplog.at_level(logging.WARNING, logger="aclprof.mindspore"):
        p.analyse()
    d = profiled_files(tmp_path)
    size = (d / "ascend_timeline_display_0.json").stat().st_size
    assert size <= 1024 * 1024
    info = json.loads((d / "profiler_info_0.json").read_text())
    assert info["timeline_events_left_out"] > 0
    assert "timeline_limit" in caplog.text


def aclprof_resnet() -> Path:
    from conftest import RESNET50
    return RESNET50


def test_async_analyse_and_op_analyse(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    p = Profiler(output_path=str(tmp_path))
    with aclprof.Model.simulate(TINY) as model:
        model.execute(2)
    p.analyse(mode="async")
    assert p.wait_analyse() == 0
    assert (profiled_files(tmp_path) / "op_statistic_0.csv").exists()
    types = sorted({op["type"] for op in OPS})[:2]
    result = json.loads(p.op_analyse(types))
    assert result["device_id"] == 0
    for t in types:
        (entry,) = result[t]
        n = 2 * sum(1 for op in OPS if op["type"] == t)
        assert entry["op_occurrences"] == n
        assert entry["op_avg_time(us)"] == pytest.approx(entry["op_total_time(us)"] / n, abs=1e-3)
    with pytest.raises(RuntimeError, match="The information of NoSuchOp is not found"):
        p.op_analyse("NoSuchOp")
    with pytest.raises(RuntimeError, match="is not found"):
        p.op_analyse(types[0], device_id=7)
    with pytest.raises(TypeError, match="op_name must be str or list"):
        p.op_analyse(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot be"):
        p.op_analyse([])
    with caplog.at_level(logging.WARNING, logger="aclprof.mindspore"):
        p.analyse(mode="later")                    # warned, analysed in sync
        p.analyse(step_list=[1, 3])                # MindSpore logs analysis errors
    assert "it will be set to 'sync'" in caplog.text
    assert "Profiler analyse failed: The elements of the parameter step_list must be continuous" \
        in caplog.text


def test_async_analyse_failure_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    p = Profiler(output_path=str(tmp_path), start_profile=False)
    with caplog.at_level(logging.ERROR, logger="aclprof.mindspore"):
        p.analyse(mode="async")  # nothing was profiled: the child fails
        assert p.wait_analyse() != 0
        assert p.wait_analyse() != 0
    assert caplog.text.count("Profiler analyse failed: the analysis process exited") == 1


# Two emulated devices (read when the library loads, so in a process of its own) and an op on
# each: the Profiler records both, as MindSpore profiles every device of the job.
TWO_DEVICES = r"""
import sys
import aclprof
from aclprof.mindspore import Profiler
profiler = Profiler(output_path=sys.argv[1])
for device in (0, 1):
    with aclprof.Model.register(f"on-device-{device}", device=device) as model:
        t0 = aclprof.now_ns()
        model.report_op(f"op{device}", "Add", t0, t0 + 1000)
profiler.stop()
"""


def test_every_device_is_profiled(tmp_path: Path) -> None:
    package_root = str(Path(aclprof.__file__).resolve().parent.parent)
    env = dict(os.environ, ACLPROF_DEVICE_COUNT="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-c", TWO_DEVICES, str(tmp_path)], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = aclprof.Analysis(profiled_files(tmp_path).glob("PROF_*")).op_summary
    assert sorted((row["Device_id"], row["Op Name"]) for row in rows) == [("0", "op0"),
                                                                        ("1", "op1")]


def test_offline_analyse_needs_a_profiler_directory(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match='must have a "profiler" directory'):
        Profiler.offline_analyse(str(tmp_path))


def test_metadata_checks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    p = Profiler(output_path=str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="aclprof.mindspore"):
        p.add_metadata("k", 1)  # type: ignore[arg-type]
        p.add_metadata("long", "x" * 5000)
        p.add_metadata_json("j", "{not json")
        p.add_metadata("k", "a")
        p.add_metadata("k", "b")
    p.stop()
    assert json.loads((tmp_path / "profiler" / "profiler_metadata.json").read_text()) == {"k": "b"}
    for said in ("must be string", "Invalid input key or value", "must be json format",
                 "already saved as metadata"):
        assert said in caplog.text


def test_data_process_writes_mindspores_pipeline_files(tmp_path: Path) -> None:
    """Profiler(data_process=True) with a data pipeline reported (read -> decode -> batch,
    decode slow: its input queue full, its output empty): MindSpore's raw and summary files,
    in its columns and keys, name decode as the bottleneck."""
    out = tmp_path / "data"
    profiler = Profiler(output_path=str(out), data_process=True)
    t0 = aclprof.now_ns()
    with aclprof.Model.simulate(TINY) as model:
        for i in range(10):
            t = t0 + i * 1_000_000
            aclprof.pipeline.span("read", t, t + 100_000)
            aclprof.pipeline.span("decode", t, t + 900_000, worker=i % 2)
            aclprof.pipeline.span("batch", t, t + 100_000)
            for stage, depth in [("read", 8), ("decode", 0), ("batch", 0)]:
                aclprof.pipeline.queue(stage, depth, 8, t)
            step(model)
    profiler.analyse()
    d = profiled_files(out)
    with open(d / "minddata_pipeline_raw_0.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["op_id", "op_type", "num_workers", "output_queue_size",
                             "output_queue_average_size", "output_queue_length",
                             "output_queue_usage_rate", "sample_interval", "parent_id",
                             "children_id"]
    # The root (id 0) is the stage nearest the device; each op's child is the one before it.
    assert [(r["op_id"], r["op_type"], r["parent_id"], r["children_id"]) for r in rows] == [
        ("0", "batch", "", "[1]"), ("1", "decode", "0", "[2]"), ("2", "read", "1", "")]
    assert rows[2]["output_queue_size"] == str([8] * 10) and float(rows[2]["output_queue_usage_rate"]) == 1.0
    assert rows[1]["num_workers"] == "2" and float(rows[1]["sample_interval"]) == pytest.approx(1.0)
    summary = json.loads((d / "minddata_pipeline_summary_0.json").read_text())
    assert summary["pipeline_ops"] == ["batch(id=0)", "decode(id=1)", "read(id=2)"]
    assert summary["queue_utilization_pct"] == [0.0, 0.0, 100.0]
    assert summary["queue_empty_freq_pct"] == [100.0, 100.0, 0.0]
    assert summary["parent_id"] == [-1, 0, 1] and summary["children_ids"] == [[1], [2], []]
    assert summary["bottleneck_warning"] == ["decode(id=1)"]
    assert "rule queues" in summary["bottleneck_suggestion"][0]
    with open(d / "minddata_pipeline_summary_0.csv") as f:
        table = {r[0]: r[1:] for r in csv.reader(f)}
    assert table["pipeline_ops"] == summary["pipeline_ops"]


def test_without_data_process_no_pipeline_files(tmp_path: Path) -> None:
    out = tmp_path / "data"
    profiler = Profiler(output_path=str(out))
    with aclprof.Model.simulate(TINY) as model:
        aclprof.pipeline.span("read", 1, 2)
        step(model)
    profiler.analyse()
    assert not list(profiled_files(out).glob("minddata_pipeline_*"))


def test_profile_memory_writes_mindspore_s_memory_files(tmp_path: Path) -> None:
    """profile_memory=True on a model whose ops need known memory: MindSpore's
    memory_record.csv (GE, MindSpore+GE and the sampled APP), operator_memory.csv in the MB
    layout, static_op_mem.csv with its TOTAL, npu_module_mem.csv; profile_framework samples
    the host process."""
    model_path = TINY.parent / "memory_model.json"
    with aclprof.Model.simulate(model_path) as model:
        profiler = Profiler(output_path=str(tmp_path), profile_memory=True, profile_framework="all")
        model.execute(2)
        profiler.stop()
        profiler.analyse()
    out = tmp_path / "profiler" / "ASCEND_PROFILER_OUTPUT"
    with open(out / "memory_record.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == aclprof.mindspore.MEMORY_RECORD_HEADER
    components = {r["Component"] for r in rows}
    assert components == {"GE", "MindSpore+GE", "APP"}
    peak = max(float(r["Total Allocated(MB)"]) for r in rows if r["Component"] == "GE")
    assert peak == pytest.approx((1024 * 1024 + 64 * 56 * 56 * 2) / 2**20, abs=1e-6)
    with open(out / "operator_memory.csv", newline="") as f:
        ops = list(csv.DictReader(f))
    assert [r["Name"] for r in ops[:4]] == ["conv1", "conv1", "relu1", "fc"]
    assert ops[0]["Size(KB)"] == "1024.000" and float(ops[0]["Duration(us)"]) == 20.0
    assert float(ops[0]["Release Time(us)"]) == pytest.approx(float(ops[0]["Allocation Time(us)"]) + 20)
    with open(out / "static_op_mem.csv", newline="") as f:
        plan = list(csv.DictReader(f))
    assert plan[-1]["Op Name"] == "TOTAL"
    assert (out / "npu_module_mem.csv").exists()
    prof = next((tmp_path / "profiler").glob("PROF_*"))
    assert list((prof / "mindstudio_profiler_output").glob("host_cpu_usage_*.csv"))
