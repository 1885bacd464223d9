"""aclprof.onnxruntime on a small convolutional model built in the test with onnx.helper."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import aclprof
import aclprof.onnxruntime

RUNS = 4
NODES = [("conv1", "Conv"), ("relu1", "Relu"), ("pool1", "MaxPool"), ("flat", "Flatten"),
         ("fc", "Gemm"), ("softmax", "Softmax")]


def small_model() -> bytes:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    fw = numpy_helper.from_array(rng.standard_normal((10, 8 * 16 * 16)).astype(np.float32), "fw")
    fb = numpy_helper.from_array(np.zeros(10, np.float32), "fb")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], name="fc", transB=1),
        helper.make_node("Softmax", ["g"], ["y"], name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [w, fw, fb])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def unoptimized() -> ort.SessionOptions:
    """Keeps the graph's nodes as written (ORT would fuse Conv and Relu)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return so


def feed() -> dict:
    return {"x": np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)}


def test_every_entry_point_counts_its_runs() -> None:
    sess = aclprof.onnxruntime.InferenceSession(small_model(), unoptimized(), name="entries",
                                                providers=["CPUExecutionProvider"])
    x = feed()["x"]
    with aclprof.Subscription(sess.model_id) as sub:
        sess.run(None, {"x": x})
        sess.run_with_ort_values(None, {"x": ort.OrtValue.ortvalue_from_numpy(x)})
        binding = sess.io_binding()
        binding.bind_cpu_input("x", x)
        binding.bind_output(sess.get_outputs()[0].name)
        sess.run_with_iobinding(binding)
        sess.close()
    assert (sess.runs, sess.unprofiled_runs) == (3, 0)
    assert sess.ops == len(sub.records) == 3 * len(NODES)


def test_every_node_execution_is_an_op() -> None:
    sess = aclprof.onnxruntime.InferenceSession(small_model(), unoptimized(), name="small",
                                                providers=["CPUExecutionProvider"])
    outputs: List[np.ndarray] = []
    with aclprof.Subscription(sess.model_id) as sub:
        t0 = aclprof.now_ns()
        for _ in range(RUNS):
            outputs.append(sess.run(None, feed())[0])
        t1 = aclprof.now_ns()
        sess.close()
    records = sub.records
    assert outputs[0].shape == (1, 10) and abs(float(outputs[0].sum()) - 1.0) < 1e-4
    assert sess.ops == len(records) == RUNS * len(NODES)
    assert sess.unprofiled_runs == 0
    for i in range(RUNS):
        run = records[i * len(NODES):(i + 1) * len(NODES)]
        assert [(r.name, r.type) for r in run] == NODES
        for a, b in zip(run, run[1:]):
            assert a.end <= b.start + 1_000, "nodes of one run execute in order"
    for r in records:
        # ORT's times are microseconds; its clock is CLOCK_REALTIME, moved onto ours.
        assert t0 - 5_000 <= r.start <= r.end <= t1 + 5_000, (r, t0, t1)
        assert r.model_id == sess.model_id
    assert sum(r.duration for r in records) <= t1 - t0


def test_optimized_graph_reports_what_ran() -> None:
    with aclprof.onnxruntime.InferenceSession(small_model(), name="fused") as sess:
        with aclprof.Subscription(sess.model_id) as sub:
            sess.run(None, feed())
            sess.end_profiling()
            sess.run(None, feed())  # no longer profiled: ORT's rule
    types = [r.type for r in sub.records]
    assert "Conv" in types and "Relu" not in types, "ORT fused the Relu into the Conv"
    assert sess.ops == len(types) > 0
    assert sess.profile_file is not None and not Path(sess.profile_file).exists()


def test_own_session_and_report_profile(tmp_path: Path) -> None:
    so = unoptimized()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "ort")
    sess = ort.InferenceSession(small_model(), so, providers=["CPUExecutionProvider"])
    sess.run(None, feed())
    with aclprof.Model.register("own") as model, aclprof.Subscription(model.id) as sub:
        n = aclprof.onnxruntime.report_profile(model.id, sess.end_profiling(),
                                               sess.get_profiling_start_time_ns())
    assert n == len(NODES) == len(sub.records)


def test_file_mode(out_root: Path) -> None:
    out = out_root / "onnxruntime"
    shutil.rmtree(out, ignore_errors=True)
    with aclprof.Profiler(out) as p:
        with aclprof.onnxruntime.InferenceSession(small_model(), unoptimized(), name="small") as s:
            for _ in range(RUNS):
                s.run(None, feed())
    analysis = p.analyse(print_summary=False)
    rows = analysis.op_summary
    assert len(rows) == RUNS * len(NODES)
    assert {r["OP Type"] for r in rows} == {t for _, t in NODES}
    # Each node's shapes and types as ORT profiled them, in CANN's text.
    outputs = {"conv1": "1,8,32,32", "relu1": "1,8,32,32", "pool1": "1,8,16,16",
               "flat": "1,2048", "fc": "1,10", "softmax": "1,10"}
    for r in rows:
        assert r["Output Shapes"] == f'"{outputs[r["Op Name"]]}"', r
        assert r["Output Data Types"] == "FLOAT", r
    conv = next(r for r in rows if r["Op Name"] == "conv1")
    assert conv["Input Shapes"] == '"1,3,32,32;8,3,3,3"' and conv["Input Data Types"] == "FLOAT;FLOAT"
    groups = aclprof.analyze(analysis.result_dirs[0], top=0, aggregate_by="name+shape",
                             order_by="memory")
    assert len(groups) == len(NODES), "one shape per node"
    by_name = {g["Name"]: g for g in groups}
    # ORT's activation, parameter and output sizes: Relu reads and writes 8x32x32 floats.
    assert by_name["relu1"]["Memory(bytes)"] == RUNS * 2 * 8 * 32 * 32 * 4
    memory = [g["Memory(bytes)"] for g in groups]
    assert memory == sorted(memory, reverse=True) and all(m > 0 for m in memory)


def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import importlib
    import sys

    real = builtins.__import__

    def no_ort(name: str, *a: object, **k: object) -> object:
        if name == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    monkeypatch.delitem(sys.modules, "aclprof.onnxruntime")
    with pytest.raises(ImportError, match=r"pip install 'aclprof\[onnxruntime\]'"):
        importlib.import_module("aclprof.onnxruntime")
