"""aclprof.torch on a torchvision ResNet-18 with random weights (nothing downloaded), on CPU."""

from __future__ import annotations

import csv
import json
import os
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
    prof = aclprof.torch.profile(name="bare")
    with aclprof.Subscription(prof.model_id) as sub, prof:
        torch.ones(3) + torch.ones(3)
    prof.close()
    assert prof.ops == len(sub.records) >= 3
    assert "bare/aten::add" in [r.name for r in sub.records]
    assert {r.name for r in sub.records} == {"bare/" + r.type for r in sub.records}


def test_nobody_listening_reports_nothing_until_a_subscription_starts(
        net: torch.nn.Module) -> None:
    prof = aclprof.torch.profile(net, name="late")
    ext = aclprof.torch._ext()
    try:
        with prof:
            forward(net, 1)
            assert prof.ops == 0, "nobody listens: nothing reported"
            if ext is not None:
                assert ext.aclprof_torch_enabled() == 0, "no callback runs per op"
            # A subscription made in the middle of the block is heard at once.
            with aclprof.Subscription(prof.model_id) as sub:
                forward(net, 1)
            per_forward = len(sub.records)
            assert per_forward >= 60 and prof.ops == per_forward
            forward(net, 1)
            assert prof.ops == per_forward, "nobody listens again"
        if ext is not None:
            assert ext.aclprof_torch_enabled() == 0
    finally:
        prof.close()


def test_the_compiled_path_is_built_by_torchs_extension_builder() -> None:
    """Here (a C++ compiler, and ninja from the torch extra) the compiled path must build:
    a skip of the comparison below must never hide a build that broke."""
    ext = aclprof.torch._ext()
    assert ext is not None, "torch.utils.cpp_extension did not build the compiled path"
    assert Path(ext._name).name == "aclprof_torch.so", ext._name


def test_the_compiled_path_and_the_dispatch_mode_report_the_same_ops(
        net: torch.nn.Module) -> None:
    """Where no compiler is found the Python dispatch mode reports instead: the same ops,
    names, types and shapes."""
    if aclprof.torch._ext() is None:
        pytest.skip("the compiled path is unavailable here")
    script = """
import json, sys, torch, torchvision, aclprof, aclprof.torch
torch.manual_seed(0)
net = torchvision.models.resnet18(weights=None).eval()
prof = aclprof.torch.profile(net, name="same")
assert aclprof.torch._ext() is None
x = torch.randn(1, 3, 224, 224)
with aclprof.Subscription(prof.model_id) as sub, prof, torch.no_grad():
    net(x)
json.dump([[r.name, r.type] for r in sub.records], sys.stdout)
"""
    env = dict(os.environ, ACLPROF_TORCH_CPP="0")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True).stdout
    fallback = [tuple(x) for x in json.loads(out)]
    prof = aclprof.torch.profile(net, name="same")
    try:
        with aclprof.Subscription(prof.model_id) as sub, prof:
            forward(net, 1)
    finally:
        prof.close()
    compiled = [(r.name, r.type) for r in sub.records]
    assert len(compiled) >= 60
    assert compiled == fallback


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

    # Each op's shapes, dtypes and cost (ResNet-18's first convolution: 64 7x7x3 filters
    # over a 224x224 image, stride 2).
    conv1 = [r for r in rows if r["Op Name"] == "resnet18.conv1/aten::convolution"]
    assert len(conv1) == FORWARDS
    assert conv1[0]["Input Shapes"] == '"1,3,224,224;64,3,7,7"'
    assert conv1[0]["Input Data Types"] == "FLOAT;FLOAT"
    assert conv1[0]["Output Shapes"] == '"1,64,112,112"'
    groups = aclprof.analyze(analysis.result_dirs[0], top=0, aggregate_by="name+shape",
                             order_by="computation")
    first = {g["Name"]: g for g in groups}["resnet18.conv1/aten::convolution"]
    assert first["Count"] == FORWARDS
    assert first["Computation(FLOPs)"] == FORWARDS * 2 * (3 * 7 * 7) * (64 * 112 * 112)
    assert first["Memory(bytes)"] == FORWARDS * 4 * (3 * 224 * 224 + 64 * 3 * 7 * 7
                                                     + 64 * 112 * 112)
    assert first["Input Shapes"] == "1,3,224,224;64,3,7,7"
    assert groups[0]["Computation(FLOPs)"] >= first["Computation(FLOPs)"]

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


class _SlowImages(torch.utils.data.Dataset):  # type: ignore[misc]
    """torchvision's FakeData with a deliberately slow decode: `ms` an image."""

    def __init__(self, n: int, ms: float = 4.0) -> None:
        self.data = torchvision.datasets.FakeData(size=n, image_size=(3, 32, 32),
                                                  transform=torchvision.transforms.ToTensor())
        self.ms = ms

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> object:
        time.sleep(self.ms / 1000)
        return self.data[i]


