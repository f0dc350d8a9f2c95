//! Meridian's storage: the database contract ([`db::Database`], one
//! implementation per engine and host) with a budget check before every
//! statement ([`db::Store`], which takes a hop's
//! [`meridian_deadline::HopBudget`]), the SQL dialects, migrations, and
//! the idempotency records that make a keyed write happen once. It gives
//! rows and domain errors, never an answer: pages, the tenant-scoped
//! handle, the keyed write and what a storage error is answered with are
//! the platform's (`meridian_platform::http`).
#![forbid(unsafe_code)]

pub mod batch;
pub mod db;
pub mod dialect;
pub mod error;
pub mod idempotency;
pub mod migrate;
pub mod row;
// The backends on Spin (with the `spin` feature).
#[cfg(feature = "spin")]
pub mod spin;
pub mod timestamp;
