"""``acl.mdl``: models of the emulated AscendCL runtime (acl/acl_mdl.h), run on aclprof's
simulator, with pyACL's call forms.

``load_from_file`` takes a model description instead of an ``.om`` file: a JSON file
``{"name", "device", "inputs", "outputs", "ops": [{"name", "type", "duration_us"}, ...]}``
or an exported ``op_summary_*.csv`` (see the project README); an ``.om`` path loads the
description of the same name beside it. ``execute`` reports every op of the model, in
order, to whoever subscribed, and returns when the simulated run has finished.

A model's description (``create_desc``/``get_desc``) gives the input and output sizes its
file declares (none for a CSV or a JSON without them), and ``execute`` checks the datasets
against them as CANN does: at least that many buffers, each at least that large, else
ACL_ERROR_GE_PARAM_INVALID (145000). The usual loop over ``get_num_inputs`` and
``get_input_size_by_index`` builds the right datasets.

Every function calls its C counterpart (``aclmdlLoadFromFile``, ``aclmdlExecute``...), so
the codes are CANN's: a missing model file is ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID (145002),
one that is not a model description ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID (145006), a
model id that is not loaded ACL_ERROR_GE_EXEC_MODEL_ID_INVALID (145003), a wrong handle
ACL_ERROR_INVALID_PARAM (100000).
"""

from __future__ import annotations

import ctypes
from typing import Tuple

from ._c import INVALID_PARAM, PTR, SIZE, SUCCESS, U32, PathArg, integer, lib, out, path

# ---- loading -----------------------------------------------------------------------------


def load_from_file(model_path: PathArg) -> Tuple[int, int]:
    """``model_id, ret = acl.mdl.load_from_file(path)``, onto the calling thread's device;
    ``(0, ret)`` on failure."""
    raw = path(model_path)
    if raw is None:
        return 0, INVALID_PARAM
    model_id = ctypes.c_uint32()
    ret = lib.aclmdlLoadFromFile(raw, ctypes.byref(model_id))
    return out(model_id, ret)


def query_size(file_name: PathArg) -> Tuple[int, int, int]:
    """``work_size, weight_size, ret = acl.mdl.query_size(path)``: the memory
    :func:`load_from_file_with_mem` needs."""
    raw = path(file_name)
    if raw is None:
        return 0, 0, INVALID_PARAM
    work, weight = ctypes.c_size_t(), ctypes.c_size_t()
    ret = lib.aclmdlQuerySize(raw, ctypes.byref(work), ctypes.byref(weight))
    return (work.value, weight.value, ret) if ret == SUCCESS else (0, 0, ret)


def load_from_file_with_mem(model_path: PathArg, work_ptr: int, work_size: int,
                            weight_ptr: int, weight_size: int) -> Tuple[int, int]:
    """``model_id, ret``: as :func:`load_from_file`, with work and weight memory of at least
    the sizes :func:`query_size` gives (0 addresses let the runtime allocate)."""
    raw = path(model_path)
    work, work_len = integer(work_ptr, PTR), integer(work_size, SIZE)
    weight, weight_len = integer(weight_ptr, PTR), integer(weight_size, SIZE)
    if raw is None or work is None or work_len is None or weight is None or weight_len is None:
        return 0, INVALID_PARAM
    model_id = ctypes.c_uint32()
    ret = lib.aclmdlLoadFromFileWithMem(raw, ctypes.byref(model_id), work, work_len,
                                        weight, weight_len)
    return out(model_id, ret)


def unload(model_id: int) -> int:
    model = integer(model_id, U32)
    return INVALID_PARAM if model is None else lib.aclmdlUnload(model)


# ---- executing ---------------------------------------------------------------------------

def execute(model_id: int, input: int, output: int) -> int:  # noqa: A002  (pyACL's name)
    """Runs the model once, synchronously. ``input`` and ``output`` are datasets (see the
    module docstring for what they must hold)."""
    model, inputs, outputs = integer(model_id, U32), integer(input, PTR), integer(output, PTR)
    if model is None or inputs is None or outputs is None:
        return INVALID_PARAM
    return lib.aclmdlExecute(model, inputs, outputs)


