"""The subscription reader thread of the samples: started with acl.util.start_thread, blocked
in os.read until unsubscribe closes the write end, then it returns and stop_thread joins."""

from __future__ import annotations

import os
import threading

import acl
import aclprof
from conftest import ACL_AICORE_NONE, TINY, model_ops


def test_reader_exits_on_eof_after_unsubscribe(tiny_model, datasets):
    r, w = os.pipe()
    config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)
    assert acl.prof.model_subscribe(tiny_model, config) == 0
    context, _ = acl.rt.create_context(0)
    got = {"bytes": 0, "context": None}
    finished = threading.Event()

    def reader(args):
        fd, ctx = args
        got["context"] = acl.rt.set_context(ctx), acl.rt.get_context()
        while True:
            data = os.read(fd, 5120)
            if not data:
                break
            got["bytes"] += len(data)
        finished.set()

    thr_id, ret = acl.util.start_thread(reader, [r, context])
    assert ret == 0
    assert acl.mdl.execute(tiny_model, *datasets) == 0
    aclprof.flush()  # everything is in the pipe, but the write end is still open
    assert not finished.wait(0.3), "the reader must block until unsubscribe"

    assert acl.prof.model_un_subscribe(tiny_model) == 0
    assert finished.wait(10), "the reader did not see end of file after unsubscribe"
    assert acl.util.stop_thread(thr_id) == 0
    assert got["bytes"] == 512 * len(model_ops(TINY))
    assert got["context"] == (0, (context, 0))
    os.close(r)
    assert acl.prof.destroy_subscribe_config(config) == 0
    assert acl.rt.destroy_context(context) == 0
