"""acl.util, acl.rt, acl.mdl and acl.init/finalize: the helpers the samples use."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import acl
import aclprof
from conftest import RESNET50, TINY, model_datasets, model_ops


# ---- acl.util --------------------------------------------------------------------------

def test_numpy_to_ptr_of_pipe_bytes_addresses_every_byte():
    data = b"record" + bytes(506)  # trailing NULs, like every record's reserved tail
    arr = np.array(data)
    assert arr.itemsize * arr.size == len(data)
    assert acl.util.ptr_to_bytes(acl.util.numpy_to_ptr(arr), len(data)) == data


def test_numpy_to_ptr_warns_for_non_contiguous_arrays():
    arr = np.arange(10, dtype=np.int32)[::2]
    with pytest.warns(RuntimeWarning, match="contiguous"):
        acl.util.numpy_to_ptr(arr)
    with pytest.raises(TypeError):
        acl.util.numpy_to_ptr(b"bytes")


def test_bytes_and_ptr_round_trip():
    data = b"\x00abc\xffdef"
    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(data), len(data)) == data
    mutable = bytearray(b"xyz")
    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(mutable), 3) == b"xyz"
    with pytest.raises(TypeError):
        acl.util.bytes_to_ptr("str")
    with pytest.raises(ValueError):
        acl.util.ptr_to_bytes(0, 4)


def test_ptr_to_numpy_is_a_typed_view():
    backing = np.arange(6, dtype=np.int32)
    view = acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(backing), (2, 3), 5)  # 5 = NPY_INT32
    assert view.dtype == np.int32 and view.shape == (2, 3)
    assert view.tolist() == [[0, 1, 2], [3, 4, 5]]
    view[1, 2] = 42
    assert backing[5] == 42  # same memory
    floats = np.array([1.5, 2.5], dtype=np.float16)
    assert acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(floats), (2,), 23).tolist() == [1.5, 2.5]
    with pytest.raises(ValueError):
        acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(backing), (6,), 99)


def test_start_thread_calls_the_function_once_with_the_list():
    calls = []
    release = threading.Event()
    args = [7, "ctx"]

    def work(a):
        calls.append((a, threading.get_ident()))
        release.wait(5)

    thr_id, ret = acl.util.start_thread(work, args)
    assert ret == 0 and type(thr_id) is int
    release.set()
    assert acl.util.stop_thread(thr_id) == 0
    assert calls == [(args, thr_id)]  # ran once, on its own thread, given the list itself
    assert calls[0][0] is args
    assert acl.util.stop_thread(thr_id) == aclprof.ACL_ERROR_INVALID_PARAM  # already joined


def test_stop_thread_waits_for_the_thread():
    done = threading.Event()

    def slow(_):
        threading.Event().wait(0.2)
        done.set()

    thr_id, _ = acl.util.start_thread(slow, [])
    assert acl.util.stop_thread(thr_id) == 0
    assert done.is_set()


def test_a_new_thread_has_no_context_until_set_context():
    context, ret = acl.rt.create_context(0)
    assert ret == 0 and context
    assert acl.rt.get_context() == (context, 0)  # create_context makes it current
    seen = []

    def work(args):
        seen.append(acl.rt.get_context())
        seen.append(acl.rt.set_context(args[0]))
        seen.append(acl.rt.get_context())

    thr_id, _ = acl.util.start_thread(work, [context])
    acl.util.stop_thread(thr_id)
    assert seen == [(0, aclprof.ACL_ERROR_RT_CONTEXT_NULL), 0, (context, 0)]
    assert acl.rt.destroy_context(context) == 0
    assert acl.rt.destroy_context(context) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.rt.set_context(context) == aclprof.ACL_ERROR_INVALID_PARAM


# ---- acl.init / acl.rt -----------------------------------------------------------------

def test_init_and_finalize(tmp_path):
    acl.finalize()
    assert acl.init() == 0
    assert acl.init() == aclprof.ACL_ERROR_REPEAT_INITIALIZE
    assert acl.finalize() == 0
    assert acl.finalize() == aclprof.ACL_ERROR_REPEAT_FINALIZE
    assert acl.init(str(tmp_path / "missing.json")) == aclprof.ACL_ERROR_INVALID_FILE
    config = tmp_path / "acl.json"
    config.write_text("{}")
    assert acl.init(str(config)) == 0
    assert acl.finalize() == 0
    assert acl.init(config) == 0  # a path object, too
    assert acl.finalize() == 0


def in_new_thread(fn):
    """``fn()`` on a fresh thread: one without a current device or context."""
    out = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def test_devices_are_the_emulated_ones():
    count = int(os.environ.get("ACLPROF_DEVICE_COUNT", "1"))
    assert acl.rt.get_device_count() == (count, 0)
    assert acl.rt.set_device(0) == 0
    assert acl.rt.get_device() == (0, 0)
    assert acl.rt.set_device(count) == aclprof.ACL_ERROR_RT_INVALID_DEVICEID
    assert acl.rt.set_device(-1) == aclprof.ACL_ERROR_RT_INVALID_DEVICEID
    assert acl.rt.reset_device(count) == aclprof.ACL_ERROR_RT_INVALID_DEVICEID
    assert acl.rt.create_context(count) == (0, aclprof.ACL_ERROR_RT_INVALID_DEVICEID)
    assert acl.rt.reset_device(0) == 0
    assert in_new_thread(acl.rt.get_device) == (0, aclprof.ACL_ERROR_RT_CONTEXT_NULL)
    assert in_new_thread(acl.rt.get_context) == (0, aclprof.ACL_ERROR_RT_CONTEXT_NULL)
    assert acl.rt.get_run_mode() == (aclprof.ACL_HOST, 0)
    assert acl.rt.synchronize_device() == 0


def test_streams_and_memory(device):
    assert in_new_thread(acl.rt.create_stream) == (0, aclprof.ACL_ERROR_RT_CONTEXT_NULL)
    stream, ret = acl.rt.create_stream()
    assert ret == 0 and stream
    assert acl.rt.synchronize_stream(stream) == 0
    assert acl.rt.destroy_stream(stream) == 0
    assert acl.rt.synchronize_stream(stream) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.rt.destroy_stream(stream) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.rt.synchronize_stream(0) == 0  # the default stream

    src, ret = acl.rt.malloc(16, 0)
    assert ret == 0
    dst, _ = acl.rt.malloc_host(16)
    payload = b"0123456789abcdef"
    assert acl.rt.memcpy(src, 16, acl.util.bytes_to_ptr(payload), 16, 0) == 0
    assert acl.rt.memcpy(dst, 16, src, 16, 2) == 0
    assert acl.util.ptr_to_bytes(dst, 16) == payload
    assert acl.rt.memcpy(dst, 8, src, 16, 2) == aclprof.ACL_ERROR_INVALID_PARAM  # too long
    assert acl.rt.free(src) == 0
    assert acl.rt.free(src) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.rt.memset(dst, 16, 0x41, 4) == 0
    assert acl.util.ptr_to_bytes(dst, 16) == b"AAAA" + payload[4:]
    assert acl.rt.memset(dst, 4, 0, 16) == aclprof.ACL_ERROR_INVALID_PARAM  # too long
    assert acl.rt.free_host(dst) == 0
    assert acl.rt.malloc(0, 0) == (0, aclprof.ACL_ERROR_INVALID_PARAM)


# ---- acl.mdl ---------------------------------------------------------------------------

def run_and_capture(model_id, capture):
    inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    cap = capture(model_id)
    assert acl.mdl.execute(model_id, inputs, outputs) == 0
    batch = aclprof.decode(cap.finish())
    acl.mdl.destroy_dataset(inputs)
    acl.mdl.destroy_dataset(outputs)
    return batch


def test_load_execute_unload_json(capture):
    model_id, ret = acl.mdl.load_from_file(str(TINY))
    assert ret == 0 and model_id > 0
    batch = run_and_capture(model_id, capture)
    ops = model_ops(TINY)
    assert [(r.name, r.type) for r in batch] == [(o["name"], o["type"]) for o in ops]
    assert batch.duration.tolist() == [round(o["duration_us"] * 1000) for o in ops]
    assert acl.mdl.unload(model_id) == 0
    assert acl.mdl.unload(999_999) == aclprof.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    ds = acl.mdl.create_dataset()
    assert acl.mdl.execute(999_999, ds, ds) == aclprof.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    acl.mdl.destroy_dataset(ds)


def test_an_unloaded_model_is_model_id_invalid():
    model_id, ret = acl.mdl.load_from_file(str(TINY))
    assert ret == 0
    assert acl.mdl.unload(model_id) == 0
    ds = acl.mdl.create_dataset()
    try:
        assert acl.mdl.unload(model_id) == aclprof.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
        assert acl.mdl.execute(model_id, ds, ds) == aclprof.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    finally:
        acl.mdl.destroy_dataset(ds)


def test_load_execute_op_summary_csv(tmp_path, capture):
    csv = tmp_path / "op_summary_20260101000000.csv"
    csv.write_text(
        "Device_id,Model Name,Op Name,OP Type,Task Duration(us),Task Wait Time(us)\n"
        "0,replayed,layer0/MatMul,MatMulV2,12.5,0\n"
        "0,replayed,layer0/Add,Add,1.25,3\n"
    )
    model_id, ret = acl.mdl.load_from_file(str(csv))
    assert ret == 0
    batch = run_and_capture(model_id, capture)
    assert [(r.name, r.type, r.duration) for r in batch] == [
        ("layer0/MatMul", "MatMulV2", 12500),
        ("layer0/Add", "Add", 1250),
    ]
    assert batch[1].start - batch[0].end == 3000  # the recorded wait time
    assert acl.mdl.unload(model_id) == 0


def test_load_errors(tmp_path):
    assert acl.mdl.load_from_file(str(tmp_path / "missing.om")) == (
        0, aclprof.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID)
    assert acl.mdl.load_from_file(str(tmp_path / "missing.json")) == (
        0, aclprof.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID)
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"}')
    assert acl.mdl.load_from_file(str(bad)) == (
        0, aclprof.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID)
    assert "ops" in aclprof.recent_error()
    assert acl.get_recent_err_msg() == aclprof.recent_error()


def test_execute_needs_datasets(tiny_model):
    assert acl.mdl.execute(tiny_model, 0, 0) == aclprof.ACL_ERROR_INVALID_PARAM


def test_dataset_plumbing():
    dev_ptr, _ = acl.rt.malloc(64, 0)
    data_buffer = acl.create_data_buffer(dev_ptr, 64)
    assert data_buffer
    assert acl.get_data_buffer_addr(data_buffer) == dev_ptr
    assert acl.get_data_buffer_size_v2(data_buffer) == 64
    assert acl.get_data_buffer_size(data_buffer) == 64
    assert acl.update_data_buffer(data_buffer, dev_ptr + 32, 32) == 0
    assert (acl.get_data_buffer_addr(data_buffer), acl.get_data_buffer_size_v2(data_buffer)) == (
        dev_ptr + 32, 32)
    assert acl.update_data_buffer(12345, dev_ptr, 64) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.get_data_buffer_addr(12345) == 0
    assert acl.get_data_buffer_size_v2(12345) == 0
    ds = acl.mdl.create_dataset()
    assert acl.mdl.add_dataset_buffer(ds, data_buffer) == (ds, 0)
    assert acl.mdl.add_dataset_buffer(ds, 12345) == (ds, aclprof.ACL_ERROR_INVALID_PARAM)
    assert acl.mdl.get_dataset_num_buffers(ds) == 1
    assert acl.mdl.get_dataset_buffer(ds, 0) == data_buffer
    assert acl.mdl.destroy_dataset(ds) == 0
    assert acl.destroy_data_buffer(data_buffer) == 0
    assert acl.destroy_data_buffer(data_buffer) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.rt.free(dev_ptr) == 0


def test_model_description_has_no_inputs_or_outputs(tiny_model):
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, tiny_model) == 0
    assert (acl.mdl.get_num_inputs(desc), acl.mdl.get_num_outputs(desc)) == (0, 0)
    assert acl.mdl.destroy_desc(desc) == 0
    assert acl.mdl.destroy_desc(desc) == aclprof.ACL_ERROR_INVALID_PARAM


def test_model_description_gives_the_declared_inputs_and_outputs():
    """models/resnet50.json declares one input of 602112 bytes and one output of 4000."""
    model_id, ret = acl.mdl.load_from_file(str(RESNET50))
    assert ret == 0
    desc = acl.mdl.create_desc()
    try:
        assert acl.mdl.get_num_inputs(desc) == 0  # not filled yet
        assert acl.mdl.get_desc(desc, model_id) == 0
        assert (acl.mdl.get_num_inputs(desc), acl.mdl.get_num_outputs(desc)) == (1, 1)
        assert acl.mdl.get_input_size_by_index(desc, 0) == 602112
        assert acl.mdl.get_output_size_by_index(desc, 0) == 4000
        assert acl.mdl.get_input_size_by_index(desc, 1) == 0
        assert acl.mdl.get_output_size_by_index(desc, 1) == 0
        assert acl.mdl.get_desc(desc, 999_999) == aclprof.ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
    finally:
        assert acl.mdl.destroy_desc(desc) == 0
        assert acl.mdl.unload(model_id) == 0


def test_execute_checks_the_datasets_against_the_description(device):
    model_id, ret = acl.mdl.load_from_file(str(RESNET50))
    assert ret == 0
    try:
        empty = acl.mdl.create_dataset()
        assert acl.mdl.execute(model_id, empty, empty) == aclprof.ACL_ERROR_GE_PARAM_INVALID
        with model_datasets(model_id) as (inputs, outputs):
            assert acl.mdl.execute(model_id, inputs, outputs) == 0
            assert acl.mdl.execute(model_id, outputs, outputs) == aclprof.ACL_ERROR_GE_PARAM_INVALID
            assert acl.mdl.execute(model_id, inputs, empty) == aclprof.ACL_ERROR_GE_PARAM_INVALID
            assert acl.mdl.execute_async(model_id, inputs, outputs, 0) == 0
            stream, ret = acl.rt.create_stream()
            assert ret == 0
            assert acl.mdl.execute_async(model_id, inputs, outputs, stream) == 0
            assert acl.rt.destroy_stream(stream) == 0
            assert acl.mdl.execute_async(model_id, inputs, outputs, stream) == (
                aclprof.ACL_ERROR_INVALID_PARAM)  # a destroyed stream
            small = acl.mdl.get_dataset_buffer(inputs, 0)
            assert acl.update_data_buffer(small, acl.get_data_buffer_addr(small), 602111) == 0
            assert acl.mdl.execute(model_id, inputs, outputs) == aclprof.ACL_ERROR_GE_PARAM_INVALID
            assert "602112" in acl.get_recent_err_msg()
        assert acl.mdl.destroy_dataset(empty) == 0
    finally:
        assert acl.mdl.unload(model_id) == 0


def test_query_size_and_load_with_memory(tmp_path):
    work_size, weight_size, ret = acl.mdl.query_size(str(TINY))
    assert ret == 0 and work_size > 0 and weight_size > 0
    assert acl.mdl.query_size(str(tmp_path / "missing.json")) == (
        0, 0, aclprof.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID)
    work, _ = acl.rt.malloc(work_size, 0)
    weight, _ = acl.rt.malloc(weight_size, 0)
    try:
        model_id, ret = acl.mdl.load_from_file_with_mem(
            str(TINY), work, work_size, weight, weight_size)
        assert ret == 0 and model_id > 0
        assert acl.mdl.unload(model_id) == 0
        model_id, ret = acl.mdl.load_from_file_with_mem(str(TINY), 0, 0, 0, 0)  # runtime allocates
        assert ret == 0
        assert acl.mdl.unload(model_id) == 0
        too_small = acl.mdl.load_from_file_with_mem(
            str(TINY), work, work_size - 1, weight, weight_size)
        assert too_small == (0, aclprof.ACL_ERROR_INVALID_PARAM)
    finally:
        assert acl.rt.free(work) == 0
        assert acl.rt.free(weight) == 0


INVALID = aclprof.ACL_ERROR_INVALID_PARAM


@pytest.mark.parametrize("bad", ["0", 1.0, None, b"\x00", [0]])
def test_arguments_that_are_not_integers_are_invalid_param(bad, tiny_model):
    """Refused before C with the call's failure value, never a crash or a TypeError."""
    assert acl.rt.set_device(bad) == INVALID
    assert acl.rt.reset_device(bad) == INVALID
    assert acl.rt.create_context(bad) == (0, INVALID)
    assert acl.rt.set_context(bad) == INVALID
    assert acl.rt.destroy_context(bad) == INVALID
    assert acl.rt.destroy_stream(bad) == INVALID
    assert acl.rt.synchronize_stream(bad) == INVALID
    assert acl.rt.malloc(bad, 0) == (0, INVALID)
    assert acl.rt.malloc(16, bad) == (0, INVALID)
    assert acl.rt.malloc_host(bad) == (0, INVALID)
    assert acl.rt.free(bad) == INVALID
    assert acl.rt.free_host(bad) == INVALID
    assert acl.rt.memcpy(bad, 1, bad, 1, 0) == INVALID
    assert acl.rt.memset(bad, 1, 0, 1) == INVALID
    assert acl.create_data_buffer(bad, 1) == 0
    assert acl.destroy_data_buffer(bad) == INVALID
    assert acl.update_data_buffer(bad, 0, 0) == INVALID
    assert acl.get_data_buffer_addr(bad) == 0
    assert acl.get_data_buffer_size_v2(bad) == 0
    assert acl.get_data_buffer_size(bad) == 0
    assert acl.mdl.unload(bad) == INVALID
    assert acl.mdl.execute(bad, 0, 0) == INVALID
    assert acl.mdl.execute(tiny_model, bad, bad) == INVALID
    assert acl.mdl.execute_async(tiny_model, 0, 0, bad) == INVALID
    assert acl.mdl.destroy_dataset(bad) == INVALID
    assert acl.mdl.add_dataset_buffer(bad, 0) == (0, INVALID)
    assert acl.mdl.get_dataset_num_buffers(bad) == 0
    assert acl.mdl.get_dataset_buffer(bad, 0) == 0
    assert acl.mdl.destroy_desc(bad) == INVALID
    assert acl.mdl.get_desc(bad, tiny_model) == INVALID
    assert acl.mdl.get_num_inputs(bad) == 0
    assert acl.mdl.get_num_outputs(bad) == 0
    assert acl.mdl.get_input_size_by_index(bad, 0) == 0
    assert acl.mdl.get_output_size_by_index(bad, 0) == 0
    ds, desc = acl.mdl.create_dataset(), acl.mdl.create_desc()
    assert acl.mdl.add_dataset_buffer(ds, bad) == (ds, INVALID)
    assert acl.mdl.get_dataset_buffer(ds, bad) == 0
    assert acl.mdl.get_desc(desc, bad) == INVALID
    assert acl.mdl.get_input_size_by_index(desc, bad) == 0
    assert acl.mdl.destroy_dataset(ds) == 0
    assert acl.mdl.destroy_desc(desc) == 0


