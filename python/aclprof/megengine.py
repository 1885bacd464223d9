"""MegEngine's profiler API (``megengine.utils.profiler``) over aclprof's file mode. A script
changes its import only::

    from aclprof.megengine import Profiler, profile   # was: from megengine.utils.profiler import ...

    @profile()                      # each call of train_step is profiled on its own
    def train_step(data): ...

    profiler = Profiler("./profile")
    with profiler:                  # as in MegEngine, the block binds nothing (``as p`` is None)
        model.execute()

Each entry (``with``, a call of the decorated function, ``start()``) is one profiling: one
aclprof file-mode session over every device. As in MegEngine, the results of the last entry
are written when the profiler is dumped: by :meth:`Profiler.dump`, when the profiler is
destroyed, or at interpreter exit, to ``{path}/{pid}.chrome_timeline.json`` (a Chrome/Perfetto
trace, microseconds from the profile start). The aclprof result directory it was made from
stays beside it, in ``{path}/{pid}.aclprof/``, and ``python -m aclprof.profile_analyze`` reads
either. ``memory_flow.svg`` draws the operators' device memory as MegEngine draws its
tensors (x: time, 1 px = 100 µs; y: address, 1 px = 1 MB; one rectangle per allocation, grey
by lifetime, with its name, address, size, produced, erased and duration as ``tag:``
attributes); ``sample_rate=N`` adds every N-th op's ``npu<d>_alloc_mem`` counter (bytes
allocated then) to the timeline. Both turn on ``ACL_PROF_TASK_MEMORY``.
"""

from __future__ import annotations

import atexit
import contextlib
import html
import json
import logging
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from . import _bindings, _common
from .profiler import Analysis, Profiler as _FileMode
from .runtime import device_count

__all__ = ["Profiler", "profile"]

_log = logging.getLogger("aclprof.megengine")
_F = TypeVar("_F", bound=Callable[..., Any])

_running: Optional["Profiler"] = None
_living: "weakref.WeakSet[Profiler]" = weakref.WeakSet()


# MegEngine checks its arguments and its state with ``assert``, which ``python -O`` removes.
# Here the checks stay, and each raises an error of its kind that is also an AssertionError,
# what MegEngine raises: a script catching either catches it.


class ProfilerStateError(RuntimeError, AssertionError):
    """A :class:`Profiler` started while one is running, or stopped (or stepped) while it
    is not."""


class FormatTypeError(TypeError, AssertionError):
    """``formats`` is a str, not a list of formats."""


class FormatValueError(ValueError, AssertionError):
    """A format that is not in :attr:`Profiler.valid_formats`."""


