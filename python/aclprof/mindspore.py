"""MindSpore's Profiler API (``mindspore.Profiler``) over aclprof's file mode. A script
changes its import only::

    from aclprof.mindspore import Profiler            # was: from mindspore import Profiler
    profiler = Profiler(output_path="./data")         # profiling starts here (start_profile)
    model.execute()
    profiler.analyse()

Results go to ``{output_path}/profiler/``: the aclprof result directories (``PROF_*``, CANN's
layout, read by msprof-analyze) and, written by :meth:`Profiler.analyse`, MindSpore's own
files: ``ascend_timeline_display_{rank}.json`` (at most ``timeline_limit`` MB; ops left out
are counted in the metadata and logged), ``op_statistic_{rank}.csv`` and
``profiler_info_{rank}.json``; :meth:`Profiler.add_metadata` goes to
``profiler_metadata.json``. Where aclprof differs from MindSpore: docs/compatibility.md.
"""

from __future__ import annotations

import csv
import enum
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _bindings
from .profiler import Profiler as _FileMode
from .summary import _run

__all__ = ["Profiler", "ProfilerLevel", "AICORE_METRICS"]

_log = logging.getLogger("aclprof.mindspore")


class ProfilerLevel(enum.Enum):
    """MindSpore's ``ProfilerLevel``: how much is collected."""

    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


#: MindSpore's ``aicore_metrics`` values and the CANN metric each one selects.
AICORE_METRICS: Dict[int, str] = {
    -1: "None",
    0: "ArithmeticUtilization",
    1: "PipeUtilization",
    2: "Memory",
    3: "MemoryL0",
    4: "ResourceConflictRatio",
    5: "MemoryUB",
    6: "L2Cache",
}
_ACL_METRIC = {
    -1: _bindings.ACL_AICORE_NONE,
    0: _bindings.ACL_AICORE_ARITHMETIC_UTILIZATION,
    1: _bindings.ACL_AICORE_PIPE_UTILIZATION,
    2: _bindings.ACL_AICORE_MEMORY_BANDWIDTH,
    3: _bindings.ACL_AICORE_L0B_AND_WIDTH,
    4: _bindings.ACL_AICORE_RESOURCE_CONFLICT_RATIO,
    5: _bindings.ACL_AICORE_MEMORY_UB,
    6: _bindings.ACL_AICORE_L2_CACHE,
}

_DEFAULTS: Dict[str, Any] = {
    "output_path": "./data",
    "profiler_level": ProfilerLevel.Level0,
    "op_time": True,
    "profile_communication": False,
    "profile_memory": False,
    "parallel_strategy": False,
    "start_profile": True,
    "aicore_metrics": 0,
    "l2_cache": False,
    "hbm_ddr": False,
    "pcie": False,
    "sync_enable": True,
    "data_process": False,
    "timeline_limit": 500,
    "profile_framework": None,
    "with_stack": False,
    "data_simplification": True,
    "host_stack": True,
    "schedule": None,
    "on_trace_ready": None,
}
_BOOLS = ("op_time", "profile_communication", "profile_memory", "parallel_strategy",
          "start_profile", "l2_cache", "hbm_ddr", "pcie", "sync_enable", "data_process",
          "with_stack", "data_simplification", "host_stack")


