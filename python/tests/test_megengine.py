"""aclprof.megengine: MegEngine's Profiler/profile surface, and python -m
aclprof.profile_analyze with MegEngine's options, on a simulated model."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

import aclprof
from aclprof.megengine import Profiler, profile

from conftest import TINY, model_ops

OPS = len(model_ops(TINY))


def run_tiny(times: int = 1) -> None:
    with aclprof.Model.simulate(TINY) as model:
        model.execute(times)


def timeline(path: Path) -> Dict[str, Any]:
    data: Dict[str, Any] = json.loads((path / f"{os.getpid()}.chrome_timeline.json").read_text())
    return data


def op_slices(data: Dict[str, Any]) -> int:
    return sum(1 for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] == "Kernel"
               and e["name"] not in ("Computing", "Free", "Communication"))


def test_with_block_written_when_destroyed(tmp_path: Path) -> None:
    out = tmp_path / "profile"
    profiler = Profiler(str(out))
    with profiler as bound:
        run_tiny(2)
    assert bound is None, "MegEngine's __enter__ returns None"
    assert not out.exists(), "nothing is written before the profiler is dumped"
    del profiler
    gc.collect()
    data = timeline(out)
    assert data["metadata"]["localTime"].isdigit()
    hw = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert all(e["pid"] == os.getpid() and e["ts"] >= 0 for e in hw)
    names = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert any(n.startswith("Ascend Hardware / Stream") for n in names), names
    stream_tids = {e["tid"] for e in data["traceEvents"]
                   if e["name"] == "thread_name" and "Stream" in e["args"]["name"]}
    assert sum(1 for e in hw if e["tid"] in stream_tids) == 2 * OPS


def test_decorator_profiles_each_call_and_keeps_the_last(tmp_path: Path) -> None:
    calls = []

    @profile(str(tmp_path / "p"))
    def step(times: int) -> int:
        run_tiny(times)
        calls.append(times)
        return times

    assert step(3) == 3 and step(1) == 1
    prof = getattr(step, "__profiler__")
    prof.dump()
    data = timeline(tmp_path / "p")
    stream_tids = {e["tid"] for e in data["traceEvents"]
                   if e["name"] == "thread_name" and "Stream" in e["args"]["name"]}
    assert sum(1 for e in data["traceEvents"] if e["ph"] == "X" and e["tid"] in stream_tids) \
        == OPS, "only the last entry's profile is written, as in MegEngine"
    assert calls == [3, 1]


def test_bare_decorator_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    @profile
    def once() -> None:
        run_tiny()

    once()
    getattr(once, "__profiler__").dump()
    assert (tmp_path / "profile" / f"{os.getpid()}.chrome_timeline.json").exists()
    assert (tmp_path / "profile" / f"{os.getpid()}.aclprof").is_dir()


def test_profile_is_the_profiler_class() -> None:
    assert profile is Profiler
    p = profile()
    assert isinstance(p, profile) and isinstance(p, Profiler)

    class Mine(profile):  # type: ignore[misc,valid-type]
        pass

    assert isinstance(Mine("x"), Profiler) and Mine("x").directory == "x"


def test_megengine_validation(tmp_path: Path) -> None:
    # MegEngine asserts; these are errors of their kind that are AssertionErrors too.
    with pytest.raises(ValueError, match="unsupported format") as bad_format:
        Profiler(format="timeline.txt")
    with pytest.raises(TypeError, match="formats excepts list") as bad_formats:
        Profiler(formats="chrome_timeline.json")  # type: ignore[arg-type]
    assert isinstance(bad_format.value, AssertionError)
    assert isinstance(bad_formats.value, AssertionError)
    p = Profiler(str(tmp_path), sample_rate="3", profile_device=False, unknown=1)
    assert p.options == {"sample_rate": 3, "profile_device": 0, "num_tensor_watch": 10,
                         "enable_cupti": 0}
    assert p.path == str(tmp_path / "<PID>.chrome_timeline.json")
    with pytest.raises(RuntimeError, match="not running"):
        p.stop()
    with pytest.raises(RuntimeError, match="no Profiler is running"):
        p.step()
    p.start()
    try:
        p.step()
        with pytest.raises(RuntimeError, match="running already") as twice:
            Profiler().start()  # one profiler at a time
        assert isinstance(twice.value, AssertionError)
        with pytest.raises(RuntimeError, match="not running"):
            Profiler().stop()
    finally:
        p.stop()


def test_megengine_checks_survive_python_O(tmp_path: Path) -> None:
    """The checks are not asserts: ``python -O`` keeps them."""
    script = (
        "import sys\n"
        "from aclprof.megengine import Profiler\n"
        "assert False, 'asserts run: not under -O'\n"
        "for call in (lambda: Profiler(format='timeline.txt'),\n"
        "             lambda: Profiler(formats='chrome_timeline.json'),\n"
        "             lambda: Profiler(sys.argv[1]).stop(),\n"
        "             lambda: Profiler(sys.argv[1]).step()):\n"
        "    try:\n"
        "        call()\n"
        "    except AssertionError as e:\n"
        "        print(type(e).__name__, e)\n"
    )
    r = subprocess.run([sys.executable, "-O", "-c", script, str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "FormatValueError unsupported format timeline.txt",
        "FormatTypeError formats excepts list, got str",
        "ProfilerStateError this Profiler is not running",
        "ProfilerStateError no Profiler is running",
    ]


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aclprof.profile_analyze", *args],
                          capture_output=True, text=True)


def test_profile_analyze_with_megengines_options(tmp_path: Path) -> None:
    profiler = Profiler(str(tmp_path))
    with profiler:
        run_tiny(4)
    profiler.dump()
    dump = str(tmp_path / f"{os.getpid()}.chrome_timeline.json")
    types = sorted({op["type"] for op in model_ops(TINY)})

    r = analyze(dump, "-t", "5", "--aggregate-by", "type", "--aggregate", "sum")
    assert r.returncode == 0, r.stderr
    assert "total device time" in r.stdout and "total host time" in r.stdout
    for t in types[:5]:
        assert t in r.stdout

    r = analyze(dump, "-t", "0", "--type", types[0], "--order-by", "+time", "--min-time", "1e-9")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if f" {types[0]} " in f" {line} "]
    assert len(rows) == 4 * sum(1 for op in model_ops(TINY) if op["type"] == types[0])

    r = analyze(dump, "--aggregate-by", "type")
    assert r.returncode == 2 and "must specify aggregate op" in r.stderr
    r = analyze(dump, "--aggregate", "max", "--print-only", "device")
    assert r.returncode == 0 and r.stdout.splitlines()[-1].split()[0:2] == ["all", str(4 * OPS)]
    r = analyze(str(tmp_path / "nothing.json"))
    assert r.returncode != 0


def test_megengines_memory_example_with_shapes_and_cost(tmp_path: Path) -> None:
    """MegEngine's documented example: the 5 ConvolutionForward ops of at least 0.1 ms with
    the most memory, with its computation, FLOPS, memory, bandwidth and shape columns."""
    ops = []
    for i, (us, mem) in enumerate([(150, 4000), (90, 9000), (200, 1000), (120, 8000),
                                   (300, 2000), (110, 6000), (130, 5000), (100, 7000)]):
        ops.append({"name": f"conv{i}", "type": "ConvolutionForward", "duration_us": us,
                    "input_shapes": f"1,{i + 1},8,8;4,{i + 1},3,3", "output_shapes": "1,4,6,6",
                    "input_types": "FLOAT32;FLOAT32", "flops": 1000 * (i + 1), "bytes": mem})
    ops.append({"name": "relu", "type": "Relu", "duration_us": 500, "bytes": 99999})
    desc = tmp_path / "convs.json"
    desc.write_text(json.dumps({"name": "convs", "ops": ops}))
    profiler = Profiler(str(tmp_path))
    with profiler:
        with aclprof.Model.simulate(desc) as model:
            model.execute()
    profiler.dump()
    dump = str(tmp_path / f"{os.getpid()}.chrome_timeline.json")

    r = analyze(dump, "-t", "5", "--order-by", "memory", "--min-time", "1e-4",
                "--type", "ConvolutionForward")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(line for line in lines if line.startswith("Name"))
    for col in ("Computation(FLOPs)", "FLOPS(G/s)", "Memory(bytes)", "Bandwidth(GB/s)",
                "Input Shapes", "Output Shapes"):
        assert col in head, head
    rows = [line.split() for line in lines if line.startswith("conv")]
    # conv1 (90 us) is shorter than 0.1 ms; the rest by memory, largest first.
    assert [row[0] for row in rows] == ["conv3", "conv7", "conv5", "conv6", "conv0"]
    conv7 = rows[1]
    assert "7000" in conv7 and "8000" in conv7 and "1,8,8,8;4,8,3,3" in conv7, conv7
    # 7000 bytes in 100 us is 0.07 GB/s; 8000 FLOPs in 100 us 0.08 GFLOPS.
    assert "0.070" in conv7 and "0.080" in conv7, conv7

    rows_json = aclprof.analyze(result_dir_of(dump), top=0, aggregate_by="name+shape",
                                order_by="+memory", input_dtype="float32")
    assert [r["Name"] for r in rows_json][:2] == ["conv2", "conv4"]
    assert len(rows_json) == 8, "relu has no float32 input"
    r = analyze(dump, "--input-dtype", "float32", "-t", "0")
    assert r.returncode == 0 and sum(1 for line in r.stdout.splitlines()
                                     if line.startswith("conv")) == 8


def result_dir_of(dump: str) -> str:
    from aclprof.profile_analyze import result_path
    return str(result_path(dump))


MEMORY_MODEL = TINY.parent / "memory_model.json"


def test_memory_flow_and_the_sampled_allocation_counter(tmp_path: Path) -> None:
    """memory_model.json's ops need known memory (conv1: 1 MB workspace and 392 KB out;
    relu1: 392 KB; fc: 4000 bytes): memory_flow.svg has a rectangle per allocation with
    MegEngine's attributes, and sample_rate=1 gives every op the allocated bytes then."""
    out = tmp_path / "profile"
    p = Profiler(str(out), formats=["chrome_timeline.json", "memory_flow.svg"], sample_rate=1)
    with p:
        with aclprof.Model.simulate(MEMORY_MODEL) as model:
            model.execute(2)
    p.dump()
    svg = (out / f"{os.getpid()}.memory_flow.svg").read_text()
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    tag = "{https://megengine.org.cn}"
    rects = root.findall("{http://www.w3.org/2000/svg}rect")
    assert [r.get(tag + "name") for r in rects[:4]] == ["conv1", "conv1", "relu1", "fc"]
    assert len(rects) == 8
    sizes = sorted({int(r.get(tag + "size")) for r in rects})
    assert sizes == [4000, 64 * 56 * 56 * 2, 1024 * 1024]
    # 1 px = 1e6 bytes: the 1 MB workspace is 1.048576 px tall; 1 px = 100 us: its 20 us
    # of life are 0.2 px wide.
    ws = next(r for r in rects if int(r.get(tag + "size")) == 1024 * 1024)
    assert float(ws.get("height")) == pytest.approx(1.048576, abs=1e-3)
    assert float(ws.get("width")) == pytest.approx(0.2, abs=1e-3)
    assert all(r.get(tag + "erased") for r in rects), "everything is released"
    data = timeline(out)
    counters = [e for e in data["traceEvents"] if e["ph"] == "C"]
    assert [e["name"] for e in counters] == ["npu0_alloc_mem"] * 6
    # conv1 starts with nothing allocated before it; relu1 starts as conv1's workspace and
    # output are allocated... in time order: at relu1's start, conv1's output is held.
    values = [e["args"]["value"] for e in counters[:3]]
    assert values == [1024 * 1024 + 64 * 56 * 56 * 2, 2 * 64 * 56 * 56 * 2, 64 * 56 * 56 * 2 + 4000]