class Profiler(contextlib.ContextDecorator):
    """``megengine.utils.profiler.Profiler``: ``path`` is the output directory (made when
    dumping), ``format``/``formats`` what to write there. MegEngine's options
    (``sample_rate``, ``profile_device``, ``num_tensor_watch``, ``enable_cupti``) are kept as
    ints in :attr:`options`; other keyword arguments are ignored, as in MegEngine."""

    CHROME_TIMELINE = "chrome_timeline.json"
    MEMORY_FLOW = "memory_flow.svg"
    valid_options = {"sample_rate": 0, "profile_device": 1, "num_tensor_watch": 10,
                     "enable_cupti": 0}
    valid_formats = {"chrome_timeline.json", "memory_flow.svg"}

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # ``@profile`` without parentheses: ``profile`` is this class (MegEngine's alias),
        # so a bare use receives the function; profile it with the defaults.
        if len(args) == 1 and not kwargs and callable(args[0]):
            return cls()(args[0])
        return super().__new__(cls)

    def __init__(self, path: str = "profile", format: str = "chrome_timeline.json",
                 formats: Optional[Sequence[str]] = None, with_backtrace: bool = False,
                 with_scopes: bool = False, **kwargs: Any) -> None:
        if not formats:
            formats = [format]
        if isinstance(formats, str):
            raise FormatTypeError("formats excepts list, got str")
        for fmt in formats:
            if fmt not in Profiler.valid_formats:
                raise FormatValueError("unsupported format {}".format(fmt))
        self._path = path
        self._formats = list(formats)
        self.options: Dict[str, int] = {
            opt: int(kwargs.pop(opt, default)) for opt, default in Profiler.valid_options.items()
        }
        self.with_backtrace = with_backtrace
        self.with_scopes = with_scopes
        self._pid: Any = "<PID>"
        self._session: Optional[_FileMode] = None
        self._staging: Optional[str] = None
        # The result directory of the last finished entry, not yet dumped.
        self._result: Optional[Path] = None

    @property
    def path(self) -> str:
        fmt = self._formats[0] if len(self._formats) == 1 else (
            "{" + ",".join(self._formats) + "}" if self._formats else "<FORMAT>")
        return self.format_path(self._path, self._pid, fmt)

    @property
    def directory(self) -> str:
        return self._path

    @property
    def formats(self) -> List[str]:
        return list(self._formats)

    @staticmethod
    def format_path(path: str, pid: Any, format: str) -> str:
        return os.path.join(path, "{}.{}".format(pid, format))

    def start(self) -> "Profiler":
        global _running
        if _running is not None:
            raise ProfilerStateError("a Profiler is running already: stop it first")
        staging = tempfile.mkdtemp(prefix="aclprof-megengine-")
        try:
            types = _bindings.ACL_PROF_ACL_API | _bindings.ACL_PROF_TASK_TIME
            if self.MEMORY_FLOW in self._formats or self.options["sample_rate"] > 0:
                types |= _bindings.ACL_PROF_TASK_MEMORY
            # MegEngine: all of the devices.
            session = _FileMode(staging, devices=range(device_count()), data_types=types)
            session.start()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._staging = staging
        _running = self
        self._session = session
        self._pid = os.getpid()
        return self

    def stop(self) -> None:
        global _running
        if _running is not self or self._session is None:
            raise ProfilerStateError("this Profiler is not running")
        _running = None
        session, self._session = self._session, None
        try:
            session.stop()
        finally:
            found = session.analyse(print_summary=False).result_dirs
            if self._result is not None:  # an earlier entry never dumped: replaced
                shutil.rmtree(self._result.parent, ignore_errors=True)
            self._result = found[-1] if found else None
            if not found:
                shutil.rmtree(session.output_dir, ignore_errors=True)
            self._pid = os.getpid()
            _living.add(self)

    def step(self) -> None:
        if _running is None:
            raise ProfilerStateError("no Profiler is running")

    def dump(self) -> None:
        """Writes the last entry's results to ``{path}/{pid}.{format}``."""
        result = self._result
        if result is None:
            return
        if not os.path.exists(self._path):
            os.makedirs(self._path)
        if not os.path.isdir(self._path):
            _log.warning("%s is not a directory, cannot write profiling results", self._path)
            return
        kept = Path(self.format_path(self._path, self._pid, "aclprof"))
        shutil.rmtree(kept, ignore_errors=True)
        kept.mkdir(exist_ok=True)
        shutil.move(str(result), str(kept / result.name))
        shutil.rmtree(result.parent, ignore_errors=True)
        self._result = None
        for fmt in self._formats:
            out = self.format_path(self._path, self._pid, fmt)
            _log.info("process %s generating %s", self._pid, fmt)
            if fmt == Profiler.MEMORY_FLOW:
                Path(out).write_text(memory_flow(kept / result.name))
                continue
            Path(out).write_text(json.dumps(chrome_timeline(kept / result.name,
                                                            self.options["sample_rate"])))
            _log.info("profiling results written to %s", out)
            if os.path.getsize(out) > 64 * 1024 * 1024:
                _log.warning("profiling results too large, maybe you are profiling multi iters, "
                             "consider attach profiler in each iter separately")
        _living.discard(self)

    def __enter__(self) -> None:  # MegEngine's returns None too
        self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __call__(self, func: _F) -> _F:
        wrapped = super().__call__(func)
        setattr(wrapped, "__profiler__", self)
        return wrapped

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.dump()
        staging = getattr(self, "_staging", None)  # None if __init__ raised
        if staging:
            shutil.rmtree(staging, ignore_errors=True)


#: MegEngine's alias: ``profile is Profiler`` (``@profile()``, ``@profile``,
#: ``isinstance(p, profile)`` and subclasses all work as there).
profile = Profiler