def execute_async(model_id: int, input: int, output: int,  # noqa: A002
                  stream: int) -> int:
    """As :func:`execute` (execution is synchronous here); ``stream`` may be 0."""
    model, inputs, outputs = integer(model_id, U32), integer(input, PTR), integer(output, PTR)
    handle = integer(stream, PTR)
    if model is None or inputs is None or outputs is None or handle is None:
        return INVALID_PARAM
    return lib.aclmdlExecuteAsync(model, inputs, outputs, handle)


# ---- datasets ----------------------------------------------------------------------------

def create_dataset() -> int:
    """A new, empty dataset; 0 on failure."""
    return lib.aclmdlCreateDataset() or 0


def destroy_dataset(dataset: int) -> int:
    """Frees the dataset (not its buffers)."""
    handle = integer(dataset, PTR)
    return INVALID_PARAM if handle is None else lib.aclmdlDestroyDataset(handle)


def add_dataset_buffer(dataset: int, data_buffer: int) -> Tuple[int, int]:
    """``dataset, ret = acl.mdl.add_dataset_buffer(dataset, data_buffer)`` (pyACL returns a
    tuple: the dataset and the code)."""
    handle, buffer = integer(dataset, PTR), integer(data_buffer, PTR)
    if handle is None:
        return 0, INVALID_PARAM
    if buffer is None:
        return handle, INVALID_PARAM
    return handle, lib.aclmdlAddDatasetBuffer(handle, buffer)


def get_dataset_num_buffers(dataset: int) -> int:
    """The number of buffers in the dataset; 0 for a bad handle."""
    handle = integer(dataset, PTR)
    return 0 if handle is None else lib.aclmdlGetDatasetNumBuffers(handle)


def get_dataset_buffer(dataset: int, index: int) -> int:
    """Buffer ``index`` of the dataset; 0 for a bad handle or index."""
    handle, i = integer(dataset, PTR), integer(index, SIZE)
    if handle is None or i is None:
        return 0
    return lib.aclmdlGetDatasetBuffer(handle, i) or 0


# ---- model descriptions ------------------------------------------------------------------

def create_desc() -> int:
    """A new, empty model description; 0 on failure."""
    return lib.aclmdlCreateDesc() or 0


def destroy_desc(model_desc: int) -> int:
    handle = integer(model_desc, PTR)
    return INVALID_PARAM if handle is None else lib.aclmdlDestroyDesc(handle)


def get_desc(model_desc: int, model_id: int) -> int:
    """Fills ``model_desc`` with the description of a loaded model."""
    handle, model = integer(model_desc, PTR), integer(model_id, U32)
    if handle is None or model is None:
        return INVALID_PARAM
    return lib.aclmdlGetDesc(handle, model)


def get_num_inputs(model_desc: int) -> int:
    """The number of inputs of the described model; 0 for a bad description."""
    handle = integer(model_desc, PTR)
    return 0 if handle is None else lib.aclmdlGetNumInputs(handle)


def get_num_outputs(model_desc: int) -> int:
    """The number of outputs of the described model; 0 for a bad description."""
    handle = integer(model_desc, PTR)
    return 0 if handle is None else lib.aclmdlGetNumOutputs(handle)


def get_input_size_by_index(model_desc: int, index: int) -> int:
    """The byte size of input ``index``; 0 for a bad description or index."""
    handle, i = integer(model_desc, PTR), integer(index, SIZE)
    return 0 if handle is None or i is None else lib.aclmdlGetInputSizeByIndex(handle, i)


def get_output_size_by_index(model_desc: int, index: int) -> int:
    """The byte size of output ``index``; 0 for a bad description or index."""
    handle, i = integer(model_desc, PTR), integer(index, SIZE)
    return 0 if handle is None or i is None else lib.aclmdlGetOutputSizeByIndex(handle, i)
