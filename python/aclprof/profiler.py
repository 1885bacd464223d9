"""File mode, the Pythonic way: ``Profiler`` drives aclprofInit/CreateConfig/Start and
Stop/DestroyConfig/Finalize, as a context manager, a decorator or with start()/stop()."""

from __future__ import annotations

import contextlib
import csv
import ctypes
import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Type

from . import _bindings, _common
from ._common import RESULT_SUBDIR as RESULT_SUBDIR, PathLike
from ._lib import load, recent_error
from .errors import AclError, check
from .summary import summary_table


class Analysis:
    """The result directories (``PROF_*``) a Profiler produced and the tables exported in them
    (``<dir>/mindstudio_profiler_output/<table>_<timestamp>.csv``)."""

    def __init__(self, result_dirs: Iterable[Path]):
        self.result_dirs: List[Path] = sorted(result_dirs)

    def files(self, table: str) -> List[Path]:
        """The exported CSV files of ``table`` (e.g. ``"op_summary"``), oldest directory first."""
        return [
            f
            for d in self.result_dirs
            for f in sorted((d / RESULT_SUBDIR).glob(f"{table}_*.csv"))
            if f.name[len(table) + 1 : -4].isdigit()
        ]

    def table(self, table: str) -> List[Dict[str, str]]:
        """Every row of every exported ``table`` CSV, as dicts keyed by column name."""
        rows: List[Dict[str, str]] = []
        for path in self.files(table):
            with open(path, newline="", encoding="utf-8") as f:
                rows.extend(csv.DictReader(f))
        return rows

    def timeline_events(self) -> List[Dict[str, Any]]:
        """The trace events of every result directory's timeline (``msprof_<timestamp>.json``,
        a Chrome trace event array), oldest directory first."""
        events: List[Dict[str, Any]] = []
        for d in self.result_dirs:
            for f in sorted((d / RESULT_SUBDIR).glob("msprof_*.json")):
                events += json.loads(f.read_text(encoding="utf-8"))
        return events

    @property
    def op_summary(self) -> List[Dict[str, str]]:
        """One row per executed op."""
        return self.table("op_summary")

    @property
    def op_statistic(self) -> List[Dict[str, str]]:
        """One row per op type."""
        return self.table("op_statistic")

    def __repr__(self) -> str:
        return f"<Analysis of {len(self.result_dirs)} result directories>"


def export_torch_npu(result_dir: PathLike, output_dir: PathLike) -> Path:
    """Writes ``result_dir`` (a ``PROF_*`` directory, exported) as torch_npu writes a PyTorch
    run: a folder ``{host}_{pid}_{time}_ascend_pt`` in ``output_dir`` with
    ``ASCEND_PROFILER_OUTPUT/`` (kernel_details, operator_details, trace_view, op_statistic,
    api_statistic, step_trace_time and, when recorded, the memory tables) and
    ``profiler_info_{rank}.json``, as ``aclprof export --format torch_npu`` does
    (aclprofExtExportTorchNpu). Returns the folder; the result directory is only read."""
    prof, out = os.fsencode(Path(result_dir)), os.fsencode(Path(output_dir))
    text = _common.text_result("aclprofExtExportTorchNpu",
                               lambda lib, res: lib.aclprofExtExportTorchNpu(prof, out, res))
    return Path(text)


