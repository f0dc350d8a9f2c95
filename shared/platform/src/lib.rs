//! Meridian's platform: the request budget and its wire codec, retry policy,
//! problem+json errors, tenancy, request context, and storage contracts.
//!
//! Nothing here depends on Spin, so every rule runs under `cargo test` on the
//! host; `meridian-spin` adapts it to the runtime.
#![forbid(unsafe_code)]

pub mod admission;
pub mod body;
pub mod budget;
pub mod checks;
pub mod context;
pub mod db;
pub mod deadline;
pub mod headers;
pub mod http;
pub mod idempotency;
pub mod ids;
pub mod message;
pub mod migrate;
pub mod page;
pub mod problem;
pub mod propagation;
pub mod request_id;
pub mod retry;
pub mod routes;
pub mod secrets;
pub mod tenancy;
pub mod time;
pub mod upstream;
pub mod validate;

pub use context::RequestContext;
pub use deadline::Deadline;
pub use problem::{ErrorCode, Problem};
pub use time::{Clock, SystemClock, UnixMillis};
