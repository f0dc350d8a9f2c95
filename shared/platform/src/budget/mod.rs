//! The request budget: how long a request may take (`config`), the
//! deadline it becomes (`deadline`), how it travels between hops
//! (`propagation`), how a service admits a request on it (`admission`), and
//! the context every step takes it in (`context`).

pub mod admission;
pub mod context;

// The budget itself is its own crate (`shared/deadline`): what follows
// builds on it.
pub use meridian_deadline::{
    answer_reserve, BudgetConfig, BudgetConfigError, InvalidTimeout, DEFAULT_BUDGET,
    DEFAULT_MAX_BUDGET,
};
pub use meridian_deadline::{config, deadline, propagation, request_start, steps};
