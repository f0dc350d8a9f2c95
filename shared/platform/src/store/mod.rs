//! Storage: the database contract with its per-statement budget checks,
//! migrations, idempotency records and cursor pages.

pub mod db;
pub mod idempotency;
pub mod migrate;
pub mod page;
