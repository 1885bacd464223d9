//! The emulated AscendCL runtime (`acl/acl.h`, `acl_rt.h`, `acl_mdl.h`): just enough of
//! CANN's device, context, stream, memory, dataset and model calls for an inference program
//! written for CANN to run unchanged on the model simulator (docs/design.md, "The emulated
//! AscendCL runtime"). The Python `acl` package calls these same functions.
//!
//! There is no NPU: devices are the emulated devices (ACLPROF_DEVICE_COUNT), "device memory"
//! is zeroed host memory, contexts and streams only remember their device, and executing a
//! model runs its description on the simulator, synchronously, on the calling thread.
//!
//! Every handle is looked up before use ([`crate::handles::Table`]), so a wrong, foreign or
//! destroyed handle is an error code, never a crash. Error codes are CANN's: the runtime's
//! own (`ACL_ERROR_RT_*`) where CANN's runtime answers, the graph engine's
//! (`ACL_ERROR_GE_*`) where its model loader does.

use crate::error::{
    err, Error, Result, ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID,
    ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID,
    ACL_ERROR_GE_PARAM_INVALID, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_REPEAT_FINALIZE, ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_RT_CONTEXT_NULL,
    ACL_ERROR_RT_INVALID_DEVICEID,
};
use crate::fork::{global, Mutex, MutexGuard, Rank};
use crate::formats::memory::Pool;
use crate::handles::Table;
use crate::sim::SimModel;
use std::alloc::Layout;
use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `aclrtRunMode`: the program runs on the host (ACL_HOST), with device memory separate,
/// as on an Atlas inference card.
pub const ACL_HOST: u32 = 1;

/// Memory alignment of `aclrtMalloc` (CANN aligns device memory to 32 bytes; 64 is also a
/// cache line).
const ALIGN: usize = 64;

/// The scratch and weight sizes `aclmdlQuerySize` reports for a simulated model.
pub const SIM_WORK_SIZE: usize = 64 * 1024;
pub const SIM_WEIGHT_SIZE: usize = 64 * 1024;

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// A context or a stream: both only remember their device.
struct OnDevice {
    device: i32,
}

pub struct DataBuffer {
    pub addr: usize,
    pub size: usize,
}

struct Dataset {
    buffers: Vec<usize>,
}

struct Desc {
    model: Option<Arc<SimModel>>,
}

/// Live allocations: their layout, and the device of device memory (None: host memory).
type Allocations = HashMap<usize, (Layout, Option<u32>)>;

global! {
    static CONTEXTS: Table<OnDevice> = Table::new(Rank::Contexts);
    static STREAMS: Table<OnDevice> = Table::new(Rank::Streams);
    static BUFFERS: Table<DataBuffer> = Table::new(Rank::Buffers);
    static DATASETS: Table<Dataset> = Table::new(Rank::Datasets);
    static DESCS: Table<Desc> = Table::new(Rank::Descs);
    /// Address -> layout of each live `aclrtMalloc`/`aclrtMallocHost` block.
    static MEMORY: Mutex<Option<Allocations>> = Mutex::new(Rank::Allocations, None);
}

thread_local! {
    static CURRENT_DEVICE: Cell<Option<i32>> = const { Cell::new(None) };
    static CURRENT_CONTEXT: Cell<usize> = const { Cell::new(0) };
}

fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    err(ACL_ERROR_INVALID_PARAM, msg)
}

/// ACL_ERROR_INVALID_PARAM for a handle that is not a live `what`.
fn not_a(h: usize, what: &str) -> Error {
    Error::new(ACL_ERROR_INVALID_PARAM, format!("{h:#x} is not {what}"))
}

/// Destroys the object behind handle `h` of `table`, or says it is not a live `what`.
fn destroy<T>(table: &Table<T>, h: usize, what: &str) -> Result<()> {
    if table.remove(h) {
        Ok(())
    } else {
        Err(not_a(h, what))
    }
}

// ---- init -------------------------------------------------------------------------------

