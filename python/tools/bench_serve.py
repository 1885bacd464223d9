"""Scrape latency of ``aclprof top PID --serve``: a Python program runs a simulated
ResNet-50 in a loop while the exporter watches it; a client scrapes ``/metrics`` 50 times
with nothing else connected, then 50 times while another client holds open connections
(half idle, half with a request head begun and never finished). Prints the medians and the
95th percentiles, in milliseconds.

Usage: python bench_serve.py [HELD]   (default 6000 connections; the open-file limit is
raised to the hard limit)
"""

import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import List

REPO = Path(__file__).resolve().parents[2]
RESNET50 = REPO / "models" / "resnet50.json"


def aclprof_command() -> str:
    built = REPO / "target" / "release" / "aclprof"
    return str(built if built.exists() else Path(sys.executable).with_name("aclprof"))


def scrape(host: str, port: int) -> float:
    t = time.perf_counter()
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    if not data.startswith(b"HTTP/1.0 200") and not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"scrape failed: {data[:80]!r}")
    return (time.perf_counter() - t) * 1000


def summary(ms: List[float]) -> str:
    ms = sorted(ms)
    return f"median {statistics.median(ms):.2f} ms, p95 {ms[int(len(ms) * 0.95) - 1]:.2f} ms"


def main() -> None:
    held_n = int(sys.argv[1]) if len(sys.argv) > 1 else 6000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held_n = min(held_n, hard - 256)
    tmp = Path(tempfile.mkdtemp(prefix="aclprof-bench-serve-"))
    sockets = tmp / "sockets"
    sockets.mkdir(mode=0o700)
    stop = tmp / "STOP"
    script = textwrap.dedent(f"""
        import os, time, aclprof
        with aclprof.Model.simulate({str(RESNET50)!r}) as model:
            while not os.path.exists({str(stop)!r}):
                model.execute()
                time.sleep(0.01)
        """)
    env = dict(os.environ, ACLPROF_WATCH_DIR=str(sockets))
    program = subprocess.Popen([sys.executable, "-c", script], env=env)
    exporter = None
    try:
        while not (sockets / f"{program.pid}.agent").exists():
            time.sleep(0.01)
        exporter = subprocess.Popen(
            [aclprof_command(), "top", str(program.pid), "--serve", "127.0.0.1:0"],
            env=env, stderr=subprocess.PIPE, text=True)
        assert exporter.stderr is not None
        line = exporter.stderr.readline()
        addr = line.strip().rsplit("http://", 1)[1].removesuffix("/metrics")
        host, port = addr.rsplit(":", 1)
        quiet = [scrape(host, int(port)) for _ in range(50)]
        held = []
        for i in range(held_n):
            c = socket.create_connection((host, int(port)))
            if i % 2:
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(c)
        loaded = [scrape(host, int(port)) for _ in range(50)]
        for c in held:
            c.close()
        print(f"scrape, nothing else connected: {summary(quiet)}")
        print(f"scrape, {len(held)} connections held (half idle, half half-sent): "
              f"{summary(loaded)}")
    finally:
        stop.touch()
        if exporter is not None:
            exporter.kill()
            exporter.wait()
        program.wait(timeout=60)


if __name__ == "__main__":
    main()
