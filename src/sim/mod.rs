//! The model simulator (docs/design.md, "The emulated device"): loads a model description
//! and "executes" it by reporting every op, in order, on the calling thread's stream.
//!
//! The descriptions themselves (formats, parsing, the table of loaded ones) are in
//! [`import`].

pub mod import;
pub use import::*;

use crate::error::{err, Result, ACL_ERROR_INVALID_MODEL_ID};
use crate::formats::record::until_nul;
use std::path::Path;

/// The description model `id` executes, if it is a loaded simulated model (the registry
/// keeps it with the model's other state).
pub fn get(id: u32) -> Option<std::sync::Arc<SimModel>> {
    crate::registry::sim(id)
}

/// Loads the description as a model of the emulated runtime; returns its model id.
pub fn load(path: &Path) -> Result<u32> {
    load_on(path, None)
}

/// Loads the description onto `device`, or the device it names if `None`.
pub fn load_on(path: &Path, device: Option<u32>) -> Result<u32> {
    let mut m = parse_file(path)?;
    m.device = device.unwrap_or(m.device);
    for op in &mut m.ops {
        op.meta_id = op
            .meta
            .as_deref()
            .and_then(|d| crate::opmeta::intern(d.clone()))
            .unwrap_or(0);
        // Each op's record prepared once, as CANN's runtime does at model load (a full
        // table leaves the op to be reported by name).
        let (name, ty) = (
            until_nul(op.name.as_bytes()),
            until_nul(op.op_type.as_bytes()),
        );
        op.reg_id = crate::opreg::register(name, ty, op.meta_id).unwrap_or(0);
    }
    let m = std::sync::Arc::new(m);
    let id = crate::profiler::model_load(&m.name, m.device, Some(m.clone()))?;
    crate::memory::plan(id, &m);
    Ok(id)
}

/// Executes a loaded simulated model once; returns when its last op has ended.
pub fn execute(id: u32) -> Result<()> {
    let Some(m) = get(id) else {
        return err(
            ACL_ERROR_INVALID_MODEL_ID,
            format!("model {id} is not a loaded simulated model"),
        );
    };
    let call_start = crate::clock::now_ns();
    let mut t = call_start;
    // A replayed table's own memory replaces what its ops' shapes would give.
    let mut memory = if m.memory.is_empty() {
        crate::memory::Execution::begin(m.device)
    } else {
        crate::memory::replay(&m.memory, m.device, call_start);
        None
    };
    for (i, op) in m.ops.iter().enumerate() {
        // A replayed table keeps its start times; a description chains its ops.
        let start = match op.offset_ns {
            Some(o) => call_start + o,
            None => t + op.wait_ns,
        };
        let end = start + op.duration_ns;
        let replay = crate::hotpath::Replay {
            stream: op.task.as_ref().and_then(|t| t.stream_id),
            sim_op: u32::try_from(i + 1).unwrap_or(0),
            meta: op.meta_id,
        };
        match crate::opreg::get(op.reg_id) {
            Some(r) => crate::hotpath::report_with(id, &r.image, start, end, replay),
            None => crate::hotpath::report_op(
                id,
                until_nul(op.name.as_bytes()),
                until_nul(op.op_type.as_bytes()),
                start,
                end,
                replay,
            ),
        }?;
        if let Some(mem) = memory.as_mut() {
            let (outputs, workspace) = op.memory();
            mem.op(i, outputs, workspace, start, end);
        }
        t = t.max(end);
    }
    if let Some(mem) = memory {
        mem.finish(t, |i| m.ops[i].name.as_str());
    }
    crate::clock::sleep_until(t);
    // The host side of the call, as CANN's ACL_PROF_ACL_API trace shows aclmdlExecute.
    crate::filemode::host_event(crate::formats::acl_prof::ACL_PROF_ACL_API, || {
        crate::formats::host::HostEvent::Api {
            end: crate::clock::now_ns(),
            item: m.name.clone(),
            level: String::new(),
            name: "aclmdlExecute".into(),
            start: call_start,
            tid: u64::from(crate::clock::thread_id()),
        }
    });
    Ok(())
}

/// Writes the replay of `m` (model `id`) as a session's stream files under `data`: one
/// record per op, a file per stream, starting at `base`.
fn write_streams(m: &SimModel, id: u32, base: u64, data: &Path) -> Result<()> {
    use crate::formats::record::{encode, sign, OpFields, FLAG_OP, RECORD_SIZE};
    use std::io::Write;
    let mut files: std::collections::HashMap<u32, std::io::BufWriter<std::fs::File>> =
        Default::default();
    let mut rec = [0u8; RECORD_SIZE];
    let pid = std::process::id();
    for (i, op) in m.ops.iter().enumerate() {
        let stream = op.task.as_ref().and_then(|t| t.stream_id).unwrap_or(0);
        let start = base + op.offset_ns.unwrap_or(0);
        let f = OpFields {
            model_id: id,
            flag: FLAG_OP,
            op_index: i as u64 + 1,
            start,
            end: start + op.duration_ns,
            execution_time: op.duration_ns,
            dev_id: m.device,
            pid,
            stream_id: stream,
            sim_op: u32::try_from(i + 1).unwrap_or(0),
            meta: op.meta_id,
            ..Default::default()
        };
        rec.fill(0);
        encode(
            &mut rec,
            &f,
            until_nul(op.name.as_bytes()),
            until_nul(op.op_type.as_bytes()),
        );
        sign(&mut rec);
        let w = match files.entry(stream) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let p = crate::transport::StreamFiles::path(data, stream);
                let f = std::fs::File::create(&p)
                    .map_err(|e| crate::error::file_error("cannot create", &p, e))?;
                v.insert(std::io::BufWriter::with_capacity(1 << 18, f))
            }
        };
        w.write_all(&rec)
            .map_err(|e| crate::error::file_error("cannot write", data, e))?;
    }
    for w in files.values_mut() {
        w.flush()
            .map_err(|e| crate::error::file_error("cannot write", data, e))?;
    }
    drop(files);
    Ok(())
}

