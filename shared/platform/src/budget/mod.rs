//! The request budget: how long a request may take (`config`), the
//! deadline it becomes (`deadline`), how it travels between hops
//! (`propagation`), the gate a service lets a call through on it (`gate`), and
//! the context every step takes it in (`context`).

pub mod context;
pub mod gate;

// The budget itself is its own crate (`shared/deadline`): what follows
// builds on it.
pub use meridian_deadline::{
    answer_reserve, BudgetConfig, BudgetConfigError, InvalidTimeout, DEFAULT_BUDGET,
    DEFAULT_MAX_BUDGET,
};
pub use meridian_deadline::{config, deadline, propagation, request_start, steps};
