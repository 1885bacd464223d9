#!/usr/bin/env python3
"""Runs every code block of the documentation, so a snippet that stops working fails the tests.

Scans README.md, python/README.md and docs/*.md. Every fenced block must name its language:

- ``sh``: run with ``sh -eu`` from the repository root, with HOME set to a scratch
  directory (so ``$HOME/.local`` installs stay inside the test);
- ``c``: compiled with gcc against include/ and the library (scripts/build-lib), then run
  from the repository root;
- ``python``: run with the Python of .venv (scripts/py-test installs the package there), or,
  for a block that uses PyTorch or ONNX Runtime, of target/bridges-venv (scripts/test-bridges
  installs the package with those extras there);
- ``text``: output or a diagram, not run.

A snippet that is only a fragment gets its hidden context from HTML comments written right
around it in the Markdown source (invisible when rendered), like rustdoc's hidden lines::

    <!-- prelude
    #include "acl/acl_prof.h"
    int main(void) {
    -->
    ```c
    ...the visible fragment...
    ```
    <!-- epilogue
    return 0; }
    -->

``<!-- skip: REASON -->`` right before a block leaves it out, with the reason printed; use it
only for what cannot run in a test (a command that runs for twenty minutes).

Usage: tools/run_snippets.py [FILE...]     (exit 1 if any snippet fails)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Union

ROOT = Path(__file__).resolve().parent.parent
BRIDGES = re.compile(r"^\s*(import|from)\s+(torch|torchvision|onnx|onnxruntime|aclprof\.torch|"
                     r"aclprof\.onnxruntime)\b", re.M)
LANGUAGES = {"sh", "c", "python", "text"}
FENCE = re.compile(r"^```(\S*)\s*$")
COMMENT = re.compile(r"<!--\s*(prelude|epilogue|skip:)(.*?)-->\s*$", re.S)


@dataclass
class Snippet:
    path: Path
    line: int
    lang: str
    code: str
    prelude: str = ""
    epilogue: str = ""
    skip: Optional[str] = None

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def parse(path: Path) -> List[Snippet]:
    lines = path.read_text().splitlines(keepends=True)
    out: List[Snippet] = []
    i = 0
    pending_prelude, pending_skip = "", None
    while i < len(lines):
        line = lines[i]
        if line.startswith("<!--"):
            j = i
            while "-->" not in lines[j]:
                j += 1
            m = COMMENT.match("".join(lines[i : j + 1]).strip())
            if m and m.group(1) == "prelude":
                pending_prelude = m.group(2).lstrip("\n")
            elif m and m.group(1) == "epilogue":
                if not out:
                    raise SystemExit(f"{path}:{i + 1}: an epilogue with no snippet before it")
                out[-1].epilogue = m.group(2).lstrip("\n")
            elif m:
                pending_skip = m.group(2).strip()
            i = j + 1
            continue
        m = FENCE.match(line)
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        if lang not in LANGUAGES:
            raise SystemExit(
                f"{path}:{start}: a code block must name one of {sorted(LANGUAGES)} (got {lang!r})"
            )
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        out.append(Snippet(path, start, lang, "".join(lines[i + 1 : j]), pending_prelude,
                           skip=pending_skip))
        pending_prelude, pending_skip = "", None
        i = j + 1
    return out


def run(cmd: List[str], scratch: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    # ACLPROF_RUNNING_TESTS: a block that runs scripts/test finds it already running.
    env = dict(os.environ, HOME=str(scratch), ACLPROF_RUNNING_TESTS="1")
    # The toolchain stays where the real home has it.
    home = Path.home()
    env.setdefault("RUSTUP_HOME", os.environ.get("RUSTUP_HOME", str(home / ".rustup")))
    env.setdefault("CARGO_HOME", os.environ.get("CARGO_HOME", str(home / ".cargo")))
    env.pop("ACLPROF_LOG", None)
    return subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=900, **kw)  # type: ignore[call-overload]


def execute(s: Snippet, scratch: Path, lib_dir: Path) -> subprocess.CompletedProcess[str]:
    source = s.prelude + s.code + s.epilogue
    if s.lang == "sh":
        return run(["sh", "-euc", source], scratch)
    if s.lang == "python":
        venv = "target/bridges-venv" if BRIDGES.search(source) else ".venv"
        # As a user runs it: a script file (a block that starts processes must guard its
        # main code, which `python -c` would not show).
        script = scratch / "snippet.py"
        script.write_text(source)
        return run([str(ROOT / venv / "bin" / "python"), str(script)], scratch)
    exe = scratch / "snippet"
    (scratch / "snippet.c").write_text(source)
    built = run(["gcc", "-std=gnu99", "-Wall", "-Werror", "-I", str(ROOT / "include"), "-o",
                 str(exe), str(scratch / "snippet.c"), "-L", str(lib_dir), "-laclprof",
                 "-lpthread", f"-Wl,-rpath,{lib_dir}"], scratch)
    return built if built.returncode != 0 else run([str(exe)], scratch)


def _text(output: Union[str, bytes, None]) -> str:
    """What a timed-out run had written (bytes or str, by when the timeout hit)."""
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def main() -> int:
    files = [Path(a).resolve() for a in sys.argv[1:]] or [
        ROOT / "README.md", ROOT / "python" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    snippets = [s for f in files for s in parse(f)]
    lib_dir = Path(subprocess.run([str(ROOT / "scripts" / "build-lib")], cwd=ROOT, check=True,
                                  text=True, capture_output=True).stdout.strip())
    failed = 0
    for s in snippets:
        if s.lang == "text":
            continue
        if s.skip is not None:
            print(f"skip {s.where()}: {s.skip}")
            continue
        scratch = Path(tempfile.mkdtemp(prefix="aclprof-snippet-"))
        try:
            r = execute(s, scratch, lib_dir)
        except subprocess.TimeoutExpired as e:  # a failure like any other: go on with the rest
            r = subprocess.CompletedProcess(e.cmd, -1, _text(e.stdout),
                                            _text(e.stderr) + f"\n(timed out after {e.timeout} s)")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        ok = r.returncode == 0
        print(("ok   " if ok else "FAIL ") + f"{s.where()} ({s.lang})", flush=True)
        if not ok:
            failed += 1
            print(f"--- exit {r.returncode}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n"
                  f"{r.stderr[-3000:]}")
    print(f"\n{len(snippets)} code blocks, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
