"""Shared-memory ring subscriptions (``aclprofExtRing*`` in acl/acl_prof_ext.h), the Pythonic way.

A ring subscription puts a model's op records into a shared-memory ring (a memfd, or a file
you name under ``/dev/shm``) instead of a pipe. A reader -- in this process, or in another
one that attached by the ring's path, by ``/proc/<pid>/fd/<fd>`` or by an inherited fd --
acquires contiguous batches of records and releases them to the producer::

    with RingSubscription(model.id, capacity=4096) as sub:     # aclprofExtRingSubscribe
        # another process: RingReader(path=sub.attach_path)
        ...
    # leaving the block unsubscribes (aclprofModelUnSubscribe): readers then see the end

Two ways to read, by how long the data must live:

* **zero-copy** -- :meth:`RingReader.acquire` (one batch, a context manager) and
  :meth:`RingReader.views` (an iterator): a :class:`RingBatch` whose numpy columns are views
  straight into the ring mapping; nothing is copied, the batch decoder's signature check runs
  in place. The views are valid only until the batch is released: at the end of its ``with``
  block, when ``views()`` moves on, or at the next ``acquire``. *Safety rule, enforced:*
  releasing invalidates the batch object (using it raises ``ValueError``), and if any numpy
  array made from it is still alive (``col = batch.start`` kept past the block), the release
  raises ``BufferError`` and the records are *not* given back -- the producer cannot
  overwrite memory you can still see -- until those arrays are gone. Copy what you keep
  (``batch.copy()``, ``np.array(batch.start)``, ``batch.records()``, ``batch.names``: all
  copies) before the release.
* **owned** -- :meth:`RingReader.batches` and iterating the reader: each batch is copied out
  of the ring with one memcpy, released at once, then decoded; keep it as long as you like.

End of stream (``ACL_ERROR_PROF_NOT_RUN`` from acquire: the model was unsubscribed, or the
producing process died, and every record was read) ends the iterators and makes ``acquire``
return None; a timeout gives an empty batch.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
import time
import traceback
import warnings
import weakref
from types import TracebackType
from typing import Any, Callable, Iterator, List, Optional, Set, Tuple, Type

import numpy as np

from . import _bindings, _common
from ._common import PathLike as PathLike
from ._lib import load, recent_error
from .errors import AclError, check
from .records import RECORD_DTYPE, RECORD_SIZE, OpBatch, OpRecord, decode

#: Default ring size, in 512-byte records (2 MiB).
DEFAULT_CAPACITY = 4096
#: Default largest batch one acquire hands out (a batch also never crosses the ring's end).
DEFAULT_MAX_RECORDS = 4096
MIN_CAPACITY = 8
MAX_CAPACITY = 1 << 22

_TICK_S = 0.1  # longest single wait in C, so that signals (Ctrl-C) are seen between waits
_UINT32 = 1 << 32
_RELEASED = (
    "this ring batch was released: its records belong to the producer again. Copy what "
    "you keep before the release (batch.copy(), np.array(batch.start), batch.records())"
)


class RingBatch(OpBatch):
    """A batch acquired from a ring: an :class:`OpBatch` whose columns are views into the
    shared mapping (``address`` is where ``aclprofExtRingAcquire`` pointed, ``nbytes`` its
    length). Valid until released (see the module docstring); then every access to its
    records raises ``ValueError`` except ``len()`` and whatever was already decoded
    (``records()``, ``names``, ``types`` are copies and stay usable).

    A context manager: leaving the ``with`` block releases it."""

    def __init__(self, reader: Optional["RingReader"], array: np.ndarray, address: int,
                 nbytes: int, anchor: Optional[ctypes.Array[ctypes.c_ubyte]]):
        self._array: Optional[np.ndarray] = None
        super().__init__(array, address)
        self._reader = reader
        self._anchor = anchor  # the ctypes array over the ring slots: every view's base
        self._count = nbytes // RECORD_SIZE
        self.address = address
        self.nbytes = nbytes
        self.released = False

    def _get_array(self) -> np.ndarray:
        if self._array is None:
            raise ValueError(_RELEASED)
        return self._array

    def _set_array(self, array: np.ndarray) -> None:
        self._array = array

    #: The records as a read-only structured array over the ring (a view, no copy).
    array = property(_get_array, _set_array)

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        state = "released" if self.released else f"at {self.address:#x}"
        return f"<RingBatch of {self._count} records, {state}>"

    def copy(self) -> OpBatch:
        """The records copied out of the ring (one memcpy): an :class:`OpBatch` that stays
        valid after the release."""
        if self._array is None:
            raise ValueError(_RELEASED)
        if not self.nbytes:
            return OpBatch(np.empty(0, RECORD_DTYPE), 0)
        return decode(ctypes.string_at(self.address, self.nbytes), verify=False)

    def release(self) -> None:
        """Gives the records back to the producer. Raises ``BufferError`` (and keeps them)
        while numpy arrays made from this batch are still alive."""
        if self._reader is None:
            self._invalidate()
        else:
            self._reader._release(self, strict=True)

    def _invalidate(self) -> None:
        self.released = True
        self._array = None
        self._anchor = None

    def __enter__(self) -> "RingBatch":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._reader is None:
            self._invalidate()
        else:  # with an exception in flight, do not mask it: a leak is reported later
            self._reader._release(self, strict=exc_type is None)


def _late_release(lib: _bindings.Library, handle: int, nbytes: int) -> None:
    """Runs when the last view of a batch that outlived its reader's close() is gone."""
    lib.aclprofExtRingRelease(handle, nbytes)
    lib.aclprofExtRingDetach(handle)


