"""``acl.prof``: pyACL's profiling module over aclprof, with pyACL's call forms and return
conventions (docs/compatibility.md, "Python").

Every function keeps pyACL's call form and return shape: a bare ``ret`` for C functions
returning aclError, ``(value, ret)`` when there is an output, a bare int handle (0 on
failure) for the create calls, bare ints for the time and model-id getters, ``str`` for
op names and types. Handles and buffer addresses are plain ints.

An integer argument outside its C type's range (which ctypes would silently wrap, e.g. an
index of 2**32 reading record 0) is rejected here with the call's failure value:
ACL_ERROR_INVALID_PARAM, a 0 handle or a 0 time (-1 for the msproftx calls, as in C).
A non-integer argument raises TypeError.
"""

from __future__ import annotations

import ctypes
import operator
import os
import threading
from typing import Callable, Dict, Optional, Sequence, SupportsIndex, Tuple, Union

from aclprof import _bindings

from ._c import I8, I32, PTR, SIZE, U32, U64, INVALID_PARAM, PathArg, integer, out
from ._c import lib as _lib

_TX_FAILED = -1  # the msproftx calls' failure value


def _int(value: SupportsIndex, bounds: Tuple[int, int]) -> Optional[int]:
    """``value`` as an int if it fits ``bounds``, else None (TypeError if not an integer,
    as pyACL raises)."""
    return integer(operator.index(value), bounds)


# Subscription fds: the C library keeps the *address* of the int holding the write end and
# stores -1 there at unsubscribe, so each config owns a c_int that must outlive both the
# config and every subscription made with it.
_fd_lock = threading.Lock()
_config_fds: Dict[int, ctypes.c_int] = {}
_model_fds: Dict[int, ctypes.c_int] = {}


# ---- file mode ---------------------------------------------------------------------------

def init(profiler_result_path: PathArg) -> int:
    """``ret = acl.prof.init(path)``: pyACL passes the path's byte length itself."""
    path = os.fsencode(profiler_result_path)
    return _lib.aclprofInit(path, len(path))


def finalize() -> int:
    return _lib.aclprofFinalize()


def create_config(device_list: Sequence[int], aicore_metrics: int, aicore_events: int,
                  data_type_config: int) -> int:
    """``prof_config = acl.prof.create_config([0], metrics, 0, ACL_PROF_...)``; 0 on failure.

    ``aicore_events`` 0 is passed as NULL (anything else is passed as a pointer, which the
    library rejects, as CANN's does)."""
    checked = [_int(d, U32) for d in device_list]
    ids = [d for d in checked if d is not None]
    metrics = _int(aicore_metrics, I32)
    events = _int(aicore_events, PTR)
    data_types = _int(data_type_config, U64)
    if len(ids) != len(checked) or metrics is None or events is None or data_types is None:
        return 0
    array = (ctypes.c_uint32 * len(ids))(*ids) if ids else None
    return _lib.aclprofCreateConfig(array, len(ids), metrics, events, data_types) or 0


def destroy_config(profiler_config: int) -> int:
    return _lib.aclprofDestroyConfig(_int(profiler_config, PTR))


def set_config(config_type: int, config: Union[str, bytes, bytearray]) -> int:
    """``ret = acl.prof.set_config(ACL_PROF_SYS_HARDWARE_MEM_FREQ, "15")``."""
    kind = _int(config_type, I32)
    if kind is None:
        return INVALID_PARAM
    if isinstance(config, str):
        value = config.encode()
    elif isinstance(config, (bytes, bytearray)):
        value = bytes(config)
    else:
        raise TypeError(f"config must be a str, not {type(config).__name__}")
    return _lib.aclprofSetConfig(kind, value, len(value))


def start(profiler_config: int) -> int:
    return _lib.aclprofStart(_int(profiler_config, PTR))


def stop(profiler_config: int) -> int:
    return _lib.aclprofStop(_int(profiler_config, PTR))


# ---- subscription ------------------------------------------------------------------------

def create_subscribe_config(time_info_switch: int, aicore_metrics: int, fd: int) -> int:
    """``subscribe_config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)``.

    ``fd`` is the pipe's write end itself (not a dup): the library closes it at unsubscribe,
    which is what ends the reader's loop. 0 on failure."""
    switch = _int(time_info_switch, I8)
    metrics = _int(aicore_metrics, I32)
    write_fd = _int(fd, I32)
    if switch is None or metrics is None or write_fd is None:
        return 0
    cell = ctypes.c_int(write_fd)
    handle = _lib.aclprofCreateSubscribeConfig(switch, metrics, ctypes.byref(cell)) or 0
    if handle:
        with _fd_lock:
            _config_fds[handle] = cell
    return handle


def destroy_subscribe_config(subscribe_config: int) -> int:
    handle = _int(subscribe_config, PTR)
    ret = _lib.aclprofDestroySubscribeConfig(handle)
    if ret == 0 and handle is not None:
        with _fd_lock:
            _config_fds.pop(handle, None)  # subscriptions made with it keep their own reference
    return ret


