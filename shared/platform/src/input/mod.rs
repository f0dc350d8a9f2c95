//! Reading what clients send: JSON bodies field by field, and query strings.

pub mod query;
pub mod validate;
