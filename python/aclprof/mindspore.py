"""MindSpore's Profiler API (``mindspore.Profiler``) over aclprof's file mode. A script
changes its import only::

    from aclprof.mindspore import Profiler            # was: from mindspore import Profiler
    profiler = Profiler(output_path="./data")         # profiling starts here (start_profile)
    model.execute()
    profiler.analyse()

Results go to ``{output_path}/profiler/``: the aclprof result directories (``PROF_*``, CANN's
layout, read by msprof-analyze) and, written by :meth:`Profiler.analyse`, MindSpore's own
files: ``ascend_timeline_display_{rank}.json`` (at most ``timeline_limit`` MB; ops left out
are counted in ``profiler_info_{rank}.json`` and logged), ``op_statistic_{rank}.csv`` and
``profiler_info_{rank}.json``; with ``profile_memory=True``, MindSpore's memory files
(``ASCEND_PROFILER_OUTPUT/memory_record.csv``, ``operator_memory.csv``, ``static_op_mem.csv``,
``npu_module_mem.csv``); :meth:`Profiler.add_metadata` goes to ``profiler_metadata.json``. Where aclprof differs from MindSpore: docs/compatibility.md.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import enum
from decimal import Decimal
import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _bindings, _common
from .errors import AclError
from .pipeline import analyze as analyze_pipeline
from .profiler import Analysis, Profiler as _FileMode
from .runtime import device_count

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
    "profiler_level": None,
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
          "l2_cache", "hbm_ddr", "pcie", "sync_enable", "data_process", "with_stack",
          "data_simplification", "host_stack")
_MAX_METADATA_STR = 4096
_MAX_METADATA_BYTES = 50 * 1024


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Profiler:
    """``mindspore.Profiler(**kwargs)`` (MindSpore 2.4's checks): see the module's
    documentation. An option of the wrong type or value is warned about and set to its
    default, an unknown keyword is warned about and ignored; only ``start_profile`` that is
    not a bool raises ``TypeError``."""

    def __init__(self, **kwargs: Any) -> None:
        if os.environ.get("PROFILING_MODE"):
            raise RuntimeError("Profiling is already enabled by PROFILING_MODE env.")
        if not isinstance(kwargs.get("start_profile", True), bool):
            raise TypeError("For 'Profiler', the parameter start_profile must be bool, but got "
                            f"type {type(kwargs['start_profile'])}")
        opts = dict(_DEFAULTS)
        for key, value in kwargs.items():
            if key not in _DEFAULTS:
                _log.warning("%s is an invalid param which doesn't work.", key)
                continue
            opts[key] = self._checked(key, value)
        if opts["profiler_level"] == ProfilerLevel.Level0 and opts["aicore_metrics"] != -1:
            _log.warning("For Profiler, when profiler_level is Level0, aicore_metrics is set "
                         "to -1 (no AI Core metrics).")
            opts["aicore_metrics"] = -1
        if opts["with_stack"] and opts["profile_framework"] not in ("time", "all"):
            _log.warning("When using the with_stack parameter, the profile_framework parameter "
                         "must be enabled.")
            opts["with_stack"] = False
        self.options = opts
        self._output_path = Path(os.path.realpath(str(opts["output_path"])))
        self._profiler_dir = self._output_path / "profiler"
        self._metadata: Dict[str, Any] = {}
        self._has_started = False
        self._session: Optional[_FileMode] = None
        self._analyse_process: Optional["subprocess.Popen[bytes]"] = None
        self._rank = _common.rank()
        if opts["start_profile"]:
            self.start()

    @staticmethod
    def _checked(key: str, value: Any) -> Any:
        default = _DEFAULTS[key]
        ok = True
        if key in _BOOLS:
            ok = isinstance(value, bool)
        elif key == "aicore_metrics":
            ok = isinstance(value, int) and value in AICORE_METRICS  # a bool passes, as there
        elif key == "timeline_limit":
            ok = _is_int(value) and value > 0
        elif key == "profiler_level":
            ok = value is None or isinstance(value, ProfilerLevel)
            default = ProfilerLevel.Level0
        elif key == "output_path":
            ok = isinstance(value, str)
            default = "data"
        elif key == "profile_framework":
            ok = value in ("time", "all", None)
        if not ok:
            _log.warning("For Profiler, the parameter %s is invalid (%r); it is set to %r",
                         key, value, default)
            return default
        return value

    # -- collection --------------------------------------------------------------------

    def _data_types(self) -> int:
        o = self.options
        types = _bindings.ACL_PROF_ACL_API
        if o["op_time"]:
            types |= _bindings.ACL_PROF_TASK_TIME
        if o["aicore_metrics"] != -1:
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

    def _settings(self) -> Dict[int, str]:
        """The aclprofSetConfig values: device memory sampled at 50 Hz for ``profile_memory``
        and ``hbm_ddr`` (as MindSpore asks msprof), the host process's CPU and memory for
        ``profile_framework``."""
        o = self.options
        out: Dict[int, str] = {}
        if o["profile_memory"] or o["hbm_ddr"]:
            out[_bindings.ACL_PROF_SYS_HARDWARE_MEM_FREQ] = "50"
        if o["profile_framework"] in ("time", "all"):
            out[_bindings.ACL_PROF_HOST_SYS] = "cpu,mem"
        return out

    def start(self) -> None:
        """Starts collecting. Raises ``RuntimeError`` if collecting already (which includes
        a Profiler made with the default ``start_profile=True``)."""
        if self._has_started:
            raise RuntimeError("The profiler has already started. Do not turn on again in the "
                               "open state.")
        types = self._data_types()
        metric = (_ACL_METRIC[self.options["aicore_metrics"]]
                  if types & _bindings.ACL_PROF_AICORE_METRICS else _bindings.ACL_AICORE_NONE)
        session = _FileMode(self._profiler_dir, devices=range(device_count()), data_types=types,
                            aicore_metrics=metric, options=self._settings())
        session.start()
        self._session = session
        self._has_started = True

    def stop(self) -> None:
        """Stops collecting, writes the result directory and the metadata. Raises
        ``RuntimeError`` when not started."""
        if not self._has_started or self._session is None:
            raise RuntimeError("The profiler has not started, so can not stop. Please call the "
                               "start() method before calling the stop() method.")
        self._has_started = False
        session, self._session = self._session, None
        session.stop()
        self._write_metadata()

    # -- analysis ----------------------------------------------------------------------

    def analyse(self, offline_path: Optional[str] = None, pretty: bool = False,
                step_list: Optional[List[int]] = None, mode: str = "sync") -> None:
        """Stops collecting if still running, then writes MindSpore's files under
        ``{output_path}/profiler`` (or ``offline_path``'s). ``step_list``: only these steps
        (consecutive, as MindSpore requires; steps are those of step_trace_time.csv: marked
        with aclprofGetStepTimestamp, else cut at each fp_point op); ``mode="async"`` analyses in a child process, waited for at
        exit or by :meth:`wait_analyse`. As in MindSpore, a failure is logged, not raised."""
        if mode not in ("sync", "async"):
            _log.warning("For analyse, the parameter mode must be one of ['sync', 'async'], "
                         "it will be set to 'sync'.")
            mode = "sync"
        try:
            steps = _checked_steps(step_list)
            if offline_path is not None and not isinstance(offline_path, str):
                raise TypeError("For analyse, the type of parameter offline_path must be str.")
            if self._has_started:
                self.stop()
            base = Path(offline_path) if offline_path else self._output_path
            limit = self.options["timeline_limit"]
            if mode == "async":
                cmd = [sys.executable, "-m", "aclprof.mindspore", str(base), "--rank",
                       str(self._rank), "--timeline-limit", str(limit)]
                if pretty is True:
                    cmd.append("--pretty")
                if steps:
                    cmd += ["--steps", ",".join(map(str, steps))]
                if self.options["data_process"] is True:
                    cmd.append("--data-process")
                self._analyse_process = subprocess.Popen(cmd)
                _children.append(self._analyse_process)
                return
            _analyse(base, pretty is True, steps, self._rank, limit,
                     data_process=self.options["data_process"] is True)
        except (RuntimeError, OSError, TypeError, ValueError) as err:
            _log.error("Profiler analyse failed: %s", err)

    def wait_analyse(self) -> int:
        """Waits for an ``analyse(mode="async")`` child (not in MindSpore); its exit code."""
        if self._analyse_process is None:
            return 0
        return _reap(self._analyse_process)

    @classmethod
    def offline_analyse(cls, path: str, pretty: bool = False,
                        step_list: Optional[List[int]] = None,
                        data_simplification: bool = True) -> None:
        """Analyses an output path written earlier (maybe by a process that is gone): ``path``
        holds ``profiler/``, or subdirectories (one per rank) that do."""
        root = Path(path)
        found = [d for d in [root, *sorted(p for p in root.glob("*") if p.is_dir())]
                 if _common.result_dirs(d / "profiler")]
        if not found:
            raise RuntimeError(f'The provided path "{path}" must have a "profiler" directory for '
                               'single-device profiler data, or multiple subdirectories each '
                               'containing a "profiler" directory for multi-device profiler data.')
        steps = _checked_steps(step_list)
        for d in found:
            _analyse(d, pretty is True, steps, _rank_of(d / "profiler"), 500, data_process=True)

    def op_analyse(self, op_name: Union[str, List[str]], device_id: Optional[int] = None) -> str:
        """Performance data of the op types named (``"Conv2D"`` or ``["BiasAdd", "Conv2D"]``),
        as MindSpore returns it on GPU and CPU: a JSON string ``{type: [{"op_side",
        "input_shape", "op_occurrences", "op_total_time(us)", "op_avg_time(us)"}], ...,
        "device_id": id}`` (one entry per type; aclprof records no shapes)."""
        if device_id and not _is_int(device_id):
            raise TypeError("For 'Profiler.op_analyse()', the parameter device_id must be int, "
                            f"but got type {type(device_id)}")
        if not isinstance(op_name, (str, list)):
            raise TypeError("For 'Profiler.op_analyse()', the parameter op_name must be str or "
                            f"list, but got type {type(op_name)}")
        if not op_name:
            raise TypeError("For 'Profiler.op_analyse()', the parameter op_name cannot be , '' "
                            "or [].")
        names = [op_name] if isinstance(op_name, str) else op_name
        dirs = _common.result_dirs(self._profiler_dir)
        if not dirs:
            raise RuntimeError(f"No profiler file is found in the path {self._profiler_dir}. "
                               "Check whether the profiler path is correct.")
        result: Dict[str, Any] = {}
        for name in names:
            count, total = 0, 0.0
            for d in dirs:
                query = {"top": 0, "aggregate_by": "type", "type": [name], "device": device_id,
                         "format": "json"}
                for r in json.loads(_common.analyze_text(d, query))["rows"]:
                    count += int(r["Count"])
                    total += float(r["Sum(us)"])
            if not count:
                raise RuntimeError(f"The information of {name} is not found. Please verify that "
                                   "the operator name is correct or the operator is used in the "
                                   "network.")
            result[name] = [{"op_side": "device", "input_shape": "", "op_occurrences": count,
                             "op_total_time(us)": round(total, 3),
                             "op_avg_time(us)": round(total / count, 3)}]
        result["device_id"] = 0 if device_id is None else device_id
        return json.dumps(result)

    # -- metadata ----------------------------------------------------------------------

    def add_metadata(self, key: str, value: str) -> None:
        """Records ``key: value`` in ``profiler_metadata.json`` (written at stop)."""
        if self._metadata_ok(key, value):
            self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """Records ``key`` with a JSON string value, stored parsed."""
        if self._metadata_ok(key, value):
            try:
                self._metadata[key] = json.loads(value)
            except ValueError:
                _log.warning("The metadata value must be json format string. Skip this metadata")

    def _metadata_ok(self, key: Any, value: Any) -> bool:
        if not isinstance(key, str) or not isinstance(value, str):
            _log.warning("The key and value of metadata must be string. Skip this metadata.")
            return False
        if len(key) > _MAX_METADATA_STR or len(value) > _MAX_METADATA_STR:
            _log.warning("Invalid input key or value. Skip this metadata.")
            return False
        size = sum(len(k) + len(json.dumps(v)) for k, v in self._metadata.items())
        if size + len(key) + len(value) >= _MAX_METADATA_BYTES:
            _log.warning("Too many metadata added. Skip this metadata")
            return False
        if key in self._metadata:
            _log.warning("%s is already saved as metadata, override it.", key)
        return True

    def _write_metadata(self) -> None:
        if self._metadata:
            self._profiler_dir.mkdir(parents=True, exist_ok=True)
            (self._profiler_dir / "profiler_metadata.json").write_text(
                json.dumps(self._metadata, indent=4, ensure_ascii=False))
            self._metadata.clear()


_children: List["subprocess.Popen[bytes]"] = []


@atexit.register
def _wait_children() -> None:
    """As MindSpore's analysis pool: an async analysis finishes before the process exits."""
    for child in list(_children):
        _reap(child)


def _reap(child: "subprocess.Popen[bytes]") -> int:
    """Waits for an ``analyse(mode="async")`` child; the first wait logs its failure (the
    child printed why on stderr)."""
    code = child.wait()
    if child in _children:
        _children.remove(child)
        if code:
            _log.error("Profiler analyse failed: the analysis process exited with code %d", code)
    return code


def _checked_steps(step_list: Optional[Sequence[int]]) -> Optional[List[int]]:
    if step_list is None:
        return None
    if not isinstance(step_list, list):
        raise TypeError("Parameter step_list must be a list.")
    if not all(_is_int(s) for s in step_list):
        raise TypeError("The elements of the parameter step_list must be integers.")
    step_list.sort()  # in place, as MindSpore does
    if any(b != a + 1 for a, b in zip(step_list, step_list[1:])):
        raise ValueError("The elements of the parameter step_list must be continuous integers.")
    return list(step_list)


def _rank_of(profiler_dir: Path) -> int:
    for f in profiler_dir.glob("profiler_info_*.json"):
        with contextlib.suppress(ValueError, OSError):
            return int(json.loads(f.read_text()).get("rank_id", 0))
    return _common.rank()


def _analyse(base: Path, pretty: bool, steps: Optional[List[int]], rank: int,
             timeline_limit_mb: int, data_process: bool = False) -> None:
    profiler_dir = base / "profiler" if (base / "profiler").is_dir() else base
    dirs = _common.result_dirs(profiler_dir)
    if not dirs:
        raise RuntimeError(f"{profiler_dir}: no profiling data (PROF_* directories) to analyse")
    # The timeline: every result directory's ops, cut at timeline_limit MB.
    events = Analysis(dirs).timeline_events()
    kept, dropped = _limit(events, timeline_limit_mb * 1024 * 1024, pretty)
    if dropped:
        _log.warning("aclprof.mindspore: the timeline reached timeline_limit (%d MB); %d of its "
                     "%d events are left out of ascend_timeline_display_%d.json (all are in the "
                     "PROF_* directories)", timeline_limit_mb, dropped, len(events), rank)
    (profiler_dir / f"ascend_timeline_display_{rank}.json").write_text(
        ("[\n" + ",\n".join(kept) + "\n]") if pretty else ("[" + ",".join(kept) + "]"))
    # Per-type statistics, of the chosen steps only (steps are what aclprofGetStepTimestamp
    # marked; a run that marked none of them is analysed whole, and says so).
    rows = _type_rows(dirs, steps)
    steps_applied = steps is not None
    if steps and not rows:
        every = _type_rows(dirs, None)
        if every:
            _log.warning("aclprof.mindspore: no ops in steps %s (steps are those of "
                         "step_trace_time.csv); step_list ignored, every op analysed", steps)
            rows, steps_applied = every, False
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
    if data_process:
        _write_minddata(profiler_dir, rank, pretty)
    _write_memory(profiler_dir, dirs)


#: MindSpore 2.3+'s memory files (``profile_memory=True``), in ``ASCEND_PROFILER_OUTPUT``.
MEMORY_RECORD_HEADER = ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)",
                        "Total Active(MB)", "Device Type"]
