"""Shared fixtures: model paths, a raw-record capture helper, and a guard that every test
leaves the process-wide file-mode state as it found it."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Iterator, List, Tuple

# A test that breaks the reader must fail in seconds, not wait the default 30 s.
os.environ.setdefault("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", "10000")

import pytest  # noqa: E402

import acl  # noqa: E402
import aclprof  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESNET50 = REPO / "models" / "resnet50.json"
TINY = REPO / "ctests" / "data" / "tiny.json"
ACL_AICORE_NONE = 0xFF


def model_ops(path: Path) -> List[dict]:
    return json.loads(path.read_text())["ops"]


@pytest.fixture(autouse=True)
def file_mode_left_clean():
    """File mode is process-wide: a test that leaves it initialised would break the next."""
    yield
    ret = aclprof.load().aclprofFinalize()
    assert ret == aclprof.ACL_ERROR_PROF_NOT_RUN, "the test left file-mode profiling initialised"


@pytest.fixture
def tiny_model():
    model_id, ret = acl.mdl.load_from_file(str(TINY))
    assert ret == 0
    yield model_id
    acl.mdl.unload(model_id)


@pytest.fixture
def datasets():
    pair = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    yield pair
    for ds in pair:
        acl.mdl.destroy_dataset(ds)


@pytest.fixture
def device():
    """Device 0 as this thread's device, as CANN requires before creating a stream."""
    assert acl.rt.set_device(0) == 0
    yield 0
    assert acl.rt.reset_device(0) == 0


@contextlib.contextmanager
def model_datasets(model_id: int) -> Iterator[Tuple[int, int]]:
    """(input, output) datasets as the samples build them from the model's description: one
    buffer of acl.rt.malloc memory per input and output, of the size the description gives."""
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    made = []
    try:
        for count, size_of in (
            (acl.mdl.get_num_inputs, acl.mdl.get_input_size_by_index),
            (acl.mdl.get_num_outputs, acl.mdl.get_output_size_by_index),
        ):
            dataset = acl.mdl.create_dataset()
            assert dataset
            made.append(dataset)
            for i in range(count(desc)):
                size = size_of(desc, i)
                dev_ptr, ret = acl.rt.malloc(size, 0)
                assert ret == 0
                _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(dev_ptr, size))
                assert ret == 0
        yield made[0], made[1]
    finally:
        for dataset in made:
            for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
                data_buffer = acl.mdl.get_dataset_buffer(dataset, i)
                assert acl.rt.free(acl.get_data_buffer_addr(data_buffer)) == 0
                assert acl.destroy_data_buffer(data_buffer) == 0
            assert acl.mdl.destroy_dataset(dataset) == 0
        assert acl.mdl.destroy_desc(desc) == 0


class Capture:
    """Subscribes ``model_id`` through acl.prof, collects every byte from the pipe on a
    thread, and hands the raw buffer back after unsubscribe."""

    def __init__(self, model_id: int):
        self.model_id = model_id
        self.r, self.w = os.pipe()
        self.config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, self.w)
        assert self.config
        assert acl.prof.model_subscribe(model_id, self.config) == 0
        self.chunks: List[bytes] = []
        self.thread = threading.Thread(target=self._read)
        self.thread.start()

    def _read(self):
        while True:
            data = os.read(self.r, 1 << 16)
            if not data:
                return
            self.chunks.append(data)

    def finish(self) -> bytes:
        assert acl.prof.model_un_subscribe(self.model_id) == 0
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the reader did not see end of file"
        os.close(self.r)
        assert acl.prof.destroy_subscribe_config(self.config) == 0
        return b"".join(self.chunks)


@pytest.fixture
def capture():
    return Capture


def open_fds() -> set:
    return set(os.listdir("/proc/self/fd"))
