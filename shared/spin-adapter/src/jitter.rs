//! Backoff jitter from the host's random source.

use meridian_platform::http::retry::Jitter;

/// Jitter drawn from `wasi:random` (through `getrandom`).
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomJitter;

impl Jitter for RandomJitter {
    fn next_u64(&mut self) -> u64 {
        // With no randomness available the backoff degrades to its ceiling,
        // which is still bounded by the budget.
        getrandom::u64().unwrap_or(u64::MAX)
    }
}
