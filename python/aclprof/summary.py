"""``aclprof.analyze``: the engine of ``aclprof analyze`` (the library's
``aclprofExtAnalyze``), from Python."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Literal, Optional, Tuple, Union, overload

from . import _common
from ._common import PathLike


class Rows(List[Dict[str, Any]]):
    """The rows of an analysis, best first, as dicts keyed by column title (``"Type"``,
    ``"Count"``, ``"Sum(us)"``, ``"Share(%)"``, ...), with the totals as attributes."""

    def __init__(self, report: Dict[str, Any]):
        super().__init__(report["rows"])
        #: Ops that passed the filters, and their device time in µs.
        self.ops: int = report["ops"]
        self.total_us: float = report["total_us"]
        #: Groups (or single ops) before ``top`` cut the rows.
        self.groups: int = report["groups"]
        #: Records whose signature did not verify (skipped).
        self.corrupt_records: int = report["corrupt_records"]

    def to_dataframe(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs pandas: ``pip install pandas``)."""
        try:
            import pandas  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as e:
            raise ImportError("Rows.to_dataframe needs pandas: pip install pandas") from e
        return pandas.DataFrame(list(self))


class MemoryRows(List[Dict[str, Any]]):
    """``aclprof analyze --memory`` as rows: memory per op, as dicts keyed as its CSV's
    columns (``"Device"``, ``"Op"``, ``"Allocations"``, ``"Total(KB)"``, ``"Max(KB)"``,
    ``"Avg Lifetime(us)"``), largest first; per device its peaks, what was never released
    and its steps (``devices``, in bytes and ns), and the ``findings`` (rule, evidence)."""

    def __init__(self, report: Dict[str, Any]):
        rows = []
        for d in report["devices"]:
            for o in d["ops"]:
                rows.append({
                    "Device": d["device"],
                    "Op": o["name"],
                    "Allocations": o["allocations"],
                    "Total(KB)": round(o["bytes"] / 1024, 3),
                    "Max(KB)": round(o["max_bytes"] / 1024, 3),
                    "Avg Lifetime(us)": round(o["held_ns"] / max(o["released"], 1) / 1e3, 3),
                })
        super().__init__(rows)
        self.devices: List[Dict[str, Any]] = report["devices"]
        self.findings: List[Tuple[str, str]] = [(f["rule"], f["evidence"]) for f in report["findings"]]


