//! `acl/acl_mdl.h`: models of the emulated runtime. A "model file" is a model description
//! for the simulator (JSON or an exported op_summary CSV); an offline model path (`.om`)
//! loads the description of the same name beside it. Executing runs the description on the
//! simulator, synchronously, on the calling thread (see crate::runtime).

use super::base::{aclDataBuffer, aclError, aclrtStream};
use super::{failed, fill, out, path_arg, runtime_call};
use std::ffi::{c_char, c_void};

/// A model's description (inputs, outputs), filled by aclmdlGetDesc.
pub struct aclmdlDesc {
    _opaque: [u8; 0],
}

/// A list of data buffers: a model's inputs or outputs.
pub struct aclmdlDataset {
    _opaque: [u8; 0],
}

/// Loads the model at `modelPath` onto the calling thread's device and returns its id.
/// Errors: NULL -> ACL_ERROR_INVALID_PARAM; no such file (or for `.om`, no description
/// beside it) -> ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID; not a model description ->
/// ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID.
#[no_mangle]
pub unsafe extern "C" fn aclmdlLoadFromFile(
    modelPath: *const c_char,
    modelId: *mut u32,
) -> aclError {
    runtime_call("aclmdlLoadFromFile", || {
        // SAFETY: `modelPath` is NULL or a C string (the C contract).
        let path = unsafe { path_arg(modelPath, "modelPath") }?;
        // SAFETY: `modelId` is NULL or valid for writes (the C contract).
        unsafe {
            fill(modelId, "modelId", || {
                crate::runtime::load_model(path, true)
            })
        }
    })
}

/// The work and weight memory a model needs, for aclmdlLoadFromFileWithMem.
#[no_mangle]
pub unsafe extern "C" fn aclmdlQuerySize(
    fileName: *const c_char,
    workSize: *mut usize,
    weightSize: *mut usize,
) -> aclError {
    runtime_call("aclmdlQuerySize", || {
        // SAFETY: `fileName` is NULL or a C string (the C contract).
        let path = unsafe { path_arg(fileName, "fileName") }?;
        // SAFETY: `workSize` is NULL or valid for writes; `weightSize` is NULL or valid for writes (the C contract).
        let (work, weight) = (unsafe { out(workSize, "workSize") }?, unsafe {
            out(weightSize, "weightSize")
        }?);
        (*work, *weight) = crate::runtime::query_size(path)?;
        Ok(())
    })
}

/// As aclmdlLoadFromFile, with caller-provided work and weight memory (at least what
/// aclmdlQuerySize reported; NULL lets the runtime allocate).
#[no_mangle]
pub unsafe extern "C" fn aclmdlLoadFromFileWithMem(
    modelPath: *const c_char,
    modelId: *mut u32,
    workPtr: *mut c_void,
    workSize: usize,
    weightPtr: *mut c_void,
    weightSize: usize,
) -> aclError {
    runtime_call("aclmdlLoadFromFileWithMem", || {
        // SAFETY: `modelPath` is NULL or a C string (the C contract).
        let path = unsafe { path_arg(modelPath, "modelPath") }?;
        // SAFETY: `modelId` is NULL or valid for writes (the C contract).
        let o = unsafe { out(modelId, "modelId") }?;
        crate::runtime::check_model_memory(
            workPtr as usize,
            workSize,
            weightPtr as usize,
            weightSize,
        )?;
        *o = crate::runtime::load_model(path, workPtr.is_null() && weightPtr.is_null())?;
        Ok(())
    })
}

/// Unloads a model. Not loaded -> ACL_ERROR_GE_EXEC_MODEL_ID_INVALID.
#[no_mangle]
pub extern "C" fn aclmdlUnload(modelId: u32) -> aclError {
    runtime_call("aclmdlUnload", || crate::runtime::unload_model(modelId))
}

/// Runs the model once and returns when it has finished; every op is reported to whoever
/// profiles it. The datasets must hold at least the model's inputs and outputs, each buffer
/// at least the size the description gives (else ACL_ERROR_GE_PARAM_INVALID).
#[no_mangle]
pub extern "C" fn aclmdlExecute(
    modelId: u32,
    input: *const aclmdlDataset,
    output: *mut aclmdlDataset,
) -> aclError {
    runtime_call("aclmdlExecute", || {
        crate::runtime::execute(modelId, input as usize, output as usize, 0)
    })
}

/// As aclmdlExecute (execution is synchronous here); `stream` may be NULL.
#[no_mangle]
pub extern "C" fn aclmdlExecuteAsync(
    modelId: u32,
    input: *const aclmdlDataset,
    output: *mut aclmdlDataset,
    stream: aclrtStream,
) -> aclError {
    runtime_call("aclmdlExecuteAsync", || {
        crate::runtime::execute(modelId, input as usize, output as usize, stream as usize)
    })
}

