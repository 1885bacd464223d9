"""Subscription mode, the Pythonic way: a pipe, a subscribe config and a reader thread in one
object."""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable, List, Optional

from . import _bindings, _common
from ._lib import load, recent_error
from .errors import AclError, check
from .records import OpBatch, OpReader, OpRecord


class Subscription(_common.Started):
    """Collects the ops of one loaded model while it is subscribed::

        with Subscription(model.id) as sub:
            model.execute()
        for op in sub.records: ...

    :meth:`start` creates a pipe, subscribes the model to it and starts a reader thread that
    decodes every read with the batch decoder; :meth:`stop` unsubscribes (the library flushes
    every op reported so far and closes the write end), waits for the reader to reach end of
    file and releases everything. ``on_batch``, if given, is called on the reader thread with
    each :class:`OpBatch` as it arrives; the batches are also kept in :attr:`batches`.
    """

    def __init__(
        self,
        model_id: int,
        *,
        on_batch: Optional[Callable[[OpBatch], None]] = None,
        records_per_read: int = 128,
    ):
        self.model_id = model_id
        self.batches: List[OpBatch] = []
        self._on_batch = on_batch
        self._records_per_read = records_per_read
        self._write_fd: Optional[ctypes.c_int] = None  # the library stores -1 here at unsubscribe
        self._read_fd = -1
        self._config: Optional[int] = None
        self._thread: Optional[threading.Thread] = None
        self._reader_error: Optional[BaseException] = None

    @property
    def active(self) -> bool:
        return self._thread is not None

    @property
    def records(self) -> List[OpRecord]:
        """Every op received so far, in arrival order."""
        return [op for batch in self.batches for op in batch.records()]

    def start(self) -> "Subscription":
        if self.active:
            raise RuntimeError("this subscription is already started")
        lib = load()
        self.batches = []
        self._reader_error = None
        r, w = os.pipe()
        self._read_fd, self._write_fd = r, ctypes.c_int(w)
        self._config = lib.aclprofCreateSubscribeConfig(
            1, _bindings.ACL_AICORE_NONE, ctypes.byref(self._write_fd)
        )
        if not self._config:
            error = AclError("aclprofCreateSubscribeConfig", _bindings.ACL_ERROR_INVALID_PARAM,
                             recent_error())
            self._release()
            raise error
        ret = lib.aclprofModelSubscribe(self.model_id, self._config)
        if ret:
            error = AclError("aclprofModelSubscribe", ret, recent_error())
            self._release()
            raise error
        self._thread = threading.Thread(
            target=self._read, name=f"aclprof-reader-{self.model_id}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> List[OpRecord]:
        """Unsubscribes, waits for the reader and returns :attr:`records`."""
        if not self.active:
            raise RuntimeError("this subscription is not started")
        ret = load().aclprofModelUnSubscribe(self.model_id)
        message = recent_error() if ret else ""
        self._release()
        if ret:
            raise AclError("aclprofModelUnSubscribe", ret, message)
        if self._reader_error is not None:
            raise self._reader_error
        return self.records

    def _read(self) -> None:
        reader = OpReader(self._read_fd, records_per_read=self._records_per_read)
        try:
            for batch in reader.batches():
                self.batches.append(batch)
                if self._on_batch is not None:
                    self._on_batch(batch)
        except BaseException as e:  # reported by stop(); keep draining so the writer never waits
            self._reader_error = e
            while os.read(self._read_fd, reader.read_size):
                pass

    def _release(self) -> None:
        """Closes whatever is still open; after a successful unsubscribe only the read end is."""
        if self._write_fd is not None and self._write_fd.value >= 0:
            os.close(self._write_fd.value)  # the library did not take it over: end the reader
            self._write_fd.value = -1
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
        if self._config:
            check("aclprofDestroySubscribeConfig", load().aclprofDestroySubscribeConfig(self._config))
            self._config = None

