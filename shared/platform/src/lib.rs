//! Meridian's platform: the request budget and its wire codec, retry policy,
//! problem+json errors, tenancy, request context, and storage contracts.
//!
//! Nothing here depends on Spin, so every rule runs under `cargo test` on the
//! host; `meridian-spin` adapts it to the runtime.
#![forbid(unsafe_code)]

// By concern; each group's module says what it holds.
pub mod budget;
pub mod counts;
pub mod http;
pub mod input;
pub mod limits;
/// Storage: its own crate, `meridian-store`.
pub use meridian_store as store;
pub use meridian_store::migrations;
pub mod wire;

/// Fuzzing invariants: built only for the fuzz targets and the corpus replay.
#[cfg(feature = "fuzzing")]
pub mod checks;
pub mod ids;
/// The request's journal and its log lines: its own crate, `meridian-log`.
pub use meridian_log as log;
pub mod secrets;
pub mod service;
pub mod settings;
pub mod tenancy;
pub mod time;

pub use budget::context::RequestContext;
pub use budget::deadline::Deadline;
pub use time::{Clock, SystemClock, UnixMillis};
pub use wire::problem::{ErrorCode, Problem};