def model_subscribe(model_id: int, subscribe_config: int) -> int:
    model = _int(model_id, U32)
    handle = _int(subscribe_config, PTR)
    if model is None:
        return INVALID_PARAM
    ret = _lib.aclprofModelSubscribe(model, handle)
    if ret == 0 and handle is not None:
        with _fd_lock:
            cell = _config_fds.get(handle)
            if cell is not None:
                _model_fds[model] = cell
    return ret


def model_un_subscribe(model_id: int) -> int:
    """``ret = acl.prof.model_un_subscribe(model_id)``: everything reported is written, then
    the write end is closed (so a later ``os.close(w)`` raises OSError EBADF)."""
    model = _int(model_id, U32)
    if model is None:
        return INVALID_PARAM
    ret = _lib.aclprofModelUnSubscribe(model)
    if ret == 0:
        with _fd_lock:
            _model_fds.pop(model, None)
    return ret


#: The newer spelling; both are documented.
model_unsubscribe = model_un_subscribe


def get_op_desc_size() -> Tuple[int, int]:
    """``op_desc_size, ret = acl.prof.get_op_desc_size()``."""
    size = ctypes.c_size_t()
    ret = _lib.aclprofGetOpDescSize(ctypes.byref(size))
    return out(size, ret)


def get_op_num(op_info: int, op_info_len: int) -> Tuple[int, int]:
    """``op_number, ret = acl.prof.get_op_num(ptr, size)``: checks every record."""
    ptr, length = _int(op_info, PTR), _int(op_info_len, SIZE)
    if ptr is None or length is None:
        return 0, INVALID_PARAM
    count = ctypes.c_uint32()
    ret = _lib.aclprofGetOpNum(ptr, length, ctypes.byref(count))
    return out(count, ret)


def _record_args(op_info: int, op_info_len: int, index: int) -> Optional[Tuple[int, int, int]]:
    ptr, length, i = _int(op_info, PTR), _int(op_info_len, SIZE), _int(index, U32)
    return None if ptr is None or length is None or i is None else (ptr, length, i)


#: aclprofGetOpTypeLen, aclprofGetOpNameLen: (opInfo, opInfoLen, index, out length).
_LenFn = Callable[[int, int, int, "ctypes._CArgObject"], int]
#: aclprofGetOpType, aclprofGetOpName: (opInfo, opInfoLen, index, buffer, buffer size).
_StrFn = Callable[[int, int, int, Optional["ctypes.Array[ctypes.c_char]"], int], int]
#: aclprofGetOpStart and the other getters of one value: (opInfo, opInfoLen, index).
_ValueFn = Callable[[int, int, int], int]


def _string_len(fn: _LenFn, op_info: int, op_info_len: int, index: int) -> Tuple[int, int]:
    args = _record_args(op_info, op_info_len, index)
    if args is None:
        return 0, INVALID_PARAM
    size = ctypes.c_size_t()
    ret = fn(args[0], args[1], args[2], ctypes.byref(size))
    return out(size, ret)


def _string(fn: _StrFn, op_info: int, op_info_len: int, index: int,
            buffer_len: int) -> Tuple[str, int]:
    args = _record_args(op_info, op_info_len, index)
    size = _int(buffer_len, SIZE)
    if args is None or size is None:
        return "", INVALID_PARAM
    if size == 0:  # the library reports the empty buffer
        return "", fn(args[0], args[1], args[2], None, 0)
    out = ctypes.create_string_buffer(size)
    ret = fn(args[0], args[1], args[2], out, size)
    return (out.value.decode("utf-8", "replace") if ret == 0 else ""), ret


def get_op_type_len(op_info: int, op_info_len: int, index: int) -> Tuple[int, int]:
    """``op_type_len, ret``: the length includes the NUL."""
    return _string_len(_lib.aclprofGetOpTypeLen, op_info, op_info_len, index)


def get_op_type(op_info: int, op_info_len: int, index: int, op_type_len: int) -> Tuple[str, int]:
    """``op_type, ret``: ``op_type_len`` is the buffer size (e.g. 65); a type that does not
    fit with its NUL fails with ACL_ERROR_INVALID_PARAM and gives ``""``."""
    return _string(_lib.aclprofGetOpType, op_info, op_info_len, index, op_type_len)


def _sized_string(length_of: Callable[[int, int, int], Tuple[int, int]],
                  get: Callable[[int, int, int, int], Tuple[str, int]],
                  op_info: int, op_info_len: int, index: int) -> Tuple[str, int]:
    """Asks for the string's length first, then reads it, so any string fits."""
    size, ret = length_of(op_info, op_info_len, index)
    if ret:
        return "", ret
    return get(op_info, op_info_len, index, size)


def get_op_type_v2(op_info: int, op_info_len: int, index: int) -> Tuple[str, int]:
    """``op_type, ret``: asks for the length first, so any type fits."""
    return _sized_string(get_op_type_len, get_op_type, op_info, op_info_len, index)


def get_op_name_len(op_info: int, op_info_len: int, index: int) -> Tuple[int, int]:
    """``op_name_len, ret``: the length includes the NUL."""
    return _string_len(_lib.aclprofGetOpNameLen, op_info, op_info_len, index)


