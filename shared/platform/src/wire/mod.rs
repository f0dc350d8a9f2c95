//! What goes on the wire besides bodies: header names and hygiene, the
//! problem+json error shape, and the request id.

pub mod headers;
pub mod problem;
pub mod request_id;
