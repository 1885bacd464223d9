"""The bridges' overhead. PyTorch: a torchvision ResNet-18 (random weights) on CPU, wall time
of N forward passes without profiling, under aclprof.torch (nobody subscribed, and with a pipe
subscription reading every op), and under torch.profiler (CPU activity, events read back),
the other mechanism the bridge could have used; then the same rows for the Python dispatch
mode, the bridge's fallback where no C++ compiler is found. ONNX Runtime: the same ResNet-18 exported to
ONNX, N runs of a plain session against aclprof.onnxruntime's (ORT's profiler on, every node
reported at the end). Run: scripts/test-bridges --bench."""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List

import torch
import torchvision

import aclprof
import aclprof.torch


def timed(run: Callable[[], None], rounds: int) -> float:
    walls: List[float] = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def interleaved(runs: Dict[str, Callable[[], None]], rounds: int) -> Dict[str, float]:
    """Median wall time of each run, the runs taking turns round after round, so that the
    machine's drift (this guest's is several %) falls on all of them alike."""
    walls: Dict[str, List[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for label, run in runs.items():
            t0 = time.perf_counter()
            run()
            walls[label].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in walls.items()}


def main() -> None:
    passes = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    fallback = os.environ.get("ACLPROF_TORCH_CPP") == "0"
    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)

    def forward() -> None:
        with torch.no_grad():
            for _ in range(passes):
                net(x)

    forward()  # warm up kernels and allocator
    prof = aclprof.torch.profile(net, name="resnet18")
    with aclprof.Subscription(prof.model_id), prof:  # (nothing is reported unheard)
        forward()
    ops = prof.ops // passes
    plain = aclprof.torch.profile(net, name="resnet18-noshapes", record_shapes=False)

    def bridged() -> None:
        with prof:
            forward()

    def bridged_no_shapes() -> None:
        with plain:
            forward()

    def subscribed() -> None:
        with aclprof.Subscription(prof.model_id), prof:
            forward()

    def subscribed_no_shapes() -> None:
        with aclprof.Subscription(plain.model_id), plain:
            forward()

    def torch_profiler() -> None:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
            forward()
        sum(1 for _ in p.events())

    runs: Dict[str, Callable[[], None]] = {
        "no profiling": forward,
        "aclprof.torch, nobody subscribed": bridged,
        "  the same, record_shapes=False": bridged_no_shapes,
        "aclprof.torch, pipe subscription": subscribed,
        "  the same, record_shapes=False ": subscribed_no_shapes,
    }
    if not fallback:
        runs["torch.profiler (CPU), events read"] = torch_profiler
    walls = interleaved(runs, rounds)
    base = walls.pop("no profiling")
    how = ("the Python dispatch mode (ACLPROF_TORCH_CPP=0)" if fallback
           else "the compiled RecordFunction path")
    print(f"ResNet-18, batch 1, 224x224, CPU ({torch.get_num_threads()} threads), {how}: "
          f"{ops} ATen ops per forward, {passes} forwards, median of {rounds} interleaved rounds")
    print(f"  {'no profiling':36s} {base / passes * 1e3:8.2f} ms/forward")
    for label, wall in walls.items():
        extra = (wall - base) / passes
        print(f"  {label.rstrip():36s} {wall / passes * 1e3:8.2f} ms/forward  "
              f"{extra / base * passes * 100:+6.1f} %  {extra / ops * 1e6:6.2f} us/op")
    prof.close()
    plain.close()
    if fallback:
        return
    sys.stdout.flush()
    # The fallback's rows, from a process that never loads the compiled path.
    subprocess.run([sys.executable, *sys.argv], env=dict(os.environ, ACLPROF_TORCH_CPP="0"),
                   check=True)
    onnxruntime_overhead(net, x, passes, rounds)


def onnxruntime_overhead(net: torch.nn.Module, x: torch.Tensor, passes: int, rounds: int) -> None:
    import onnxruntime as ort

    import aclprof.onnxruntime

    buf = io.BytesIO()
    torch.onnx.export(net, (x,), buf, input_names=["x"], dynamo=False)
    model = buf.getvalue()
    feed = {"x": x.numpy()}
    plain = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    plain.run(None, feed)
    nodes = 0

    def without() -> None:
        for _ in range(passes):
            plain.run(None, feed)

    def bridged() -> None:
        nonlocal nodes
        with aclprof.onnxruntime.InferenceSession(model, name="resnet18-ort",
                                                  providers=["CPUExecutionProvider"]) as s:
            s.run(None, feed)  # warm, as the plain session is
            t0 = time.perf_counter()
            for _ in range(passes):
                s.run(None, feed)
            ran = time.perf_counter() - t0
        nodes = s.ops // (passes + 1)
        walls.append(ran)
        ends.append(time.perf_counter() - t0 - ran)

    walls: List[float] = []
    ends: List[float] = []
    base = timed(without, rounds)
    for _ in range(rounds):
        bridged()
    run, end = statistics.median(walls), statistics.median(ends)
    print(f"ResNet-18 in ONNX Runtime {ort.__version__} (CPU): {nodes} nodes per run, "
          f"{passes} runs, median of {rounds} rounds")
    print(f"  {'no profiling':36s} {base / passes * 1e3:8.2f} ms/run")
    print(f"  {'aclprof.onnxruntime, runs':36s} {run / passes * 1e3:8.2f} ms/run  "
          f"+{(run - base) / base * 100:5.1f} %  {(run - base) / passes / nodes * 1e6:6.2f} us/node")
    print(f"  {'  then reporting at the end':36s} {end * 1e3:8.2f} ms  "
          f"{end / ((passes + 1) * nodes) * 1e6:6.2f} us/node")


if __name__ == "__main__":
    main()
