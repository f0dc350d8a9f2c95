//! Retries that are safe, bounded and visible.
//!
//! Why a budget and not just "three tries": a retry multiplies whatever the
//! call already costs, so it is allowed only while the request's deadline
//! can still fit a useful attempt after the backoff. Attempts are capped as
//! well, so one bad dependency cannot triple the load on itself. Nothing in
//! here decides *whether* an operation is safe to repeat: the call site picks
//! [`RetryPolicy::standard`] or [`RetryPolicy::once`] in plain sight.

mod classify;
mod policy;
mod run;

pub use classify::{classify_status, parse_retry_after, Verdict};
pub use policy::{Decision, GiveUp, Jitter, RetryPolicy};
pub use run::{run, run_gated, Attempted, Sleeper};
