"""What ``acl``'s modules share: the library, typed, and the argument checks.

``acl``, ``acl.rt`` and ``acl.mdl`` call the library's emulated AscendCL runtime -- the C
functions of acl/acl.h, acl_rt.h and acl_mdl.h that a CANN program calls -- so Python and C
share one emulation, and its error codes are CANN's. The library checks every handle against
its tables, so any integer that fits a pointer is safe to pass; what ctypes cannot convert
(not an integer, or outside its C type's range, which ctypes would silently wrap) is refused
here, before C, with the call's failure value.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Optional, SupportsIndex, Tuple, Union

from aclprof import _bindings
from aclprof._lib import load

#: The loaded library, every function typed (aclprof._bindings.Library).
lib = load()

SUCCESS = _bindings.ACL_SUCCESS
INVALID_PARAM = _bindings.ACL_ERROR_INVALID_PARAM

#: A file path as the calls taking one accept it.
PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

#: (lowest, highest) value of a C integer type.
Bounds = Tuple[int, int]

I8: Bounds = (-128, 127)
I32: Bounds = (-(2**31), 2**31 - 1)
U32: Bounds = (0, 2**32 - 1)
U64: Bounds = (0, 2**64 - 1)
SIZE: Bounds = (0, 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1)
PTR: Bounds = (0, 2 ** (8 * ctypes.sizeof(ctypes.c_void_p)) - 1)


def integer(value: object, bounds: Bounds) -> Optional[int]:
    """``value`` as an int if it is an integer (an ``int``, or anything with ``__index__``
    such as a numpy integer) within ``bounds``; None otherwise."""
    if not isinstance(value, SupportsIndex):
        return None
    v = value.__index__()
    return v if bounds[0] <= v <= bounds[1] else None


def path(value: object) -> Optional[bytes]:
    """A path (str, bytes or os.PathLike) as the bytes C takes; None if ``value`` is not a
    path, or holds a NUL (C would see only the part before it)."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        return None
    raw = os.fsencode(value)
    return None if b"\0" in raw else raw


def out(value: "ctypes._SimpleCData[Any]", ret: int) -> Tuple[int, int]:
    """``(value, ret)`` of a call that fills ``value`` through a pointer: the value only if
    the call succeeded, else 0 (pyACL's convention)."""
    return ((value.value or 0) if ret == SUCCESS else 0), ret
