//! Throttle's settings, and the Spin variable that chooses them.

use std::time::Duration;

/// The overload throttle's settings (Spin variable `admission`: `on`,
/// `off`, `proxy`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleConfig {
    /// Off: every request is admitted, nothing is read or written.
    pub enabled: bool,
    /// Whether it refuses in proportion to overload (the throttle and the
    /// concurrency cap). Off behind a trusted front proxy that already
    /// bounds the work (`admission = "proxy"`): two sheds stacked refuse
    /// what could have been served, so only the cost history refuses —
    /// a request whose budget left, counted from the proxy's arrival
    /// stamp, is below what the route's requests take.
    pub throttle: bool,
    /// The window the counts cover. Short, so that when an overload ends
    /// its memory is gone within half a second (at 1 s, goodput in the
    /// first 2 s after a flood was half of what it was before): the
    /// throttle refuses most requests while it remembers, and the few it
    /// admits cannot outweigh the flood's counts.
    pub window: Duration,
    /// How many admitted requests per finished one are let through before
    /// throttling starts (SRE's K; 1.25: throttle once fewer than four in
    /// five finish).
    pub k: f64,
    /// The most it ever refuses.
    pub max_reject: f64,
    /// ThrottleVerdict requests in the window before it may refuse any.
    pub min_volume: u32,
    /// One request in this many is written to the route's window,
    /// counting for all of them.
    pub sample: u32,
    /// One request in this many is written to the tenant's window (1:
    /// each, so that a quiet tenant never looks absent for want of a
    /// sample; more only for a store with a write quota, `count_sample`).
    pub tenant_sample: u32,
    /// The share of its budget within which a request counts as finished
    /// in time (resilience4j's slow-call threshold): the rest is the
    /// margin for what the gateway cannot see, time queued before its
    /// instance ran and the answer's way back.
    pub in_time_share: f64,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            throttle: true,
            window: Duration::from_millis(250),
            k: 1.25,
            max_reject: 0.9,
            min_volume: 20,
            sample: 4,
            tenant_sample: 1,
            in_time_share: 0.5,
        }
    }
}

impl ThrottleConfig {
    /// The same, writing one request in `count_sample` to the tenant's
    /// window and one in `sample × count_sample` to the route's, each for
    /// as many as it stands for: for a key-value store with a write quota.
    pub fn sampled(self, count_sample: u32) -> Self {
        let n = count_sample.max(1);
        Self {
            sample: self.sample.saturating_mul(n),
            tenant_sample: n,
            ..self
        }
    }

    /// From the variable's value (`None`: the default, on): `on`, `off`,
    /// or `proxy` — behind a trusted front proxy that caps the requests in
    /// progress and queues the rest (deploy/haproxy/): the cost history
    /// alone, no throttle.
    pub fn parse(raw: Option<&str>) -> Result<Self, String> {
        match raw.map(str::trim) {
            None | Some("on") => Ok(Self::default()),
            Some("off") => Ok(Self {
                enabled: false,
                ..Self::default()
            }),
            Some("proxy") => Ok(Self {
                throttle: false,
                ..Self::default()
            }),
            Some(other) => Err(format!("admission must be on, off or proxy, not {other:?}")),
        }
    }

    /// The time within which a request with `budget` counts as finished.
    pub fn in_time(&self, budget: Duration) -> Duration {
        budget.mul_f64(self.in_time_share)
    }
}
