"""The ONNX Runtime bridge: every node an :class:`InferenceSession` executes becomes an aclprof
op (node name, op type, ORT's own start and duration moved onto the library's clock)::

    import aclprof.onnxruntime
    with aclprof.Profiler("./prof"):
        with aclprof.onnxruntime.InferenceSession("model.onnx", name="mnist") as sess:
            sess.run(None, {"x": x})

ONNX Runtime has no per-node callback; its profiler keeps node events in memory and hands
them out only when profiling ends, once per session. So the ops are reported when the session
ends profiling (:meth:`InferenceSession.end_profiling`, :meth:`close`, or leaving the
``with`` block), from the thread that ends it, and a later ``run()`` of the same session is
not profiled any more (ORT's rule). Each op keeps its real start time.

Needs the ``onnxruntime`` extra: ``pip install 'aclprof[onnxruntime]'``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Type, Union

try:
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - exercised where onnxruntime is absent
    raise ImportError(
        "aclprof.onnxruntime needs ONNX Runtime; install the extra: "
        "pip install 'aclprof[onnxruntime]'"
    ) from e

from . import _common
from .errors import AclError
from .runtime import Model, op_meta, register_op, report_op, report_registered

__all__ = ["InferenceSession", "NodeEvent", "node_events", "report_profile"]

_log = logging.getLogger("aclprof.onnxruntime")
_KERNEL_SUFFIX = "_kernel_time"


class NodeEvent(NamedTuple):
    """One node execution from an ORT profile, on the library's clock (ns)."""

    name: str
    type: str
    start: int
    end: int
    provider: str
    #: The node's tensors as ORT profiled them: shapes (CANN's text, ``"1,3,224,224;64"``),
    #: data types in CANN's names (``"FLOAT;FLOAT"``), and the bytes it read and wrote
    #: (activations, parameters and outputs); empty or None where ORT did not say.
    input_shapes: str = ""
    input_types: str = ""
    output_shapes: str = ""
    output_types: str = ""
    bytes: Optional[int] = None

    def meta(self) -> int:
        """The :func:`aclprof.op_meta` id of the node's tensors (0 if ORT gave none)."""
        return op_meta(input_shapes=self.input_shapes, input_types=self.input_types,
                       output_shapes=self.output_shapes, output_types=self.output_types,
                       bytes=self.bytes)


# ORT's element type names -> CANN's data type names.
_CANN_TYPES = {"float": "FLOAT", "double": "DOUBLE", "float16": "FLOAT16", "bfloat16": "DT_BF16",
               "bool": "BOOL"}


def _type_shapes(v: Any) -> Tuple[str, str]:
    """ORT's ``[{"float": [1, 3, 224, 224]}, ...]`` as CANN's shapes and types text."""
    shapes: List[str] = []
    types: List[str] = []
    if not isinstance(v, list):
        return "", ""
    for t in v:
        if not isinstance(t, dict) or len(t) != 1:
            return "", ""
        (ty, dims), = t.items()
        shapes.append(",".join(str(int(d)) for d in dims) if isinstance(dims, list) else "")
        types.append(_CANN_TYPES.get(ty, str(ty).upper()))
    return ";".join(shapes), ";".join(types)


def _bytes_of(args: Dict[str, Any]) -> Optional[int]:
    try:
        return sum(int(args[k]) for k in ("activation_size", "parameter_size", "output_size"))
    except (KeyError, TypeError, ValueError):
        return None


def node_events(profile: Union[str, "os.PathLike[str]", List[Dict[str, Any]]],
                start_time_ns: int, realtime_offset_ns: Optional[int] = None
                ) -> Iterator[NodeEvent]:
    """The node executions in an ORT profile (its file, or the parsed JSON), given the
    session's ``get_profiling_start_time_ns()`` (CLOCK_REALTIME nanoseconds).
    ``realtime_offset_ns`` is the library's clock minus CLOCK_REALTIME, best measured when
    profiling started (the two clocks drift apart under NTP); measured now if not given."""
    events = profile if isinstance(profile, list) else json.loads(Path(profile).read_text())
    if realtime_offset_ns is None:
        realtime_offset_ns = _common.realtime_offset_ns()
    offset = start_time_ns + realtime_offset_ns
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or e.get("ph") != "X" or not name.endswith(_KERNEL_SUFFIX):
            continue
        args = e.get("args") or {}
        start = offset + int(round(float(e["ts"]) * 1000))
        in_shapes, in_types = _type_shapes(args.get("input_type_shape"))
        out_shapes, out_types = _type_shapes(args.get("output_type_shape"))
        yield NodeEvent(name[: -len(_KERNEL_SUFFIX)], str(args.get("op_name", "")), start,
                        start + int(round(float(e["dur"]) * 1000)), str(args.get("provider", "")),
                        in_shapes, in_types, out_shapes, out_types, _bytes_of(args))


def report_profile(model_id: int, profile: Union[str, "os.PathLike[str]", List[Dict[str, Any]]],
                   start_time_ns: int, realtime_offset_ns: Optional[int] = None) -> int:
    """Reports every node execution of an ORT profile as an op of ``model_id``; returns how
    many, each with its shapes, data types and bytes. For a session you made yourself with
    ``enable_profiling``:
    ``report_profile(model.id, sess.end_profiling(), sess.get_profiling_start_time_ns())``
    (see :func:`node_events` for ``realtime_offset_ns``)."""
    n = 0
    # Each (node, type, metadata) registered once (aclprofExtOpRegister), as ORT runs the
    # same nodes every run: a report then passes only its id and times.
    ids: Dict[Tuple[str, str, int], int] = {}
    for ev in node_events(profile, start_time_ns, realtime_offset_ns):
        key = (ev.name, ev.type, ev.meta())
        op = ids.get(key)
        if op is None:
            try:
                op = register_op(*key)
            except AclError:  # the process's table is full: reported by name
                op = 0
            ids[key] = op
        if op:
            report_registered(model_id, op, ev.start, ev.end)
        else:
            report_op(model_id, *key[:2], ev.start, ev.end, key[2])
        n += 1
    return n


