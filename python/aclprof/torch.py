"""The PyTorch bridge: every op PyTorch executes inside a :class:`profile` block becomes an
aclprof op, reported live from the thread that ran it (one stream per thread)::

    import aclprof.torch
    with aclprof.Profiler("./prof"), aclprof.torch.profile(net, name="resnet18"):
        net(x)

Each op is one ATen operator as it reaches the CPU or GPU kernels (below autograd and the
composite decompositions), timed around its kernel on the library's clock. Its name is the
module path plus the operator (``layer1.0.conv1/aten::convolution``), its type the
operator (``aten::convolution``). How this was chosen over ``torch.profiler`` and module hooks:
docs/design.md, "The PyTorch bridge".

Needs the ``torch`` extra: ``pip install 'aclprof[torch]'``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import logging
import os
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Type, TypeVar

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as e:  # pragma: no cover - exercised where torch is absent
    raise ImportError(
        "aclprof.torch needs PyTorch; install the extra: pip install 'aclprof[torch]'"
    ) from e

from . import _bindings, _common
from ._lib import load, recent_error
from .profiler import Profiler
from .runtime import Model, op_meta

__all__ = ["profile", "profile_loader"]

_log = logging.getLogger("aclprof.torch")
_F = TypeVar("_F", bound=Callable[..., Any])

# The library's clock, read without a call into the library (bound here for the hot path).
_CLOCK = _common.CLOCK
_now = _common.clock_ns


class _Scope(threading.local):
    """This thread's stack of module paths (the innermost module running)."""

    def __init__(self) -> None:
        self.stack: List[str] = []


_scope = _Scope()
_hook_lock = threading.Lock()
_hook_users = 0
_hook_handles: List[Any] = []
# Module object id -> its path, for every module of every active profile's root module
# (with the compiled path: the path's address there), and how many active blocks named it.
_paths: Dict[int, Any] = {}
_path_refs: Dict[int, int] = {}


def _pre_hook(module: Any, args: Any) -> None:
    path = _paths.get(id(module))
    if path is not None:
        _scope.stack.append(path)


def _post_hook(module: Any, args: Any, output: Any) -> None:
    if id(module) in _paths and _scope.stack:
        _scope.stack.pop()


# ---- the compiled reporting path ----------------------------------------------------------

_SOURCE = Path(__file__).with_name("_torch_ext.cpp")
_ext_lock = threading.Lock()
_ext_state: List[Optional[ctypes.CDLL]] = []  # [] until tried; then [the library or None]
# Module path -> its address in the compiled path (kept there for the process's life).
_scope_ids: Dict[str, int] = {}