/// `aclInit`: once per process until `aclFinalize`. The config file must exist (its
/// contents are not used: profiling is configured by aclprof's own switches).
pub fn init(config: Option<&Path>) -> Result<()> {
    if let Some(p) = config.filter(|p| !p.as_os_str().is_empty()) {
        if !p.is_file() {
            return err(
                ACL_ERROR_INVALID_FILE,
                format!(
                    "config file {} does not exist or is not a file",
                    p.display()
                ),
            );
        }
    }
    if INITIALIZED.swap(true, Ordering::AcqRel) {
        return err(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was already called");
    }
    Ok(())
}

pub fn finalize() -> Result<()> {
    if !INITIALIZED.swap(false, Ordering::AcqRel) {
        return err(
            ACL_ERROR_REPEAT_FINALIZE,
            "aclFinalize without aclInit (or called twice)",
        );
    }
    Ok(())
}

// ---- devices and contexts ---------------------------------------------------------------

pub fn device_count() -> u32 {
    crate::settings::get().device_count
}

fn check_device(device: i32) -> Result<()> {
    if device < 0 || device as u32 >= device_count() {
        return err(
            ACL_ERROR_RT_INVALID_DEVICEID,
            format!(
                "device {device} does not exist: the emulated machine has {} device(s); \
                 set ACLPROF_DEVICE_COUNT for more",
                device_count()
            ),
        );
    }
    Ok(())
}

pub fn set_device(device: i32) -> Result<()> {
    check_device(device)?;
    CURRENT_DEVICE.set(Some(device));
    Ok(())
}

pub fn reset_device(device: i32) -> Result<()> {
    check_device(device)?;
    if CURRENT_DEVICE.get() == Some(device) {
        CURRENT_DEVICE.set(None);
        CURRENT_CONTEXT.set(0);
    }
    Ok(())
}

pub fn current_device() -> Result<i32> {
    CURRENT_DEVICE.get().ok_or_else(|| {
        Error::new(
            ACL_ERROR_RT_CONTEXT_NULL,
            "no current device on this thread: call aclrtSetDevice or aclrtSetCurrentContext",
        )
    })
}

/// Creates a context on `device` and makes it the calling thread's current context.
pub fn create_context(device: i32) -> Result<usize> {
    check_device(device)?;
    let h = CONTEXTS.insert(OnDevice { device });
    CURRENT_CONTEXT.set(h);
    CURRENT_DEVICE.set(Some(device));
    Ok(h)
}

pub fn destroy_context(h: usize) -> Result<()> {
    destroy(&CONTEXTS, h, "a context from aclrtCreateContext")?;
    if CURRENT_CONTEXT.get() == h {
        CURRENT_CONTEXT.set(0);
    }
    Ok(())
}

pub fn set_current_context(h: usize) -> Result<()> {
    let device = CONTEXTS
        .with(h, |c| c.device)
        .ok_or_else(|| not_a(h, "a live context"))?;
    CURRENT_CONTEXT.set(h);
    CURRENT_DEVICE.set(Some(device));
    Ok(())
}

pub fn current_context() -> Result<usize> {
    let h = CURRENT_CONTEXT.get();
    if h == 0 || CONTEXTS.with(h, |_| ()).is_none() {
        return err(
            ACL_ERROR_RT_CONTEXT_NULL,
            "no current context on this thread",
        );
    }
    Ok(h)
}

// ---- streams ----------------------------------------------------------------------------

/// A stream on the calling thread's current device.
pub fn create_stream() -> Result<usize> {
    let device = current_device()?;
    Ok(STREAMS.insert(OnDevice { device }))
}

pub fn destroy_stream(h: usize) -> Result<()> {
    destroy(&STREAMS, h, "a stream from aclrtCreateStream")
}

/// Execution is synchronous, so there is never anything to wait for. NULL is the default
/// stream, as in CANN.
pub fn synchronize_stream(h: usize) -> Result<()> {
    if h != 0 && STREAMS.with(h, |_| ()).is_none() {
        return Err(not_a(h, "a live stream"));
    }
    Ok(())
}

// ---- memory -----------------------------------------------------------------------------

fn memory() -> MutexGuard<'static, Option<Allocations>> {
    MEMORY.lock()
}

/// The device `aclrtMalloc` allocates on: the calling thread's (device 0 if it set none).
fn malloc_device() -> u32 {
    CURRENT_DEVICE.get().map_or(0, |d| d as u32)
}

/// Zeroed host memory standing in for device memory (`device`: the application's memory
/// on it, counted in its pool) or pinned host memory (None).
pub fn malloc(size: usize, device: bool) -> Result<usize> {
    if size == 0 {
        return invalid("size must be greater than 0");
    }
    let Ok(layout) = Layout::from_size_align(size, ALIGN) else {
        return invalid(format!("size {size} is too large"));
    };
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return err(
            crate::error::ACL_ERROR_RT_MEMORY_ALLOCATION,
            format!("out of memory allocating {size} bytes"),
        );
    }
    let dev = device.then(malloc_device);
    memory()
        .get_or_insert_with(HashMap::new)
        .insert(p as usize, (layout, dev));
    if let Some(d) = dev {
        let at = crate::clock::now_ns();
        crate::memory::event(d, Pool::App, p as u64, size as i64, "aclrtMalloc", at, None);
    }
    Ok(p as usize)
}