/// A new, empty model description. Free with aclmdlDestroyDesc.
#[no_mangle]
pub extern "C" fn aclmdlCreateDesc() -> *mut aclmdlDesc {
    super::guard("aclmdlCreateDesc", std::ptr::null_mut(), || {
        crate::runtime::create_desc() as *mut aclmdlDesc
    })
}

#[no_mangle]
pub extern "C" fn aclmdlDestroyDesc(modelDesc: *mut aclmdlDesc) -> aclError {
    runtime_call("aclmdlDestroyDesc", || {
        crate::runtime::destroy_desc(modelDesc as usize)
    })
}

/// Fills `modelDesc` with the description of a loaded model.
#[no_mangle]
pub extern "C" fn aclmdlGetDesc(modelDesc: *mut aclmdlDesc, modelId: u32) -> aclError {
    runtime_call("aclmdlGetDesc", || {
        crate::runtime::get_desc(modelDesc as usize, modelId)
    })
}

fn sizes(func: &str, desc: *mut aclmdlDesc, outputs: bool) -> Vec<u64> {
    super::guard(func, Vec::new(), || {
        crate::runtime::desc_sizes(desc as usize, outputs)
    })
}

fn size_at(func: &str, desc: *mut aclmdlDesc, outputs: bool, index: usize) -> usize {
    match sizes(func, desc, outputs).get(index) {
        Some(&s) => s as usize,
        None => failed(
            func,
            super::invalid(format!(
                "no {} {index}",
                if outputs { "output" } else { "input" }
            )),
            0,
        ),
    }
}

/// The number of inputs of the described model (0 for a bad description).
#[no_mangle]
pub extern "C" fn aclmdlGetNumInputs(modelDesc: *mut aclmdlDesc) -> usize {
    sizes("aclmdlGetNumInputs", modelDesc, false).len()
}

/// The number of outputs of the described model (0 for a bad description).
#[no_mangle]
pub extern "C" fn aclmdlGetNumOutputs(modelDesc: *mut aclmdlDesc) -> usize {
    sizes("aclmdlGetNumOutputs", modelDesc, true).len()
}

/// The byte size of input `index` (0 for a bad description or index).
#[no_mangle]
pub extern "C" fn aclmdlGetInputSizeByIndex(modelDesc: *mut aclmdlDesc, index: usize) -> usize {
    size_at("aclmdlGetInputSizeByIndex", modelDesc, false, index)
}

/// The byte size of output `index` (0 for a bad description or index).
#[no_mangle]
pub extern "C" fn aclmdlGetOutputSizeByIndex(modelDesc: *mut aclmdlDesc, index: usize) -> usize {
    size_at("aclmdlGetOutputSizeByIndex", modelDesc, true, index)
}

/// A new, empty dataset. Free with aclmdlDestroyDataset (which does not free its buffers).
#[no_mangle]
pub extern "C" fn aclmdlCreateDataset() -> *mut aclmdlDataset {
    super::guard("aclmdlCreateDataset", std::ptr::null_mut(), || {
        crate::runtime::create_dataset() as *mut aclmdlDataset
    })
}

#[no_mangle]
pub extern "C" fn aclmdlDestroyDataset(dataset: *const aclmdlDataset) -> aclError {
    runtime_call("aclmdlDestroyDataset", || {
        crate::runtime::destroy_dataset(dataset as usize)
    })
}

/// Appends a data buffer to a dataset.
#[no_mangle]
pub extern "C" fn aclmdlAddDatasetBuffer(
    dataset: *mut aclmdlDataset,
    dataBuffer: *mut aclDataBuffer,
) -> aclError {
    runtime_call("aclmdlAddDatasetBuffer", || {
        crate::runtime::add_dataset_buffer(dataset as usize, dataBuffer as usize)
    })
}

/// The number of buffers in a dataset (0 for a bad handle).
#[no_mangle]
pub extern "C" fn aclmdlGetDatasetNumBuffers(dataset: *const aclmdlDataset) -> usize {
    super::guard("aclmdlGetDatasetNumBuffers", 0, || {
        crate::runtime::dataset_num_buffers(dataset as usize)
    })
}

/// Buffer `index` of a dataset (NULL for a bad handle or index).
#[no_mangle]
pub extern "C" fn aclmdlGetDatasetBuffer(
    dataset: *const aclmdlDataset,
    index: usize,
) -> *mut aclDataBuffer {
    super::guard("aclmdlGetDatasetBuffer", std::ptr::null_mut(), || {
        crate::runtime::dataset_buffer(dataset as usize, index) as *mut aclDataBuffer
    })
}
