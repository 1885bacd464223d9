//! aclprof: Huawei CANN's AscendCL profiling API (`acl/acl_prof.h`) on any Linux machine.
//!
//! The C ABI lives in [`ffi`] (thin, checked wrappers); everything else is safe Rust, one
//! module per concern, in layers. A module imports only from its own layer and the layers
//! below it (`tests/layers.rs` checks every import against this table, which is
//! `src/layers.md`; a submodule not named is in its parent's layer). Top first:
//!
#![doc = include_str!("layers.md")]
// Unsafety is explicit: an `unsafe fn`'s body is not one big unsafe block, and every unsafe
// block says why it holds (docs/design.md, "The C boundary").
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
// A function fits on a screen: at most 120 lines (clippy.toml), one concern each.
#![warn(clippy::too_many_lines)]

pub mod accessor;
pub(crate) mod agg;
pub mod analyze;
pub(crate) mod clock;
pub mod diff;
pub mod error;
pub mod ffi;
pub mod filemode;
pub(crate) mod fork;
pub mod formats;
pub(crate) mod handles;
pub(crate) mod hotpath;
pub mod init;
pub mod logging;
pub mod memory;
pub(crate) mod names;
pub mod opmeta;
pub(crate) mod opreg;
pub(crate) mod panic;
pub mod pipeline;
pub mod profiler;
pub(crate) mod registry;
pub mod runstats;
pub(crate) mod runtime;
pub(crate) mod settings;
pub mod sim;
pub mod state;
pub(crate) mod sync;
pub mod torch_npu;
pub mod transport;
pub(crate) mod tx;
pub mod watch;