pub fn free(addr: usize) -> Result<()> {
    let Some((layout, dev)) = memory().as_mut().and_then(|m| m.remove(&addr)) else {
        return invalid(format!(
            "{addr:#x} is not memory from aclrtMalloc or aclrtMallocHost (or was freed)"
        ));
    };
    // SAFETY: `addr` came from alloc_zeroed with this layout and was removed from the table,
    // so it is freed once.
    unsafe { std::alloc::dealloc(addr as *mut u8, layout) };
    if let Some(d) = dev {
        let (at, size) = (crate::clock::now_ns(), layout.size() as i64);
        crate::memory::event(d, Pool::App, addr as u64, -size, "aclrtFree", at, None);
    }
    Ok(())
}

/// Checks an `aclrtMemcpy`: both pointers set, `count <= dest_max`, a known kind.
pub fn check_memcpy(
    dst: usize,
    dest_max: usize,
    src: usize,
    count: usize,
    kind: u32,
) -> Result<()> {
    if dst == 0 || src == 0 {
        return invalid("dst and src must not be NULL");
    }
    if count > dest_max {
        return invalid(format!("count {count} is more than destMax {dest_max}"));
    }
    if kind > 7 {
        return invalid(format!("{kind} is not an aclrtMemcpyKind"));
    }
    Ok(())
}

// ---- data buffers and datasets ----------------------------------------------------------

pub fn create_data_buffer(addr: usize, size: usize) -> usize {
    BUFFERS.insert(DataBuffer { addr, size })
}

pub fn destroy_data_buffer(h: usize) -> Result<()> {
    destroy(&BUFFERS, h, "a data buffer")
}

/// The buffer's (address, size), or None for a handle that is not a live data buffer.
pub fn data_buffer(h: usize) -> Option<(usize, usize)> {
    BUFFERS.with(h, |b| (b.addr, b.size))
}

pub fn update_data_buffer(h: usize, addr: usize, size: usize) -> Result<()> {
    BUFFERS
        .with(h, |b| *b = DataBuffer { addr, size })
        .ok_or_else(|| not_a(h, "a data buffer"))
}

pub fn create_dataset() -> usize {
    DATASETS.insert(Dataset {
        buffers: Vec::new(),
    })
}

pub fn destroy_dataset(h: usize) -> Result<()> {
    destroy(&DATASETS, h, "a dataset")
}

pub fn add_dataset_buffer(dataset: usize, buffer: usize) -> Result<()> {
    if data_buffer(buffer).is_none() {
        return Err(not_a(buffer, "a data buffer"));
    }
    DATASETS
        .with(dataset, |d| d.buffers.push(buffer))
        .ok_or_else(|| not_a(dataset, "a dataset"))
}

pub fn dataset_num_buffers(h: usize) -> usize {
    DATASETS.with(h, |d| d.buffers.len()).unwrap_or(0)
}

/// The index'th buffer of a dataset; 0 (NULL) for a bad handle or index.
pub fn dataset_buffer(h: usize, index: usize) -> usize {
    DATASETS
        .with(h, |d| d.buffers.get(index).copied())
        .flatten()
        .unwrap_or(0)
}

// ---- models -----------------------------------------------------------------------------

/// Where the model at `path` is described: the file itself, or for an offline model
/// (`.om`, which only an NPU runs) a description of the same name beside it.
pub fn description_of(path: &Path) -> Result<PathBuf> {
    let is_om = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("om"));
    if !is_om {
        if !path.is_file() {
            return err(
                ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID,
                format!("model file {} does not exist", path.display()),
            );
        }
        return Ok(path.to_path_buf());
    }
    let candidates = [path.with_extension("json"), path.with_extension("csv")];
    if let Some(found) = candidates.iter().find(|c| c.is_file()) {
        return Ok(found.clone());
    }
    let code = if path.is_file() {
        ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID
    } else {
        ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID
    };
    err(
        code,
        format!(
            "{} is an offline model, which only an NPU runs; the emulator looked for a model \
             description beside it ({} or {}) and found none",
            path.display(),
            candidates[0].display(),
            candidates[1].display()
        ),
    )
}