def _rank() -> int:
    for var in ("RANK_ID", "RANK"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


class Profiler:
    """``mindspore.Profiler(**kwargs)``: see the module's documentation. Options of the wrong
    type are warned about and replaced by their defaults, as MindSpore does; unknown keyword
    arguments raise ``TypeError``."""

    _has_started_twice = False  # per process in MindSpore: a second start is refused

    def __init__(self, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - set(_DEFAULTS))
        if unknown:
            raise TypeError(f"Profiler got unexpected keyword argument(s): {', '.join(unknown)}")
        opts = dict(_DEFAULTS)
        for key, value in kwargs.items():
            opts[key] = self._checked(key, value)
        self.options = opts
        self._output_path = Path(os.path.realpath(str(opts["output_path"])))
        self._profiler_dir = self._output_path / "profiler"
        self._metadata: Dict[str, str] = {}
        self._has_started = False
        self._session: Optional[_FileMode] = None
        self._analyse_process: Optional["subprocess.Popen[bytes]"] = None
        self._rank = _rank()
        if opts["start_profile"]:
            self.start()

    @staticmethod
    def _checked(key: str, value: Any) -> Any:
        default = _DEFAULTS[key]
        ok = True
        if key in _BOOLS:
            ok = isinstance(value, bool)
        elif key == "aicore_metrics":
            ok = isinstance(value, int) and not isinstance(value, bool) and value in AICORE_METRICS
        elif key == "timeline_limit":
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        elif key == "profiler_level":
            if isinstance(value, str) and value in ProfilerLevel.__members__:
                value = ProfilerLevel[value]
            ok = isinstance(value, ProfilerLevel)
        elif key == "output_path":
            ok = isinstance(value, str) and value != ""
        if not ok:
            _log.warning("For Profiler, the parameter %s is invalid (%r); it is set to its "
                         "default %r", key, value, default)
            return default
        return value

    # -- collection --------------------------------------------------------------------

    def _data_types(self) -> int:
        o = self.options
        types = _bindings.ACL_PROF_ACL_API
        if o["op_time"]:
            types |= _bindings.ACL_PROF_TASK_TIME
        if o["aicore_metrics"] != -1 and o["profiler_level"] != ProfilerLevel.Level0:
            types |= _bindings.ACL_PROF_AICORE_METRICS
        if o["profile_communication"]:
            types |= _bindings.ACL_PROF_HCCL_TRACE
        if o["profile_memory"]:
            types |= _bindings.ACL_PROF_TASK_MEMORY
        if o["l2_cache"]:
            types |= _bindings.ACL_PROF_L2CACHE
        if o["profiler_level"] == ProfilerLevel.Level2:
            types |= _bindings.ACL_PROF_AICPU | _bindings.ACL_PROF_RUNTIME_API
        return types

    def start(self) -> None:
        """Starts collecting. Raises ``RuntimeError`` if collecting already, or if this process
        has already profiled once (MindSpore supports one start/stop per process)."""
        if self._has_started:
            raise RuntimeError("The profiler has already started. Use profiler.start() only "
                               "when start_profile value is set to False.")
        if Profiler._has_started_twice:
            raise RuntimeError("MindSpore Profiling has finished, repeated start and stop "
                               "actions are not supported.")
        o = self.options
        session = _FileMode(self._profiler_dir, data_types=self._data_types(),
                            aicore_metrics=_ACL_METRIC[o["aicore_metrics"]]
                            if self._data_types() & _bindings.ACL_PROF_AICORE_METRICS
                            else _bindings.ACL_AICORE_NONE)
        session.start()
        self._session = session
        self._has_started = True
        Profiler._has_started_twice = True

    def stop(self) -> None:
        """Stops collecting and writes the result directory. Raises ``RuntimeError`` when not
        started."""
        if not self._has_started or self._session is None:
            raise RuntimeError("The profiler has not started, so can not stop. Please call the "
                               "start() method before calling the stop() method.")
        self._has_started = False
        session, self._session = self._session, None
        session.stop()
        self._write_metadata()

    # -- analysis ----------------------------------------------------------------------

    def analyse(self, offline_path: Optional[str] = None, pretty: bool = False,
                step_list: Optional[Sequence[int]] = None, mode: str = "sync") -> None:
        """Stops collecting if still running, then writes MindSpore's files under
        ``{output_path}/profiler`` (or ``offline_path``). ``step_list``: only these steps
        (consecutive step numbers from 1, as in MindSpore); ``mode="async"`` analyses in a
        child process and returns at once."""
        if mode not in ("sync", "async"):
            raise ValueError(f"For analyse, mode must be 'sync' or 'async', not {mode!r}")
        steps = _checked_steps(step_list)
        if self._has_started:
            self.stop()
        base = Path(offline_path) if offline_path else self._output_path
        if mode == "async":
            cmd = [sys.executable, "-m", "aclprof.mindspore", str(base), "--rank", str(self._rank),
                   "--timeline-limit", str(self.options["timeline_limit"])]
            if pretty:
                cmd.append("--pretty")
            if steps:
                cmd += ["--steps", ",".join(map(str, steps))]
            self._analyse_process = subprocess.Popen(cmd)
            return
        _analyse(base, pretty, steps, self._rank, self.options["timeline_limit"])

    def wait_analyse(self) -> int:
        """Waits for an ``analyse(mode="async")`` child (not in MindSpore); its exit code."""
        if self._analyse_process is None:
            return 0
        return self._analyse_process.wait()

    @staticmethod
    def offline_analyse(path: str, pretty: bool = False, step_list: Optional[Sequence[int]] = None,
                        data_simplification: bool = True) -> None:
        """Analyses an output path written earlier (maybe by a process that is gone)."""
        _analyse(Path(path), pretty, _checked_steps(step_list), _rank(), 500)

    def op_analyse(self, op_name: Union[str, List[str]], device_id: Optional[int] = None) -> str:
        """Performance data of the op types named (a name or a list of names): a JSON string
        ``{type: {"op_info": [...], "op_statistic": {...}}}`` from the result directories."""
        if not (isinstance(op_name, str) or (isinstance(op_name, list)
                                             and all(isinstance(n, str) for n in op_name))):
            raise TypeError("For 'Profiler.op_analyse', the parameter op_name must be str or "
                            "list of str.")
        if device_id is not None and (not isinstance(device_id, int) or isinstance(device_id, bool)):
            raise TypeError("For 'Profiler.op_analyse', the parameter device_id must be int.")
        names = [op_name] if isinstance(op_name, str) else op_name
        dirs = _result_dirs(self._profiler_dir)
        result: Dict[str, Any] = {}
        for name in names:
            ops: List[Dict[str, Any]] = []
            stat: Dict[str, Any] = {"count": 0, "total_time_us": 0.0}
            for d in dirs:
                query = {"top": 0, "type": [name], "device": device_id, "format": "json"}
                rows = json.loads(_run(d, query))["rows"]
                ops += [{"op_name": r["Name"], "device_id": r["Device"], "stream_id": r["Stream"],
                         "duration_us": r["Duration(us)"]} for r in rows]
            stat["count"] = len(ops)
            stat["total_time_us"] = round(sum(o["duration_us"] for o in ops), 3)
            if ops:
                stat["avg_time_us"] = round(stat["total_time_us"] / len(ops), 3)
            result[name] = {"op_info": ops, "op_statistic": stat}
        return json.dumps(result)

    # -- metadata ----------------------------------------------------------------------

    def add_metadata(self, key: str, value: str) -> None:
        """Records ``key: value`` in ``profiler_metadata.json`` (written at stop)."""
        if not isinstance(key, str) or not isinstance(value, str):
            _log.warning("For add_metadata, key and value must be str; not added")
            return
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """Records ``key`` with a JSON string value, stored parsed."""
        if not isinstance(key, str) or not isinstance(value, str):
            _log.warning("For add_metadata_json, key and value must be str; not added")
            return
        try:
            self._metadata[key] = json.loads(value)
        except ValueError:
            _log.warning("For add_metadata_json, the value of %r is not JSON; not added", key)

    def _write_metadata(self) -> None:
        if self._metadata:
            self._profiler_dir.mkdir(parents=True, exist_ok=True)
            (self._profiler_dir / "profiler_metadata.json").write_text(
                json.dumps(self._metadata, indent=4))


def _checked_steps(step_list: Optional[Sequence[int]]) -> Optional[List[int]]:
    if step_list is None:
        return None
    if not isinstance(step_list, list) or not all(isinstance(s, int) and not isinstance(s, bool)
                                                  and s > 0 for s in step_list):
        raise TypeError("step_list must be a list of positive int")
    steps = sorted(step_list)
    if steps != list(range(steps[0], steps[0] + len(steps))) if steps else False:
        raise ValueError("step_list must be consecutive steps")
    return steps


def _result_dirs(profiler_dir: Path) -> List[Path]:
    return sorted(d for d in profiler_dir.glob("PROF_*") if d.is_dir())


def _analyse(base: Path, pretty: bool, steps: Optional[List[int]], rank: int,
             timeline_limit_mb: int) -> None:
    profiler_dir = base / "profiler" if (base / "profiler").is_dir() else base
    dirs = _result_dirs(profiler_dir)
    if not dirs:
        raise RuntimeError(f"{profiler_dir}: no profiling data (PROF_* directories) to analyse")
    # The timeline: every result directory's ops, cut at timeline_limit MB.
    events: List[Any] = []
    for d in dirs:
        for f in sorted((d / "mindstudio_profiler_output").glob("msprof_*.json")):
            events += json.loads(f.read_text())
    kept, dropped = _limit(events, timeline_limit_mb * 1024 * 1024, pretty)
    if dropped:
        _log.warning("aclprof.mindspore: the timeline reached timeline_limit (%d MB); %d of its "
                     "%d events are left out of ascend_timeline_display_%d.json (all are in the "
                     "PROF_* directories)", timeline_limit_mb, dropped, len(events), rank)
    (profiler_dir / f"ascend_timeline_display_{rank}.json").write_text(
        json.dumps(kept, indent=4 if pretty else None))
    # Per-type statistics, of the chosen steps only (steps are what aclprofGetStepTimestamp
    # marked; a run that marked none of them is analysed whole, and says so).
    rows = _type_rows(dirs, steps)
    steps_applied = steps is not None
    if steps and not rows and _type_rows(dirs, None):
        _log.warning("aclprof.mindspore: no ops in steps %s (steps are those marked with "
                     "aclprofGetStepTimestamp); step_list ignored, every op analysed", steps)
        rows, steps_applied = _type_rows(dirs, None), False
    total = sum(r["total"] for r in rows.values()) or 1.0
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["op_type", "execution_time(us)", "execution_frequency", "percent(%)"])
    for t, r in sorted(rows.items(), key=lambda kv: -kv[1]["total"]):
        w.writerow([t, f"{r['total']:.3f}", int(r["count"]), f"{100 * r['total'] / total:.2f}"])
    (profiler_dir / f"op_statistic_{rank}.csv").write_text(out.getvalue())
    info = {"rank_id": rank, "step_list": steps, "step_list_applied": steps_applied,
            "result_dirs": [d.name for d in dirs],
            "timeline_events": len(kept), "timeline_events_left_out": dropped,
            "timeline_limit_mb": timeline_limit_mb}
    (profiler_dir / f"profiler_info_{rank}.json").write_text(
        json.dumps(info, indent=4 if pretty else None))