class InferenceSession:
    """``onnxruntime.InferenceSession`` with every node execution reported to aclprof as an
    op of the model ``name`` (default: the model file's name), registered on ``device``.

    Takes ORT's arguments and forwards every other attribute to the ORT session
    (``get_inputs``, ``run_with_iobinding``, ...). The session is made with
    ``enable_profiling`` and a file prefix in a temporary directory set in the given
    ``sess_options`` (or new ones), which get their own values back once it is made; the
    profile file is removed once reported unless ``keep_profile``. ORT keeps at most a million
    events a session: runs it dropped are counted in :attr:`unprofiled_runs` and logged.
    """

    def __init__(self, path_or_bytes: Union[str, bytes, "os.PathLike[str]"],
                 sess_options: Optional["ort.SessionOptions"] = None,
                 providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Dict[Any, Any]]] = None,
                 *, name: Optional[str] = None, device: int = 0, keep_profile: bool = False,
                 **kwargs: Any):
        options = sess_options if sess_options is not None else ort.SessionOptions()
        if name is None:
            name = (Path(os.fsdecode(path_or_bytes)).stem
                    if not isinstance(path_or_bytes, bytes) else "onnx_model")
        self.keep_profile = keep_profile
        self.model = Model.register(name, device)
        self._tmp = tempfile.mkdtemp(prefix="aclprof-ort-")
        saved = options.enable_profiling, options.profile_file_prefix
        try:
            options.enable_profiling = True
            options.profile_file_prefix = os.path.join(self._tmp, "ort_profile")
            try:
                self.session = ort.InferenceSession(path_or_bytes, options, providers,
                                                    provider_options, **kwargs)
            finally:  # the session has its own copy: the caller's options are theirs again
                options.enable_profiling, options.profile_file_prefix = saved
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self.model.unload()
            raise
        # The clocks' offset when profiling starts: ORT's event times count from then.
        self._realtime_offset = _common.realtime_offset_ns()
        self._runs_lock = threading.Lock()
        self.ops = 0
        self.runs = 0
        self.unprofiled_runs = 0
        self.profile_file: Optional[str] = None

    @property
    def model_id(self) -> int:
        return self.model.id

    def __getattr__(self, attr: str) -> Any:
        session = self.__dict__.get("session")  # not self.session: no session, no recursion
        if session is None:
            raise AttributeError(attr)
        return getattr(session, attr)

    def _count_run(self) -> None:
        """Counts a run (from any thread) for :attr:`unprofiled_runs`."""
        if self.profile_file is None:
            with self._runs_lock:
                self.runs += 1

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
            run_options: Optional["ort.RunOptions"] = None) -> Any:
        """ORT's ``run``; profiled until :meth:`end_profiling`."""
        self._count_run()
        return self.session.run(output_names, input_feed, run_options)

    def run_with_iobinding(self, *args: Any, **kwargs: Any) -> Any:
        """ORT's ``run_with_iobinding``, counted like :meth:`run`."""
        self._count_run()
        return self.session.run_with_iobinding(*args, **kwargs)

    def run_with_ort_values(self, *args: Any, **kwargs: Any) -> Any:
        """ORT's ``run_with_ort_values``, counted like :meth:`run`."""
        self._count_run()
        return self.session.run_with_ort_values(*args, **kwargs)

    def run_async(self, *args: Any, **kwargs: Any) -> Any:
        """ORT's ``run_async``, counted like :meth:`run`."""
        self._count_run()
        return self.session.run_async(*args, **kwargs)

    def end_profiling(self) -> str:
        """Ends ORT's profiling and reports every node execution since the session was made;
        returns ORT's profile file (removed already unless ``keep_profile``). Later runs are
        not profiled. A second call returns the same file and reports nothing."""
        if self.profile_file is not None:
            return self.profile_file
        path: str = ""
        try:
            path = self.session.end_profiling()
            if not path:
                _log.warning("aclprof.onnxruntime: ONNX Runtime wrote no profile")
            else:
                events = json.loads(Path(path).read_text())
                self.ops = report_profile(self.model.id, events,
                                          self.session.get_profiling_start_time_ns(),
                                          self._realtime_offset)
                seen = sum(1 for e in events
                           if e.get("cat") == "Session" and e.get("name") == "model_run")
                self.unprofiled_runs = max(0, self.runs - seen)
                if self.unprofiled_runs:
                    _log.warning("aclprof.onnxruntime: ONNX Runtime's profiler kept %d of %d "
                                 "runs (it stops at a million events); the other %d are not "
                                 "reported", seen, self.runs, self.unprofiled_runs)
        finally:  # reported or not, the directory goes unless it holds a profile to keep
            if not (self.keep_profile and path):
                shutil.rmtree(self._tmp, ignore_errors=True)
        self.profile_file = path
        return path

    def close(self) -> None:
        """Reports the session's ops (if not done yet) and unloads the aclprof model."""
        if self.model.loaded:
            try:
                self.end_profiling()
            finally:
                self.model.unload()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        _common.exit_cleanup(self.close, exc_type)

    def __repr__(self) -> str:
        return f"<aclprof.onnxruntime.InferenceSession model {self.model.id}, {self.ops} ops>"
