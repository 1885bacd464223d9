"""``aclprof.pipeline``: report the data pipeline that feeds a model, so that file mode
records it and ``aclprof analyze --pipeline`` (and the report) can find the stage that holds
training back.

Each stage of the pipeline (``"read"``, ``"decode"``, ``"transform"``, ``"batch"``,
``"transfer"``, or names of your own) reports the work of its workers as spans, and the
queue it writes its output to as samples of its depth; the training thread reports its wait
for each batch as the stage ``"wait"`` (:data:`WAIT`), which becomes each step's data wait
(step_trace's ``Data Aug Bound``)::

    with aclprof.pipeline.stage("decode", worker=3):
        image = decode(raw)
    aclprof.pipeline.queue("decode", depth=q.qsize(), capacity=q.maxsize)
    with aclprof.pipeline.wait():
        batch = next(loader)

Stages are taken in the order they are first reported. Nothing is recorded while no
file-mode session runs; each call then costs its argument checks.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Dict, Iterator, Optional

from . import _common
from ._common import PathLike
from ._lib import load
from .errors import check
from .runtime import now_ns

#: The stage name of the training thread's wait for its next batch.
WAIT = "wait"


def span(stage: str, start_ns: int, end_ns: int, worker: int = 0) -> None:
    """``aclprofExtPipelineSpan``: ``worker`` of ``stage`` worked from ``start_ns`` to
    ``end_ns`` (:func:`aclprof.now_ns` clock)."""
    check("aclprofExtPipelineSpan",
          load().aclprofExtPipelineSpan(stage.encode(), worker, start_ns, end_ns))


def queue(stage: str, depth: int, capacity: int = 0, time_ns: Optional[int] = None) -> None:
    """``aclprofExtPipelineQueue``: the queue ``stage`` writes to holds ``depth`` of
    ``capacity`` items (0: unknown) now, or at ``time_ns``."""
    t = now_ns() if time_ns is None else time_ns
    check("aclprofExtPipelineQueue", load().aclprofExtPipelineQueue(stage.encode(), depth, capacity, t))


@contextlib.contextmanager
def stage(name: str, worker: int = 0) -> Iterator[None]:
    """Reports the block it wraps as a span of stage ``name`` by ``worker``."""
    start = now_ns()
    try:
        yield
    finally:
        span(name, start, now_ns(), worker)


def wait() -> "contextlib.AbstractContextManager[None]":
    """Reports the block it wraps as the training thread's wait for data."""
    return stage(WAIT)


def analyze(path: PathLike) -> Dict[str, Any]:
    """What ``aclprof analyze PATH --pipeline --format json`` prints, as a dict: the stages
    in pipeline order (each with its spans, workers, busy share and output queue: samples,
    fill, empty and full shares, the depths in order, capacity, sample interval), the
    training thread's wait, and the bottleneck with its rule and evidence. Raises
    :class:`AclError` when the run recorded no pipeline events."""
    result: Dict[str, Any] = json.loads(_common.analyze_text(path, {"pipeline": True}))
    return result
