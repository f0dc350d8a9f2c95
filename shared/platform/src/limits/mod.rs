//! The overload throttle ([`throttle`]) and per-tenant limits, so that
//! no tenant can take the others' capacity:
//! a request rate with a burst ([`rate`]) and a number of requests in
//! progress at once ([`concurrency`]), kept in the shared key-value store beside
//! the failure memory (each invocation is a fresh instance, so a limiter in
//! memory would start empty on every request).
//!
//! The model is Stripe's request-rate limiter; the counting is the
//! sliding-window counter (Cloudflare's): at most `quota` requests in any
//! `window`, estimated from the current window's count and the previous
//! one's, weighed by how much of it still overlaps. Its average rate is
//! `quota / window` and its burst `quota`.
//!
//! Where it sits: the gateway reads the tenant's window before resolving
//! the tenant and judges it once identity vouched for the caller, so a
//! caller without a valid token is a 401 and a slug spends nobody's quota
//! or reveals its load; a credential refused in a window is marked and
//! refused again before resolution. Racing invocations may each pass the
//! check before any of them counts: a tenant can overshoot its quota by at
//! most the number of its requests in flight at once.

pub mod concurrency;
pub mod policy;
pub mod rate;
pub mod throttle;

pub use concurrency::{Busy, ConcurrencyLimiter, ConcurrencySettings, Seen, Slot};
pub use policy::{RatePolicy, RateSettings};
pub use rate::{RateLimiter, RateVerdict};
pub use throttle::{Throttle, ThrottleConfig, ThrottleVerdict};