/// `aclmdlLoadFromFile`: loads the description onto the calling thread's current device
/// (the description's own device if the thread has none).
/// `own_memory`: the runtime allocates the model's work and weight memory (aclmdlLoadFromFile;
/// with aclmdlLoadFromFileWithMem the application gave its own).
pub fn load_model(path: &Path, own_memory: bool) -> Result<u32> {
    let desc = description_of(path)?;
    let device = CURRENT_DEVICE.get().map(|d| d as u32);
    let id = crate::sim::load_on(&desc, device).map_err(as_loader_error)?;
    if own_memory {
        crate::profiler::model_memory(id, (SIM_WORK_SIZE + SIM_WEIGHT_SIZE) as u64);
    }
    Ok(id)
}

/// The model loader's code for a description the simulator cannot read.
fn as_loader_error(e: Error) -> Error {
    if e.code == ACL_ERROR_INVALID_FILE {
        Error::new(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, e.msg)
    } else {
        e
    }
}

fn loaded(model: u32) -> Result<Arc<SimModel>> {
    crate::sim::get(model).ok_or_else(|| {
        Error::new(
            ACL_ERROR_GE_EXEC_MODEL_ID_INVALID,
            format!("model {model} is not loaded"),
        )
    })
}

pub fn unload_model(model: u32) -> Result<()> {
    loaded(model)?;
    crate::profiler::model_unload(model)
}

pub fn query_size(path: &Path) -> Result<(usize, usize)> {
    let desc = description_of(path)?;
    crate::sim::parse_file(&desc).map_err(as_loader_error)?;
    Ok((SIM_WORK_SIZE, SIM_WEIGHT_SIZE))
}

/// Checks the memory given to `aclmdlLoadFromFileWithMem` (NULL pointers let the runtime
/// allocate, as in CANN).
pub fn check_model_memory(
    work: usize,
    work_size: usize,
    weight: usize,
    weight_size: usize,
) -> Result<()> {
    if (work != 0 && work_size < SIM_WORK_SIZE) || (weight != 0 && weight_size < SIM_WEIGHT_SIZE) {
        return invalid(format!(
            "the model needs {SIM_WORK_SIZE} bytes of work memory and {SIM_WEIGHT_SIZE} of \
             weight memory (aclmdlQuerySize); got {work_size} and {weight_size}"
        ));
    }
    Ok(())
}

pub fn create_desc() -> usize {
    DESCS.insert(Desc { model: None })
}

pub fn destroy_desc(h: usize) -> Result<()> {
    destroy(&DESCS, h, "a model description")
}

pub fn get_desc(h: usize, model: u32) -> Result<()> {
    let m = loaded(model)?;
    DESCS
        .with(h, |d| d.model = Some(m))
        .ok_or_else(|| not_a(h, "a model description"))
}

/// The input (or output) sizes of the model a description was filled from; empty for a
/// bad or unfilled description.
pub fn desc_sizes(h: usize, outputs: bool) -> Vec<u64> {
    DESCS
        .with(h, |d| {
            d.model.as_ref().map(|m| {
                if outputs {
                    m.outputs.clone()
                } else {
                    m.inputs.clone()
                }
            })
        })
        .flatten()
        .unwrap_or_default()
}

fn check_dataset(h: usize, what: &str, sizes: &[u64]) -> Result<()> {
    let Some(buffers) = DATASETS.with(h, |d| d.buffers.clone()) else {
        return invalid(format!("{what} {h:#x} is not a dataset"));
    };
    if buffers.len() < sizes.len() {
        return err(
            ACL_ERROR_GE_PARAM_INVALID,
            format!(
                "{what} dataset has {} buffer(s); the model has {}",
                buffers.len(),
                sizes.len()
            ),
        );
    }
    for (i, (&b, &need)) in buffers.iter().zip(sizes).enumerate() {
        let size = data_buffer(b).map_or(0, |(_, s)| s);
        if (size as u64) < need {
            return err(
                ACL_ERROR_GE_PARAM_INVALID,
                format!("{what} buffer {i} has {size} bytes; the model needs {need}"),
            );
        }
    }
    Ok(())
}

