"""What the Pythonic layer, the framework bridges and the profiler APIs share: the clock,
ranks, result directories, the analysis engine's text results and ``with`` support.

A private module: nothing here is part of the package's API, but its names are the ones the
other modules import (no module imports another's private names).
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from types import TracebackType
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Type,
                    TypeVar, Union)

from ._bindings import Library
from ._lib import load
from .errors import check

if TYPE_CHECKING:
    #: The out-pointer (``ctypes.byref``) an ``aclprofExt*`` call fills with its text.
    OutText = ctypes._CArgObject

#: A file path, as the Pythonic layer's functions take one.
PathLike = Union[str, "os.PathLike[str]"]

_log = logging.getLogger("aclprof")

# ---- the clock ------------------------------------------------------------------------------

#: The library's clock (``aclprofExtNowNs``, :func:`aclprof.now_ns`): CLOCK_MONOTONIC_RAW.
#: Read it without a call into the library as ``clock_ns(CLOCK)``: a hot path binds both
#: names once and pays one C call per reading.
CLOCK = time.CLOCK_MONOTONIC_RAW
clock_ns = time.clock_gettime_ns


def realtime_offset_ns() -> int:
    """What to add to a CLOCK_REALTIME reading (``time.time_ns()``, e.g. ONNX Runtime's
    profiling start) to get the library's clock: the tighter of a few paired readings."""
    best: Optional[int] = None
    offset = 0
    for _ in range(5):
        a = clock_ns(CLOCK)
        r = time.time_ns()
        b = clock_ns(CLOCK)
        if best is None or b - a < best:
            best, offset = b - a, (a + b) // 2 - r
    return offset


# ---- ranks and result directories -----------------------------------------------------------

#: Where a result directory (``PROF_*``) keeps its exported tables and timeline.
RESULT_SUBDIR = "mindstudio_profiler_output"


