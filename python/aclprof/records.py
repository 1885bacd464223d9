"""Op records: the 512-byte layout as a numpy structured dtype, a batch decoder, and a pipe reader.

A read from a subscription pipe is a whole number of self-contained 512-byte records
(docs/reference.md, "The op record"). :func:`decode` turns a whole read buffer into an :class:`OpBatch`
at once -- one signature check over the buffer in C, then numpy column views -- instead of
the official sample's ctypes call per field per record. It returns exactly what the
``aclprofGetOp*`` accessors return for every record (the tests check every field of every
record against them).
"""

from __future__ import annotations

import ctypes
import os
from functools import cached_property
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union, overload

import numpy as np

from . import _bindings
from ._lib import load, recent_error
from .errors import AclError

RECORD_SIZE = 512

_MAX_TYPE_LEN = 64
_MAX_NAME_LEN = 256
_MARK_NAME_TRUNCATED = 1
_MARK_TYPE_TRUNCATED = 2

# (field, numpy type, byte offset), little-endian: src/formats/record.rs's layout, which a
# test there checks this against.
_LAYOUT = [
    ("signature", "<u4", 0),
    ("model_id", "<u4", 4),
    ("flag", "<u4", 8),
    ("thread_id", "<u4", 12),
    ("op_index", "<u8", 16),
    ("duration", "<u8", 24),
    ("start", "<u8", 32),
    ("end", "<u8", 40),
    ("execution_time", "<u8", 48),
    ("cube_fops", "<u8", 56),
    ("vector_fops", "<u8", 64),
    ("device_id", "<u4", 72),
    ("type_len", "<u2", 80),
    ("name_len", "<u2", 82),
    ("name_full_len", "<u4", 84),
    ("pid", "<u4", 88),
    ("stream_id", "<u4", 92),
    ("version", "u1", 96),
    ("marks", "u1", 97),
    ("type", f"S{_MAX_TYPE_LEN + 1}", 104),
    ("name", f"S{_MAX_NAME_LEN + 1}", 169),
]

#: One op record as a numpy structured dtype (``np.frombuffer(buf, RECORD_DTYPE)``).
RECORD_DTYPE = np.dtype(
    {
        "names": [f for f, _, _ in _LAYOUT],
        "formats": [t for _, t, _ in _LAYOUT],
        "offsets": [o for _, _, o in _LAYOUT],
        "itemsize": RECORD_SIZE,
    }
)

Buffer = Union[bytes, bytearray, memoryview, np.ndarray]


class OpRecord(NamedTuple):
    """One executed op. ``start``, ``end`` and ``duration`` are nanoseconds (``start`` and
    ``end`` on CLOCK_MONOTONIC_RAW), as ``aclprofGetOp*`` give them; ``aclprof analyze``
    and the result files show microseconds."""

    name: str
    type: str
    model_id: int
    start: int
    end: int
    duration: int
    flag: int
    thread_id: int
    device_id: int
    stream_id: int
    op_index: int


class RecordError(ValueError):
    """A buffer that is not op data: a length that is not a whole number of records, a
    record whose signature does not match, or a record whose string fields are malformed.
    ``index`` is the first bad record (None for a bad length)."""

    def __init__(self, message: str, index: Optional[int] = None):
        super().__init__(message)
        self.index = index


def _address(buf: Buffer) -> Tuple[np.ndarray, int]:
    """(a uint8 view keeping ``buf`` alive, its address)."""
    view = np.frombuffer(buf, dtype=np.uint8)
    return view, view.__array_interface__["data"][0]


def _check_signatures(lib: _bindings.Library, address: int, length: int) -> None:
    """aclprofExtDecodeOps in its verify-only form: every record's signature and string
    fields in one call in C; on failure it names the first bad record."""
    count = ctypes.c_uint32()
    if length == 0:
        return
    ret = lib.aclprofExtDecodeOps(address, length, None, 0, ctypes.byref(count))
    if ret == _bindings.ACL_SUCCESS:
        return
    if ret == _bindings.ACL_ERROR_INVALID_PARAM:  # a bad record (the length was checked)
        raise RecordError(f"record {count.value}: {recent_error()}", count.value)
    raise AclError("aclprofExtDecodeOps", ret, recent_error())


def decode(buf: Buffer, *, verify: bool = True) -> "OpBatch":
    """Decodes a whole buffer of op records (a read from a subscription pipe, a file...).

    The buffer is not copied: the batch's columns are views over it. With ``verify`` (the
    default) every record's signature is checked first, as ``aclprofGetOpNum`` does; a bad
    buffer raises :class:`RecordError`. Pass ``verify=False`` only for data already checked.
    """
    view, address = _address(buf)
    if view.size % RECORD_SIZE:
        raise RecordError(
            f"{view.size} bytes is not a whole number of {RECORD_SIZE}-byte records; "
            "read the pipe in multiples of aclprofGetOpDescSize"
        )
    if verify:
        _check_signatures(load(), address, view.size)
    return OpBatch(view.view(RECORD_DTYPE), address)