def _type_rows(dirs: List[Path], steps: Optional[List[int]]) -> Dict[str, Dict[str, float]]:
    rows: Dict[str, Dict[str, float]] = {}
    chosen: List[Optional[int]] = list(steps) if steps else [None]
    for d in dirs:
        for step in chosen:
            query = {"top": 0, "aggregate_by": "type", "step": step, "format": "json"}
            for r in json.loads(_run(d, query))["rows"]:
                acc = rows.setdefault(r["Type"], {"count": 0, "total": 0.0})
                acc["count"] += r["Count"]
                acc["total"] += r["Sum(us)"]
    return rows


def _limit(events: List[Any], limit: int, pretty: bool) -> "tuple[List[Any], int]":
    """The longest prefix of ``events`` whose JSON fits in ``limit`` bytes (metadata events
    first, so that every kept slice has its process and thread names)."""
    events = sorted(events, key=lambda e: 0 if e.get("ph") == "M" else 1)
    size = 2
    for i, e in enumerate(events):
        size += len(json.dumps(e, indent=4 if pretty else None)) + 2
        if size > limit:
            return events[:i], len(events) - i
    return events, 0


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m aclprof.mindspore PATH``: what ``analyse(mode="async")`` runs."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m aclprof.mindspore")
    p.add_argument("path")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--timeline-limit", type=int, default=500)
    p.add_argument("--pretty", action="store_true")
    p.add_argument("--steps", default="")
    a = p.parse_args(argv)
    steps = [int(s) for s in a.steps.split(",") if s] or None
    _analyse(Path(a.path), a.pretty, steps, a.rank, a.timeline_limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