def chrome_timeline(result_dir: Path, sample_rate: int = 0) -> Dict[str, Any]:
    """The ops of an aclprof result directory as MegEngine writes its timeline: one process
    (this pid), a thread per aclprof process and thread (named by both), ``ts`` in µs from
    the first event, ``{"traceEvents": [...], "metadata": {"localTime": ...}}``; with
    ``sample_rate`` N > 0, every N-th op on a device also records the device's allocated
    operator memory then, as MegEngine's ``<device>_alloc_mem`` counter (``{"value": bytes}``)."""
    events = Analysis([result_dir]).timeline_events()
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    slices = [e for e in events if e.get("ph") == "X"]
    origin = min((float(e["ts"]) for e in slices), default=0.0)
    pid = os.getpid()
    tids: Dict[Tuple[Any, Any], int] = {}
    out: List[Dict[str, Any]] = []
    for e in slices:
        key = (e["pid"], e["tid"])
        if key not in tids:
            tids[key] = len(tids)
        out.append({"name": e["name"], "cat": "Kernel", "tid": tids[key], "pid": pid,
                    "ts": float(e["ts"]) - origin, "dur": float(e["dur"]), "ph": "X",
                    "args": e.get("args", {})})
    for (p, t), tid in tids.items():
        name = " / ".join(x for x in (procs.get(p, str(p)), threads.get((p, t), str(t))) if x)
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"name": name}})
    if sample_rate > 0:
        # Device ops: those of an "Ascend Hardware" process, labelled "NPU <d>".
        labels = {e["pid"]: e["args"]["labels"] for e in events
                  if e.get("ph") == "M" and e.get("name") == "process_labels"}
        device_ops: Dict[str, List[float]] = {}
        for e in slices:
            label = labels.get(e["pid"], "")
            if procs.get(e["pid"]) == "Ascend Hardware" and label.startswith("NPU "):
                device_ops.setdefault(label[4:], []).append(float(e["ts"]))
        out.extend(_alloc_counters(result_dir, device_ops, origin, pid, sample_rate))
    local = int(origin * 1000)  # the trace's µs timestamps are wall-clock time
    return {"traceEvents": out, "metadata": {"localTime": str(local),
                                             "aclprof_result": str(result_dir)}}


def _alloc_counters(result_dir: Path, device_ops: Dict[str, List[float]], origin: float, pid: int,
                    sample_rate: int) -> List[Dict[str, Any]]:
    """Every ``sample_rate``-th device op's ``npu<d>_alloc_mem`` counter: the operator memory
    allocated on its device when it started (the database's exact totals). ``device_ops``:
    each device's op starts (µs)."""
    totals = {str(dev): [(ts / 1000, float(b)) for ts, b in series]
              for dev, series in _common.operator_totals(result_dir).items()}
    out: List[Dict[str, Any]] = []
    for dev, starts in device_ops.items():
        series = totals.get(dev, [])
        ops = sorted(starts)
        i, value = 0, 0.0
        for n, ts in enumerate(ops):
            while i < len(series) and series[i][0] <= ts:
                value = series[i][1]
                i += 1
            if n % sample_rate == 0:
                out.append({"name": "npu%s_alloc_mem" % dev, "ph": "C", "pid": pid, "tid": 0,
                            "ts": ts - origin, "args": {"value": int(value)}})
    return out


def memory_flow(result_dir: Path) -> str:
    """The operators' device memory as MegEngine's ``memory_flow.svg``: x is time (1 px =
    100 µs from the first allocation), y the address (1 px = 1 MB above the lowest), one
    rectangle per allocation from its allocation to its release (or the last event), grey
    by lifetime (darker lives longer), with MegEngine's ``tag:`` attributes."""
    allocs = _common.operator_allocations(result_dir)
    if not allocs:
        return ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:tag="https://megengine.org.cn" '
                'width="0" height="0"></svg>\n')
    t0 = min(a["start"] for a in allocs)
    t1 = max([a["end"] or a["start"] for a in allocs] + [a["start"] for a in allocs])
    low = min(a["addr"] for a in allocs)
    longest = max((a["end"] or t1) - a["start"] for a in allocs) or 1
    rects = []
    width = height = 0.0
    for a in allocs:
        end = a["end"] if a["end"] is not None else t1
        x, w = (a["start"] - t0) / 100_000, max((end - a["start"]) / 100_000, 0.1)
        y, h = (a["addr"] - low) / 1e6, max(a["size"] / 1e6, 0.1)
        grey = 200 - int(150 * (end - a["start"]) / longest)
        width, height = max(width, x + w), max(height, y + h)
        rects.append(
            '<rect x="%.3f" y="%.3f" width="%.3f" height="%.3f" fill="rgb(%d,%d,%d)" '
            'tag:name="%s" tag:address="%d" tag:size="%d" tag:layout="" tag:produced="%.3f" '
            'tag:erased="%s" tag:duration="%.3f"/>'
            % (x, y, w, h, grey, grey, grey, html.escape(a["name"], quote=True), a["addr"], a["size"],
               (a["start"] - t0) / 1000, "" if a["end"] is None else "%.3f" % ((a["end"] - t0) / 1000),
               (end - a["start"]) / 1000))
    return ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:tag="https://megengine.org.cn" '
            'width="%.0f" height="%.0f">\n%s\n</svg>\n' % (width + 1, height + 1, "\n".join(rects)))


@atexit.register
def _stop_current_profiler() -> None:
    if _running is not None:
        with contextlib.suppress(Exception):
            _running.stop()
    for p in list(_living):
        with contextlib.suppress(Exception):
            p.dump()
