"""The batch decoder against the per-field C accessors, on every field of every record, and
against an independent struct-based decoder and CRC-32C for what the accessors do not show."""

from __future__ import annotations

import os
import struct
import threading
from typing import List

import numpy as np
import pytest

import acl
import aclprof
from aclprof import RECORD_SIZE, OpReader, RecordError, decode
from conftest import RESNET50

LONG_NAME = "encoder/" + "block/" * 48 + "attention/MatMul"  # 312 bytes: stored truncated
LONG_TYPE = "FusedMultiHeadAttentionWithRotaryEmbedding" * 2  # 84 bytes
REPORTED = [
    ("layer0/conv", "Conv2D"),
    ("ünïcödé/名前/op", "Custom"),
    ("x" * 256, "ExactlyMaxName"),
    (LONG_NAME, "MatMul"),
    ("long/type", LONG_TYPE),
    ("", "Empty"),
]


def _crc_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c_register(data: bytes) -> int:
    """CANN's signature: the CRC-32C register, initial 0xFFFFFFFF, no final XOR."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def reference(rec: bytes) -> dict:
    """The documented layout (docs/reference.md, "The op record"), read with struct."""
    (signature, model_id, flag, thread_id, op_index, duration, start, end, execution_time,
     cube_fops, vector_fops, device_id) = struct.unpack_from("<4I7QI", rec, 0)
    type_len, name_len, name_full_len, pid, stream_id, version, marks = struct.unpack_from(
        "<HHIIIBB", rec, 80)
    return dict(
        signature=signature, model_id=model_id, flag=flag, thread_id=thread_id,
        op_index=op_index, duration=duration, start=start, end=end,
        execution_time=execution_time, cube_fops=cube_fops, vector_fops=vector_fops,
        device_id=device_id, type_len=type_len, name_len=name_len,
        name_full_len=name_full_len, pid=pid, stream_id=stream_id, version=version,
        marks=marks, type=rec[104:104 + type_len], name=rec[169:169 + name_len],
    )


def resign(buf: bytearray, index: int) -> None:
    rec = memoryview(buf)[index * RECORD_SIZE:(index + 1) * RECORD_SIZE]
    rec[0:4] = struct.pack("<I", crc32c_register(bytes(rec[4:])))


@pytest.fixture(scope="module")
def buffer() -> bytes:
    """Records of a simulated ResNet-50 (twice) and of ops reported from three threads with
    unusual names, concatenated as two pipes' worth of data."""
    from conftest import Capture, model_datasets

    model_id, ret = acl.mdl.load_from_file(str(RESNET50))
    assert ret == 0
    cap = Capture(model_id)
    with model_datasets(model_id) as (inputs, outputs):
        for _ in range(2):
            assert acl.mdl.execute(model_id, inputs, outputs) == 0
    simulated = cap.finish()
    acl.mdl.unload(model_id)

    with aclprof.Model.register("reported") as model:
        cap = Capture(model.id)

        # All three threads stay alive until each has reported, so each is a stream of its
        # own (a thread that has exited hands its stream on to a later one).
        together = threading.Barrier(3)

        def report():
            for name, op_type in REPORTED:
                t0 = aclprof.now_ns()
                model.report_op(name, op_type, t0, t0 + 1000 + len(name))
            together.wait()

        threads = [threading.Thread(target=report) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        reported = cap.finish()
    assert len(simulated) == 2 * 125 * RECORD_SIZE
    assert len(reported) == 3 * len(REPORTED) * RECORD_SIZE
    return simulated + reported


def accessor_view(buf: bytes):
    arr = np.frombuffer(buf, dtype=np.uint8)
    return arr, acl.util.numpy_to_ptr(arr), arr.size


def test_batch_agrees_with_accessors_on_every_field_of_every_record(buffer):
    lib = aclprof.load()
    batch = decode(buffer)
    keep, ptr, length = accessor_view(buffer)
    assert len(batch) == acl.prof.get_op_num(ptr, length)[0] == len(buffer) // RECORD_SIZE
    for i, op in enumerate(batch):
        ref = reference(buffer[i * RECORD_SIZE:(i + 1) * RECORD_SIZE])
        row = batch.array[i]
        # The per-field C accessors.
        assert op.name == acl.prof.get_op_name_v2(ptr, length, i)[0]
        assert op.type == acl.prof.get_op_type_v2(ptr, length, i)[0]
        assert op.model_id == acl.prof.get_model_id(ptr, length, i) == lib.aclprofGetGraphId(ptr, length, i)
        assert op.start == acl.prof.get_op_start(ptr, length, i)
        assert op.end == acl.prof.get_op_end(ptr, length, i)
        assert op.duration == acl.prof.get_op_duration(ptr, length, i)
        assert op.flag == lib.aclprofGetOpFlag(ptr, length, i)
        # Everything else, against the documented layout.
        for field in ("thread_id", "device_id", "stream_id", "op_index"):
            assert getattr(op, field) == ref[field], field
        for field, value in ref.items():
            if field in ("name", "type"):
                assert row[field] == value, field  # the inline (possibly truncated) bytes
            else:
                assert int(row[field]) == value, field
        assert ref["signature"] == crc32c_register(buffer[i * RECORD_SIZE + 4:(i + 1) * RECORD_SIZE])
    assert batch.names == [op.name for op in batch]
    assert batch.types == [op.type for op in batch]
    del keep


def test_the_data_covers_the_unusual_cases(buffer):
    batch = decode(buffer)
    names, types = set(batch.names), set(batch.types)
    for name, op_type in REPORTED:
        assert name in names and op_type in types
    truncated = batch.array["marks"] != 0
    assert truncated.sum() == 6  # LONG_NAME and LONG_TYPE, from three threads each
    assert len(set(batch.stream_id.tolist())) >= 4  # the simulator's stream and three threads
    assert len(set(batch.thread_id.tolist())) >= 4


def test_truncated_strings_are_whole_in_this_process_and_inline_elsewhere(buffer):
    batch = decode(buffer)
    i = batch.names.index(LONG_NAME)
    assert len(batch.array["name"][i]) == 256  # stored truncated...
    assert batch[i].name == LONG_NAME  # ...but whole here, as from aclprofGetOpName
    j = batch.types.index(LONG_TYPE)
    assert batch[j].type == LONG_TYPE

    foreign = bytearray(buffer)
    for k in (i, j):  # the same records as another process would see them
        struct.pack_into("<I", foreign, k * RECORD_SIZE + 88, os.getpid() + 1)
        resign(foreign, k)
    other = decode(bytes(foreign))
    keep, ptr, length = accessor_view(bytes(foreign))
    assert other[i].name == LONG_NAME[:256] == acl.prof.get_op_name_v2(ptr, length, i)[0]
    assert other[j].type == LONG_TYPE[:64] == acl.prof.get_op_type_v2(ptr, length, j)[0]


def test_stray_bytes_after_the_nul_read_as_the_accessor_reads_them(buffer):
    data = bytearray(buffer)
    data[3 * RECORD_SIZE + 169 + 300] = ord("!")  # inside the zero fill after record 3's name
    resign(data, 3)
    keep, ptr, length = accessor_view(bytes(data))
    expected = acl.prof.get_op_name_v2(ptr, length, 3)
    assert expected == (decode(buffer)[3].name, 0)
    assert decode(bytes(data))[3].name == expected[0]


def test_malformed_string_fields_are_rejected_like_the_accessor(buffer):
    data = bytearray(buffer[: 8 * RECORD_SIZE])
    struct.pack_into("<H", data, 5 * RECORD_SIZE + 82, 300)  # name length beyond the field
    resign(data, 5)
    keep, ptr, length = accessor_view(bytes(data))
    assert acl.prof.get_op_name_v2(ptr, length, 5) == ("", aclprof.ACL_ERROR_INVALID_PARAM)
    batch = decode(bytes(data))  # the signature is valid...
    with pytest.raises(RecordError) as err:
        batch.records()  # ...but the name is not
    assert err.value.index == 5


def test_a_nul_inside_a_string_is_rejected_like_the_accessor(buffer):
    data = bytearray(buffer[: 4 * RECORD_SIZE])
    name = decode(buffer)[2].name.encode()
    data[2 * RECORD_SIZE + 169 + 1] = 0  # a NUL after the first character, length unchanged
    resign(data, 2)
    keep, ptr, length = accessor_view(bytes(data))
    assert len(name) > 2
    assert acl.prof.get_op_name_v2(ptr, length, 2) == ("", aclprof.ACL_ERROR_INVALID_PARAM)
    with pytest.raises(RecordError) as err:
        _ = decode(bytes(data)).names
    assert err.value.index == 2


def test_bad_buffers_are_rejected(buffer):
    with pytest.raises(RecordError) as err:
        decode(buffer[:-1])
    assert err.value.index is None
    corrupt = bytearray(buffer[: 10 * RECORD_SIZE])
    corrupt[7 * RECORD_SIZE + 40] ^= 0x80
    with pytest.raises(RecordError) as err:
        decode(bytes(corrupt))
    assert err.value.index == 7
    assert "signature" in str(err.value)
    assert len(decode(b"")) == 0


def test_columns_are_views_over_the_buffer(buffer):
    data = bytearray(buffer[: 4 * RECORD_SIZE])
    batch = decode(data)
    assert batch.start.dtype == np.uint64
    struct.pack_into("<Q", data, 2 * RECORD_SIZE + 32, 12345)
    assert batch.start[2] == 12345


def test_reader_reassembles_records_split_across_reads(buffer):
    r, w = os.pipe()
    chunks = [buffer[:700], buffer[700:1000], buffer[1000:3 * RECORD_SIZE + 1], buffer[3 * RECORD_SIZE + 1:]]

    def write():
        for c in chunks:
            os.write(w, c)
        os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    records = list(OpReader(r, records_per_read=3))
    writer.join()
    os.close(r)
    assert records == decode(buffer).records()


def test_reader_batches_and_torn_tail(tmp_path, buffer):
    path = tmp_path / "records.bin"
    path.write_bytes(buffer[: 10 * RECORD_SIZE])
    with open(path, "rb") as f:
        sizes = [len(b) for b in OpReader(f.fileno(), records_per_read=4).batches()]
    assert sizes == [4, 4, 2]
    path.write_bytes(buffer[: 2 * RECORD_SIZE + 100])
    with open(path, "rb") as f, pytest.raises(RecordError, match="100 bytes into a record"):
        list(OpReader(f.fileno()))


def test_signature_is_checked_in_c_once_per_buffer(buffer, monkeypatch):
    """The batch path verifies with one aclprofExtDecodeOps call, not one per record."""
    lib = aclprof.load()
    calls = []
    real = lib.aclprofExtDecodeOps

    class Counting:
        def __call__(self, *args):
            calls.append(args[1])
            return real(*args)

    monkeypatch.setattr(lib, "aclprofExtDecodeOps", Counting())
    decode(buffer)
    assert calls == [len(buffer)]