def _ext_dir() -> Path:
    explicit = os.environ.get("ACLPROF_TORCH_EXT_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "aclprof" / "torch"


def _build_ext() -> Path:
    """The compiled path for this torch, built with PyTorch's own extension builder
    (``torch.utils.cpp_extension``: its include paths, ABI flag and libraries, ninja, and a
    lock so that two processes never build into one directory at once) if not cached;
    raises if it cannot be built."""
    from torch.utils import cpp_extension

    flags = ["-O2", "-DNDEBUG", "-std=c++20"]
    key = hashlib.sha256(b"\0".join([
        _SOURCE.read_bytes(), torch.__version__.encode(), torch.__file__.encode(),
        " ".join(flags).encode(), sys.version.encode()])).hexdigest()[:16]
    build = _ext_dir() / key
    so = build / "aclprof_torch.so"
    if so.exists():
        return so
    build.mkdir(parents=True, exist_ok=True)
    # The builder runs ninja from PATH: the one pip installed beside this Python is found
    # too, for the time of the build only.
    path = os.environ.get("PATH")
    bindir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bindir + os.pathsep + path if path else bindir
    try:
        cpp_extension.load(name="aclprof_torch", sources=[str(_SOURCE)], extra_cflags=flags,
                           build_directory=str(build), is_python_module=False,
                           verbose=False)
    except Exception as e:  # the builder raises several kinds; one line says which
        last = (str(e).strip().splitlines() or [type(e).__name__])[-1]
        raise OSError(f"torch.utils.cpp_extension could not build it: {last}") from e
    finally:
        if path is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = path
    if not so.exists():
        raise OSError(f"torch.utils.cpp_extension built no {so}")
    return so


def _ext() -> Optional[ctypes.CDLL]:
    """The compiled reporting path (``_torch_ext.cpp``), built at first use and cached under
    ``$ACLPROF_TORCH_EXT_DIR`` (default ``~/.cache/aclprof/torch``); None where it cannot be
    built, or with ``ACLPROF_TORCH_CPP=0``: the Python dispatch mode reports instead."""
    global _ext_push, _ext_pop
    with _ext_lock:
        if _ext_state:
            return _ext_state[0]
        ext: Optional[ctypes.CDLL] = None
        if os.environ.get("ACLPROF_TORCH_CPP", "1") != "0":
            try:
                ext = ctypes.CDLL(str(_build_ext()))
                vp, u32, u64p = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)
                for name, args in [("aclprof_torch_init", [vp] * 6),
                                   ("aclprof_torch_profile_new", [u32, ctypes.c_char_p, ctypes.c_int]),
                                   ("aclprof_torch_profile_free", [vp]),
                                   ("aclprof_torch_counts", [vp, u64p, u64p]),
                                   ("aclprof_torch_enter", [vp]), ("aclprof_torch_exit", []),
                                   ("aclprof_torch_scope", [ctypes.c_char_p]),
                                   ("aclprof_torch_push", [vp]), ("aclprof_torch_pop", []),
                                   ("aclprof_torch_clear", []),
                                   ("aclprof_torch_memory", [vp, vp, ctypes.c_int32]),
                                   ("aclprof_torch_enabled", [])]:
                    getattr(ext, name).argtypes = args
                    getattr(ext, name).restype = None
                ext.aclprof_torch_init.restype = ctypes.c_int
                ext.aclprof_torch_profile_new.restype = vp
                ext.aclprof_torch_scope.restype = vp
                ext.aclprof_torch_enabled.restype = ctypes.c_int
                lib = load()
                addr = _bindings.address
                rc = ext.aclprof_torch_init(addr(lib.aclprofExtReportOp),
                                            addr(lib.aclprofExtReportOpMeta),
                                            addr(lib.aclprofExtOpMetaCreate),
                                            addr(lib.aclprofExtListen),
                                            addr(lib.aclprofExtOpRegister),
                                            addr(lib.aclprofExtReportRegisteredOp))
                if rc != 0:
                    raise OSError(f"aclprofExtListen failed: {recent_error()}")
                _ext_push, _ext_pop = ext.aclprof_torch_push, ext.aclprof_torch_pop
                listener = ctypes.cast(_LISTENER, vp).value
                if lib.aclprofExtListen(listener, None) != 0:
                    raise OSError(f"aclprofExtListen failed: {recent_error()}")
                # No call into Python once the interpreter is going away.
                atexit.register(lib.aclprofExtUnlisten, listener, None)
            except OSError as e:
                _log.warning("aclprof.torch: the compiled reporting path is unavailable (%s); "
                             "ops are reported through a Python dispatch mode, slower", e)
                ext = None
        _ext_state.append(ext)
        return ext


def _ext_pre_hook(module: Any, args: Any) -> None:
    path = _paths.get(id(module))
    if path is not None:
        _ext_push(path)


def _ext_post_hook(module: Any, args: Any, output: Any) -> None:
    if id(module) in _paths:
        _ext_pop()


def _ext_push(scope: int) -> None:  # replaced by the compiled function when _ext loads it
    raise AssertionError("the compiled path is not loaded")


def _ext_pop() -> None:
    raise AssertionError("the compiled path is not loaded")


def _loaded() -> Optional[ctypes.CDLL]:
    """The compiled path, if :func:`_ext` loaded it (without trying to)."""
    return _ext_state[0] if _ext_state else None