@pytest.mark.parametrize("bad", [-1, 2**64, 2**64 + 5])
def test_integers_out_of_range_are_invalid_param_never_wrapped(bad, tiny_model):
    """ctypes would wrap them (2**64 + 5 would be handle 5): refused before C instead."""
    assert acl.rt.destroy_context(bad) == INVALID
    assert acl.rt.malloc(bad, 0) == (0, INVALID)
    assert acl.rt.memcpy(1, bad, 1, 1, 0) == INVALID
    assert acl.create_data_buffer(bad, 1) == 0
    assert acl.get_data_buffer_addr(bad) == 0
    assert acl.mdl.unload(bad) == INVALID
    assert acl.mdl.execute(tiny_model, bad, bad) == INVALID
    assert acl.rt.set_device(2**31) == INVALID  # an int32_t
    assert acl.rt.set_device(-(2**31) - 1) == INVALID
    assert acl.mdl.unload(2**32 + tiny_model) == INVALID  # a uint32_t, not model tiny_model
    ds, desc = acl.mdl.create_dataset(), acl.mdl.create_desc()
    assert acl.mdl.get_dataset_buffer(ds, bad) == 0
    assert acl.mdl.get_desc(desc, 2**32 + tiny_model) == INVALID
    assert acl.mdl.destroy_dataset(ds) == 0
    assert acl.mdl.destroy_desc(desc) == 0


def test_paths_that_are_not_paths_are_invalid_param(tmp_path):
    for bad in (None, 5, "model\0.json", b"model\0.json"):
        assert acl.mdl.load_from_file(bad) == (0, INVALID)
        assert acl.mdl.query_size(bad) == (0, 0, INVALID)
        assert acl.mdl.load_from_file_with_mem(bad, 0, 0, 0, 0) == (0, INVALID)
    assert acl.init(5) == INVALID
    assert acl.init("acl\0.json") == INVALID
    model_id, ret = acl.mdl.load_from_file(TINY)  # a path object
    assert ret == 0
    assert acl.mdl.unload(model_id) == 0


def test_numpy_integers_are_integers():
    assert acl.rt.set_device(np.int64(0)) == 0
    assert acl.rt.get_device() == (0, 0)
    dev_ptr, ret = acl.rt.malloc(np.uint32(8), np.int32(0))
    assert ret == 0
    assert acl.rt.free(np.uint64(dev_ptr)) == 0
    assert acl.rt.reset_device(np.int32(0)) == 0
