"""``acl.rt``: a thin emulation of the runtime calls the profiling samples make.

There is no NPU: devices are the library's emulated devices (``ACLPROF_DEVICE_COUNT``),
contexts and streams are handles that only remember their device, and "device memory" is
host memory. Each call keeps pyACL's call form and return shape.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Tuple

from ._handles import INVALID_DEVICE, INVALID_PARAM, SUCCESS, Registry, device_count, valid_device

# Memory copy kinds and malloc policies (accepted, not needed without a device).
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3

_contexts = Registry("context")
_streams = Registry("stream")
_allocations = {}  # address -> the ctypes buffer that owns the memory
_alloc_lock = threading.Lock()
_current = threading.local()  # .device, .context of the calling thread


def get_device_count() -> Tuple[int, int]:
    return device_count(), SUCCESS


def set_device(device_id) -> int:
    if not valid_device(device_id):
        return INVALID_DEVICE
    _current.device = device_id
    return SUCCESS


def get_device() -> Tuple[int, int]:
    device = getattr(_current, "device", None)
    return (device, SUCCESS) if device is not None else (0, INVALID_DEVICE)


def reset_device(device_id) -> int:
    if not valid_device(device_id):
        return INVALID_DEVICE
    if getattr(_current, "device", None) == device_id:
        _current.device = None
    return SUCCESS


def create_context(device_id) -> Tuple[int, int]:
    """``context, ret``: the new context is also made current on this thread."""
    if not valid_device(device_id):
        return 0, INVALID_DEVICE
    context = _contexts.add(device_id)
    _current.context, _current.device = context, device_id
    return context, SUCCESS


def set_context(context) -> int:
    """Binds ``context`` to the calling thread (the last call wins)."""
    device = _contexts.get(context)
    if device is None:
        return INVALID_PARAM
    _current.context, _current.device = context, device
    return SUCCESS


def get_context() -> Tuple[int, int]:
    context = getattr(_current, "context", None)
    return (context, SUCCESS) if context in _contexts else (0, INVALID_PARAM)


def destroy_context(context) -> int:
    if not _contexts.remove(context):
        return INVALID_PARAM
    if getattr(_current, "context", None) == context:
        _current.context = None
    return SUCCESS


def create_stream() -> Tuple[int, int]:
    return _streams.add(getattr(_current, "device", 0)), SUCCESS


def synchronize_stream(stream) -> int:
    """Execution is synchronous, so there is never anything to wait for."""
    return SUCCESS if stream in _streams else INVALID_PARAM


def destroy_stream(stream) -> int:
    return SUCCESS if _streams.remove(stream) else INVALID_PARAM


def malloc(size, policy=0) -> Tuple[int, int]:
    """``dev_ptr, ret``: zeroed host memory standing in for device memory."""
    if not isinstance(size, int) or size <= 0:
        return 0, INVALID_PARAM
    buffer = ctypes.create_string_buffer(size)
    address = ctypes.addressof(buffer)
    with _alloc_lock:
        _allocations[address] = buffer
    return address, SUCCESS


def free(dev_ptr) -> int:
    with _alloc_lock:
        return SUCCESS if _allocations.pop(dev_ptr, None) is not None else INVALID_PARAM


malloc_host = malloc
free_host = free


def memcpy(dst, dest_max, src, count, kind) -> int:
    if not dst or not src or count < 0 or count > dest_max or not 0 <= kind <= 3:
        return INVALID_PARAM
    ctypes.memmove(dst, src, count)
    return SUCCESS
