"""Every acl.prof function of pyACL: present, with pyACL's call form and return
shape, doing what the C library does."""

from __future__ import annotations

import ctypes
import errno
import gc
import os

import numpy as np
import pytest

import acl
import aclprof
from conftest import ACL_AICORE_NONE, TINY, model_ops

ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_MSPROFTX = 0x0080
ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3
ACL_STEP_START, ACL_STEP_END = 0, 1

SURFACE = [
    # file mode
    "init", "finalize", "create_config", "destroy_config", "set_config", "start", "stop",
    # subscription
    "create_subscribe_config", "destroy_subscribe_config", "model_subscribe",
    "model_unsubscribe", "model_un_subscribe", "get_op_desc_size", "get_op_num",
    "get_op_type_len", "get_op_type", "get_op_type_v2", "get_op_name_len", "get_op_name",
    "get_op_name_v2", "get_op_start", "get_op_end", "get_op_duration", "get_model_id",
    # msproftx
    "create_stamp", "destroy_stamp", "set_stamp_trace_message", "mark", "push", "pop",
    "range_start", "range_stop",
    # steps
    "create_step_info", "get_step_timestamp", "destroy_step_info",
]


def is_ret(value) -> bool:
    return type(value) is int


def is_pair(value, first_type) -> bool:
    return (
        type(value) is tuple and len(value) == 2
        and type(value[0]) is first_type and type(value[1]) is int
    )


def test_every_function_exists():
    missing = [name for name in SURFACE if not callable(getattr(acl.prof, name, None))]
    assert missing == []


def test_file_mode_shapes(tmp_path):
    ret = acl.prof.init(str(tmp_path / "out"))
    assert is_ret(ret) and ret == 0
    assert (tmp_path / "out").is_dir()
    config = acl.prof.create_config([0], 0, 0, ACL_PROF_ACL_API | ACL_PROF_TASK_TIME)
    assert type(config) is int and config != 0
    for ret in (
        acl.prof.set_config(ACL_PROF_SYS_HARDWARE_MEM_FREQ, "15"),
        acl.prof.start(config),
        acl.prof.stop(config),
        acl.prof.destroy_config(config),
        acl.prof.finalize(),
    ):
        assert is_ret(ret) and ret == 0


def test_init_takes_a_path_like_and_passes_its_byte_length(tmp_path):
    target = tmp_path / "ünïcode dir"
    assert acl.prof.init(target) == 0
    assert target.is_dir()
    assert acl.prof.finalize() == 0


def test_subscription_shapes(tiny_model, datasets, capture):
    size = acl.prof.get_op_desc_size()
    assert is_pair(size, int) and size == (512, 0)

    cap = capture(tiny_model)
    assert acl.mdl.execute(tiny_model, *datasets) == 0
    data = cap.finish()

    ops = model_ops(TINY)
    arr = np.array(data)
    ptr, length = acl.util.numpy_to_ptr(arr), arr.itemsize * arr.size
    assert length == len(data) == 512 * len(ops)
    num = acl.prof.get_op_num(ptr, length)
    assert is_pair(num, int) and num == (len(ops), 0)
    for i, op in enumerate(ops):
        type_len = acl.prof.get_op_type_len(ptr, length, i)
        assert is_pair(type_len, int) and type_len == (len(op["type"]) + 1, 0)
        name_len = acl.prof.get_op_name_len(ptr, length, i)
        assert is_pair(name_len, int) and name_len == (len(op["name"]) + 1, 0)
        for got in (
            acl.prof.get_op_type(ptr, length, i, 65),
            acl.prof.get_op_type(ptr, length, i, type_len[0]),
            acl.prof.get_op_type_v2(ptr, length, i),
        ):
            assert is_pair(got, str) and got == (op["type"], 0)
        for got in (
            acl.prof.get_op_name(ptr, length, i, 275),  # what real callers pass
            acl.prof.get_op_name(ptr, length, i, 257),
            acl.prof.get_op_name_v2(ptr, length, i),
            acl.prof.get_op_name_v2(ptr, length, i),  # reads are repeatable
        ):
            assert is_pair(got, str) and got == (op["name"], 0)
        start = acl.prof.get_op_start(ptr, length, i)
        end = acl.prof.get_op_end(ptr, length, i)
        duration = acl.prof.get_op_duration(ptr, length, i)
        model_id = acl.prof.get_model_id(ptr, length, i)
        assert all(type(v) is int for v in (start, end, duration, model_id))
        assert model_id == tiny_model
        assert duration == end - start == round(op["duration_us"] * 1000)
        assert start > 0