/// `aclmdlExecute` (and `aclmdlExecuteAsync`, which is synchronous here): checks the
/// datasets against the model's inputs and outputs, then runs it on the simulator.
pub fn execute(model: u32, input: usize, output: usize, stream: usize) -> Result<()> {
    let m = loaded(model)?;
    check_dataset(input, "input", &m.inputs)?;
    check_dataset(output, "output", &m.outputs)?;
    synchronize_stream(stream)?;
    crate::sim::execute(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_tracked() {
        let p = malloc(100, true).unwrap();
        assert_eq!(p % ALIGN, 0);
        free(p).unwrap();
        assert_eq!(
            free(p).unwrap_err().code,
            ACL_ERROR_INVALID_PARAM,
            "double free"
        );
        assert_eq!(free(12345).unwrap_err().code, ACL_ERROR_INVALID_PARAM);
        assert_eq!(malloc(0, true).unwrap_err().code, ACL_ERROR_INVALID_PARAM);
        assert_eq!(
            malloc(usize::MAX, false).unwrap_err().code,
            ACL_ERROR_INVALID_PARAM
        );
    }

    #[test]
    fn contexts_and_devices_are_per_thread() {
        std::thread::spawn(|| {
            assert_eq!(
                current_device().unwrap_err().code,
                ACL_ERROR_RT_CONTEXT_NULL
            );
            assert_eq!(create_stream().unwrap_err().code, ACL_ERROR_RT_CONTEXT_NULL);
            assert_eq!(
                set_device(-1).unwrap_err().code,
                ACL_ERROR_RT_INVALID_DEVICEID
            );
            let c = create_context(0).unwrap();
            assert_eq!(current_context().unwrap(), c);
            std::thread::spawn(move || {
                assert!(current_context().is_err(), "a new thread has no context");
                set_current_context(c).unwrap();
                assert_eq!(current_device().unwrap(), 0);
            })
            .join()
            .unwrap();
            let s = create_stream().unwrap();
            synchronize_stream(s).unwrap();
            synchronize_stream(0).unwrap();
            destroy_stream(s).unwrap();
            assert!(destroy_stream(s).is_err());
            destroy_context(c).unwrap();
            assert_eq!(
                current_context().unwrap_err().code,
                ACL_ERROR_RT_CONTEXT_NULL
            );
            assert!(set_current_context(c).is_err());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn datasets_hold_live_buffers() {
        let d = create_dataset();
        let b = create_data_buffer(0x1000, 64);
        add_dataset_buffer(d, b).unwrap();
        assert_eq!(dataset_num_buffers(d), 1);
        assert_eq!(dataset_buffer(d, 0), b);
        assert_eq!(dataset_buffer(d, 1), 0);
        assert!(add_dataset_buffer(d, 77).is_err());
        assert!(add_dataset_buffer(77, b).is_err());
        update_data_buffer(b, 0x2000, 8).unwrap();
        assert_eq!(data_buffer(b), Some((0x2000, 8)));
        assert!(check_dataset(d, "input", &[8]).is_ok());
        assert_eq!(
            check_dataset(d, "input", &[9]).unwrap_err().code,
            ACL_ERROR_GE_PARAM_INVALID
        );
        assert_eq!(
            check_dataset(d, "input", &[1, 1]).unwrap_err().code,
            ACL_ERROR_GE_PARAM_INVALID
        );
        destroy_data_buffer(b).unwrap();
        destroy_dataset(d).unwrap();
        assert!(destroy_dataset(d).is_err());
        assert_eq!(dataset_num_buffers(d), 0);
    }

    #[test]
    fn an_unloaded_model_is_gone() {
        let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("ctests/data/tiny.json");
        let m = load_model(&tiny, true).unwrap();
        let (i, o) = (create_dataset(), create_dataset());
        execute(m, i, o, 0).unwrap();
        unload_model(m).unwrap();
        assert_eq!(
            unload_model(m).unwrap_err().code,
            ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
        );
        assert_eq!(
            execute(m, i, o, 0).unwrap_err().code,
            ACL_ERROR_GE_EXEC_MODEL_ID_INVALID
        );
    }

    #[test]
    fn offline_models_are_described_beside() {
        let dir = std::env::temp_dir().join(format!("aclprof-om-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let om = dir.join("net.om");
        let e = description_of(&om).unwrap_err();
        assert_eq!(e.code, ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID);
        assert!(e.msg.contains("net.json"), "{}", e.msg);
        std::fs::write(&om, b"not ours").unwrap();
        assert_eq!(
            description_of(&om).unwrap_err().code,
            ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID
        );
        std::fs::write(dir.join("net.csv"), b"x").unwrap();
        assert_eq!(description_of(&om).unwrap(), dir.join("net.csv"));
        std::fs::write(dir.join("net.json"), b"{}").unwrap();
        assert_eq!(description_of(&om).unwrap(), dir.join("net.json"));
        assert_eq!(
            description_of(&dir.join("missing.json")).unwrap_err().code,
            ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
