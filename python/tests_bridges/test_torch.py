"""aclprof.torch on a torchvision ResNet-18 with random weights (nothing downloaded), on CPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest
import torch
import torchvision

import aclprof
import aclprof.torch

FORWARDS = 3


@pytest.fixture(scope="module")
def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()


INPUT = torch.randn(1, 3, 224, 224)


def forward(net: torch.nn.Module, times: int = FORWARDS) -> None:
    x = INPUT  # made outside the profiled blocks: only the model's ops are counted
    with torch.no_grad():
        for _ in range(times):
            net(x)


def test_clock_is_the_librarys() -> None:
    a = aclprof.now_ns()
    b = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
    c = aclprof.now_ns()
    assert a <= b <= c


def test_pipe_subscription_sees_every_op(net: torch.nn.Module) -> None:
    prof = aclprof.torch.profile(net, name="resnet18")
    try:
        with aclprof.Subscription(prof.model_id) as sub:
            t0 = aclprof.now_ns()
            with prof:
                forward(net)
            t1 = aclprof.now_ns()
        records = sub.records
    finally:
        prof.close()
    assert prof.failed == 0
    assert prof.ops > 0 and prof.ops % FORWARDS == 0
    assert len(records) == prof.ops, "every reported op reaches the subscriber"
    per_forward = prof.ops // FORWARDS
    # ResNet-18: 20 convolutions, 20 batch norms, 17 ReLUs, 8 residual adds, a max pool, an
    # average pool and the classifier, at least.
    assert per_forward >= 60, per_forward
    types = [r.type for r in records]
    assert types.count("aten::convolution") == 20 * FORWARDS
    assert types.count("aten::add_") + types.count("aten::add") >= 8 * FORWARDS
    for r in records:
        assert t0 <= r.start <= r.end <= t1, r
        assert r.duration == r.end - r.start
        assert r.model_id == prof.model_id
    assert sum(r.duration for r in records) <= t1 - t0, "ops run one after another"
    names = {r.name for r in records}
    assert "resnet18.conv1/aten::convolution" in names
    assert "resnet18.layer4.1.conv2/aten::convolution" in names
    assert "resnet18.fc/aten::addmm" in names
    assert len({r.stream_id for r in records}) == 1, "one thread, one stream"
    # The reporting order is the execution order.
    starts = [r.start for r in records]
    assert starts == sorted(starts)


def test_one_stream_per_thread(net: torch.nn.Module) -> None:
    prof = aclprof.torch.profile(net, name="threads")
    errors: List[BaseException] = []

    def worker() -> None:
        try:
            with prof:
                forward(net, 1)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    try:
        with aclprof.RingSubscription(prof.model_id, collect=True) as ring:
            threads = [threading.Thread(target=worker) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        records = ring.records
    finally:
        prof.close()
    assert not errors, errors
    assert len(records) == prof.ops
    by_stream = {}
    for r in records:
        by_stream.setdefault(r.stream_id, []).append(r)
    assert len(by_stream) == 2
    counts = sorted(len(v) for v in by_stream.values())
    assert counts[0] == counts[1] == prof.ops // 2
    for ops in by_stream.values():
        assert sum(1 for r in ops if r.type == "aten::convolution") == 20


def test_outside_the_block_nothing_is_reported(net: torch.nn.Module) -> None:
    prof = aclprof.torch.profile(net, name="outside")
    try:
        with aclprof.Subscription(prof.model_id) as sub:
            forward(net, 1)
        assert sub.records == [] and prof.ops == 0
    finally:
        prof.close()
    with pytest.raises(RuntimeError):
        with prof:
            pass


def test_without_a_module_ops_are_named_by_operator() -> None:
    with aclprof.torch.profile(name="bare") as prof:
        torch.ones(3) + torch.ones(3)
    prof.close()
    assert prof.ops >= 3


def test_file_mode_analyze_and_report(net: torch.nn.Module, out_root: Path) -> None:
    out = out_root / "torch"
    shutil.rmtree(out, ignore_errors=True)
    with aclprof.Profiler(out) as p, aclprof.torch.profile(net, name="resnet18") as prof:
        forward(net)
    prof.close()
    analysis = p.analyse(print_summary=False)
    assert len(analysis.result_dirs) == 1
    rows = analysis.op_summary
    assert len(rows) == prof.ops
    assert sum(1 for r in rows if r["OP Type"] == "aten::convolution") == 20 * FORWARDS
    stats = {r["OP Type"]: int(r["Count"]) for r in analysis.op_statistic}
    assert stats["aten::convolution"] == 20 * FORWARDS
    (out_root / "torch-ops").write_text(str(prof.ops))

    # The same engine as `aclprof analyze`, from Python.
    top = aclprof.analyze(analysis.result_dirs[0], aggregate_by="type", top=3)
    assert "aten::convolution" in [r["Type"] for r in top], "convolutions dominate ResNet-18"

    # The command line, as a user runs it on the result.
    cli = Path(__file__).resolve().parents[2] / "target" / "release" / "aclprof"
    if cli.exists():
        shown = subprocess.run([str(cli), "analyze", str(out), "--aggregate-by", "type",
                                "--format", "json"], check=True, capture_output=True, text=True)
        table = json.loads(shown.stdout)
        assert table["ops"] == prof.ops and table["rows"][0]["Type"] == "aten::convolution"
        page = out_root / "torch-report.html"
        subprocess.run([str(cli), "report", str(analysis.result_dirs[0]), "-o", str(page)],
                       check=True, capture_output=True)
        assert "aten::convolution" in page.read_text()
    else:
        print(f"{cli} not built; `cargo build --release` to check the command line too",
              file=sys.stderr)