def _hooks_acquire(root: Optional[Any], root_name: str) -> None:
    global _hook_users
    ext = _loaded()
    with _hook_lock:
        if root is not None:
            for path, m in root.named_modules():
                full = f"{root_name}.{path}" if path else root_name
                if ext is not None:
                    if full not in _scope_ids:
                        _scope_ids[full] = ext.aclprof_torch_scope(full.encode())
                    _paths[id(m)] = _scope_ids[full]
                else:
                    _paths[id(m)] = full
                _path_refs[id(m)] = _path_refs.get(id(m), 0) + 1
        _hook_users += 1
        _sync_hooks()


# With the compiled path: whether the library last said anyone listens. The module hooks
# (which slow every module call down) are installed only then; the library tells us of a
# subscription that starts in the middle of a block (aclprofExtListen).
_listening = False


def _sync_hooks() -> None:
    """Under _hook_lock: the module hooks installed while a block is open and, with the
    compiled path, someone listens."""
    compiled = _loaded() is not None
    want = _hook_users > 0 and (_listening or not compiled)
    if want and not _hook_handles:
        reg = torch.nn.modules.module
        pre, post = (_ext_pre_hook, _ext_post_hook) if compiled else (_pre_hook, _post_hook)
        _hook_handles.append(reg.register_module_forward_pre_hook(pre))
        _hook_handles.append(reg.register_module_forward_hook(post, always_call=True))
    elif not want and _hook_handles:
        for h in _hook_handles:
            h.remove()
        _hook_handles.clear()


def _on_listening(on: int, user: Any) -> None:
    global _listening
    with _hook_lock:
        _listening = bool(on)
        _sync_hooks()


# Kept for the process's life: the library holds its address.
_LISTENER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)(_on_listening)


def _hooks_release(root: Optional[Any]) -> None:
    global _hook_users
    with _hook_lock:
        _hook_users -= 1
        if root is not None:
            for _, m in root.named_modules():
                left = _path_refs.pop(id(m), 1) - 1
                if left:
                    _path_refs[id(m)] = left
                else:
                    _paths.pop(id(m), None)
        _sync_hooks()


class _Count:
    """One thread's op counts for one profile; only that thread writes them."""

    __slots__ = ("ok", "failed")

    def __init__(self) -> None:
        self.ok = 0
        self.failed = 0


class _Counts(threading.local):
    """Each thread's :class:`_Count` (``mine``), every one of them also in ``all_counts``."""

    def __init__(self, all_counts: List[_Count]) -> None:
        self.mine = _Count()
        all_counts.append(self.mine)


# torch dtypes -> CANN's data type names, as op_summary writes them.
_CANN_TYPES = {"float32": "FLOAT", "float16": "FLOAT16", "bfloat16": "DT_BF16",
               "float64": "DOUBLE", "int64": "INT64", "int32": "INT32", "int16": "INT16",
               "int8": "INT8", "uint8": "UINT8", "bool": "BOOL", "complex64": "COMPLEX64"}


def _tensors(values: Any) -> List[Any]:
    """The tensors among an op's arguments or outputs (also inside lists, as aten::cat's)."""
    out: List[Any] = []
    for v in values if isinstance(values, (tuple, list)) else (values,):
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            out.extend(t for t in v if isinstance(t, torch.Tensor))
    return out


def _flops(op: str, ins: List[Any], out: List[Any]) -> Optional[int]:
    """FLOPs of the matrix products and convolutions (2 per multiply-add), else None."""
    try:
        if op in ("aten::mm", "aten::bmm", "aten::addmm", "aten::matmul", "aten::linear"):
            a, b = (ins[1], ins[2]) if op == "aten::addmm" else (ins[0], ins[1])
            k = a.shape[-1]
            return 2 * k * out[0].numel() if out else None
        if op in ("aten::convolution", "aten::_convolution", "aten::conv2d", "aten::conv1d"):
            w = ins[1]
            per_out = w.numel() // w.shape[0]  # in_channels/groups * kernel elements
            return 2 * per_out * out[0].numel() if out else None
    except (AttributeError, IndexError, RuntimeError):
        return None
    return None


