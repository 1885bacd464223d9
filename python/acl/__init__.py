"""pyACL's ``acl`` module over aclprof, for profiling scripts written for an Ascend NPU.

``acl.prof`` is complete (every function of pyACL's profiling module, same call forms and
return shapes). ``acl.rt``, ``acl.mdl`` and the functions below call the library's emulated
AscendCL runtime -- ``aclInit``, ``aclrtSetDevice``, ``aclmdlLoadFromFile``... of acl/acl.h,
acl_rt.h and acl_mdl.h, the functions a C program calls -- so both languages share one
emulation and get CANN's error codes. ``acl.mdl.load_from_file`` loads a model description
for aclprof's simulator, and ``acl.mdl.execute`` runs it. ``acl.util`` is pure Python
(pyACL's pointer and thread helpers have no C counterpart).

Handles and addresses are ints. An argument ctypes cannot pass (not an integer, or out of
its C type's range) is refused without calling C: ACL_ERROR_INVALID_PARAM, or 0 where the
call returns a handle, an address or a size.
"""

from __future__ import annotations

from typing import Optional

from aclprof._lib import recent_error

from . import mdl, prof, rt, util
from ._c import INVALID_PARAM, PTR, SIZE, PathArg, integer, lib, path

__all__ = [
    "create_data_buffer",
    "destroy_data_buffer",
    "finalize",
    "get_data_buffer_addr",
    "get_data_buffer_size",
    "get_data_buffer_size_v2",
    "get_recent_err_msg",
    "init",
    "mdl",
    "prof",
    "rt",
    "update_data_buffer",
    "util",
]


def init(config_path: Optional[PathArg] = None) -> int:
    """``ret = acl.init()`` or ``acl.init(config_path)`` (``aclInit``). A second call returns
    ACL_ERROR_REPEAT_INITIALIZE (100002), which callers may ignore. A config path that is
    not a file is ACL_ERROR_INVALID_FILE; its contents are not used."""
    if config_path is None:
        return lib.aclInit(None)
    raw = path(config_path)
    return INVALID_PARAM if raw is None else lib.aclInit(raw)


def finalize() -> int:
    """``ret = acl.finalize()`` (``aclFinalize``); without ``acl.init`` it is
    ACL_ERROR_REPEAT_FINALIZE (100037)."""
    return lib.aclFinalize()


def create_data_buffer(data: int, size: int) -> int:
    """A data buffer over ``size`` bytes at address ``data`` (e.g. from ``acl.rt.malloc``);
    0 on failure."""
    address, length = integer(data, PTR), integer(size, SIZE)
    if address is None or length is None:
        return 0
    return lib.aclCreateDataBuffer(address, length) or 0


def destroy_data_buffer(data_buffer: int) -> int:
    """Frees the buffer (not its memory)."""
    handle = integer(data_buffer, PTR)
    return INVALID_PARAM if handle is None else lib.aclDestroyDataBuffer(handle)


def update_data_buffer(data_buffer: int, data: int, size: int) -> int:
    """``ret = acl.update_data_buffer(data_buffer, data, size)``: points the buffer at other
    memory."""
    handle, address, length = integer(data_buffer, PTR), integer(data, PTR), integer(size, SIZE)
    if handle is None or address is None or length is None:
        return INVALID_PARAM
    return lib.aclUpdateDataBuffer(handle, address, length)


def get_data_buffer_addr(data_buffer: int) -> int:
    """The buffer's address; 0 for a bad handle."""
    handle = integer(data_buffer, PTR)
    return 0 if handle is None else lib.aclGetDataBufferAddr(handle) or 0


def get_data_buffer_size_v2(data_buffer: int) -> int:
    """The buffer's size in bytes; 0 for a bad handle."""
    handle = integer(data_buffer, PTR)
    return 0 if handle is None else lib.aclGetDataBufferSizeV2(handle)


def get_data_buffer_size(data_buffer: int) -> int:
    """The buffer's size truncated to 32 bits (deprecated in CANN for the ``_v2`` call)."""
    handle = integer(data_buffer, PTR)
    return 0 if handle is None else lib.aclGetDataBufferSize(handle)


def get_recent_err_msg() -> str:
    """Why the last failing call on this thread failed (``aclGetRecentErrMsg``); ``""`` if
    nothing has failed."""
    return recent_error()