class OpBatch(Sequence[OpRecord]):
    """The records of one buffer: numpy columns (``batch.start``, ``batch.array["flag"]``)
    and, decoded on first use, :class:`OpRecord` tuples (``batch[i]``, ``list(batch)``)."""

    def __init__(self, array: np.ndarray, address: int):
        self.array = array
        self._address = address
        self._records: Optional[List[OpRecord]] = None

    def __len__(self) -> int:
        return len(self.array)

    @overload
    def __getitem__(self, i: int) -> OpRecord: ...
    @overload
    def __getitem__(self, i: slice) -> List[OpRecord]: ...
    def __getitem__(self, i: Union[int, slice]) -> Union[OpRecord, List[OpRecord]]:
        return self.records()[i]

    def __iter__(self) -> Iterator[OpRecord]:
        return iter(self.records())

    def __repr__(self) -> str:
        return f"<OpBatch of {len(self)} records>"

    # Numeric columns: views over the buffer, no copy.
    model_id = property(lambda self: self.array["model_id"])
    start = property(lambda self: self.array["start"])
    end = property(lambda self: self.array["end"])
    duration = property(lambda self: self.array["duration"])
    flag = property(lambda self: self.array["flag"])
    thread_id = property(lambda self: self.array["thread_id"])
    device_id = property(lambda self: self.array["device_id"])
    stream_id = property(lambda self: self.array["stream_id"])
    op_index = property(lambda self: self.array["op_index"])

    @cached_property
    def names(self) -> List[str]:
        """The op names, as aclprofGetOpName gives them."""
        return self._strings("name")

    @cached_property
    def types(self) -> List[str]:
        """The op types, as aclprofGetOpType gives them."""
        return self._strings("type")

    def records(self) -> List[OpRecord]:
        """Every record as an :class:`OpRecord` (decoded once, then cached)."""
        if self._records is None:
            a = self.array
            columns = [a[f].tolist() for f in OpRecord._fields[2:]]
            self._records = list(map(OpRecord._make, zip(self.names, self.types, *columns)))
        return self._records

    def _strings(self, field: str) -> List[str]:
        """The ``name`` or ``type`` column as str, exactly as aclprofGetOpName/Type give it."""
        a = self.array
        if not len(a):
            return []
        raw = a[field].tolist()  # bytes, trailing NULs stripped
        mark = _MARK_NAME_TRUNCATED if field == "name" else _MARK_TYPE_TRUNCATED
        # The column is what the accessor reads when the stored length matches the string up
        # to its zero fill and the string has no NUL inside. Other records are malformed or
        # have stray bytes after the NUL, or hold a string truncated by this process, which
        # the accessors return whole from the producer's side table: ask the accessor.
        odd = np.fromiter(map(len, raw), np.int64, len(raw)) != a[f"{field}_len"]
        odd |= ((a["marks"] & mark) != 0) & (a["pid"] == os.getpid())
        if b"\0" in b"".join(raw):
            odd |= np.fromiter((b"\0" in s for s in raw), bool, len(raw))
        if odd.any():
            length = len(a) * RECORD_SIZE
            for i in np.flatnonzero(odd).tolist():
                raw[i] = _accessor_string(self._address, length, i, field)
        # No string holds a NUL now, so one decode of the NUL-joined column splits back
        # exactly (and replaces invalid UTF-8 as decoding each string would).
        return b"\0".join(raw).decode("utf-8", "replace").split("\0")


def _accessor_string(address: int, length: int, index: int, field: str) -> bytes:
    """The string as the C accessors give it: whole when this process produced a truncated
    one, and a RecordError when the record's string fields are malformed."""
    lib = load()
    fn_len, fn = (
        (lib.aclprofGetOpNameLen, lib.aclprofGetOpName)
        if field == "name"
        else (lib.aclprofGetOpTypeLen, lib.aclprofGetOpType)
    )
    size = ctypes.c_size_t()
    ret = fn_len(address, length, index, ctypes.byref(size))
    if ret == 0:
        out = ctypes.create_string_buffer(size.value)
        ret = fn(address, length, index, out, size.value)
        if ret == 0:
            return out.value
    raise RecordError(f"record {index}: {recent_error()}", index)


class OpReader:
    """Reads op records from a file descriptor (the read end of a subscription pipe) until
    end of file, which comes when the model is unsubscribed.

    ``for op in OpReader(fd)`` yields :class:`OpRecord` s; ``batches()`` yields one
    :class:`OpBatch` per read. Reads are whole multiples of the record size; a stream that
    ends inside a record raises :class:`RecordError`. The fd is not closed.
    """

    def __init__(self, fd: int, *, records_per_read: int = 128):
        if records_per_read < 1:
            raise ValueError("records_per_read must be at least 1")
        self.fd = fd
        self.read_size = records_per_read * RECORD_SIZE

    def __iter__(self) -> Iterator[OpRecord]:
        for batch in self.batches():
            yield from batch.records()

    def batches(self) -> Iterator[OpBatch]:
        pending = b""
        while True:
            data = os.read(self.fd, self.read_size)
            if not data:
                break
            if pending:
                data, pending = pending + data, b""
            whole = len(data) - len(data) % RECORD_SIZE
            if whole < len(data):
                data, pending = data[:whole], data[whole:]
            if data:
                yield decode(data)
        if pending:
            raise RecordError(f"the stream ended {len(pending)} bytes into a record")
