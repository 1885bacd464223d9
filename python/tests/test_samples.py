"""CANN's two official pyACL profiling samples (python/examples), run as scripts the way a
user runs them, with only the model path changed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import acl
from conftest import REPO, RESNET50, model_ops

EXAMPLES = REPO / "python" / "examples"

OP_LINE = re.compile(
    r"op model_id=(\d+) type=(\S+) name=(\S+) start=(\d+) end=(\d+) duration=(\d+)$"
)


def run_sample(name: str, cwd) -> subprocess.CompletedProcess:
    """Runs a sample as a script, importing the same ``acl`` as these tests."""
    site = str(Path(acl.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])))
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_subscription_sample(tmp_path):
    proc = run_sample("sample_subscribe.py", tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    loaded = re.fullmatch(r"load model success, model_id = (\d+)", lines[0])
    assert loaded, lines[0]
    assert lines[-1] == "subscription sample finished"

    ops = [OP_LINE.match(line) for line in lines[1:-1]]
    assert all(ops), [line for line, m in zip(lines[1:-1], ops) if not m][:3]
    expected = model_ops(RESNET50)
    assert len(ops) == len(expected) == 125
    prev_end = 0
    for m, op in zip(ops, expected):
        model_id, op_type, name, start, end, duration = m.groups()
        assert int(model_id) == int(loaded.group(1))
        assert (op_type, name) == (op["type"], op["name"])
        assert int(duration) == round(op["duration_us"] * 1000)
        assert int(end) - int(start) == int(duration)
        assert int(start) > prev_end  # in order, each after the previous one's wait
        prev_end = int(end)


def test_file_mode_sample(tmp_path):
    proc = run_sample("sample_file_mode.py", tmp_path)
    assert proc.returncode == 0, proc.stderr
    handle = re.search(r"create_config returned 0x([0-9a-f]+)", proc.stdout)
    assert handle and int(handle.group(1), 16) != 0
    assert f"results under {tmp_path / 'prof_output'}" in proc.stdout
    assert (tmp_path / "prof_output").is_dir()  # aclprof.init created it
