//! Time as Meridian uses it: the wall clock and its instants from the
//! budget crate (`meridian_deadline::time`), and [`Timestamp`], an instant
//! as the API shows it and the databases keep it (the store's).

pub use meridian_deadline::time::*;
pub use meridian_store::timestamp::Timestamp;