def _train(loader: object, out: Path) -> "tuple[Path, int]":
    """Runs a small net over `loader` (wrapped by profile_loader) in file mode, one step per
    batch marked as CANN's samples mark them; returns the result directory and the steps."""
    import acl

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    net(torch.zeros(4, 3, 32, 32))  # (the first call initialises the kernels: not a step)
    shutil.rmtree(out, ignore_errors=True)
    types = aclprof.ACL_PROF_TASK_TIME | aclprof.ACL_PROF_TRAINING_TRACE
    steps = 0
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    with aclprof.Profiler(out, data_types=types) as p, aclprof.torch.profile(net, name="small"):
        batches = iter(aclprof.torch.profile_loader(loader))
        while True:
            info = acl.prof.create_step_info()
            assert acl.prof.get_step_timestamp(info, aclprof.ACL_STEP_START, stream) == 0
            batch = next(batches, None)
            if batch is not None:
                images, _ = batch
                assert images.shape == (4, 3, 32, 32)
                net(images)
                steps += 1
            assert acl.prof.get_step_timestamp(info, aclprof.ACL_STEP_END, stream) == 0
            acl.prof.destroy_step_info(info)
            if batch is None:
                break
    acl.rt.destroy_stream(stream)
    assert acl.rt.reset_device(0) == 0
    (prof,) = p.analyse(print_summary=False).result_dirs
    return prof, steps


def _pipeline(prof: Path) -> dict:
    cli = Path(__file__).resolve().parents[2] / "target" / "release" / "aclprof"
    shown = subprocess.run([str(cli), "analyze", str(prof), "--pipeline", "--format", "json"],
                           check=True, capture_output=True, text=True)
    return json.loads(shown.stdout)


def test_dataloader_waits_show_in_every_step(out_root: Path) -> None:
    """A real DataLoader over a deliberately slow torchvision dataset (one worker, batches
    of four 30 ms images) feeding a small net: the training thread waits for every batch,
    and each step's data wait in step_trace is that wait; the worker's fetches and the
    prefetch queue are recorded, and `aclprof analyze --pipeline` reads them."""
    loader = torch.utils.data.DataLoader(_SlowImages(48, ms=30.0), batch_size=4, num_workers=1)
    prof, steps = _train(loader, out_root / "dataloader")
    assert steps == 12
    (trace,) = [f for f in (prof / "mindstudio_profiler_output").glob("step_trace_*.csv")
                if f.name != "step_trace_time.csv"]
    import csv
    rows = list(csv.DictReader(trace.open()))[:steps]
    waits = [float(r["Data Aug Bound(us)"]) for r in rows]
    # A batch takes the worker 120 ms to fetch; a training step far less, so the worker
    # never gets ahead (a step delayed by less than 110 ms leaves the next wait over 10).
    assert len(waits) == steps and all(w > 10000 for w in waits), waits
    a = _pipeline(prof)
    assert a["waits"] == steps
    fetch = [s for s in a["stages"] if s["stage"] == "fetch"][0]
    assert fetch["spans"] == steps and fetch["workers"] == 1 and fetch["queue_samples"] == steps
    # Each fetch span covers its batch's four 30 ms images.
    assert fetch["busy_us"] >= steps * 4 * 30000, fetch


def test_dataloader_workers_are_told_apart(out_root: Path) -> None:
    loader = torch.utils.data.DataLoader(_SlowImages(16), batch_size=4, num_workers=2)
    prof, steps = _train(loader, out_root / "dataloader-2")
    fetch = [s for s in _pipeline(prof)["stages"] if s["stage"] == "fetch"][0]
    assert steps == 4 and fetch["spans"] == 4 and fetch["workers"] == 2, fetch