def rank() -> int:
    """This process's rank in a distributed job: ``$RANK_ID`` (CANN, MindSpore), else
    ``$RANK`` (torch.distributed), else 0."""
    for var in ("RANK_ID", "RANK"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def result_dirs(directory: Path) -> List[Path]:
    """The result directories (``PROF_*``) in ``directory``, and in its torch_npu-layout
    folders (``*_ascend_pt/PROF_*``), sorted (oldest first: their names hold their start
    time)."""
    found = list(directory.glob("PROF_*")) + list(directory.glob("*_ascend_pt/PROF_*"))
    return sorted((d for d in found if d.is_dir()), key=lambda d: d.name)


# ---- the analysis engine's text results ------------------------------------------------------


def text_result(name: str, call: Callable[[Library, "OutText"], int]) -> str:
    """Calls the ``aclprofExt*`` function ``name`` that returns text the library allocated:
    ``call(lib, out)`` makes the call, passing ``out`` as its last argument. Raises
    :class:`AclError` when it fails; frees the text."""
    lib = load()
    out = ctypes.c_void_p()
    check(name, call(lib, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode("utf-8", "replace") if out.value else ""
    finally:
        lib.aclprofExtFreeResult(ctypes.cast(out, ctypes.POINTER(ctypes.c_char)))


def slow_rank(ranks: List[int], computing_ns: List[int], waiting_ns: List[int]
              ) -> Optional[Tuple[int, int]]:
    """The rank that stands out and why (1: it computes longest, 2: it waits longest), by the
    library's rule (``aclprofExtSlowRank``, the one the report uses); None when none does."""
    n = len(ranks)
    arr = ctypes.c_uint64 * n
    rank, why = ctypes.c_uint32(), ctypes.c_uint32()
    lib = load()
    check("aclprofExtSlowRank", lib.aclprofExtSlowRank(
        (ctypes.c_uint32 * n)(*ranks), arr(*computing_ns), arr(*waiting_ns), n,
        ctypes.byref(rank), ctypes.byref(why)))
    return (rank.value, why.value) if why.value else None


def slowest_link(moved: List[Tuple[int, int]]) -> Optional[Tuple[int, float]]:
    """The index of the slowest of ``moved`` ((bytes, ns) per link) and its bandwidth against
    the median link's, by the library's rule (``aclprofExtSlowestLink``, the one ``aclprof
    analyze --communication`` uses); None with fewer than two links that moved bytes."""
    n = len(moved)
    arr = ctypes.c_uint64 * n
    index, of_median = ctypes.c_size_t(), ctypes.c_double()
    lib = load()
    check("aclprofExtSlowestLink", lib.aclprofExtSlowestLink(
        arr(*(b for b, _ in moved)), arr(*(t for _, t in moved)), n, ctypes.byref(index),
        ctypes.byref(of_median)))
    return (index.value, of_median.value) if index.value < n else None


def analyze_text(path: PathLike, query: Mapping[str, Any]) -> str:
    """What ``aclprofExtAnalyze`` prints for ``path`` and ``query`` (the engine of ``aclprof
    analyze``: its options as JSON)."""
    raw, options = os.fsencode(path), json.dumps(query).encode()
    return text_result("aclprofExtAnalyze",
                       lambda lib, out: lib.aclprofExtAnalyze(raw, options, out))


# ---- with support ---------------------------------------------------------------------------

_S = TypeVar("_S", bound="Started")


def exit_cleanup(cleanup: Callable[[], object], exc_type: Optional[Type[BaseException]]) -> None:
    """Runs ``cleanup`` as a ``with`` block is left. With an exception in flight, a failing
    cleanup is logged instead of raised, so that it does not mask the original error."""
    if exc_type is None:
        cleanup()
        return
    try:
        cleanup()
    except Exception:
        _log.warning("%s failed while %s was propagating",
                     getattr(cleanup, "__qualname__", cleanup), exc_type.__name__, exc_info=True)


class Started:
    """``with`` support for objects with ``start()``, ``stop()`` and ``active``: leaving the
    block stops them; on an exception, a failing stop does not mask the original error."""

    @property
    def active(self) -> bool:
        raise NotImplementedError

    def start(self: _S) -> _S:
        raise NotImplementedError

    def stop(self) -> object:
        raise NotImplementedError

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self.active:
            exit_cleanup(self.stop, exc_type)


# ---- memory, as CANN's database holds it ---------------------------------------------------


def read_only_db(path: Path) -> sqlite3.Connection:
    """Opens a database only to read it: nothing is written beside it (no -shm or -wal
    file), and it opens on a read-only file system. Immutable unless a -wal file beside it
    holds part of the data (the library's own reader follows the same rule)."""
    wal = Path(str(path) + "-wal")
    live = wal.exists() and wal.stat().st_size > 0
    uri = Path(path).absolute().as_uri() + ("?mode=ro" if live else "?immutable=1")
    return sqlite3.connect(uri, uri=True)


def _op_mem_rows(result_dir: Path, sql: str) -> List[Tuple[Any, ...]]:
    """Rows of `sql` over CANN's database's NPU_OP_MEM (none without the table)."""
    dbs = sorted(result_dir.glob("msprof_*.db"))
    if not dbs:
        return []
    con = read_only_db(dbs[-1])
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'NPU_OP_MEM'").fetchone():
            return []
        return con.execute(sql).fetchall()
    finally:
        con.close()


def operator_totals(result_dir: Path) -> Dict[int, List[Tuple[int, int]]]:
    """Per device, the operator memory allocated after each allocation and release:
    (epoch ns, bytes), in time order (``NPU_OP_MEM``'s totals, exact)."""
    out: Dict[int, List[Tuple[int, int]]] = {}
    for dev, ts, total in _op_mem_rows(
            result_dir, "SELECT deviceId, timestampNs, totalAllocate FROM NPU_OP_MEM "
                        "ORDER BY timestampNs, rowid"):
        out.setdefault(dev, []).append((ts, int(total)))
    return out


def operator_allocations(result_dir: Path) -> List[Dict[str, Any]]:
    """Every operator allocation of CANN's database (``NPU_OP_MEM``), paired with its release
    by name and address: dicts of name, device, addr, size (bytes), start and end (epoch ns;
    end None if never released), in allocation order."""
    rows = _op_mem_rows(
        result_dir,
        "SELECT n.value, m.deviceId, m.addr, m.size, m.timestampNs, t.name FROM NPU_OP_MEM m "
        "JOIN STRING_IDS n ON m.operatorName = n.id JOIN ENUM_MEMORY t ON m.type = t.id "
        "ORDER BY m.timestampNs, m.rowid")
    out: List[Dict[str, Any]] = []
    open_: Dict[Tuple[str, int, int], List[Dict[str, Any]]] = {}
    for name, dev, addr, size, ts, kind in rows:
        key = (name, dev, addr)
        if kind == "allocate":
            a = {"name": name, "device": dev, "addr": addr, "size": size, "start": ts, "end": None}
            out.append(a)
            open_.setdefault(key, []).append(a)
        elif open_.get(key):
            open_[key].pop()["end"] = ts
    return out