class Profiler(contextlib.ContextDecorator):
    """File-mode profiling into ``output_dir``::

        with Profiler("./prof"):             # or @Profiler("./prof") on a function,
            model.execute()                  # or p.start() ... p.stop()
        Profiler("./prof").analyse()

    ``devices`` are the device ids to profile, ``data_types`` an OR of ``ACL_PROF_*`` bits,
    ``aicore_metrics`` an ``ACL_AICORE_*`` value and ``options`` ``{ACL_PROF_* config type:
    value}`` for aclprofSetConfig. Each start() is one aclprofInit..aclprofFinalize session;
    file mode is process-wide, so only one Profiler runs at a time. Failures raise AclError.

    ``layout="torch_npu"`` writes each session as torch_npu writes a PyTorch run, for
    msprof-analyze (compare, advisor, cluster) and MindStudio Insight: a folder
    ``{host}_{pid}_{time}_ascend_pt`` in ``output_dir`` holding ``ASCEND_PROFILER_OUTPUT/``,
    ``profiler_info_{rank}.json`` and the session's ``PROF_*`` directory (see
    :func:`export_torch_npu`).
    """

    def __init__(
        self,
        output_dir: PathLike,
        *,
        devices: Iterable[int] = (0,),
        data_types: int = _bindings.ACL_PROF_ACL_API | _bindings.ACL_PROF_TASK_TIME,
        aicore_metrics: int = _bindings.ACL_AICORE_NONE,
        options: Optional[Mapping[int, str]] = None,
        layout: str = "msprof",
    ):
        if layout not in ("msprof", "torch_npu"):
            raise ValueError(f"layout: expected 'msprof' or 'torch_npu', got {layout!r}")
        self.layout = layout
        self.output_dir = Path(output_dir).resolve()
        self.devices = list(devices)
        self.data_types = data_types
        self.aicore_metrics = aicore_metrics
        self.options = dict(options or {})
        self._config: Optional[int] = None
        self._before: Optional[Set[Path]] = None

    @property
    def running(self) -> bool:
        return self._config is not None

    def start(self) -> None:
        if self.running:
            raise RuntimeError("the profiler is already running")
        lib = load()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if self._before is None:
            self._before = set(self._result_dirs())
        path = os.fsencode(self.output_dir)
        check("aclprofInit", lib.aclprofInit(path, len(path)))
        with _finalize_on_error(lib):
            ids = (ctypes.c_uint32 * len(self.devices))(*self.devices)
            config = lib.aclprofCreateConfig(
                ids, len(self.devices), self.aicore_metrics, None, self.data_types
            )
            if not config:
                raise AclError("aclprofCreateConfig", _bindings.ACL_ERROR_INVALID_PARAM,
                               recent_error())
            try:
                for config_type, value in self.options.items():
                    raw = value.encode()
                    check("aclprofSetConfig", lib.aclprofSetConfig(config_type, raw, len(raw)))
                check("aclprofStart", lib.aclprofStart(config))
            except BaseException:
                lib.aclprofDestroyConfig(config)
                raise
        self._config = config

    def stop(self) -> None:
        if not self.running:
            raise RuntimeError("the profiler is not running")
        lib = load()
        config, self._config = self._config, None
        errors: List[Tuple[str, int, str]] = []

        def record(name: str, ret: int) -> None:  # each message read right after its call
            if ret:
                errors.append((name, ret, recent_error()))

        record("aclprofStop", lib.aclprofStop(config))
        record("aclprofDestroyConfig", lib.aclprofDestroyConfig(config))
        record("aclprofFinalize", lib.aclprofFinalize())
        if errors:
            raise AclError(*errors[0])
        if self.layout == "torch_npu":
            # The new result directories, not yet in a torch_npu folder, each into its own.
            for d in sorted(self.output_dir.glob("PROF_*")):
                if d.is_dir() and d not in (self._before or set()):
                    folder = export_torch_npu(d, self.output_dir)
                    d.rename(folder / d.name)

    def analyse(self, print_summary: bool = True, top: int = 10) -> Analysis:
        """The result directories this profiler's sessions created and their exported tables.
        Prints, for each, the ``top`` op types by device time (what ``aclprof analyze DIR
        --aggregate-by type`` prints), unless ``print_summary`` is False."""
        before = self._before or set()
        analysis = Analysis(d for d in self._result_dirs() if d not in before)
        if print_summary:
            for d in analysis.result_dirs:
                print(f"{d}\n{summary_table(d, top=top)}", end="")
        return analysis

    def _result_dirs(self) -> List[Path]:
        return _common.result_dirs(self.output_dir)

    def __enter__(self) -> "Profiler":
        self.start()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        # With an error in flight, a failing stop is logged.
        _common.exit_cleanup(self.stop, exc_type)


@contextlib.contextmanager
def _finalize_on_error(lib: _bindings.Library) -> Iterator[None]:
    try:
        yield
    except BaseException:
        lib.aclprofFinalize()
        raise