/// Makes a result directory under `out` from CANN's database `db` (`msprof_*.db`,
/// `ascend_pytorch_profiler_*.db`) and exports it: op_summary, op_statistic, the timelines,
/// step trace and our own database, from the database's first device, with its task types,
/// block dims, streams, shapes and PMU values (the simulator's replay of it, recorded as a
/// session of this process would record it, in the database's epoch times). Returns the
/// result directory and what its export wrote. `aclprof export` and `timeline` run it for a
/// database.
pub fn import_db(
    db: &Path,
    out: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(std::path::PathBuf, crate::filemode::export::Summary)> {
    use crate::error::ACL_ERROR_INVALID_FILE;
    if !crate::formats::layout::is_database(db) {
        return err(
            ACL_ERROR_INVALID_FILE,
            format!("{}: not an SQLite database", db.display()),
        );
    }
    let id = load(db)?;
    let result = (|| {
        let m = get(id).ok_or_else(|| {
            crate::error::Error::new(ACL_ERROR_INVALID_FILE, "the database was unloaded")
        })?;
        // The first task's epoch start: the replay keeps the others' offsets from it.
        let mut base = None;
        let _ = db_tasks(db, &mut |t| {
            base = Some(t.start);
            err(ACL_ERROR_INVALID_FILE, "first task read")
        });
        let base = base.unwrap_or(0);
        // Named by the database's first task, not by now: exporting the same database again
        // replaces its earlier result directory instead of adding a second copy of its ops
        // beside it. It is written under a temporary name and renamed into place.
        let name = format!(
            "PROF_000001_{}_IMPORTED",
            crate::clock::local_stamp_at(base, true)
        );
        let done = out.join(&name);
        let dir = out.join(format!(".{name}.{}.partial", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let dev = m.device;
        let data = dir.join(format!("device_{dev}/data"));
        std::fs::create_dir_all(&data)
            .map_err(|e| crate::error::file_error("cannot create", &data, e))?;
        std::fs::create_dir_all(dir.join("host/data"))
            .map_err(|e| crate::error::file_error("cannot create", &dir, e))?;
        // op_summary's PMU columns: the metric group that has the most of the database's.
        let metric = (0..9u64)
            .max_by_key(|&g| {
                let cols = crate::formats::op_summary::pmu_columns(g);
                let n = cols
                    .iter()
                    .filter(|c| m.pmu_columns.contains(&c.to_string()))
                    .count();
                (n, std::cmp::Reverse(g))
            })
            .filter(|_| !m.pmu_columns.is_empty())
            .unwrap_or(u64::from(crate::formats::prof_values::AICORE_NONE));
        // The database's operator memory, replayed as recorded (its times and totals).
        let memory = db_op_memory(db)?;
        if !memory.is_empty() {
            let mut log = Vec::new();
            for ev in memory {
                crate::formats::host::HostEvent::Mem(ev).to_line(&mut log);
                log.push(b'\n');
            }
            let lp = dir.join(crate::formats::layout::HOST_LOG);
            std::fs::write(&lp, log)
                .map_err(|e| crate::error::file_error("cannot write", &lp, e))?;
        }
        let memory_bit = if dir.join(crate::formats::layout::HOST_LOG).exists() {
            crate::formats::acl_prof::ACL_PROF_TASK_MEMORY
        } else {
            0
        };
        let session = crate::formats::host::Session {
            aicore_metrics: metric,
            data_type_config: crate::formats::acl_prof::ACL_PROF_TASK_TIME | memory_bit,
            devices: vec![dev],
            imported_from: Some(db.display().to_string()),
            pid: u64::from(std::process::id()),
            ..Default::default()
        };
        let sp = dir.join(crate::formats::layout::SESSION_FILE);
        std::fs::write(&sp, session.to_json())
            .map_err(|e| crate::error::file_error("cannot write", &sp, e))?;
        let info = dir.join(format!("device_{dev}/info.json.{dev}"));
        std::fs::write(&info, serde_json::json!({"rank_id": dev}).to_string())
            .map_err(|e| crate::error::file_error("cannot write", &info, e))?;
        write_streams(&m, id, base, &data)?;
        if done.exists() {
            std::fs::remove_dir_all(&done)
                .map_err(|e| crate::error::file_error("cannot replace", &done, e))?;
        }
        std::fs::rename(&dir, &done)
            .map_err(|e| crate::error::file_error("cannot rename into place", &done, e))?;
        let summary = crate::filemode::export_quietly_with_progress(&done, progress)?;
        Ok((done, summary))
    })();
    let _ = crate::profiler::model_unload(id);
    if result.is_err() {
        // What a failed import had written under its temporary name.
        let partial = format!(".{}.partial", std::process::id());
        for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().ends_with(&partial) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    result
}
