"""``acl.rt``: the emulated AscendCL runtime (acl/acl_rt.h), with pyACL's call forms.

Every function calls its C counterpart (``aclrtSetDevice``, ``aclrtCreateContext``,
``aclrtMalloc``...), so the codes are CANN's: a device that does not exist is
ACL_ERROR_RT_INVALID_DEVICEID (107001); a thread without a current device or context asking
for one (``get_device``, ``get_context``, ``create_stream``) gets ACL_ERROR_RT_CONTEXT_NULL
(107002); a wrong or destroyed handle, ACL_ERROR_INVALID_PARAM (100000).

There is no NPU: devices are the library's emulated devices (``ACLPROF_DEVICE_COUNT``),
contexts and streams only remember their device, "device memory" is zeroed host memory and
execution is synchronous. A call with an output returns ``(value, ret)``, the value 0 on
failure.
"""

from __future__ import annotations

import ctypes
from typing import Tuple

from aclprof import _bindings

from ._c import I32, INVALID_PARAM, PTR, SIZE, integer, lib, out

# Memory copy kinds (every kind is a host copy here).
ACL_MEMCPY_HOST_TO_HOST = _bindings.ACL_MEMCPY_HOST_TO_HOST
ACL_MEMCPY_HOST_TO_DEVICE = _bindings.ACL_MEMCPY_HOST_TO_DEVICE
ACL_MEMCPY_DEVICE_TO_HOST = _bindings.ACL_MEMCPY_DEVICE_TO_HOST
ACL_MEMCPY_DEVICE_TO_DEVICE = _bindings.ACL_MEMCPY_DEVICE_TO_DEVICE


# ---- devices -----------------------------------------------------------------------------

def get_device_count() -> Tuple[int, int]:
    """``count, ret = acl.rt.get_device_count()``."""
    count = ctypes.c_uint32()
    ret = lib.aclrtGetDeviceCount(ctypes.byref(count))
    return out(count, ret)


def set_device(device_id: int) -> int:
    """Makes ``device_id`` the calling thread's device."""
    device = integer(device_id, I32)
    return INVALID_PARAM if device is None else lib.aclrtSetDevice(device)


def get_device() -> Tuple[int, int]:
    """``device_id, ret = acl.rt.get_device()``: the calling thread's device."""
    device = ctypes.c_int32()
    ret = lib.aclrtGetDevice(ctypes.byref(device))
    return out(device, ret)


def reset_device(device_id: int) -> int:
    """Releases the device for the calling thread (and its current context)."""
    device = integer(device_id, I32)
    return INVALID_PARAM if device is None else lib.aclrtResetDevice(device)


def get_run_mode() -> Tuple[int, int]:
    """``run_mode, ret = acl.rt.get_run_mode()``: ACL_HOST (1), the program runs on the host."""
    mode = ctypes.c_int()
    ret = lib.aclrtGetRunMode(ctypes.byref(mode))
    return out(mode, ret)


def synchronize_device() -> int:
    """Returns at once: execution is synchronous."""
    return lib.aclrtSynchronizeDevice()


# ---- contexts ----------------------------------------------------------------------------

def create_context(device_id: int) -> Tuple[int, int]:
    """``context, ret``: the new context is also made current on this thread."""
    device = integer(device_id, I32)
    if device is None:
        return 0, INVALID_PARAM
    context = ctypes.c_void_p()
    return out(context, lib.aclrtCreateContext(ctypes.byref(context), device))


def destroy_context(context: int) -> int:
    handle = integer(context, PTR)
    return INVALID_PARAM if handle is None else lib.aclrtDestroyContext(handle)


def set_context(context: int) -> int:
    """Binds ``context`` (and its device) to the calling thread; the last call wins."""
    handle = integer(context, PTR)
    return INVALID_PARAM if handle is None else lib.aclrtSetCurrentContext(handle)


def get_context() -> Tuple[int, int]:
    """``context, ret = acl.rt.get_context()``: the calling thread's current context."""
    context = ctypes.c_void_p()
    return out(context, lib.aclrtGetCurrentContext(ctypes.byref(context)))


# ---- streams -----------------------------------------------------------------------------

def create_stream() -> Tuple[int, int]:
    """``stream, ret``: a stream on the calling thread's device."""
    stream = ctypes.c_void_p()
    return out(stream, lib.aclrtCreateStream(ctypes.byref(stream)))


def destroy_stream(stream: int) -> int:
    handle = integer(stream, PTR)
    return INVALID_PARAM if handle is None else lib.aclrtDestroyStream(handle)


def synchronize_stream(stream: int) -> int:
    """Execution is synchronous, so there is never anything to wait for; 0 is the default
    stream."""
    handle = integer(stream, PTR)
    return INVALID_PARAM if handle is None else lib.aclrtSynchronizeStream(handle)


# ---- memory ------------------------------------------------------------------------------

def malloc(size: int, policy: int = _bindings.ACL_MEM_MALLOC_HUGE_FIRST) -> Tuple[int, int]:
    """``dev_ptr, ret = acl.rt.malloc(size, policy)``: zeroed host memory standing in for
    device memory (``size`` > 0); free it with :func:`free`."""
    length, how = integer(size, SIZE), integer(policy, I32)
    if length is None or how is None:
        return 0, INVALID_PARAM
    ptr = ctypes.c_void_p()
    return out(ptr, lib.aclrtMalloc(ctypes.byref(ptr), length, how))


def free(dev_ptr: int) -> int:
    """Frees memory from :func:`malloc`; anything else is ACL_ERROR_INVALID_PARAM."""
    address = integer(dev_ptr, PTR)
    return INVALID_PARAM if address is None else lib.aclrtFree(address)


def malloc_host(size: int) -> Tuple[int, int]:
    """``host_ptr, ret = acl.rt.malloc_host(size)``; free it with :func:`free_host`."""
    length = integer(size, SIZE)
    if length is None:
        return 0, INVALID_PARAM
    ptr = ctypes.c_void_p()
    return out(ptr, lib.aclrtMallocHost(ctypes.byref(ptr), length))


def free_host(host_ptr: int) -> int:
    address = integer(host_ptr, PTR)
    return INVALID_PARAM if address is None else lib.aclrtFreeHost(address)


def memcpy(dst: int, dest_max: int, src: int, count: int, kind: int) -> int:
    """Copies ``count`` bytes (at most ``dest_max``) from address ``src`` to ``dst``; every
    kind is a host copy. The addresses must be valid memory, as in C."""
    d, dmax, s = integer(dst, PTR), integer(dest_max, SIZE), integer(src, PTR)
    n, k = integer(count, SIZE), integer(kind, I32)
    if d is None or dmax is None or s is None or n is None or k is None:
        return INVALID_PARAM
    return lib.aclrtMemcpy(d, dmax, s, n, k)


def memset(dev_ptr: int, max_count: int, value: int, count: int) -> int:
    """Sets ``count`` bytes (at most ``max_count``) at ``dev_ptr`` to ``value``."""
    address, limit, byte, n = (integer(dev_ptr, PTR), integer(max_count, SIZE),
                               integer(value, I32), integer(count, SIZE))
    if address is None or limit is None or byte is None or n is None:
        return INVALID_PARAM
    return lib.aclrtMemset(address, limit, byte, n)
