//! What the gateway's steps answer with besides their decision: a refusal
//! (the gateway's own problem, or a service's answer passed on), and what a
//! call spent, which the answer's headers report.

use std::time::Duration;

use meridian_platform::http::prelude::*;
use meridian_platform::http::upstream::CallOutcome;
use meridian_platform::Problem;

/// What one call spent, as the answer's headers report it.
#[derive(Debug, Clone, Copy)]
pub struct CallSpent {
    /// Wall time, backoff included.
    pub took: Duration,
    /// Attempts made.
    pub attempts: u32,
    /// Whether the shared retry budget refused a retry.
    pub retry_refused: bool,
}

impl CallSpent {
    /// What `call` spent.
    pub fn of(call: &CallOutcome) -> Self {
        Self {
            took: call.took,
            attempts: call.attempts,
            retry_refused: call.retry_refused,
        }
    }
}

/// An answer that is not a success from the gateway's own flow.
#[derive(Debug)]
pub enum Refusal {
    /// The gateway's own problem.
    Problem(Problem),
    /// A downstream's answer, passed on as it came.
    Upstream(Box<Response>),
}

impl From<Problem> for Refusal {
    fn from(p: Problem) -> Self {
        Self::Problem(p)
    }
}
