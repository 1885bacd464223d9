"""Error codes for bad arguments, in pyACL's return shapes."""

from __future__ import annotations

import os

import numpy as np
import pytest

import acl
import aclprof
from conftest import ACL_AICORE_NONE, TINY, model_ops

INVALID = aclprof.ACL_ERROR_INVALID_PARAM
ACL_PROF_ACL_API = 0x0001
ACL_PROF_MSPROFTX = 0x0080


@pytest.fixture
def records(tiny_model, datasets, capture):
    """The tiny model's records as a (pointer, length, keep-alive array) triple."""
    cap = capture(tiny_model)
    assert acl.mdl.execute(tiny_model, *datasets) == 0
    arr = np.frombuffer(bytearray(cap.finish()), dtype=np.uint8)
    return acl.util.numpy_to_ptr(arr), arr.size, arr


def test_init_errors(tmp_path):
    assert acl.prof.init("") == INVALID
    assert acl.prof.init("x" * 5000) == INVALID
    assert acl.prof.finalize() == aclprof.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.init(str(tmp_path)) == 0
    assert acl.prof.init(str(tmp_path)) == aclprof.ACL_ERROR_REPEAT_INITIALIZE
    assert acl.prof.finalize() == 0


def test_create_config_failures_are_zero_handles():
    assert acl.prof.create_config([0, 0], 0, 0, ACL_PROF_ACL_API) == 0  # duplicate device
    assert acl.prof.create_config([99], 0, 0, ACL_PROF_ACL_API) == 0  # no such device
    assert acl.prof.create_config([0], 0, 1, ACL_PROF_ACL_API) == 0  # events must be 0 (NULL)
    assert acl.prof.create_config([], 0, 0, ACL_PROF_ACL_API) == 0  # no device, no msproftx
    assert acl.prof.create_config([2**32], 0, 0, ACL_PROF_ACL_API) == 0  # would wrap to 0
    config = acl.prof.create_config([], 0, 0, ACL_PROF_MSPROFTX)  # allowed without devices
    assert config != 0
    assert acl.prof.destroy_config(config) == 0
    assert acl.prof.destroy_config(config) == INVALID  # already destroyed
    assert acl.prof.destroy_config(0) == INVALID


def test_start_and_stop_errors(tmp_path):
    config = acl.prof.create_config([0], 0, 0, ACL_PROF_ACL_API)
    assert acl.prof.start(config) == aclprof.ACL_ERROR_PROF_NOT_RUN  # no init
    assert acl.prof.init(str(tmp_path)) == 0
    try:
        assert acl.prof.start(0) == INVALID
        no_bits = acl.prof.create_config([0], 0, 0, 0)
        assert acl.prof.start(no_bits) == INVALID
        unknown = acl.prof.create_config([0], 0, 0, 1 << 40)
        assert acl.prof.start(unknown) == aclprof.ACL_ERROR_PROF_MODULES_UNSUPPORTED
        assert acl.prof.start(config) == 0
        other = acl.prof.create_config([0], 0, 0, ACL_PROF_ACL_API)
        assert acl.prof.stop(other) == aclprof.ACL_ERROR_INVALID_PROFILING_CONFIG
        assert acl.prof.stop(config) == 0
        assert acl.prof.stop(config) == aclprof.ACL_ERROR_PROF_NOT_RUN
        for c in (no_bits, unknown, other):
            assert acl.prof.destroy_config(c) == 0
    finally:
        assert acl.prof.finalize() == 0
        assert acl.prof.destroy_config(config) == 0


def test_set_config_errors():
    assert acl.prof.set_config(0, "1") == INVALID
    assert acl.prof.set_config(17, "1") == INVALID
    assert acl.prof.set_config(3, "1" * 257) == INVALID
    assert acl.prof.set_config(2**31, "1") == INVALID
    with pytest.raises(TypeError):
        acl.prof.set_config(3, 15)


def test_subscription_errors(tiny_model, tmp_path):
    r, w = os.pipe()
    try:
        assert acl.prof.create_subscribe_config(2, ACL_AICORE_NONE, w) == 0
        assert acl.prof.create_subscribe_config(256, ACL_AICORE_NONE, w) == 0  # not wrapped to 0
        config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)
        assert config
        assert acl.prof.model_subscribe(999_999, config) == aclprof.ACL_ERROR_INVALID_MODEL_ID
        assert acl.prof.model_subscribe(tiny_model, 0) == INVALID
        assert acl.prof.model_un_subscribe(tiny_model) == aclprof.ACL_ERROR_INVALID_MODEL_ID
        assert acl.prof.model_un_subscribe(-1) == INVALID

        assert acl.prof.init(str(tmp_path)) == 0
        assert acl.prof.model_subscribe(tiny_model, config) == aclprof.ACL_ERROR_PROF_API_CONFLICT
        assert acl.prof.finalize() == 0

        assert acl.prof.model_subscribe(tiny_model, config) == 0
        assert acl.prof.model_subscribe(tiny_model, config) == aclprof.ACL_ERROR_PROF_REPEAT_SUBSCRIBE
        assert acl.prof.init(str(tmp_path)) == aclprof.ACL_ERROR_PROF_API_CONFLICT
        assert acl.prof.model_un_subscribe(tiny_model) == 0
        assert acl.prof.destroy_subscribe_config(config) == 0
        assert acl.prof.destroy_subscribe_config(config) == INVALID
    finally:
        os.close(r)