def _meta_of(op: str, args: Tuple[Any, ...], out: Any) -> int:
    """The op_meta id of one execution's tensors: input and output shapes and data types,
    bytes read and written, and FLOPs where :func:`_flops` knows them."""
    ins, outs = _tensors(args), _tensors(out)

    def dt(t: Any) -> str:
        name = str(t.dtype).replace("torch.", "")
        return _CANN_TYPES.get(name, name.upper())

    nbytes = sum(t.numel() * t.element_size() for t in ins + outs)
    return op_meta(input_shapes=[tuple(t.shape) for t in ins],
                   input_types=[dt(t) for t in ins],
                   output_shapes=[tuple(t.shape) for t in outs],
                   output_types=[dt(t) for t in outs],
                   flops=_flops(op, ins, outs), bytes=nbytes or None)


class _Mode(TorchDispatchMode):  # type: ignore[misc]
    """Times each ATen operator around its kernel and reports it (the hot path: everything
    it needs is bound to the instance once)."""

    def __init__(self, owner: "profile") -> None:
        super().__init__()
        self.model_id = owner.model.id
        self.root = owner.name
        self.names = owner._names
        # The raw ctypes function, without the bindings' Python range checks: the ids and
        # clock readings passed here always fit.
        self.report_op = _bindings.unchecked(owner._lib.aclprofExtReportOp)
        self.report_op_meta = _bindings.unchecked(owner._lib.aclprofExtReportOpMeta)
        self.record_shapes = owner.record_shapes
        # (func, input shapes and dtypes) -> op_meta id.
        self.metas = owner._metas
        self.counts = owner._counts

    def __torch_dispatch__(self, func: Any, types: Any, args: Tuple[Any, ...] = (),
                           kwargs: Optional[Dict[str, Any]] = None) -> Any:
        start = _now(_CLOCK)
        out = func(*args, **(kwargs or {}))
        end = _now(_CLOCK)
        stack = _scope.stack
        where = stack[-1] if stack else self.root
        names = self.names.get((where, func))
        if names is None:
            op = func._schema.name  # "aten::convolution"
            names = self.names[(where, func)] = (f"{where}/{op}".encode(), op.encode())
        counts = self.counts.mine
        if self.record_shapes:
            # torch.Size is a hashable tuple: no copy of the dimensions.
            tensor = torch.Tensor
            sig = (func, *[(a.shape, a.dtype) if isinstance(a, tensor) else None
                           for a in args])
            meta = self.metas.get(sig)
            if meta is None:
                meta = _meta_of(func._schema.name, args, out)
                if len(self.metas) < 65536:  # bounded: shapes that never repeat
                    self.metas[sig] = meta
            rc = self.report_op_meta(self.model_id, names[0], names[1], start, end, meta)
        else:
            rc = self.report_op(self.model_id, names[0], names[1], start, end)
        if rc == 0:
            counts.ok += 1
        else:
            if counts.failed == 0:
                _log.warning("aclprof.torch: aclprofExtReportOp failed for %s (%s); further "
                             "failures on this thread are only counted", names[0].decode(),
                             recent_error())
            counts.failed += 1
        return out


def _memory_begin() -> Any:
    """The Python path's memory: PyTorch's own profiler with ``profile_memory``, whose
    allocation events are passed on at the block's end (see :func:`_memory_end`)."""
    p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                               profile_memory=True)
    p.__enter__()
    return p


