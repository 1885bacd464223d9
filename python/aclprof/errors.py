"""AscendCL error codes as exceptions, for the Pythonic layer (the ``acl`` module returns codes)."""

from __future__ import annotations

from . import _bindings
from ._lib import recent_error

#: aclError value -> its ACL_ERROR_* name, from the generated bindings.
ERROR_NAMES = {
    value: name
    for name, value in vars(_bindings).items()
    if name.startswith("ACL_ERROR_") and name != "ACL_ERROR_NONE"
}


class AclError(RuntimeError):
    """A failing AscendCL profiling call: ``code`` is its aclError, ``message`` the library's
    explanation (``aclGetRecentErrMsg``)."""

    def __init__(self, func: str, code: int, message: str = ""):
        self.func = func
        self.code = code
        self.message = _bare(func, code, message)
        name = ERROR_NAMES.get(code, "unknown error")
        super().__init__(
            f"{func} failed with {code} ({name})" + (f": {self.message}" if self.message else "")
        )


def _bare(func: str, code: int, message: str) -> str:
    """The library's explanation without what the exception already says: the recent-error
    line reads ``func: explanation (error code)``."""
    if message.startswith(f"{func}: "):
        message = message[len(func) + 2 :]
    suffix = f" (error {code})"
    if message.endswith(suffix):
        message = message[: -len(suffix)]
    return message


def check(func: str, ret: int) -> None:
    """Raises AclError unless ``ret`` is ACL_SUCCESS."""
    if ret != _bindings.ACL_SUCCESS:
        raise AclError(func, ret, recent_error())
