//! The emulated runtime's model registry (docs/design.md, "The emulated device"): model
//! id -> everything kept about the model, in one entry: its name and device, the
//! description the simulator executes, and the memory the runtime allocated for it.
//!
//! Ids count up from 1 and are never reused within a process, so a subscription or a
//! recorded op can never silently refer to a different model.

use crate::error::{err, Result, ACL_ERROR_INVALID_DEVICE, ACL_ERROR_INVALID_MODEL_ID};
use crate::fork::{global, Rank, RwLock};
use crate::sim::import::SimModel;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub id: u32,
    pub name: Arc<str>,
    pub device: u32,
    /// What the simulator executes: a model loaded from a description or a real run's
    /// tables (`aclprofExtSimModelLoad`, `aclmdlLoadFromFile`); `None` for a model a
    /// runtime reports itself (`aclprofExtModelLoad`).
    pub sim: Option<Arc<SimModel>>,
    /// Bytes of work and weight memory the emulated runtime allocated for the model (0:
    /// none, or the application gave its own), released when it is unloaded.
    pub runtime_bytes: u64,
}

pub struct Registry {
    models: HashMap<u32, Model>,
    next_id: u32,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            models: HashMap::new(),
            next_id: 1,
        }
    }
}

impl Registry {
    pub fn load(
        &mut self,
        name: &str,
        device: u32,
        device_count: u32,
        sim: Option<Arc<SimModel>>,
    ) -> Result<u32> {
        if device >= device_count {
            return err(
                ACL_ERROR_INVALID_DEVICE,
                format!(
                    "device {device} does not exist: the emulated machine has {device_count} \
                     device(s), ids 0..{}; set ACLPROF_DEVICE_COUNT for more",
                    device_count - 1
                ),
            );
        }
        if self.next_id == u32::MAX {
            return err(
                ACL_ERROR_INVALID_MODEL_ID,
                "no model ids left in this process",
            );
        }
        let id = self.next_id;
        self.next_id += 1;
        self.models.insert(
            id,
            Model {
                id,
                name: name.into(),
                device,
                sim,
                runtime_bytes: 0,
            },
        );
        Ok(id)
    }

    pub fn unload(&mut self, id: u32) -> Result<Model> {
        match self.models.remove(&id) {
            Some(m) => Ok(m),
            None => err(
                ACL_ERROR_INVALID_MODEL_ID,
                format!("model {id} is not loaded"),
            ),
        }
    }

    pub fn get(&self, id: u32) -> Option<&Model> {
        self.models.get(&id)
    }

    /// Records the memory the runtime allocated for model `id`.
    pub fn set_runtime_bytes(&mut self, id: u32, bytes: u64) {
        if let Some(m) = self.models.get_mut(&id) {
            m.runtime_bytes = bytes;
        }
    }
}

global! {
    /// The loaded models, which a forked child keeps.
    static REGISTRY: RwLock<Option<Registry>> = RwLock::new(Rank::Registry, None);
}

pub fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut g = REGISTRY.write();
    f(g.get_or_insert_with(Registry::default))
}

pub fn get(id: u32) -> Option<Model> {
    let g = REGISTRY.read();
    g.as_ref()?.get(id).cloned()
}

/// The description model `id` executes, if it is a loaded simulated model.
pub fn sim(id: u32) -> Option<Arc<SimModel>> {
    let g = REGISTRY.read();
    g.as_ref()?.get(id)?.sim.clone()
}

/// Every loaded simulated model, by id.
pub fn simulated() -> Vec<(u32, Arc<SimModel>)> {
    let g = REGISTRY.read();
    let mut v: Vec<_> = g
        .as_ref()
        .map(|r| {
            r.models
                .values()
                .filter_map(|m| Some((m.id, m.sim.clone()?)))
                .collect()
        })
        .unwrap_or_default();
    v.sort_by_key(|(id, _)| *id);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_and_are_not_reused() {
        let mut r = Registry::default();
        let a = r.load("a", 0, 1, None).unwrap();
        let b = r.load("b", 0, 2, None).unwrap();
        assert_eq!((a, b), (1, 2));
        r.unload(a).unwrap();
        assert_eq!(r.load("c", 1, 2, None).unwrap(), 3);
        assert_eq!(r.unload(a).unwrap_err().code, ACL_ERROR_INVALID_MODEL_ID);
        assert_eq!(
            r.load("d", 2, 2, None).unwrap_err().code,
            ACL_ERROR_INVALID_DEVICE
        );
        assert_eq!(r.get(b).unwrap().name.as_ref(), "b");
    }
}
