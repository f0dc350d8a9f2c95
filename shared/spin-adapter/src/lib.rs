//! Meridian's thin adapter to Spin: budgeted outbound HTTP, a pollable
//! sleep, the counters in Spin's key-value store, variables, and turning
//! platform answers into Spin responses. Logic lives in `meridian-platform`;
//! this crate only connects it to the runtime.
#![forbid(unsafe_code)]

pub mod client;
pub mod convert;
pub mod counters;
pub mod jitter;
pub mod service;
pub mod timer;
pub mod vars;

pub use client::SpinHttp;
pub use jitter::RandomJitter;
/// The database backends on Spin: the store's (`meridian_store::spin`).
pub use meridian_store::spin as database;
pub use timer::{sleep, PollSleeper};

use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::SystemClock;

/// Spin as the runtime of a component's calls to other services.
pub struct Spin;

impl Calls for Spin {
    type Http = SpinHttp;
    type Clock = SystemClock;
    type Sleeper = PollSleeper;
    type Jitter = RandomJitter;
    type Counters = counters::SpinCounters;
}

impl Spin {
    /// The upstream caller of a service with a database of its own, whose
    /// counts are its failure memory alone: kept in that database when
    /// counts are in PostgreSQL ([`counters::SpinCounters::own`]).
    pub fn service_upstream() -> Upstream<Spin> {
        Upstream {
            counters: counters::SpinCounters::own(),
            ..Self::upstream()
        }
    }

    /// The upstream caller, proving itself with the `internal_token` variable.
    pub fn upstream() -> Upstream<Spin> {
        Upstream {
            http: SpinHttp::new(vars::call_key()),
            clock: SystemClock,
            sleeper: PollSleeper,
            jitter: RandomJitter,
            counters: counters::SpinCounters::default(),
            memory: vars::memory_config(),
        }
    }
}
