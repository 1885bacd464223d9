"""``acl.util``: pyACL's pointer and thread helpers (pure Python; no C counterpart)."""

from __future__ import annotations

import ctypes
import math
import threading
import warnings
from typing import Any, Callable, Dict, List, Tuple, Type, Union

import numpy as np

from aclprof._bindings import ACL_ERROR_INVALID_PARAM as INVALID_PARAM
from aclprof._bindings import ACL_SUCCESS as SUCCESS

# NumPy type numbers accepted by ptr_to_numpy (pyACL's table).
_NPY_TYPES: Dict[int, Type[np.generic]] = {
    0: np.bool_,
    1: np.int8,
    2: np.uint8,
    3: np.int16,
    4: np.uint16,
    5: np.int32,
    6: np.uint32,
    7: np.int64,
    8: np.uint64,
    9: np.longlong,
    10: np.ulonglong,
    11: np.float32,
    12: np.float64,
    23: np.float16,
}


def numpy_to_ptr(data: np.ndarray) -> int:
    """The address of the array's data. The array must stay alive while the address is used.

    In the subscription sample the array is ``np.array(os.read(...))``, a 0-d bytes array
    whose ``itemsize * size`` is the number of bytes read."""
    if not isinstance(data, np.ndarray):
        raise TypeError(f"numpy_to_ptr expects a numpy.ndarray, not {type(data).__name__}")
    if not data.flags.c_contiguous:
        warnings.warn("numpy_to_ptr: the array is not C-contiguous", RuntimeWarning, stacklevel=2)
    address: int = data.__array_interface__["data"][0]
    return address


def bytes_to_ptr(data: Union[bytes, bytearray]) -> int:
    """The address of the bytes' buffer (no copy); the object must outlive the address."""
    if isinstance(data, bytes):
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    if isinstance(data, bytearray):
        return ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data)) if data else 0
    raise TypeError(f"bytes_to_ptr expects bytes, not {type(data).__name__}")


def ptr_to_bytes(ptr: int, size: int) -> bytes:
    """A copy of ``size`` bytes at address ``ptr``."""
    if not ptr:
        raise ValueError("ptr_to_bytes: the address is 0")
    if size < 0:
        raise ValueError("ptr_to_bytes: size must not be negative")
    return ctypes.string_at(ptr, size)


def ptr_to_numpy(ptr: int, shape: Tuple[int, ...], npy_type: int) -> np.ndarray:
    """An array of ``shape`` and NumPy type number ``npy_type`` over the memory at ``ptr``
    (a view, not a copy)."""
    if npy_type not in _NPY_TYPES:
        raise ValueError(f"ptr_to_numpy: unsupported NumPy type number {npy_type}")
    if not ptr:
        raise ValueError("ptr_to_numpy: the address is 0")
    dtype = np.dtype(_NPY_TYPES[npy_type])
    shape = tuple(shape)
    memory = (ctypes.c_char * (math.prod(shape) * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(memoryview(memory), dtype=dtype).reshape(shape)


_threads: Dict[int, threading.Thread] = {}
_threads_lock = threading.Lock()


def start_thread(thr_func: Callable[[List[Any]], Any], args_list: List[Any]) -> Tuple[int, int]:
    """``thr_id, ret = acl.util.start_thread(func, [fd, context])``: runs ``func(args_list)``
    on a new thread. Like pyACL's, the thread has no current context: it must call
    ``acl.rt.set_context`` itself."""
    if not callable(thr_func):
        raise TypeError("start_thread: thr_func must be callable")
    thread = threading.Thread(target=thr_func, args=(args_list,), daemon=True)
    thread.start()
    thr_id = thread.ident
    assert thr_id is not None  # set by start()
    with _threads_lock:
        _threads[thr_id] = thread
    return thr_id, SUCCESS


def stop_thread(thr_id: int) -> int:
    """Waits for the thread to finish (a join: the thread is not interrupted)."""
    with _threads_lock:
        thread = _threads.get(thr_id)
    if thread is None or thread is threading.current_thread():
        return INVALID_PARAM
    thread.join()
    with _threads_lock:
        _threads.pop(thr_id, None)
    return SUCCESS
