"""``aclprof.memory``: report device memory from a runtime that is not CANN, so that file mode
writes it where CANN writes operator memory (``memory_record``, ``operator_memory``,
``NPU_OP_MEM``) or the application's own (``npu_mem`` APP), and ``aclprof analyze --memory``
(``aclprof.analyze(path, memory=True)``) finds the peaks, leaks and fragmentation::

    aclprof.memory.allocate(addr, size, owner="conv1")
    ...
    aclprof.memory.free(addr, size, owner="conv1")

A runtime that keeps its own pool passes its totals (``total_allocated``,
``total_reserved``); otherwise aclprof counts them from the events. Recorded while a
file-mode session records ``ACL_PROF_TASK_MEMORY`` (or samples memory, for the application's
pool); each call then costs its argument checks and a buffered line, no system call.
"""

from __future__ import annotations

from . import _bindings
from ._lib import load
from .errors import check

#: Operator memory (an op's workspace and outputs).
OPERATOR = 0
#: The application's own device memory.
APP = 1


def report(size: int, addr: int, owner: str = "", *, device: int = 0, pool: int = OPERATOR,
           total_allocated: int = 0, total_reserved: int = 0, time_ns: int = 0) -> None:
    """``aclprofExtMemReport``: ``size`` bytes allocated (> 0) or released (< 0) at
    ``addr`` by ``owner`` on ``device``, in ``pool`` (:data:`OPERATOR` or :data:`APP`), at
    ``time_ns`` (:func:`aclprof.now_ns` clock; 0: now)."""
    ev = _bindings.aclprofExtMemEvent(device, pool, addr, size, owner.encode(), total_allocated,
                                      total_reserved, time_ns)
    check("aclprofExtMemReport", load().aclprofExtMemReport(ev))


def allocate(addr: int, size: int, owner: str = "", **kw: int) -> None:
    """``size`` bytes allocated at ``addr`` (keywords as :func:`report`)."""
    report(size, addr, owner, **kw)


def free(addr: int, size: int, owner: str = "", **kw: int) -> None:
    """``size`` bytes at ``addr`` released (keywords as :func:`report`)."""
    report(-size, addr, owner, **kw)
