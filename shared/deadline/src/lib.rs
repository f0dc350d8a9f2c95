#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod config;
pub mod deadline;
pub mod hop;
pub mod propagation;
pub mod request_start;
pub mod steps;
pub mod time;

pub use config::{
    BudgetConfig, BudgetConfigError, InvalidTimeout, DEFAULT_BUDGET, DEFAULT_MAX_BUDGET,
};
pub use deadline::Deadline;
pub use hop::{BudgetSpent, HopBudget};
pub use propagation::BudgetHeaders;
pub use steps::answer_reserve;
pub use time::{Clock, ManualClock, SystemClock, UnixMillis};
