"""``aclprof top`` on a running Python program: the view agrees with the ops the program
ran while it watched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import REPO, RESNET50, model_ops


def aclprof_command() -> str:
    """The checkout's build of the command line (pip builds it there), else the one
    installed beside this Python."""
    built = REPO / "target" / "release" / "aclprof"
    return str(built if built.exists() else Path(sys.executable).with_name("aclprof"))


def wait_for(p: Path, secs: float = 30.0) -> None:
    deadline = time.monotonic() + secs
    while not p.exists():
        assert time.monotonic() < deadline, f"{p} never appeared"
        time.sleep(0.005)


def test_top_watches_a_python_program(tmp_path: Path) -> None:
    sockets = tmp_path / "sockets"
    sockets.mkdir(mode=0o700)
    work = tmp_path / "work"
    work.mkdir()
    script = textwrap.dedent(
        f"""
        import os, time, aclprof
        work = {str(work)!r}
        def wait(name):
            while not os.path.exists(os.path.join(work, name)):
                time.sleep(0.005)
        with aclprof.Model.simulate({str(RESNET50)!r}) as model:
            open(os.path.join(work, "READY"), "w").close()
            wait("GO")
            model.execute(times=3)
            open(os.path.join(work, "DONE"), "w").close()
            wait("STOP")
        """
    )
    env = dict(os.environ, ACLPROF_WATCH_DIR=str(sockets))
    program = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        wait_for(work / "READY")
        wait_for(sockets / f"{program.pid}.agent")
        listed = subprocess.run([aclprof_command(), "top"], env=env, capture_output=True,
                                text=True, check=True).stdout
        assert str(program.pid) in listed and "aclprof.Model.simulate" in listed
        viewer = subprocess.Popen(
            [aclprof_command(), "top", str(program.pid), "--once", "--format", "json",
             "--duration", "10"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert viewer.stderr is not None
        assert viewer.stderr.readline().startswith(f"aclprof: watching process {program.pid}")
        (work / "GO").touch()
        wait_for(work / "DONE")
        out, _ = viewer.communicate(timeout=30)
        assert viewer.returncode == 0
        view = json.loads(out)
        ops = model_ops(RESNET50)
        assert view["ops"] == 3 * len(ops) and view["dropped"] == 0
        want = {}
        for op in ops:
            want[op["type"]] = want.get(op["type"], 0) + 3
        assert {t["type"]: t["count"] for t in view["types"]} == want
    finally:
        (work / "GO").touch()
        (work / "STOP").touch()
        assert program.wait(timeout=30) == 0