@pytest.mark.parametrize("path", ["compiled", "python"])
def test_profile_memory_reports_pytorch_s_allocator(net: torch.nn.Module, out_root: Path,
                                                    path: str) -> None:
    """profile_memory: PyTorch's CPU allocator reports through its memory reporting (what
    Kineto uses) into CANN's memory files, owned by the op running; the first convolution's
    output (64 x 112 x 112 floats) is among its allocations. The Python path (no compiled
    extension; chosen once per process, so in a child) gets them from PyTorch's profiler."""
    if path == "compiled":
        profile_memory_run(net, out_root / "torch-memory", compiled=True)
        return
    code = ("import pathlib, sys, torch, torchvision, test_torch as t\n"
            "torch.manual_seed(0)\n"
            "net = torchvision.models.resnet18(weights=None).eval()\n"
            "t.profile_memory_run(net, pathlib.Path(sys.argv[1]), compiled=False)\n")
    env = dict(os.environ, ACLPROF_TORCH_CPP="0",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code, str(out_root / "torch-memory-python")], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def profile_memory_run(net: torch.nn.Module, out: Path, compiled: bool) -> None:
    shutil.rmtree(out, ignore_errors=True)
    types = aclprof.ACL_PROF_ACL_API | aclprof.ACL_PROF_TASK_TIME | aclprof.ACL_PROF_TASK_MEMORY
    with aclprof.Profiler(out, data_types=types) as p, \
            aclprof.torch.profile(net, name="resnet18", profile_memory=True) as prof:
        forward(net, 1)
    prof.close()
    (d,) = p.analyse(print_summary=False).result_dirs
    rows = aclprof.analyze(d, memory=True)
    conv_out = 64 * 112 * 112 * 4
    (dev,) = rows.devices
    assert dev["peak_allocated"] >= conv_out
    if compiled:
        conv1 = [r for r in rows if r["Op"] == "resnet18.conv1/aten::convolution"]
        assert conv1 and conv1[0]["Max(KB)"] >= conv_out / 1024, rows[:5]
    else:
        # Owned by the top-level operator (no module path on this path).
        big = [r for r in rows if r["Op"].startswith("resnet18/aten::") and r["Max(KB)"] >= conv_out / 1024]
        assert big, rows[:5]
    # Allocations made in the block and released in it are paired in operator_memory.
    (paired,) = list((d / "mindstudio_profiler_output").glob("operator_memory_*.csv"))
    with open(paired, newline="") as f:
        allocs = list(csv.DictReader(f))
    assert sum(1 for r in allocs if r["Duration(us)"]) > 10


def test_torch_npu_layout_compares_with_a_torch_profiler_trace(net: torch.nn.Module,
                                                               out_root: Path) -> None:
    """The PyTorch-on-Ascend user's first comparison: the model's ``torch.profiler`` trace (as
    a GPU user collects it; here on the CPU) against the same model profiled by aclprof.torch
    in torch_npu's layout, with ``msprof-analyze compare``: no error line, and its operator
    and memory comparisons list our run's ops with the device time and memory our own
    kernel_details and operator_memory say."""
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "tools"))
    from check_torch_npu import xlsx_sheet  # the workbook reader of the layout's checks

    exe = root / "target" / "tools-cache" / "msprof-venv" / "bin" / "msprof-analyze"
    if not exe.exists():
        pytest.skip("msprof-analyze is installed by tools/check_filemode.py (scripts/test runs it first)")
    out = out_root / "torch-npu"
    shutil.rmtree(out, ignore_errors=True)
    with torch.no_grad(), aclprof.torch.profile(net, name="resnet18", profile_memory=True,
                                                output=out / "npu") as prof:
        forward(net, 1)
    prof.close()
    (pt,) = (out / "npu").glob("*_ascend_pt")
    assert (pt / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").exists()
    assert list(pt.glob("PROF_*")), "the session's result directory is in the folder, as torch_npu's"
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.no_grad(), torch.profiler.profile(activities=activities, record_shapes=True,
                                                 profile_memory=True) as p:
        forward(net, 1)
    gpu = out / "resnet18.pt.trace.json"
    p.export_chrome_trace(str(gpu))
    r = subprocess.run([str(exe), "compare", "-d", str(pt), "-bp", str(gpu), "--enable_operator_compare",
                        "--enable_memory_compare", "--disable_module", "-o", str(out / "compare")],
                       capture_output=True, text=True, cwd=out)
    text = r.stdout + r.stderr
    for bad in ("[ERROR]", "Can't find any torch op", "Can't find any flow event",
                "Can't find any memory event", "Invalid profiling path"):
        assert bad not in text, text[-3000:]
    (book,) = (out / "compare").glob("performance_comparison_result_*.xlsx")
    ops = xlsx_sheet(book, "OperatorCompare")
    assert ops, text[-2000:]
    head = ops[3]
    cols = sorted(c for c, h in head.items() if h == "Device Duration(us)")
    names = sorted(c for c, h in head.items() if h == "Operator Name")
    rows = [ops[i] for i in sorted(ops) if i > 3]
    ours = [r for r in rows if r.get(names[-1])]
    device = sum(float(r.get(cols[-1]) or 0) for r in ours)
    out_dir = pt / "ASCEND_PROFILER_OUTPUT"
    with open(out_dir / "kernel_details.csv", newline="") as f:
        kernels = list(csv.DictReader(f))
    want = sum(float(k["Duration(us)"]) for k in kernels)
    assert len(ours) == len(kernels) and abs(device - want) < 0.01 * len(kernels), (len(ours), device, want)
    assert {r[names[-1]] for r in ours} == {k["Type"] for k in kernels}
    memory = xlsx_sheet(book, "MemoryCompare")
    assert memory, text[-2000:]
    sizes = sorted(c for c, h in memory[3].items() if h == "Size(KB)")
    got = sum(float(memory[i].get(sizes[-1]) or 0) for i in memory if i > 3)
    with open(out_dir / "operator_memory.csv", newline="") as f:
        allocated = sum(float(r["Size(KB)"]) for r in csv.DictReader(f))
    assert got > 0 and abs(got - allocated) < 0.01, (got, allocated)
