"""acl.util, acl.rt, acl.mdl and acl.init/finalize: the helpers the samples use."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import acl
import aclprof
from conftest import TINY, model_ops


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
    assert seen == [(0, aclprof.ACL_ERROR_INVALID_PARAM), 0, (context, 0)]
    assert acl.rt.destroy_context(context) == 0
    assert acl.rt.destroy_context(context) == aclprof.ACL_ERROR_INVALID_PARAM
    assert acl.rt.set_context(context) == aclprof.ACL_ERROR_INVALID_PARAM


# ---- acl.init / acl.rt -----------------------------------------------------------------

def test_init_and_finalize(tmp_path):
    acl.finalize()
    assert acl.init() == 0
    assert acl.init() == aclprof.ACL_ERROR_REPEAT_INITIALIZE
    assert acl.finalize() == 0
    assert acl.init(str(tmp_path / "missing.json")) == aclprof.ACL_ERROR_INVALID_FILE
    config = tmp_path / "acl.json"
    config.write_text("{}")
    assert acl.init(str(config)) == 0
    assert acl.finalize() == 0


def test_devices_are_the_emulated_ones():
    count = int(os.environ.get("ACLPROF_DEVICE_COUNT", "1"))
    assert acl.rt.get_device_count() == (count, 0)
    assert acl.rt.set_device(0) == 0
    assert acl.rt.get_device() == (0, 0)
    assert acl.rt.set_device(count) == aclprof.ACL_ERROR_INVALID_DEVICE
    assert acl.rt.create_context(count) == (0, aclprof.ACL_ERROR_INVALID_DEVICE)
    assert acl.rt.reset_device(0) == 0


def test_streams_and_memory():
    stream, ret = acl.rt.create_stream()
    assert ret == 0 and stream
    assert acl.rt.synchronize_stream(stream) == 0
    assert acl.rt.destroy_stream(stream) == 0
    assert acl.rt.synchronize_stream(stream) == aclprof.ACL_ERROR_INVALID_PARAM

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
    assert acl.mdl.unload(model_id) == aclprof.ACL_ERROR_INVALID_MODEL_ID
    ds = acl.mdl.create_dataset()
    assert acl.mdl.execute(model_id, ds, ds) == aclprof.ACL_ERROR_INVALID_MODEL_ID
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
    assert acl.mdl.load_from_file(str(tmp_path / "missing.om")) == (0, aclprof.ACL_ERROR_INVALID_FILE)
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"}')
    assert acl.mdl.load_from_file(str(bad)) == (0, aclprof.ACL_ERROR_INVALID_FILE)
    assert "ops" in aclprof.recent_error()


def test_execute_needs_datasets(tiny_model):
    assert acl.mdl.execute(tiny_model, 0, 0) == aclprof.ACL_ERROR_INVALID_PARAM


def test_dataset_plumbing():
    dev_ptr, _ = acl.rt.malloc(64, 0)
    data_buffer = acl.create_data_buffer(dev_ptr, 64)
    assert data_buffer
    assert acl.get_data_buffer_addr(data_buffer) == dev_ptr
    assert acl.get_data_buffer_size_v2(data_buffer) == 64
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