def _memory_end(p: Any, root: str, device: int) -> None:
    """Stops ``p`` and reports each allocation and release it saw, in time order, owned by
    the top-level operator running then (``root/aten::...``), at its time on the library's
    clock (PyTorch's are wall-clock)."""
    from torch._C._profiler import _EventType
    p.__exit__(None, None, None)
    offset = _common.realtime_offset_ns()

    def walk(events: Any) -> Iterator[Any]:
        for e in events:
            yield e
            yield from walk(e.children)

    found = []
    for e in walk(p.profiler.kineto_results.experimental_event_tree()):
        if e.tag != _EventType.Allocation:
            continue
        f = e.extra_fields
        top = e
        while top.parent is not None:
            top = top.parent
        owner = root if top is e or top.name == "[memory]" else f"{root}/{top.name}"
        found.append((e.start_time_ns, f, owner))
    found.sort(key=lambda x: x[0])
    from . import memory
    for ts, f, owner in found:
        if f.alloc_size == 0:
            continue
        index = f.device.index if f.device.index is not None and f.device.index >= 0 else device
        memory.report(f.alloc_size, f.ptr, owner, device=index,
                      total_allocated=max(f.total_allocated, 0),
                      total_reserved=max(f.total_reserved, f.total_allocated, 0),
                      time_ns=ts + offset)


