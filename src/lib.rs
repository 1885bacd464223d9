//! aclprof: Huawei CANN's AscendCL profiling API (`acl/acl_prof.h`) on any Linux machine.
//!
//! The C ABI lives in [`ffi`] (thin, checked wrappers); everything else is safe Rust, one
//! module per concern. Modules import downward only, in this order (top first):
//!
//! | module | concern |
//! |---|---|
//! | [`ffi`] | the C boundary |
//! | [`init`] | first use: settings, environment-variable profiling, the fork handlers wired |
//! | [`runtime`] | the emulated AscendCL runtime (`acl.h`: devices, memory, datasets, models) |
//! | [`sim`] | the model simulator (executing; [`sim::import`], the descriptions, is a leaf) |
//! | [`api`] | global state, handles and subscriptions glued together |
//! | [`page`], [`analyze`] | the report page; the analysis engine over raw records |
//! | [`tx`], [`filemode`] | msproftx stamps and step info; file mode's sessions and export |
//! | [`report`] | the hot path: a runtime reports an executed op |
//! | [`transport`] | lanes, pipe and file writes, shared-memory rings |
//! | [`state`], [`registry`], [`accessor`] | the state machine; the emulated runtime's models; what the `aclprofGetOp*` accessors check |
//! | [`record`], [`signature`], [`agg`] | the 512-byte op record and CANN's signature; duration aggregates |
//! | [`settings`], [`error`], [`logging`], [`panic`], [`handles`], [`names`], [`opmeta`], [`clock`], [`fork`], [`sync`] | leaves |
//!
//! `tests/layers.rs` fails on any import cycle; docs/design.md ("Layers") draws them.

pub mod accessor;
pub mod agg;
pub mod analyze;
pub mod clock;
pub mod diff;
pub mod error;
pub mod ffi;
pub mod filemode;
pub mod fork;
pub mod formats;
pub mod handles;
pub mod hotpath;
pub mod init;
pub mod logging;
pub mod names;
pub mod opmeta;
pub mod panic;
pub mod pipeline;
pub mod profiler;
pub mod registry;
pub mod runstats;
pub mod runtime;
pub mod settings;
pub mod sim;
pub mod state;
pub mod sync;
pub mod transport;
pub mod tx;
pub mod watch;