def test_subscribing_the_read_end_is_rejected(tiny_model):
    r, w = os.pipe()
    config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, r)
    assert acl.prof.model_subscribe(tiny_model, config) == INVALID
    assert "write" in aclprof.recent_error()
    assert acl.prof.destroy_subscribe_config(config) == 0
    os.close(r)
    os.close(w)


def test_accessor_errors(records):
    ptr, length, _ = records
    n = len(model_ops(TINY))
    assert acl.prof.get_op_num(ptr, length - 1) == (0, INVALID)
    assert acl.prof.get_op_num(0, length) == (0, INVALID)
    assert acl.prof.get_op_num(ptr, -512) == (0, INVALID)
    for index in (n, 2**32 - 1, 2**32, -1):  # 2**32 must not wrap to record 0
        assert acl.prof.get_op_type_v2(ptr, length, index) == ("", INVALID)
        assert acl.prof.get_op_name_v2(ptr, length, index) == ("", INVALID)
        assert acl.prof.get_op_type_len(ptr, length, index) == (0, INVALID)
        assert acl.prof.get_op_name_len(ptr, length, index) == (0, INVALID)
        assert acl.prof.get_op_start(ptr, length, index) == 0
        assert acl.prof.get_op_end(ptr, length, index) == 0
        assert acl.prof.get_op_duration(ptr, length, index) == 0
        assert acl.prof.get_model_id(ptr, length, index) == INVALID
    name_len, _ = acl.prof.get_op_name_len(ptr, length, 0)
    assert acl.prof.get_op_name(ptr, length, 0, name_len - 1) == ("", INVALID)  # no room for NUL
    assert acl.prof.get_op_name(ptr, length, 0, 0) == ("", INVALID)
    assert acl.prof.get_op_type(ptr, length, 0, 3) == ("", INVALID)
    assert "needs" in aclprof.recent_error()
    with pytest.raises(TypeError):
        acl.prof.get_op_num("not an address", length)


def test_corrupt_record_is_rejected_only_where_read(records):
    ptr, length, arr = records
    arr[512 + 300] ^= 0x01  # a byte of record 1
    assert acl.prof.get_op_num(ptr, length) == (0, INVALID)
    assert acl.prof.get_op_name_v2(ptr, length, 1) == ("", INVALID)
    assert acl.prof.get_op_start(ptr, length, 1) == 0
    assert acl.prof.get_op_name_v2(ptr, length, 0)[1] == 0  # one record is checked per call


def test_msproftx_errors(tmp_path):
    assert acl.prof.pop() == -1
    assert acl.prof.range_stop(12345) == -1
    assert acl.prof.mark(0) == -1
    assert acl.prof.init(str(tmp_path)) == 0
    config = acl.prof.create_config([0], 0, 0, ACL_PROF_ACL_API | ACL_PROF_MSPROFTX)
    assert acl.prof.start(config) == 0
    try:
        stamp = acl.prof.create_stamp()
        assert acl.prof.set_stamp_trace_message(stamp, "x" * 128, 128) == -1
        assert acl.prof.set_stamp_trace_message(stamp, "short", 50) == -1  # longer than msg
        assert acl.prof.set_stamp_trace_message(stamp, "x" * 127, 127) == 0
        assert acl.prof.pop() == -1  # nothing pushed
        range_id, ret = acl.prof.range_start(stamp)
        assert ret == 0
        assert acl.prof.range_stop(range_id) == 0
        assert acl.prof.range_stop(range_id) == -1
        assert acl.prof.range_start(0) == (0, -1)
        acl.prof.destroy_stamp(stamp)
        acl.prof.destroy_stamp(stamp)  # a double destroy is ignored, not a crash
    finally:
        assert acl.prof.stop(config) == 0
        assert acl.prof.destroy_config(config) == 0
        assert acl.prof.finalize() == 0


def test_step_errors(device):
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    assert acl.prof.get_step_timestamp(0, 0, stream) == INVALID
    info = acl.prof.create_step_info()
    assert acl.prof.get_step_timestamp(info, 0, stream) == 0
    assert acl.prof.get_step_timestamp(info, 0, stream) == INVALID  # START twice
    acl.prof.destroy_step_info(info)
    acl.prof.destroy_step_info(0)  # like free(NULL)
    acl.rt.destroy_stream(stream)
