//! CANN's formats, each defined once: its numbers (error codes, data-type bits, config
//! types), from which the C headers are generated. The bottom layer: it imports nothing
//! from the crate and holds no state (docs/design.md, "Layers").

pub mod acl_base;
pub mod acl_prof;
pub mod db_schema;
pub mod host;
pub mod host_sys;
pub mod layout;
pub mod memory;
pub mod op_summary;
pub mod prof_values;
pub mod raw;
pub mod record;
pub mod signature;
pub mod text;
pub mod timeline;
pub mod torch_npu;
