//! Pollable-based timers: a future that wakes the Spin executor when a
//! monotonic-clock instant passes, without blocking the instance.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use meridian_platform::http::retry::Sleeper;
use spin_executor::CancelOnDropToken;
use wasi::clocks::monotonic_clock;

/// Resolves once the monotonic clock reaches its instant.
pub struct Timer {
    due: monotonic_clock::Instant,
    registration: Option<CancelOnDropToken>,
}

impl Timer {
    /// A timer that fires after `d`.
    pub fn after(d: Duration) -> Self {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Self {
            due: monotonic_clock::now().saturating_add(nanos),
            registration: None,
        }
    }
}

impl Future for Timer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if monotonic_clock::now() >= self.due {
            self.registration = None;
            return Poll::Ready(());
        }
        let pollable = monotonic_clock::subscribe_instant(self.due);
        self.registration =
            Some(spin_executor::push_waker_and_get_token(pollable, cx.waker().clone()).into());
        Poll::Pending
    }
}

/// Waits `d` without blocking the executor.
pub fn sleep(d: Duration) -> Timer {
    Timer::after(d)
}

/// The backoff sleeper for retry loops. `retry::run` bounds every wait by
/// the request deadline, so no backoff outlives the budget.
#[derive(Debug, Default, Clone, Copy)]
pub struct PollSleeper;

impl Sleeper for PollSleeper {
    async fn sleep(&self, d: Duration) {
        sleep(d).await;
    }
}