class RingReader:
    """A reader attached to a ring (``aclprofExtRingAttach``) by ``fd`` (duplicated: the
    caller may close its own) or by ``path`` (the ring's file under ``/dev/shm``, or
    ``/proc/<pid>/fd/<fd>`` of the subscribing process). One reader per ring, used from one
    thread at a time. A context manager: leaving the block detaches (:meth:`close`).

    ``max_records`` bounds one batch; ``verify`` checks every record's signature as the
    batch decoder does (in place, before anything is decoded).
    """

    def __init__(self, fd: Optional[int] = None, path: Optional[PathLike] = None, *,
                 max_records: int = DEFAULT_MAX_RECORDS, verify: bool = True):
        if (fd is None) == (path is None):
            raise ValueError("give the ring's fd or its path (exactly one of them)")
        if fd is not None and not 0 <= fd < 1 << 31:
            raise ValueError(f"fd {fd} is not a file descriptor")
        _check_max_records(max_records)
        self.max_records = max_records
        self.verify = verify
        #: True once the stream ended: unsubscribed (or the producer died), all read.
        self.ended = False
        self._handle: Optional[int] = None
        self._current: Optional[RingBatch] = None
        # acquired, not yet given back: (the ring slots' ctypes array, its length)
        self._held: Optional[Tuple[weakref.ref[ctypes.Array[ctypes.c_ubyte]], int]] = None
        self._lib = lib = load()
        handle = ctypes.c_void_p()
        if fd is not None:
            ret = lib.aclprofExtRingAttach(None, fd, ctypes.byref(handle))
        else:
            assert path is not None  # exactly one of fd and path, checked above
            ret = lib.aclprofExtRingAttach(os.fsencode(path), -1, ctypes.byref(handle))
        check("aclprofExtRingAttach", ret)
        self._handle = handle.value

    @property
    def closed(self) -> bool:
        return self._handle is None

    # ---- zero-copy ----

    def acquire(self, timeout: Optional[float] = None,
                max_records: Optional[int] = None) -> Optional[RingBatch]:
        """Waits up to ``timeout`` seconds (None: as long as it takes) for records and
        returns them as a zero-copy :class:`RingBatch`, or an empty one on timeout; None at
        the end of the stream. Releases the previous batch first (``BufferError`` if views
        of it are still alive)."""
        raw = self._acquire_raw(timeout, max_records)
        if raw is None:
            return None
        ptr, nbytes = raw
        if not nbytes:
            return RingBatch(None, np.empty(0, RECORD_DTYPE), 0, 0, None)
        anchor = (ctypes.c_ubyte * nbytes).from_address(ptr)
        self._held = (weakref.ref(anchor), nbytes)
        # A RecordError here leaves the records held until the exception (whose traceback
        # holds the views) is gone; the next acquire then skips them.
        batch = decode(memoryview(anchor), verify=self.verify)  # its views hold the anchor
        batch.array.flags.writeable = False  # never scribble on shared memory
        ring_batch = RingBatch(self, batch.array, ptr, nbytes, anchor)
        self._current = ring_batch
        return ring_batch

    def views(self, *, idle_timeout: Optional[float] = None,
              max_records: Optional[int] = None) -> Iterator[RingBatch]:
        """Zero-copy batches until the end of the stream; each is released when the next
        one is asked for (or the loop is left). ``idle_timeout``: raise ``TimeoutError``
        after that many seconds without records."""
        while True:
            batch = self._next(idle_timeout, max_records)
            if batch is None:
                return
            try:
                yield batch
            except GeneratorExit:
                self._release(batch, strict=False)
                raise
            self._release(batch, strict=True)

    # ---- owned copies ----

    def batches(self, *, idle_timeout: Optional[float] = None,
                max_records: Optional[int] = None) -> Iterator[OpBatch]:
        """Batches copied out of the ring (one memcpy each, released at once, then decoded)
        until the end of the stream: keep them as long as you like."""
        lib = self._lib
        while True:
            raw = self._wait_raw(idle_timeout, max_records)
            if raw is None:
                return
            ptr, nbytes = raw
            data = ctypes.string_at(ptr, nbytes)
            check("aclprofExtRingRelease", lib.aclprofExtRingRelease(self._handle, nbytes))
            yield decode(data, verify=self.verify)

    def __iter__(self) -> Iterator[OpRecord]:
        for batch in self.batches():
            yield from batch.records()

    # ---- the rest ----

    def close(self) -> None:
        """Detaches (``aclprofExtRingDetach``): the producer no longer waits for this reader.
        If views of the last batch are still alive, the mapping must outlive them: the
        release and the detach then happen when the last of them is garbage (a
        ``ResourceWarning`` says so) -- until then the producer still waits for us."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        if self._current is not None:
            self._current._invalidate()
            self._current = None
        if self._held is not None:
            ref, nbytes = self._held
            self._held = None
            if ref() is not None:
                gc.collect()
            anchor = ref()
            if anchor is not None:
                finalizer = weakref.finalize(anchor, _late_release, self._lib, handle, nbytes)
                finalizer.atexit = False  # never unmap under live arrays at interpreter exit
                del anchor
                warnings.warn(
                    "RingReader closed while numpy arrays still view its last batch: it "
                    "stays attached (and the producer waits) until they are gone",
                    ResourceWarning, stacklevel=2)
                return
            self._lib.aclprofExtRingRelease(handle, nbytes)
        check("aclprofExtRingDetach", self._lib.aclprofExtRingDetach(handle))

    def __enter__(self) -> "RingReader":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        _common.exit_cleanup(self.close, exc_type)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("ended" if self.ended else "attached")
        return f"<RingReader {state}>"

    def _acquire_raw(self, timeout: Optional[float],
                     max_records: Optional[int]) -> Optional[Tuple[int, int]]:
        """(pointer, length) of the next batch, length 0 on timeout; None at the end."""
        if self._handle is None:
            raise ValueError("this RingReader is closed")
        if max_records is None:
            max_records = self.max_records
        else:
            _check_max_records(max_records)
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0 (or None to wait until records come)")
        if self._current is not None:
            self._release(self._current, strict=True)
        self._settle(strict=True)
        if self.ended:
            return None
        deadline = None if timeout is None else time.monotonic() + timeout
        ptr, length = ctypes.c_void_p(), ctypes.c_size_t()
        acquire = self._lib.aclprofExtRingAcquire
        while True:
            left = _TICK_S if deadline is None else min(_TICK_S, deadline - time.monotonic())
            wait_ms = max(0, int(left * 1000 + 0.999))
            ret = acquire(self._handle, max_records, wait_ms, ctypes.byref(ptr),
                          ctypes.byref(length))
            if ret == _bindings.ACL_ERROR_PROF_NOT_RUN:
                self.ended = True
                return None
            check("aclprofExtRingAcquire", ret)
            if length.value:
                return ptr.value or 0, length.value
            if deadline is not None and time.monotonic() >= deadline:
                return 0, 0

    def _wait_raw(self, idle_timeout: Optional[float],
                  max_records: Optional[int]) -> Optional[Tuple[int, int]]:
        raw = self._acquire_raw(idle_timeout, max_records)
        if raw is not None and not raw[1]:
            raise TimeoutError(f"no records from the ring within {idle_timeout} s")
        return raw

    def _next(self, idle_timeout: Optional[float],
              max_records: Optional[int]) -> Optional[RingBatch]:
        batch = self.acquire(idle_timeout, max_records)
        if batch is not None and not len(batch):
            raise TimeoutError(f"no records from the ring within {idle_timeout} s")
        return batch

    def _release(self, batch: RingBatch, strict: bool) -> None:
        batch._invalidate()
        if batch is self._current:
            self._current = None
            self._settle(strict)

    def _settle(self, strict: bool) -> None:
        """Gives the held records back to the producer once no array views them."""
        if self._held is None or self._handle is None:
            return
        ref, nbytes = self._held
        if ref() is not None:
            gc.collect()  # only reached when something leaked: cycles may hold the views
            if ref() is not None:
                if strict:
                    raise BufferError(
                        "numpy arrays made from a released ring batch are still alive; the "
                        "records stay held (the producer cannot reuse them) until they are "
                        "gone. Copy what you keep before the release: batch.copy(), "
                        "np.array(column), batch.records()")
                return
        self._held = None
        check("aclprofExtRingRelease", self._lib.aclprofExtRingRelease(self._handle, nbytes))


def _clear_frames(error: BaseException) -> None:
    """Drops the local variables of the finished frames in the tracebacks of ``error`` and of
    the exceptions chained to it; the tracebacks still say where each was raised."""
    seen: Set[int] = set()
    e: Optional[BaseException] = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)
        e = e.__cause__ or e.__context__


def _check_max_records(n: int) -> None:
    if not 1 <= n < _UINT32:
        raise ValueError(f"max_records must be between 1 and {_UINT32 - 1}, not {n}")


class RingSubscription(_common.Started):
    """Subscribes one loaded model to a new shared-memory ring of ``capacity`` records
    (``aclprofExtRingSubscribe``): in a memfd when ``path`` is None, else in a new file at
    ``path`` (e.g. ``/dev/shm/NAME``; removed again at :meth:`stop` unless ``remove=False``).
    A context manager; :meth:`stop` unsubscribes (``aclprofModelUnSubscribe``): everything
    reported before is in the ring, then readers see the end of the stream.

    Reading it:

    * in another process: pass it :attr:`attach_path` (the file, or
      ``/proc/<pid>/fd/<fd>``) or the inherited :attr:`fd`, and use :class:`RingReader`
      there. Attach before :meth:`stop`: the library closes the fd at unsubscribe;
    * in this process, yourself: :meth:`reader` attaches a :class:`RingReader`;
    * in this process, like :class:`Subscription`: ``collect=True`` starts a reader thread
      that keeps every batch (copied out) in :attr:`batches`, and ``on_batch`` is called on
      that thread with each zero-copy :class:`RingBatch`, valid only during the call.
    """

    def __init__(
        self,
        model_id: int,
        capacity: int = DEFAULT_CAPACITY,
        path: Optional[PathLike] = None,
        *,
        collect: bool = False,
        on_batch: Optional[Callable[[RingBatch], None]] = None,
        max_records: int = DEFAULT_MAX_RECORDS,
        remove: bool = True,
    ):
        if not MIN_CAPACITY <= capacity <= MAX_CAPACITY:
            raise ValueError(
                f"capacity must be between {MIN_CAPACITY} and {MAX_CAPACITY} records, not {capacity}")
        _check_max_records(max_records)
        self.model_id = model_id
        self.capacity = capacity
        self.path = None if path is None else os.fspath(path)
        self.remove = remove
        #: The ring's fd in this process while subscribed (-1 otherwise).
        self.fd = -1
        self.batches: List[OpBatch] = []
        self._collect = collect
        self._on_batch = on_batch
        self._max_records = max_records
        self._subscribed = False
        self._reader: Optional[RingReader] = None
        self._thread: Optional[threading.Thread] = None
        self._abort = threading.Event()
        self._reader_error: Optional[BaseException] = None

    @property
    def active(self) -> bool:
        return self._subscribed

    @property
    def attach_path(self) -> str:
        """Where another process attaches: the ring's file, or ``/proc/<pid>/fd/<fd>``."""
        if not self._subscribed:
            raise RuntimeError("this ring subscription is not started")
        return self.path if self.path is not None else f"/proc/{os.getpid()}/fd/{self.fd}"

    @property
    def records(self) -> List[OpRecord]:
        """Every op the reader thread (``collect=True``) received so far, in arrival order."""
        return [op for batch in self.batches for op in batch.records()]

    def reader(self, **kwargs: Any) -> RingReader:
        """A :class:`RingReader` attached in this process by the ring's fd."""
        if not self._subscribed:
            raise RuntimeError("this ring subscription is not started")
        return RingReader(fd=self.fd, **kwargs)

    def start(self) -> "RingSubscription":
        if self._subscribed:
            raise RuntimeError("this ring subscription is already started")
        lib = load()
        fd = ctypes.c_int32(-1)
        path = None if self.path is None else os.fsencode(self.path)
        check("aclprofExtRingSubscribe",
              lib.aclprofExtRingSubscribe(self.model_id, path, self.capacity, ctypes.byref(fd)))
        self.fd, self._subscribed = fd.value, True
        self.batches, self._reader_error = [], None
        self._abort.clear()
        if self._collect or self._on_batch is not None:
            try:
                self._reader = RingReader(fd=self.fd, max_records=self._max_records)
            except BaseException:
                with contextlib.suppress(Exception):
                    self.stop()
                raise
            self._thread = threading.Thread(
                target=self._read, name=f"aclprof-ring-reader-{self.model_id}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> List[OpRecord]:
        """Unsubscribes, waits for the reader thread (if any), removes the ring's file (if
        any, and ``remove``) and returns :attr:`records`."""
        if not self._subscribed:
            raise RuntimeError("this ring subscription is not started")
        ret = load().aclprofModelUnSubscribe(self.model_id)
        message = recent_error() if ret else ""
        self._subscribed, self.fd = False, -1  # the library closed the fd
        if ret:
            self._abort.set()  # the stream will not end by itself
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()
        if self.path is not None and self.remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        if ret:
            raise AclError("aclprofModelUnSubscribe", ret, message)
        if self._reader_error is not None:
            raise self._reader_error
        return self.records

    def _read(self) -> None:
        reader = self._reader
        assert reader is not None
        try:
            while True:
                batch = reader.acquire(_TICK_S)
                if batch is None:
                    return
                if not len(batch):
                    if self._abort.is_set():
                        return
                    continue
                with batch:
                    if self._collect:
                        self.batches.append(batch.copy())
                    if self._on_batch is not None:
                        self._on_batch(batch)
        except BaseException as e:  # reported by stop(); keep draining: never stall the producer
            # The traceback's frames (on_batch's, acquire's) may hold views of the ring: kept
            # alive with the error, they would stop the drain below from releasing them.
            _clear_frames(e)
            self._reader_error = e
        with contextlib.suppress(Exception):
            while not self._abort.is_set():
                raw = reader._acquire_raw(_TICK_S, None)
                if raw is None:
                    return
                if raw[1]:
                    ret = reader._lib.aclprofExtRingRelease(reader._handle, raw[1])
                    if ret:
                        return
        # The drain failed (views of a batch leaked by on_batch): detach so that the producer
        # stops waiting (close() defers the detach while those views live).
        with contextlib.suppress(Exception):
            reader.close()


    def __repr__(self) -> str:
        state = f"fd {self.fd}" if self._subscribed else "stopped"
        return f"<RingSubscription of model {self.model_id}, {self.capacity} records, {state}>"
