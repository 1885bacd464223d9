"""``acl.mdl``: models run on aclprof's simulator.

``load_from_file`` takes a model description instead of an ``.om`` file: a JSON file
``{"name", "device", "ops": [{"name", "type", "duration_us"}, ...]}`` or an exported
``op_summary_*.csv`` (see the project README). ``execute`` reports every op of the model,
in order, to whoever subscribed, and returns when the simulated run has finished.
Simulated models have no inputs or outputs: their descriptions report 0 of each, so the
usual dataset-building loops run and build empty datasets.
"""

from __future__ import annotations

import ctypes
import os
from typing import List, Tuple

from aclprof._lib import load

from ._handles import INVALID_PARAM, SUCCESS, Registry, data_buffers

_lib = load()
_datasets = Registry("dataset")  # handle -> list of data-buffer handles
_descs = Registry("model description")  # handle -> [model id or None]


def load_from_file(model_path) -> Tuple[int, int]:
    """``model_id, ret = acl.mdl.load_from_file(path)``; ``(0, ret)`` on failure."""
    model_id = ctypes.c_uint32()
    ret = _lib.aclprofExtSimModelLoad(os.fsencode(model_path), ctypes.byref(model_id))
    return (model_id.value if ret == 0 else 0), ret


def unload(model_id) -> int:
    if not isinstance(model_id, int) or not 0 <= model_id < 2**32:
        return INVALID_PARAM
    return _lib.aclprofExtModelUnload(model_id)


def execute(model_id, input, output) -> int:  # noqa: A002  (pyACL's parameter name)
    """Runs the simulated model once, synchronously. ``input`` and ``output`` must be
    datasets from :func:`create_dataset`."""
    if input not in _datasets or output not in _datasets:
        return INVALID_PARAM
    if not isinstance(model_id, int) or not 0 <= model_id < 2**32:
        return INVALID_PARAM
    return _lib.aclprofExtSimModelExecute(model_id)


def create_dataset() -> int:
    return _datasets.add([])


def destroy_dataset(dataset) -> int:
    return SUCCESS if _datasets.remove(dataset) else INVALID_PARAM


def add_dataset_buffer(dataset, data_buffer) -> Tuple[int, int]:
    """``_, ret = acl.mdl.add_dataset_buffer(dataset, buffer)`` (pyACL returns a tuple)."""
    buffers: List[int] = _datasets.get(dataset)
    if buffers is None or data_buffer not in data_buffers:
        return dataset, INVALID_PARAM
    buffers.append(data_buffer)
    return dataset, SUCCESS


def get_dataset_num_buffers(dataset) -> int:
    buffers = _datasets.get(dataset)
    return len(buffers) if buffers is not None else 0


def get_dataset_buffer(dataset, index) -> int:
    buffers = _datasets.get(dataset)
    if buffers is None or not 0 <= index < len(buffers):
        return 0
    return buffers[index]


def create_desc() -> int:
    return _descs.add([None])


def destroy_desc(model_desc) -> int:
    return SUCCESS if _descs.remove(model_desc) else INVALID_PARAM


def get_desc(model_desc, model_id) -> int:
    """Fills the description of a loaded model (the simulator's models have no I/O)."""
    desc = _descs.get(model_desc)
    if desc is None or not isinstance(model_id, int):
        return INVALID_PARAM
    desc[0] = model_id
    return SUCCESS


def get_num_inputs(model_desc) -> int:
    return 0


def get_num_outputs(model_desc) -> int:
    return 0


def get_input_size_by_index(model_desc, index) -> int:
    return 0


def get_output_size_by_index(model_desc, index) -> int:
    return 0