class DiffRows(List[Dict[str, Any]]):
    """The rows of a comparison (``aclprof diff``), as dicts keyed by ``"Section"``
    (``"overall"``, ``"type"``, ``"op"``, ``"step"``), ``"Name"``, ``"Base Count"``,
    ``"New Count"``, ``"Base(us)"``, ``"New(us)"``, ``"Diff(us)"``, ``"Ratio"`` (new over
    base) and ``"Status"`` (``"added"``, ``"removed"`` or ``""``); ``None`` where a run has
    no such row."""

    def __init__(self, report: Dict[str, Any]):
        super().__init__(report["rows"])
        #: The two runs' names.
        self.base: str = report["base"]
        self.new: str = report["new"]
        #: With ``fail_above``: one line per regression (end-to-end or an op type).
        self.regressions: List[str] = report.get("regressions", [])

    def section(self, name: str) -> List[Dict[str, Any]]:
        """The rows of one section, largest change first (``"overall"`` in its fixed order)."""
        return [r for r in self if r["Section"] == name]

    def to_dataframe(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs pandas: ``pip install pandas``)."""
        return Rows.to_dataframe(self)  # type: ignore[arg-type]


def diff(base: PathLike, new: PathLike, *, top: int = 0,
         fail_above: Optional[float] = None) -> DiffRows:
    """What ``aclprof diff BASE NEW`` shows, as rows: the overall split of device time,
    then op types, ops (matched by name) and steps, each with base, new, difference and
    ratio, largest change first. ``base`` and ``new`` are what :func:`analyze` takes;
    ``top`` rows per section but the overall one (0: all); ``fail_above`` a percentage whose
    regressions are listed in ``.regressions``. Raises :class:`AclError` on a bad path."""
    options = {"top": top, "format": "json", "fail_above": fail_above}
    base_path, new_path, raw = os.fsencode(base), os.fsencode(new), json.dumps(options).encode()
    text = _common.text_result("aclprofExtDiff",
                               lambda lib, out: lib.aclprofExtDiff(base_path, new_path, raw, out))
    return DiffRows(json.loads(text))


@overload
def analyze(
    path: PathLike,
    *,
    top: int = 10,
    aggregate_by: Optional[str] = None,
    aggregate: str = "sum",
    order_by: Optional[str] = None,
    min_time: float = 0.0,
    max_time: Optional[float] = None,
    type: Union[str, Iterable[str], None] = None,
    name: Optional[str] = None,
    device: Optional[int] = None,
    rank: Optional[int] = None,
    step: Optional[int] = None,
    input_dtype: Optional[str] = None,
    memory: Literal[False] = False,
) -> Rows: ...


@overload
def analyze(
    path: PathLike,
    *,
    top: int = 10,
    aggregate_by: Optional[str] = None,
    aggregate: str = "sum",
    order_by: Optional[str] = None,
    min_time: float = 0.0,
    max_time: Optional[float] = None,
    type: Union[str, Iterable[str], None] = None,
    name: Optional[str] = None,
    device: Optional[int] = None,
    rank: Optional[int] = None,
    step: Optional[int] = None,
    input_dtype: Optional[str] = None,
    memory: Literal[True],
) -> "MemoryRows": ...


def analyze(
    path: PathLike,
    *,
    top: int = 10,
    aggregate_by: Optional[str] = None,
    aggregate: str = "sum",
    order_by: Optional[str] = None,
    min_time: float = 0.0,
    max_time: Optional[float] = None,
    type: Union[str, Iterable[str], None] = None,
    name: Optional[str] = None,
    device: Optional[int] = None,
    rank: Optional[int] = None,
    step: Optional[int] = None,
    input_dtype: Optional[str] = None,
    memory: bool = False,
) -> Union[Rows, "MemoryRows"]:
    """What ``aclprof analyze PATH`` shows, as rows: ``path`` is a result directory
    (``PROF_*``), a folder of them, a file of records a subscription wrote, or CANN's
    database (``msprof_*.db``, ``ascend_pytorch_profiler_*.db``).

    ``top`` rows (0: all); ``aggregate_by`` one of ``"type"``, ``"name"``,
    ``"name+shape"`` (name and input shapes), ``"device"``, ``"stream"``, ``"model"``,
    ``"rank"`` (default: single ops); ``aggregate`` one of ``"sum"``, ``"mean"``, ``"max"``,
    ``"min"``, ``"count"``; ``order_by`` a column (``"+time"``: ascending; ``"computation"``,
    ``"flops"``, ``"memory"``, ``"bandwidth"`` for ops that carry their cost; ``"memory"``
    is the device memory each op allocated while it ran in a run that recorded memory);
    ``min_time`` and ``max_time`` in µs; ``type`` one op type or several; ``name`` a regular
    expression; ``device``, ``rank``, ``step`` and ``input_dtype`` (an input's data type)
    filters. Rows of ops with metadata have the cost columns and their shapes. Raises
    :class:`AclError` for a bad option or an unreadable path, with the library's reason.

    ``memory=True`` is ``aclprof analyze --memory``: a :class:`MemoryRows` of memory per op
    (the other options do not apply)."""
    if memory:
        return MemoryRows(json.loads(_common.analyze_text(path, {"memory": True})))
    query = {
        "top": top,
        "aggregate_by": aggregate_by,
        "aggregate": aggregate,
        "order_by": order_by,
        "min_time": min_time,
        "max_time": max_time,
        "type": [type] if isinstance(type, str) else (None if type is None else list(type)),
        "name": name,
        "device": device,
        "rank": rank,
        "step": step,
        "input_dtype": input_dtype,
    }
    return Rows(json.loads(_common.analyze_text(path, query)))


def summary_table(path: PathLike, top: int = 10, aggregate_by: Optional[str] = "type") -> str:
    """The text table ``aclprof analyze PATH --aggregate-by type`` prints."""
    return _common.analyze_text(path, {"top": top, "aggregate_by": aggregate_by, "format": "table"})