OPERATOR_MEMORY_HEADER = ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)",
                          "Active Release Time(us)", "Duration(us)", "Active Duration(us)",
                          "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)",
                          "Allocation Total Active(MB)", "Release Total Allocated(MB)",
                          "Release Total Reserved(MB)", "Release Total Active(MB)", "Stream Ptr",
                          "Device Type"]


def _write_memory(profiler_dir: Path, dirs: List[Path]) -> None:
    """MindSpore's memory files from what CANN's memory files say: ``memory_record.csv``
    (GE: the operators; MindSpore+GE: the same, as aclprof sees no framework pool; APP: the
    process's device memory, sampled), ``operator_memory.csv`` (torch_npu's and MindSpore's
    MB layout), and ``static_op_mem.csv`` and ``npu_module_mem.csv`` as msprof writes them."""
    exported = Analysis(dirs)
    records = exported.table("memory_record")
    if not records:
        return
    out = profiler_dir / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(exist_ok=True)

    def mb(kb: str) -> str:
        return "%.6f" % (float(kb) / 1024) if kb.strip() else ""

    rows: List[List[str]] = []
    for r in records:
        alloc, reserved = mb(r["Total Allocated(KB)"]), mb(r["Total Reserved(KB)"])
        for component in ("GE", "MindSpore+GE"):
            rows.append([component, r["Timestamp(us)"], alloc, reserved, alloc, r["Device"]])
    for r in exported.table("npu_mem"):
        if r["event"] == "APP":
            m = mb(r["memory(KB)"])
            rows.append(["APP", r["timestamp(us)"], m, m, m, "NPU:" + r["Device_id"]])
    with open(out / "memory_record.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(MEMORY_RECORD_HEADER)
        w.writerows(rows)
    ops = exported.table("operator_memory")
    with open(out / "operator_memory.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(OPERATOR_MEMORY_HEADER)
        for r in ops:
            start, dur = r["Allocation Time(us)"], r["Duration(us)"]
            # In decimal: an epoch in µs is past what a float holds to the nanosecond.
            end = str(Decimal(start.strip()) + Decimal(dur.strip())) if dur.strip() else ""
            w.writerow([r["Name"], r["Size(KB)"], start, end, end, dur, dur,
                        mb(r["Allocation Total Allocated(KB)"]), mb(r["Allocation Total Reserved(KB)"]),
                        mb(r["Allocation Total Allocated(KB)"]), mb(r["Release Total Allocated(KB)"]),
                        mb(r["Release Total Reserved(KB)"]), mb(r["Release Total Allocated(KB)"]),
                        "", r["Device"]])
    for table in ("static_op_mem", "npu_module_mem"):
        files = exported.files(table)
        if files:
            (out / (table + ".csv")).write_bytes(files[-1].read_bytes())


def _write_minddata(profiler_dir: Path, rank: int, pretty: bool) -> None:
    """MindSpore's data-process files, from what the data pipeline reported (aclprof.pipeline,
    the DataLoader bridge): ``minddata_pipeline_raw_<rank>.csv`` and
    ``minddata_pipeline_summary_<rank>.json``/``.csv``, in MindSpore's columns and keys.
    MindSpore numbers a pipeline's ops from the one nearest the device (id 0, the root) to
    the source, each op's child being the op before it; a stage's busy share stands for its
    CPU share, and times MindSpore measures on the device are -1. Nothing is written when the
    run reported no pipeline (as MindSpore writes nothing without a dataset)."""
    try:
        a = analyze_pipeline(profiler_dir)
    except AclError:
        return
    ops = list(reversed(a["stages"]))
    if not ops:
        return
    n = len(ops)
    children: List[List[int]] = [[i + 1] if i + 1 < n else [] for i in range(n)]
    parents = [i - 1 for i in range(n)]

    def mean(v: List[int]) -> float:
        return sum(v) / len(v) if v else -1.0

    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["op_id", "op_type", "num_workers", "output_queue_size", "output_queue_average_size",
                "output_queue_length", "output_queue_usage_rate", "sample_interval", "parent_id",
                "children_id"])
    for i, s in enumerate(ops):
        depths = s["queue_depths"]
        avg = mean(depths) if depths else None
        cap = s["queue_capacity"] or None
        w.writerow([i, s["stage"], s["workers"], depths if depths else "", "" if avg is None else avg,
                    cap or "", "" if avg is None or not cap else avg / cap,
                    round(s["sample_interval_ms"], 3), "" if i == 0 else parents[i],
                    children[i] or ""])
    (profiler_dir / f"minddata_pipeline_raw_{rank}.csv").write_text(out.getvalue())

    def pct(x: float) -> float:
        return round(100 * x, 2)

    summary: Dict[str, Any] = {
        "op_ids": list(range(n)),
        "op_names": [s["stage"] for s in ops],
        "pipeline_ops": [f"{s['stage']}(id={i})" for i, s in enumerate(ops)],
        "num_workers": [s["workers"] for s in ops],
        "queue_average_size": [round(mean(s["queue_depths"]), 2) for s in ops],
        "queue_utilization_pct": [pct(s["queue_fill"]) if s["queue_capacity"] and s["queue_depths"] else -1
                                  for s in ops],
        "queue_empty_freq_pct": [pct(s["queue_empty"]) if s["queue_depths"] else -1 for s in ops],
        "children_ids": children,
        "parent_id": parents,
        "avg_cpu_pct": [pct(s["utilization"] * s["workers"]) for s in ops],
        "avg_cpu_pct_per_worker": [pct(s["utilization"]) for s in ops],
        "per_pipeline_time": [-1],
        "per_push_queue_time": [-1],
        "per_batch_time": [-1],
    }
    b = a.get("bottleneck")
    if b:
        i = [s["stage"] for s in ops].index(b["stage"])
        summary["bottleneck_warning"] = [f"{b['stage']}(id={i})"]
        summary["bottleneck_suggestion"] = [f"{b['evidence']} (rule {b['rule']})."]
    (profiler_dir / f"minddata_pipeline_summary_{rank}.json").write_text(
        json.dumps(summary, indent=4 if pretty else None))
    out = io.StringIO()
    w = csv.writer(out)
    for key, values in summary.items():
        w.writerow([key] + list(values))
    (profiler_dir / f"minddata_pipeline_summary_{rank}.csv").write_text(out.getvalue())


def _type_rows(dirs: List[Path], steps: Optional[List[int]]) -> Dict[str, Dict[str, float]]:
    rows: Dict[str, Dict[str, float]] = {}
    chosen: List[Optional[int]] = list(steps) if steps else [None]
    for d in dirs:
        for step in chosen:
            query = {"top": 0, "aggregate_by": "type", "step": step, "format": "json"}
            try:
                text = _common.analyze_text(d, query)
            except AclError as e:
                # A result directory without that step (the error lists those it has).
                if step is None or e.code != _bindings.ACL_ERROR_INVALID_PARAM:
                    raise
                continue
            for r in json.loads(text)["rows"]:
                acc = rows.setdefault(r["Type"], {"count": 0, "total": 0.0})
                acc["count"] += r["Count"]
                acc["total"] += r["Sum(us)"]
    return rows


def _limit(events: List[Any], limit: int, pretty: bool) -> Tuple[List[str], int]:
    """The JSON texts of the longest prefix of ``events`` that fits in ``limit`` bytes as an
    array (metadata events first, so that every kept slice has its process and thread names),
    indented as ``json.dumps(events, indent=4)`` would when ``pretty``; and how many were
    left out."""
    events = sorted(events, key=lambda e: 0 if e.get("ph") == "M" else 1)
    kept: List[str] = []
    size = 4  # the brackets and newlines around the elements
    for e in events:
        text = textwrap.indent(json.dumps(e, indent=4), "    ") if pretty else json.dumps(e)
        size += len(text.encode()) + 2  # and the separator
        if size > limit:
            break
        kept.append(text)
    return kept, len(events) - len(kept)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m aclprof.mindspore PATH``: what ``analyse(mode="async")`` runs."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m aclprof.mindspore")
    p.add_argument("path")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--timeline-limit", type=int, default=500)
    p.add_argument("--pretty", action="store_true")
    p.add_argument("--steps", default="")
    p.add_argument("--data-process", action="store_true")
    a = p.parse_args(argv)
    steps = [int(s) for s in a.steps.split(",") if s] or None
    _analyse(Path(a.path), a.pretty, steps, a.rank, a.timeline_limit, data_process=a.data_process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
