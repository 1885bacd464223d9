//! aclprof: Huawei CANN's AscendCL profiling API (`acl/acl_prof.h`) on any Linux machine.
//!
//! The C ABI lives in [`ffi`] (thin, checked wrappers); everything else is safe Rust, one
//! module per concern:
//!
//! | module | concern |
//! |---|---|
//! | [`record`] | the 512-byte op record: layout, encoding, CANN's signature |
//! | [`accessor`] | what the `aclprofGetOp*` accessors check and decode |
//! | [`state`] | the init/start/stop/finalize and subscribe state machine |
//! | [`api`] | global state, handles and subscriptions glued together |
//! | [`report`] | the hot path: a runtime reports an executed op |
//! | [`transport`] | lanes, pipe and file writes, shared-memory rings |
//! | [`registry`], [`sim`] | the emulated runtime's models and the model simulator |
//! | [`tx`] | msproftx stamps, marks, ranges, step info |
//! | [`settings`], [`error`], [`logging`] | configuration, error codes and messages |

pub mod accessor;
pub mod api;
pub mod clock;
pub mod error;
pub mod ffi;
pub mod filemode;
pub mod handles;
pub mod init;
pub mod logging;
pub mod names;
pub mod record;
pub mod registry;
pub mod report;
pub mod settings;
pub mod signature;
pub mod sim;
pub mod state;
pub mod transport;
pub mod tx;