class profile(contextlib.ContextDecorator):
    """Reports every op PyTorch runs while active to aclprof, as model ``name``.

    ``module``, if given, names ops by module path (``name.layer1.0.conv1/aten::convolution``);
    ops outside its modules, or without it, are named ``name/aten::...``. The aclprof model is registered when the
    profile is created (:attr:`model`, so a subscription can be made before the block) and
    unloaded by :meth:`close`. The block may be entered again, and by several threads at
    once: each thread's ops form one stream. Ops of threads that never enter it are not seen.

    With ``record_shapes`` (the default) each op carries its input and output shapes and data
    types, the bytes its tensors hold and, for matrix products and convolutions, its FLOPs:
    op_summary, the timeline, ``aclprof analyze --aggregate-by name+shape`` and the report
    show them. Each distinct (operator, input shapes, dtypes) is registered once; an op then
    costs a tuple of its arguments' shapes more than without.

    With ``profile_memory`` PyTorch's allocators report each allocation and release made in
    the block (on its threads and the autograd threads it starts) through PyTorch's own
    memory reporting, which Kineto uses, owned by the op running then: recorded while a
    file-mode session records ``ACL_PROF_TASK_MEMORY`` (``operator_memory``,
    ``memory_record``, ``aclprof analyze --memory``). A thread that another profiler
    (``torch.profiler``) already reports is left to it. Without the compiled path, PyTorch's
    own profiler collects them in the block and they are reported at its end, owned by the
    top-level operator.

    With ``output`` the block records a file-mode session of its own (from the first thread's
    entry to the last one's exit), written as torch_npu writes a PyTorch run
    (``layout="torch_npu"``, the default: a ``{host}_{pid}_{time}_ascend_pt`` folder in
    ``output`` for msprof-analyze compare, advisor and cluster, and MindStudio Insight) or as
    msprof does (``layout="msprof"``): what ``torch_npu.profiler.profile`` with
    ``tensorboard_trace_handler(output)`` writes.
    """

    def __init__(self, module: Optional[Any] = None, name: str = "torch", device: int = 0,
                 record_shapes: bool = True, profile_memory: bool = False,
                 output: Optional[_common.PathLike] = None, layout: str = "torch_npu"):
        self._session: Optional[Profiler] = None
        self._session_users = 0
        # Not _hook_lock: starting and stopping a session calls _on_listening, which takes it.
        self._session_lock = threading.Lock()
        if output is not None:
            data_types = _bindings.ACL_PROF_ACL_API | _bindings.ACL_PROF_TASK_TIME
            if profile_memory:
                data_types |= _bindings.ACL_PROF_TASK_MEMORY
            self._session = Profiler(output, devices=(device,), data_types=data_types,
                                     layout=layout)
        self.module = module
        self.name = name
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.device = device
        self._metas: Dict[Any, int] = {}
        self.model = Model.register(name, device)
        self._lib = load()
        self._ext = _ext()
        self._handle: Optional[int] = None
        if self._ext is not None:
            self._handle = self._ext.aclprof_torch_profile_new(self.model.id, name.encode(),
                                                               int(record_shapes))
            if profile_memory:
                self._ext.aclprof_torch_memory(self._handle, _bindings.address(self._lib.aclprofExtMemReport),
                                               device)
        else:
            # The dispatch-mode machinery imports torch._dynamo on first use (seconds); pay
            # it here rather than inside the user's first profiled op.
            import torch._dynamo  # noqa: F401
        self._entered = 0
        self._failed_told = 0
        self._final = (0, 0)  # the compiled path's counts, once closed
        self._names: Dict[Tuple[str, Any], Tuple[bytes, bytes]] = {}
        self._active = threading.local()
        self._all_counts: List[_Count] = []
        self._counts = _Counts(self._all_counts)

    @property
    def model_id(self) -> int:
        return self.model.id

    def _compiled_counts(self) -> Tuple[int, int]:
        if self._ext is None or self._handle is None:
            return self._final
        ok, failed = ctypes.c_uint64(), ctypes.c_uint64()
        self._ext.aclprof_torch_counts(self._handle, ctypes.byref(ok), ctypes.byref(failed))
        return ok.value, failed.value

    @property
    def ops(self) -> int:
        """Ops reported so far, all threads together."""
        return sum(c.ok for c in self._all_counts) + self._compiled_counts()[0]

    @property
    def failed(self) -> int:
        """Ops whose report the library refused (logged once per block that had some)."""
        return sum(c.failed for c in self._all_counts) + self._compiled_counts()[1]

    def __enter__(self) -> "profile":
        if not self.model.loaded:
            raise RuntimeError("this aclprof.torch.profile was closed")
        if self._session is not None:
            with self._session_lock:
                if self._session_users == 0:
                    self._session.start()
                self._session_users += 1
        _hooks_acquire(self.module, self.name)
        if self._ext is not None:
            # The callbacks run only while someone listens: nothing is installed per op.
            with _hook_lock:
                self._entered += 1
            self._ext.aclprof_torch_enter(self._handle)
            return self
        modes: List[_Mode] = getattr(self._active, "modes", [])
        self._active.modes = modes
        try:
            mode = _Mode(self)
            mode.__enter__()
        except BaseException:
            _hooks_release(self.module)
            raise
        modes.append(mode)
        if self.profile_memory:
            memory: List[Any] = getattr(self._active, "memory", [])
            self._active.memory = memory
            memory.append(_memory_begin())
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._ext is not None:
            self._ext.aclprof_torch_exit()
            with _hook_lock:
                self._entered -= 1
            if exc_type is not None:
                self._ext.aclprof_torch_clear()
            failed = self._compiled_counts()[1]
            if failed > self._failed_told:
                _log.warning("aclprof.torch: the library refused %d ops of %s (%s)",
                             failed - self._failed_told, self.name, recent_error())
                self._failed_told = failed
        else:
            mode = self._active.modes.pop()
            mode.__exit__(exc_type, exc, tb)
            if self.profile_memory:
                _memory_end(self._active.memory.pop(), self.name, self.device)
        _hooks_release(self.module)
        if exc_type is not None:
            _scope.stack.clear()  # a forward that raised left its modules on the stack
        if self._session is not None:
            with self._session_lock:
                self._session_users -= 1
                if self._session_users == 0:
                    _common.exit_cleanup(self._session.stop, exc_type)

    def __call__(self, func: _F) -> _F:
        return super().__call__(func)

    def close(self) -> None:
        """Unloads the aclprof model (a subscription to it stays until unsubscribed)."""
        self.model.unload()
        with _hook_lock:
            if self._ext is not None and self._handle is not None and self._entered == 0:
                # (Kept, not freed, if a thread is still inside the block.)
                self._final = self._compiled_counts()
                self._ext.aclprof_torch_profile_free(self._handle)
                self._handle = None

    def __repr__(self) -> str:
        return f"<aclprof.torch.profile {self.name!r}: model {self.model.id}, {self.ops} ops>"