def get_op_name(op_info: int, op_info_len: int, index: int, op_name_len: int) -> Tuple[str, int]:
    """``op_name, ret``: ``op_name_len`` is the buffer size; not limited to 257 (real
    callers pass 275), the library only needs the name and its NUL to fit."""
    return _string(_lib.aclprofGetOpName, op_info, op_info_len, index, op_name_len)


def get_op_name_v2(op_info: int, op_info_len: int, index: int) -> Tuple[str, int]:
    """``op_name, ret``: asks for the length first, so any name fits."""
    return _sized_string(get_op_name_len, get_op_name, op_info, op_info_len, index)


def _time(fn: _ValueFn, op_info: int, op_info_len: int, index: int) -> int:
    args = _record_args(op_info, op_info_len, index)
    if args is None:
        return 0
    return fn(args[0], args[1], args[2])


def get_op_start(op_info: int, op_info_len: int, index: int) -> int:
    """Start time in ns (bare int); 0 on error."""
    return _time(_lib.aclprofGetOpStart, op_info, op_info_len, index)


def get_op_end(op_info: int, op_info_len: int, index: int) -> int:
    """End time in ns (bare int); 0 on error."""
    return _time(_lib.aclprofGetOpEnd, op_info, op_info_len, index)


def get_op_duration(op_info: int, op_info_len: int, index: int) -> int:
    """Duration in ns (bare int); 0 on error."""
    return _time(_lib.aclprofGetOpDuration, op_info, op_info_len, index)


def get_model_id(op_info: int, op_info_len: int, index: int) -> int:
    """The model id (bare int); ACL_ERROR_INVALID_PARAM (100000) on error, as in C."""
    args = _record_args(op_info, op_info_len, index)
    if args is None:
        return INVALID_PARAM
    return _lib.aclprofGetModelId(args[0], args[1], args[2])


# ---- msproftx (between start and stop, with ACL_PROF_MSPROFTX) ---------------------------

def create_stamp() -> int:
    """A stamp handle; 0 on failure (msproftx not started, or 100 stamps alive)."""
    return _lib.aclprofCreateStamp() or 0


def destroy_stamp(stamp: int) -> None:
    _lib.aclprofDestroyStamp(_int(stamp, PTR))


def set_stamp_trace_message(stamp: int, msg: Union[str, bytes, bytearray, int],
                            msg_len: int) -> int:
    """``ret = acl.prof.set_stamp_trace_message(stamp, "text", len("text"))``.

    ``msg`` may be a str (UTF-8), bytes, or an int address as in pyACL's docs. For a str or
    bytes, a ``msg_len`` longer than the message fails (-1) instead of reading past it."""
    handle, length = _int(stamp, PTR), _int(msg_len, U32)
    if handle is None or length is None:
        return _TX_FAILED
    if isinstance(msg, (str, bytes, bytearray)):
        raw = msg.encode() if isinstance(msg, str) else bytes(msg)
        if length > len(raw):
            return _TX_FAILED
        return _lib.aclprofSetStampTraceMessage(handle, raw, length)
    address = _int(msg, PTR)
    if address is None:
        return _TX_FAILED
    return _lib.aclprofSetStampTraceMessage(handle, ctypes.c_char_p(address), length)


def mark(stamp: int) -> int:
    return _lib.aclprofMark(_int(stamp, PTR))


def push(stamp: int) -> int:
    return _lib.aclprofPush(_int(stamp, PTR))


def pop(*_stamp: int) -> int:
    """``ret = acl.prof.pop()``; a stamp argument, as some callers pass, is ignored."""
    if len(_stamp) > 1:
        raise TypeError(f"pop() takes at most 1 argument ({len(_stamp)} given)")
    return _lib.aclprofPop()


def range_start(stamp: int) -> Tuple[int, int]:
    """``range_id, ret = acl.prof.range_start(stamp)``."""
    handle = _int(stamp, PTR)
    if handle is None:
        return 0, _TX_FAILED
    range_id = ctypes.c_uint32()
    ret = _lib.aclprofRangeStart(handle, ctypes.byref(range_id))
    return out(range_id, ret)


def range_stop(range_id: int) -> int:
    rid = _int(range_id, U32)
    return _TX_FAILED if rid is None else _lib.aclprofRangeStop(rid)


# ---- steps -------------------------------------------------------------------------------

def create_step_info() -> Optional[int]:
    """A step-info handle; None on failure, as pyACL documents."""
    return _lib.aclprofCreateStepInfo() or None


def get_step_timestamp(stepinfo: int, tag: int, stream: int) -> int:
    """``ret = acl.prof.get_step_timestamp(info, ACL_STEP_START or ACL_STEP_END, stream)``."""
    handle, step_tag, stream_ptr = _int(stepinfo, PTR), _int(tag, I32), _int(stream, PTR)
    if handle is None or step_tag is None or stream_ptr is None:
        return INVALID_PARAM
    return _lib.aclprofGetStepTimestamp(handle, step_tag, stream_ptr)


def destroy_step_info(stepinfo: int) -> None:
    _lib.aclprofDestroyStepInfo(_int(stepinfo, PTR))
