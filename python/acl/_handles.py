"""Handles for the emulated runtime objects (contexts, streams, datasets, ...).

pyACL passes C pointers around as ints; the emulation hands out distinct non-zero ints and
remembers what each one is, so a wrong or destroyed handle is an error, never a crash.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any, Dict, Optional

from aclprof import _bindings
from aclprof._lib import load

SUCCESS = _bindings.ACL_SUCCESS
INVALID_PARAM = _bindings.ACL_ERROR_INVALID_PARAM
INVALID_DEVICE = _bindings.ACL_ERROR_INVALID_DEVICE
REPEAT_INITIALIZE = _bindings.ACL_ERROR_REPEAT_INITIALIZE
INVALID_FILE = _bindings.ACL_ERROR_INVALID_FILE

_MAX_DEVICES = 64


class Registry:
    """Objects of one kind, by handle. Handles are unique across all registries."""

    _next = itertools.count(0x10000, 0x40)
    _next_lock = threading.Lock()

    def __init__(self, kind: str):
        self.kind = kind
        self._objects: Dict[int, Any] = {}
        self._lock = threading.Lock()

    def add(self, obj: Any) -> int:
        with Registry._next_lock:
            handle = next(Registry._next)
        with self._lock:
            self._objects[handle] = obj
        return handle

    def get(self, handle: Any) -> Optional[Any]:
        with self._lock:
            return self._objects.get(handle) if isinstance(handle, int) else None

    def remove(self, handle: Any) -> bool:
        with self._lock:
            if isinstance(handle, int) and handle in self._objects:
                del self._objects[handle]
                return True
            return False

    def __repr__(self) -> str:
        return f"<{len(self._objects)} {self.kind} handles>"

    def __contains__(self, handle: Any) -> bool:
        with self._lock:
            return isinstance(handle, int) and handle in self._objects


#: acl.create_data_buffer's buffers: handle -> (address, size). Shared by acl and acl.mdl.
data_buffers = Registry("data buffer")

_device_count: Optional[int] = None


def device_count() -> int:
    """The emulated device count (ACLPROF_DEVICE_COUNT), as the library sees it.

    There is no C call for it, so it is probed once: aclprofCreateConfig accepts a device
    id exactly when it is below the count (and has no other effect once destroyed)."""
    global _device_count
    if _device_count is None:
        lib = load()
        count = 0
        while count < _MAX_DEVICES:
            device = (ctypes.c_uint32 * 1)(count)
            config = lib.aclprofCreateConfig(
                device, 1, _bindings.ACL_AICORE_NONE, None, _bindings.ACL_PROF_ACL_API
            )
            if not config:
                break
            lib.aclprofDestroyConfig(config)
            count += 1
        _device_count = count
    return _device_count


def valid_device(device_id: Any) -> bool:
    return isinstance(device_id, int) and 0 <= device_id < device_count()