def test_both_unsubscribe_spellings(tiny_model):
    for unsubscribe in (acl.prof.model_unsubscribe, acl.prof.model_un_subscribe):
        r, w = os.pipe()
        config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)
        assert acl.prof.model_subscribe(tiny_model, config) == 0
        ret = unsubscribe(tiny_model)
        assert is_ret(ret) and ret == 0
        assert unsubscribe(tiny_model) == aclprof.ACL_ERROR_INVALID_MODEL_ID  # no longer subscribed
        assert os.read(r, 512) == b""  # the write end was closed
        os.close(r)
        assert acl.prof.destroy_subscribe_config(config) == 0


def test_unsubscribe_closes_the_write_end_so_closing_it_again_fails(tiny_model):
    """pyACL's documented caveat: after unsubscribe, the sample's os.close(w) hits EBADF."""
    r, w = os.pipe()
    config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)
    assert acl.prof.model_subscribe(tiny_model, config) == 0
    os.fstat(w)  # open while subscribed
    assert acl.prof.model_un_subscribe(tiny_model) == 0
    with pytest.raises(OSError) as err:
        os.fstat(w)
    assert err.value.errno == errno.EBADF
    os.close(r)
    assert acl.prof.destroy_subscribe_config(config) == 0


def test_config_destroyed_before_unsubscribe_keeps_the_subscription(tiny_model, datasets):
    """The library keeps the address of the fd int until unsubscribe: destroying the config
    first must not free it (the binding keeps it alive for the subscription). Were it freed,
    the decoys below would take its memory and the library would write -1 into one of them
    instead of closing ``w``."""
    r, w = os.pipe()
    config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)
    assert acl.prof.model_subscribe(tiny_model, config) == 0
    assert acl.prof.destroy_subscribe_config(config) == 0
    gc.collect()
    decoys = [ctypes.c_int(-5) for _ in range(2000)]
    assert acl.mdl.execute(tiny_model, *datasets) == 0
    assert acl.prof.model_un_subscribe(tiny_model) == 0
    assert all(d.value == -5 for d in decoys), "the library wrote through a freed fd int"
    with pytest.raises(OSError):
        os.fstat(w)  # closed by the library
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    assert len(data) == 512 * len(model_ops(TINY))


def msproftx_session(tmp_path):
    assert acl.prof.init(str(tmp_path)) == 0
    config = acl.prof.create_config([0], 0, 0, ACL_PROF_ACL_API | ACL_PROF_MSPROFTX)
    assert config
    assert acl.prof.start(config) == 0
    return config


def end_session(config):
    assert acl.prof.stop(config) == 0
    assert acl.prof.destroy_config(config) == 0
    assert acl.prof.finalize() == 0


def test_msproftx_sample_loops(tmp_path):
    """The three loops of the official msproftx sample, with their return shapes."""
    assert acl.prof.create_stamp() == 0  # not started yet
    config = msproftx_session(tmp_path)
    try:
        for variant in ("mark", "push_pop", "range"):
            stamp = acl.prof.create_stamp()
            assert type(stamp) is int and stamp != 0
            msg = "test msprof tx"
            assert acl.prof.set_stamp_trace_message(stamp, msg, len(msg)) == 0
            if variant == "mark":
                assert acl.prof.mark(stamp) == 0
            elif variant == "push_pop":
                assert acl.prof.push(stamp) == 0
                assert acl.prof.pop() == 0
                assert acl.prof.push(stamp) == 0
                assert acl.prof.pop(stamp) == 0  # a stamp argument is tolerated
            else:
                range_id = acl.prof.range_start(stamp)
                assert is_pair(range_id, int) and range_id[1] == 0
                assert acl.prof.range_stop(range_id[0]) == 0
            assert acl.prof.destroy_stamp(stamp) is None
    finally:
        end_session(config)


def test_set_stamp_trace_message_accepts_bytes_and_addresses(tmp_path):
    config = msproftx_session(tmp_path)
    try:
        stamp = acl.prof.create_stamp()
        assert acl.prof.set_stamp_trace_message(stamp, b"as bytes", 8) == 0
        text = b"by address"
        assert acl.prof.set_stamp_trace_message(stamp, acl.util.bytes_to_ptr(text), 10) == 0
        acl.prof.destroy_stamp(stamp)
    finally:
        end_session(config)


def test_step_info_shapes(device):
    info = acl.prof.create_step_info()
    assert type(info) is int and info != 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    assert acl.prof.get_step_timestamp(info, ACL_STEP_START, stream) == 0
    assert acl.prof.get_step_timestamp(info, ACL_STEP_END, stream) == 0
    assert acl.prof.get_step_timestamp(info, ACL_STEP_END, stream) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.prof.destroy_step_info(info) is None
    assert acl.rt.destroy_stream(stream) == 0
