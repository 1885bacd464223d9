"""The emulated runtime (acl/acl_prof_ext.h): models, reporting ops, delivery statistics."""

from __future__ import annotations

import ctypes
import os
from typing import Dict, NamedTuple, Optional, Sequence, Tuple, Union

from . import _bindings
from ._common import PathLike as PathLike
from ._lib import load
from .errors import check


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

    def report_op(self, name: str, op_type: str, start_ns: int, end_ns: int,
                  meta: int = 0) -> None:
        """Reports one op of this model that ran from ``start_ns`` to ``end_ns`` (now_ns clock),
        with the metadata ``meta`` (an :func:`op_meta` id) if given."""
        report_op(self.id, name, op_type, start_ns, end_ns, meta)

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


def report_op(model_id: int, name: str, op_type: str, start_ns: int, end_ns: int,
              meta: int = 0) -> None:
    """``aclprofExtReportOp``: one op of model ``model_id`` ran from ``start_ns`` to ``end_ns``;
    with ``meta`` (an :func:`op_meta` id), ``aclprofExtReportOpMeta``."""
    lib = load()
    if meta:
        check("aclprofExtReportOpMeta",
              lib.aclprofExtReportOpMeta(model_id, name.encode(), op_type.encode(), start_ns,
                                         end_ns, meta))
    else:
        check("aclprofExtReportOp",
              lib.aclprofExtReportOp(model_id, name.encode(), op_type.encode(), start_ns, end_ns))


def register_op(name: str, op_type: str, meta: int = 0) -> int:
    """``aclprofExtOpRegister``: the id of an op registered once (its name, type and ``meta``,
    an :func:`op_meta` id or 0), for :func:`report_registered`. The same three give the same
    id; ids stay valid until the process exits."""
    n, t = name.encode(), op_type.encode()
    out = ctypes.c_uint32()
    check("aclprofExtOpRegister",
          load().aclprofExtOpRegister(n, len(n), t, len(t), meta, ctypes.byref(out)))
    return out.value


def report_registered(model_id: int, op_id: int, start_ns: int, end_ns: int) -> None:
    """``aclprofExtReportRegisteredOp``: the op registered as ``op_id`` (:func:`register_op`)
    ran on model ``model_id`` from ``start_ns`` to ``end_ns``; subscribers get the record
    :func:`report_op` would give them."""
    check("aclprofExtReportRegisteredOp",
          load().aclprofExtReportRegisteredOp(model_id, op_id, start_ns, end_ns))


Shapes = Union[str, Sequence[Sequence[int]], None]
Texts = Union[str, Sequence[str], None]


def shapes_text(shapes: Shapes) -> str:
    """CANN's text for tensor shapes: ``[[1, 3, 224, 224], [64]]`` -> ``"1,3,224,224;64"``
    (a string is kept as it is)."""
    if shapes is None:
        return ""
    if isinstance(shapes, str):
        return shapes
    return ";".join(",".join(str(int(d)) for d in s) for s in shapes)


def _texts(t: Texts) -> str:
    if t is None:
        return ""
    return t if isinstance(t, str) else ";".join(str(x) for x in t)


_META_IDS: Dict[Tuple[str, str, str, str, str, str, int, int], int] = {}


def op_meta(input_shapes: Shapes = None, input_types: Texts = None,
            input_formats: Texts = None, output_shapes: Shapes = None,
            output_types: Texts = None, output_formats: Texts = None,
            flops: Optional[int] = None, bytes: Optional[int] = None) -> int:
    """``aclprofExtOpMetaCreate``: the id of an op's tensors (shapes as lists of dimensions
    or CANN's text, data types and formats as lists or ``;``-separated text) and its cost
    (FLOPs and bytes moved of one execution), for :func:`report_op`'s ``meta``. Equal
    descriptions have one id (cached here, so calling this per op is cheap). 0 if nothing
    is known."""
    key = (shapes_text(input_shapes), _texts(input_types), _texts(input_formats),
           shapes_text(output_shapes), _texts(output_types), _texts(output_formats),
           int(flops or 0), int(bytes or 0))
    cached = _META_IDS.get(key)
    if cached is not None:
        return cached
    m = _bindings.aclprofExtOpMeta(*(k.encode() for k in key[:6]), key[6], key[7])
    out = ctypes.c_uint32()
    check("aclprofExtOpMetaCreate",
          load().aclprofExtOpMetaCreate(ctypes.byref(m), ctypes.byref(out)))
    if len(_META_IDS) < 65536:
        _META_IDS[key] = out.value
    return out.value


def device_count() -> int:
    """How many devices the runtime emulates (``aclrtGetDeviceCount``, ACLPROF_DEVICE_COUNT):
    ids 0 to ``device_count() - 1``."""
    n = ctypes.c_uint32()
    check("aclrtGetDeviceCount", load().aclrtGetDeviceCount(ctypes.byref(n)))
    return n.value


def now_ns() -> int:
    """The library's clock: nanoseconds on CLOCK_MONOTONIC_RAW."""
    return load().aclprofExtNowNs()


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
