//! Storage: the database contract with its per-statement budget checks,
//! migrations, idempotency records, cursor pages, and the tenant-scoped
//! handle repositories take.

pub mod db;
pub mod dialect;
pub mod error;
pub mod idempotency;
pub mod migrate;
pub mod row;
