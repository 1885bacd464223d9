"""Finds and loads the aclprof shared library, once, with every function's types set.

Search order (the first that exists wins):

1. ``$ACLPROF_LIB``: an explicit path to ``libaclprof.so`` (an error if it does not exist);
2. the copy bundled into the installed package by ``pip install`` (``aclprof/_native/``);
3. the build output of the repository this package was imported from: ``target/release``
   then ``target/debug`` (or ``$CARGO_TARGET_DIR``), for running from a source checkout.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Iterable, List, Mapping, Optional

from . import _bindings
from ._bindings import Library

LIBRARY_NAME = "libaclprof.so"
PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLED = PACKAGE_DIR / "_native" / LIBRARY_NAME

_lock = threading.Lock()
_lib: Optional[Library] = None


class LibraryNotFound(OSError):
    """No aclprof shared library was found (see the module docstring for where we look)."""


def candidates(
    env: Optional[Mapping[str, str]] = None, package_dir: Path = PACKAGE_DIR
) -> List[Path]:
    """Where the library is looked for, in order, ``$ACLPROF_LIB`` excluded."""
    env = os.environ if env is None else env
    out = [package_dir / "_native" / LIBRARY_NAME]
    repo = package_dir.parent.parent  # <repo>/python/aclprof -> <repo>
    target_dirs = []
    if env.get("CARGO_TARGET_DIR"):
        target_dirs.append(Path(env["CARGO_TARGET_DIR"]))
    target_dirs.append(repo / "target")
    for target in target_dirs:
        out += [target / profile / LIBRARY_NAME for profile in ("release", "debug")]
    return out


def find_library(
    env: Optional[Mapping[str, str]] = None, package_dir: Path = PACKAGE_DIR
) -> Path:
    """The path of the library to load; raises LibraryNotFound naming every place tried."""
    env = os.environ if env is None else env
    explicit = env.get("ACLPROF_LIB")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise LibraryNotFound(f"ACLPROF_LIB={explicit} does not name a file")
        return path
    tried: Iterable[Path] = candidates(env, package_dir)
    for path in tried:
        if path.is_file():
            return path
    raise LibraryNotFound(
        "the aclprof shared library was not found; build it with `cargo build --release` "
        "and reinstall the package (`pip install ./python`), or set ACLPROF_LIB. Tried: "
        + ", ".join(str(p) for p in tried)
    )


def load() -> Library:
    """The loaded library, with restype/argtypes set for every function in the headers
    (a ``ctypes.CDLL``; its static type, :class:`aclprof._bindings.Library`, declares them)."""
    global _lib
    with _lock:
        if _lib is None:
            path = find_library()
            lib = ctypes.CDLL(str(path))
            missing = [name for name in _bindings.FUNCTIONS if not hasattr(lib, name)]
            if missing:
                raise OSError(
                    f"{path} does not export {', '.join(missing)}, which the headers declare: "
                    "the library is older than this package; rebuild it (cargo build --release) "
                    "and reinstall the package"
                )
            bound = _bindings.bind(lib)
            setattr(bound, "path", path)
            _lib = _bindings.typed(bound)
            _answer_watchers(_lib)
        return _lib


def _answer_watchers(lib: Library) -> None:
    """``aclprof top`` and ``aclprof capture`` ask a process to be watched with SIGURG; the
    library answers at the process's next call into it. A Python program may sit in
    ``time.sleep`` or an event loop for long, so Python's own handler (which runs in the
    main thread even while it sleeps) answers at once. Only from the main thread, and only
    when the program has no SIGURG handler of its own; ``ACLPROF_WATCH=0`` leaves it off."""
    import signal

    if os.environ.get("ACLPROF_WATCH", "").strip() == "0":
        return
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGURG) not in (signal.SIG_DFL, None):
        return

    def answer(signum: int, frame: object) -> None:
        lib.aclprofExtWatchAnswer()

    try:
        signal.signal(signal.SIGURG, answer)
    except (ValueError, OSError):
        pass


def recent_error() -> str:
    """``aclGetRecentErrMsg()``: why the last failing call on this thread failed."""
    msg = load().aclGetRecentErrMsg()
    return msg.decode("utf-8", "replace") if msg else ""
