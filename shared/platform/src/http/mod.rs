//! HTTP as the services use it: inbound and outbound messages, bodies read
//! to a limit and a deadline, the one request pipeline, route tables, the
//! upstream caller and its retries.

pub mod body;
pub mod idempotency;
pub mod memory;
pub mod message;
pub mod origin;
pub mod outbound;
pub mod page;
pub mod pipeline;
pub mod request_line;
pub mod retry;
pub mod routes;
pub mod scoped;
pub mod storage;
pub mod upstream;

pub use message::{Request, RequestExt, Response, ResponseExt};
pub use outbound::*;

/// What a handler needs of HTTP, in one import: the one message type, its
/// readings ([`RequestExt`], [`ResponseExt`]), the answers
/// ([`message::json`], [`message::problem`], …) and the `http` crate's
/// methods and status codes.
pub mod prelude {
    pub use super::message::{self, Request, RequestExt, Response, ResponseExt};
    pub use super::outbound;
    pub use http::{Method, StatusCode};
}
