"""pyACL's ``acl`` module over aclprof, for profiling scripts written for an Ascend NPU.

``acl.prof`` is complete (every function of pyACL's profiling module, same call forms and
return shapes). ``acl.util``, ``acl.rt``, ``acl.mdl`` and the functions below emulate just
the calls the official profiling samples make: ``acl.mdl.load_from_file`` loads a model
description for aclprof's simulator, and ``acl.mdl.execute`` runs it.
"""

from __future__ import annotations

import os
import threading
from typing import Optional

from . import mdl, prof, rt, util
from ._handles import INVALID_FILE, INVALID_PARAM, REPEAT_INITIALIZE, SUCCESS, data_buffers

__all__ = [
    "create_data_buffer",
    "destroy_data_buffer",
    "finalize",
    "get_data_buffer_addr",
    "get_data_buffer_size_v2",
    "init",
    "mdl",
    "prof",
    "rt",
    "util",
]

_init_lock = threading.Lock()
_initialized = False


def init(config_path: Optional[str] = None) -> int:
    """``ret = acl.init()`` or ``acl.init(config_path)``; a second call returns
    ACL_ERROR_REPEAT_INITIALIZE (100002), which callers may ignore. A config path that is
    not a readable file is ACL_ERROR_INVALID_FILE; its contents are not used."""
    global _initialized
    if config_path is not None and not os.path.isfile(config_path):
        return INVALID_FILE
    with _init_lock:
        if _initialized:
            return REPEAT_INITIALIZE
        _initialized = True
    return SUCCESS


def finalize() -> int:
    global _initialized
    with _init_lock:
        _initialized = False
    return SUCCESS


def create_data_buffer(data, size) -> int:
    """A data buffer over ``size`` bytes at address ``data`` (e.g. from ``acl.rt.malloc``)."""
    if not isinstance(data, int) or not isinstance(size, int) or size < 0:
        return 0
    return data_buffers.add((data, size))


def destroy_data_buffer(data_buffer) -> int:
    return SUCCESS if data_buffers.remove(data_buffer) else INVALID_PARAM


def get_data_buffer_addr(data_buffer) -> int:
    entry = data_buffers.get(data_buffer)
    return entry[0] if entry else 0


def get_data_buffer_size_v2(data_buffer) -> int:
    entry = data_buffers.get(data_buffer)
    return entry[1] if entry else 0