# ---- the DataLoader bridge -------------------------------------------------------------

# In each process that fetches (a DataLoader worker, or the main process without workers):
# when the batch being fetched started (its first item), reset by the collate function.
_batch_start: Optional[int] = None


class _TimedDataset(torch.utils.data.Dataset):  # type: ignore[misc]
    """The loader's dataset, noting when each batch's first item is fetched."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, index: Any) -> Any:
        global _batch_start
        if _batch_start is None:
            _batch_start = _now(_CLOCK)
        return self.inner[index]


class _Timed:
    """A batch and how it was fetched: by which worker, from when to when."""

    __slots__ = ("batch", "worker", "start", "end")

    def __init__(self, batch: Any, worker: int, start: int, end: int) -> None:
        self.batch, self.worker, self.start, self.end = batch, worker, start, end


class _TimedCollate:
    """The loader's collate function, returning the batch with its fetch span (a class, so a
    spawned worker can unpickle it)."""

    def __init__(self, inner: Callable[[Any], Any]) -> None:
        self.inner = inner

    def __call__(self, items: Any) -> _Timed:
        global _batch_start
        batch = self.inner(items)
        end = _now(_CLOCK)
        start = end if _batch_start is None else _batch_start
        _batch_start = None
        info = torch.utils.data.get_worker_info()
        return _Timed(batch, info.id if info is not None else 0, start, end)


def _timed_loader(loader: Any) -> Optional[Any]:
    """The same loader over the timed dataset and collate function, or None where it cannot
    be rebuilt (an iterable dataset, or no batch sampler)."""
    if isinstance(loader.dataset, torch.utils.data.IterableDataset) or loader.batch_sampler is None:
        return None
    kw: Dict[str, Any] = dict(
        batch_sampler=loader.batch_sampler, num_workers=loader.num_workers,
        collate_fn=_TimedCollate(loader.collate_fn), pin_memory=loader.pin_memory,
        timeout=loader.timeout, worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context, generator=loader.generator,
        persistent_workers=loader.persistent_workers)
    if loader.num_workers > 0:
        kw["prefetch_factor"] = loader.prefetch_factor
    return torch.utils.data.DataLoader(_TimedDataset(loader.dataset), **kw)


class profile_loader:
    """Wraps a ``torch.utils.data.DataLoader`` so that iterating it reports the data
    pipeline to aclprof (:mod:`aclprof.pipeline`; recorded while a file-mode session runs):

    * the training thread's wait for each batch (stage ``"wait"``: each step's data wait);
    * each batch's fetch by its worker, from its first item to the end of collation
      (stage ``"fetch"``, worker = the DataLoader worker's id; 0 without workers);
    * after each batch, how many prefetched batches are ready, of ``prefetch_factor x
      num_workers`` (the queue of stage ``"fetch"``), as far as DataLoader exposes it.

    ::

        for images, labels in aclprof.torch.profile_loader(loader):
            ...

    The batches are the loader's own. A map-style dataset with a batch sampler is timed per
    batch; for other loaders only the wait is reported."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self._timed = _timed_loader(loader)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Any]:
        from . import pipeline

        it = iter(self._timed if self._timed is not None else self.loader)
        workers = getattr(self.loader, "num_workers", 0)
        capacity = workers * (getattr(self.loader, "prefetch_factor", None) or 2)
        while True:
            t0 = _now(_CLOCK)
            try:
                item = next(it)
            except StopIteration:
                return
            t1 = _now(_CLOCK)
            pipeline.span(pipeline.WAIT, t0, t1)
            if isinstance(item, _Timed):
                pipeline.span("fetch", item.start, max(item.end, item.start), item.worker)
                item = item.batch
            ready = getattr(it, "_data_queue", None)
            if workers > 0 and ready is not None:
                try:
                    depth = ready.qsize()
                except (NotImplementedError, OSError):  # qsize is not on every platform
                    depth = None
                if depth is not None:
                    pipeline.queue("fetch", min(depth, capacity), capacity, t1)
            yield item
