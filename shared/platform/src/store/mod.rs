//! Storage: the database contract with its per-statement budget checks,
//! migrations and idempotency records. It gives rows and domain errors,
//! never an answer: pages, the tenant-scoped handle, the keyed write and
//! what a storage error is answered with are `crate::http`'s.

pub mod db;
pub mod dialect;
pub mod error;
pub mod idempotency;
pub mod migrate;
pub mod row;
