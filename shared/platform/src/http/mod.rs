//! HTTP as the services use it: inbound and outbound messages, bodies read
//! to a limit and a deadline, the one request pipeline, route tables, the
//! upstream caller and its retries.

pub mod body;
pub mod memory;
pub mod message;
pub mod outbound;
pub mod pipeline;
pub mod retry;
pub mod routes;
pub mod upstream;

pub use outbound::*;
