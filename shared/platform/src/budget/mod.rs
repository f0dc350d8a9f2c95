//! The request budget: how long a request may take (`config`), the
//! deadline it becomes (`deadline`), how it travels between hops
//! (`propagation`), how a service admits a request on it (`admission`), and
//! the context every step takes it in (`context`).

pub mod admission;
pub mod config;
pub mod context;
pub mod deadline;
pub mod propagation;
pub mod request_start;
pub mod steps;

pub use config::{
    BudgetConfig, BudgetConfigError, InvalidTimeout, DEFAULT_BUDGET, DEFAULT_MAX_BUDGET,
};
pub use steps::answer_reserve;
