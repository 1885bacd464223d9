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

import contextlib
import logging
import threading
import time
from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as e:  # pragma: no cover - exercised where torch is absent
    raise ImportError(
        "aclprof.torch needs PyTorch; install the extra: pip install 'aclprof[torch]'"
    ) from e

from ._lib import load, recent_error
from .runtime import Model

__all__ = ["profile"]

_log = logging.getLogger("aclprof.torch")
_F = TypeVar("_F", bound=Callable[..., Any])

# aclprofExtNowNs's clock (CLOCK_MONOTONIC_RAW), read without a call into the library.
_CLOCK = time.CLOCK_MONOTONIC_RAW
_now = time.clock_gettime_ns


class _Scope(threading.local):
    """This thread's stack of module paths (the innermost module running)."""

    def __init__(self) -> None:
        self.stack: List[str] = []


_scope = _Scope()
_hook_lock = threading.Lock()
_hook_users = 0
_hook_handles: List[Any] = []
# Module object id -> its path, for every module of every active profile's root module,
# and how many active blocks named it.
_paths: Dict[int, str] = {}
_path_refs: Dict[int, int] = {}


def _pre_hook(module: Any, args: Any) -> None:
    path = _paths.get(id(module))
    if path is not None:
        _scope.stack.append(path)


def _post_hook(module: Any, args: Any, output: Any) -> None:
    if id(module) in _paths and _scope.stack:
        _scope.stack.pop()


def _hooks_acquire(root: Optional[Any], root_name: str) -> None:
    global _hook_users
    with _hook_lock:
        if root is not None:
            for path, m in root.named_modules():
                _paths[id(m)] = f"{root_name}.{path}" if path else root_name
                _path_refs[id(m)] = _path_refs.get(id(m), 0) + 1
        if _hook_users == 0:
            reg = torch.nn.modules.module
            _hook_handles.append(reg.register_module_forward_pre_hook(_pre_hook))
            _hook_handles.append(reg.register_module_forward_hook(_post_hook, always_call=True))
        _hook_users += 1


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
        if _hook_users == 0:
            for h in _hook_handles:
                h.remove()
            _hook_handles.clear()


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
        report = owner._lib.aclprofExtReportOp
        self.report_op = getattr(report, "__wrapped__", report)
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
        if self.report_op(self.model_id, names[0], names[1], start, end) == 0:
            counts.ok += 1
        else:
            if counts.failed == 0:
                _log.warning("aclprof.torch: aclprofExtReportOp failed for %s (%s); further "
                             "failures on this thread are only counted", names[0].decode(),
                             recent_error())
            counts.failed += 1
        return out


class profile(contextlib.ContextDecorator):
    """Reports every op PyTorch runs while active to aclprof, as model ``name``.

    ``module``, if given, names ops by module path (``name.layer1.0.conv1/aten::convolution``);
    ops outside its modules, or without it, are named ``name/aten::...``. The aclprof model is registered when the
    profile is created (:attr:`model`, so a subscription can be made before the block) and
    unloaded by :meth:`close`. The block may be entered again, and by several threads at
    once: each thread's ops form one stream. Ops of threads that never enter it are not seen.
    """

    def __init__(self, module: Optional[Any] = None, name: str = "torch", device: int = 0):
        self.module = module
        self.name = name
        self.model = Model.register(name, device)
        # The dispatch-mode machinery imports torch._dynamo on first use (seconds); pay it
        # here rather than inside the user's first profiled op.
        import torch._dynamo  # noqa: F401
        self._lib = load()
        self._names: Dict[Tuple[str, Any], Tuple[bytes, bytes]] = {}
        self._active = threading.local()
        self._all_counts: List[_Count] = []
        self._counts = _Counts(self._all_counts)

    @property
    def model_id(self) -> int:
        return self.model.id

    @property
    def ops(self) -> int:
        """Ops reported so far, all threads together."""
        return sum(c.ok for c in self._all_counts)

    @property
    def failed(self) -> int:
        """Ops whose report the library refused (each thread logs its first one)."""
        return sum(c.failed for c in self._all_counts)

    def __enter__(self) -> "profile":
        if not self.model.loaded:
            raise RuntimeError("this aclprof.torch.profile was closed")
        modes: List[_Mode] = getattr(self._active, "modes", [])
        self._active.modes = modes
        _hooks_acquire(self.module, self.name)
        try:
            mode = _Mode(self)
            mode.__enter__()
        except BaseException:
            _hooks_release(self.module)
            raise
        modes.append(mode)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        mode = self._active.modes.pop()
        mode.__exit__(exc_type, exc, tb)
        _hooks_release(self.module)
        if exc_type is not None:
            _scope.stack.clear()  # a forward that raised left its modules on the stack

    def __call__(self, func: _F) -> _F:
        return super().__call__(func)

    def close(self) -> None:
        """Unloads the aclprof model (a subscription to it stays until unsubscribed)."""
        self.model.unload()

    def __repr__(self) -> str:
        return f"<aclprof.torch.profile {self.name!r}: model {self.model.id}, {self.ops} ops>"
