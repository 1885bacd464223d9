"""The emulated runtime (acl/acl_prof_ext.h): models, reporting ops, delivery statistics."""

from __future__ import annotations

import ctypes
import os
from typing import NamedTuple, Union

from . import _bindings
from ._lib import load
from .errors import check

PathLike = Union[str, "os.PathLike[str]"]


class Model:
    """A model registered with the emulated runtime; usable as a context manager (unloads).

    ``Model.simulate(path)`` loads a model description (JSON, or an exported op_summary CSV)
    that :meth:`execute` runs on the simulator; ``Model.register(name)`` registers a model
    whose ops your own code reports with :meth:`report_op`.
    """

    def __init__(self, model_id: int, simulated: bool):
        self.id = model_id
        self.simulated = simulated
        self.loaded = True

    @classmethod
    def simulate(cls, path: PathLike) -> "Model":
        model_id = ctypes.c_uint32()
        check("aclprofExtSimModelLoad",
              load().aclprofExtSimModelLoad(os.fsencode(path), ctypes.byref(model_id)))
        return cls(model_id.value, simulated=True)

    @classmethod
    def register(cls, name: str, device: int = 0) -> "Model":
        model_id = ctypes.c_uint32()
        check("aclprofExtModelLoad",
              load().aclprofExtModelLoad(name.encode(), device, ctypes.byref(model_id)))
        return cls(model_id.value, simulated=False)

    def execute(self, times: int = 1) -> None:
        """Runs a simulated model ``times`` times on this thread (each run returns when the
        simulated execution has finished)."""
        if not self.simulated:
            raise TypeError("only a simulated model can be executed; report ops with report_op")
        lib = load()
        for _ in range(times):
            check("aclprofExtSimModelExecute", lib.aclprofExtSimModelExecute(self.id))

    def report_op(self, name: str, op_type: str, start_ns: int, end_ns: int) -> None:
        """Reports one op of this model that ran from ``start_ns`` to ``end_ns`` (now_ns clock)."""
        report_op(self.id, name, op_type, start_ns, end_ns)

    def unload(self) -> None:
        if self.loaded:
            self.loaded = False
            check("aclprofExtModelUnload", load().aclprofExtModelUnload(self.id))

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unload()

    def __repr__(self) -> str:
        kind = "simulated" if self.simulated else "registered"
        return f"<Model {self.id} ({kind}{'' if self.loaded else ', unloaded'})>"


def report_op(model_id: int, name: str, op_type: str, start_ns: int, end_ns: int) -> None:
    """``aclprofExtReportOp``: one op of model ``model_id`` ran from ``start_ns`` to ``end_ns``."""
    check("aclprofExtReportOp",
          load().aclprofExtReportOp(model_id, name.encode(), op_type.encode(), start_ns, end_ns))


def device_count() -> int:
    """How many devices the runtime emulates (``aclrtGetDeviceCount``, ACLPROF_DEVICE_COUNT):
    ids 0 to ``device_count() - 1``."""
    n = ctypes.c_uint32()
    check("aclrtGetDeviceCount", load().aclrtGetDeviceCount(ctypes.byref(n)))
    return n.value


def now_ns() -> int:
    """The library's clock: nanoseconds on CLOCK_MONOTONIC_RAW."""
    return _bindings.typed(load()).aclprofExtNowNs()


def flush() -> None:
    """Returns when every op reported so far has been written to its subscriber."""
    check("aclprofExtFlush", load().aclprofExtFlush())


class Stats(NamedTuple):
    """Delivery statistics since the process started, all subscriptions together."""

    reported: int
    delivered: int
    dropped: int
    bytes_written: int


def stats() -> Stats:
    s = _bindings.aclprofExtStats()
    check("aclprofExtGetStats", load().aclprofExtGetStats(ctypes.byref(s)))
    return Stats(s.recordsReported, s.recordsDelivered, s.recordsDropped, s.bytesWritten)
