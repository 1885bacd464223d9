"""aclprof for Python: CANN's AscendCL profiling API on any Linux machine.

Two layers over the aclprof shared library:

* the pyACL-compatible module :mod:`acl` (``acl.prof``, ``acl.util``, ``acl.rt``, ``acl.mdl``),
  for scripts written for an NPU;
* this package's Pythonic layer: :class:`Profiler` (file mode), :class:`Subscription` and
  :class:`OpReader` (subscription mode, decoding whole reads at once with :func:`decode`),
  :class:`RingSubscription` and :class:`RingReader` (subscription through a shared-memory
  ring, read zero-copy, in this process or another),
  :func:`analyze` (the engine of ``aclprof analyze``, as rows), :func:`diff` (two runs
  compared, as ``aclprof diff``),
  :class:`Model` and the extension API (:func:`report_op`, :func:`now_ns`, :func:`flush`,
  :func:`stats`); :mod:`aclprof.pipeline` for a host data pipeline's stages and queues;
  :mod:`aclprof.memory` for the device memory of a runtime that is not CANN;
* framework bridges and profiler APIs, imported on their own: :mod:`aclprof.torch` and
  :mod:`aclprof.onnxruntime` (extras), :mod:`aclprof.mindspore`, :mod:`aclprof.megengine`
  (and ``python -m aclprof.profile_analyze``), :mod:`aclprof.tensorflow`.

Every macro and enum value of the C headers is available here too (``aclprof.ACL_PROF_ACL_API``).
"""

from . import _bindings, memory, pipeline
from ._bindings import *  # noqa: F401,F403  (the headers' constants and aclprofExtStats)
from ._lib import LibraryNotFound, find_library, load, recent_error
from .errors import AclError, check
from .profiler import Analysis, Profiler, export_torch_npu
from .records import RECORD_DTYPE, RECORD_SIZE, OpBatch, OpReader, OpRecord, RecordError, decode
from .ring import RingBatch, RingReader, RingSubscription
from .runtime import (Model, Stats, flush, now_ns, op_meta, register_op, report_op,
                      report_registered, stats)
from .subscription import Subscription
from .summary import DiffRows, MemoryRows, Rows, analyze, diff

__version__ = "0.1.0"

__all__ = [
    "AclError",
    "Analysis",
    "LibraryNotFound",
    "Model",
    "OpBatch",
    "OpReader",
    "OpRecord",
    "Profiler",
    "RECORD_DTYPE",
    "RECORD_SIZE",
    "RecordError",
    "RingBatch",
    "RingReader",
    "RingSubscription",
    "Rows",
    "Stats",
    "Subscription",
    "analyze",
    "diff",
    "DiffRows",
    "MemoryRows",
    "check",
    "decode",
    "export_torch_npu",
    "find_library",
    "flush",
    "load",
    "now_ns",
    "memory",
    "pipeline",
    "recent_error",
    "report_op",
    "register_op",
    "report_registered",
    "op_meta",
    "stats",
] + _bindings.__all__
