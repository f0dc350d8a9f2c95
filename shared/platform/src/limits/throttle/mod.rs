//! Throttle at the gateway: refuse early and cheaply what cannot finish,
//! in proportion, never everything.
//!
//! Two signals per route, kept in the shared key-value store in short
//! windows (250 ms, and the previous one weighed by its overlap), read in
//! one batch before any call:
//!
//! - **Throttling in proportion to what finishes** (Google SRE's adaptive
//!   throttling, turned on the gateway's own answers): of the requests
//!   admitted in the window, `finished` were answered in time: without
//!   running out of budget, and within half of it by the gateway's clock
//!   (resilience4j's slow-call rate). The half is the margin for what the
//!   gateway cannot see — time a request queued in the runtime before its
//!   instance ran, and its answer after — so throttling starts while
//!   requests are getting slow, before the client sees them late. A new request is refused with probability
//!   `max(0, (admitted − K·finished) / (admitted + 1))`, capped at
//!   `max_reject`, 90 % (Envoy's admission control caps at 80 % by
//!   default, Finagle's NackAdmissionFilter at 75 %): overload is shed in proportion, and
//!   some requests always go through, so the window keeps learning and
//!   goodput comes back by itself when the overload ends — no metastable
//!   state. Only running out of budget counts against a route: a
//!   downstream's own failure is the breaker's, a 4xx the client's.
//! - **A concurrency cap from Little's law**: the requests in flight are
//!   the time the window's requests took divided by the window's length;
//!   the concurrency at which a request still finishes within half its
//!   budget is the rate at which requests finish times that half. Past
//!   it, the excess share is refused (`1 − X·target / L`, same cap).
//!   The throttle above tolerates a fifth of the requests being slow, so
//!   it settles where the host is just past saturation — where an
//!   arrival stream that does not slow down (an open loop) queues
//!   without end before the gateway runs; the cap settles where
//!   requests are in time, so the host completes (serves or refuses) as
//!   fast as requests arrive.
//! - **Cost history**: the mean time a finished request of the route took.
//!   A request whose remaining budget is below it is answered at once
//!   (504 `deadline_exceeded`): it would most likely be thrown away after
//!   spending other requests' capacity. With a trusted front proxy's
//!   arrival stamp (`X-Request-Start`), time queued before the gateway ran
//!   counts, so this refuses the requests that waited too long.
//!
//! The healthy path: one batch read per request and one increment per
//! window written (the route's sampled: one request in `sample` is
//! written, counting for `sample`; the tenant's every time), made after the
//! answer has gone. The store failing admits everything.

use std::time::Duration;

mod config;

pub use config::ThrottleConfig;

use crate::counts::{opened_window, Counters};
use crate::time::{duration_ms, UnixMillis};

/// What the throttle decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleVerdict {
    /// Go ahead.
    Yes,
    /// Refused in proportion to the route's recent overload: answer 503
    /// at once.
    Throttled {
        /// The chance it was refused with.
        chance: f64,
        /// What a finished request of the route recently took, when any
        /// finished: the refusal is held no longer than that.
        cost: Option<Duration>,
    },
    /// The budget left is below what the route recently cost: answer 504
    /// at once (that cost).
    TooLittleBudget(Duration),
}

/// What the window says about one route.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RouteLoad {
    /// Requests admitted.
    pub admitted: f64,
    /// ThrottleVerdict requests answered without running out of budget.
    pub finished: f64,
    /// Their total time, milliseconds.
    pub finished_ms: f64,
    /// The total time of the ones that ran out of budget, milliseconds.
    pub late_ms: f64,
}

impl RouteLoad {
    /// The chance a new request is refused (`config`'s formula and cap).
    pub fn reject_chance(&self, config: &ThrottleConfig) -> f64 {
        if self.admitted < f64::from(config.min_volume) {
            return 0.0;
        }
        ((self.admitted - config.k * self.finished) / (self.admitted + 1.0))
            .clamp(0.0, config.max_reject)
    }

    /// The chance a new request is refused for the route's concurrency:
    /// Little's law. With `W` the window, the requests in flight are
    /// `L = (finished_ms + late_ms) / W` and the rate they finish at
    /// `X = finished / W`; within `target` each, at most `X · target`
    /// may be in flight, and the excess share `1 − X · target / L` is
    /// refused (`config`'s cap). `W` cancels out.
    pub fn concurrency_chance(&self, target: Duration, config: &ThrottleConfig) -> f64 {
        if self.admitted < f64::from(config.min_volume) {
            return 0.0;
        }
        let busy = self.finished_ms + self.late_ms;
        let allowed = self.finished * target.as_secs_f64() * 1_000.0;
        if busy <= allowed {
            return 0.0;
        }
        (1.0 - allowed / busy).clamp(0.0, config.max_reject)
    }

    /// The larger of the two refusal chances for a request that has
    /// `remaining` budget.
    fn refusal_chance(&self, remaining: Duration, config: &ThrottleConfig) -> f64 {
        let target = config.in_time(remaining);
        self.reject_chance(config)
            .max(self.concurrency_chance(target, config))
    }

    /// The mean time a finished request took, when any finished.
    pub fn mean_cost(&self) -> Option<Duration> {
        (self.finished >= 1.0)
            .then(|| Duration::from_secs_f64(self.finished_ms / self.finished / 1_000.0))
    }
}

/// What is counted per window: the requests admitted, and the late ones
/// among them, each with the milliseconds they took packed into the same
/// counter ([`pack`]), so that a request in time is one increment per
/// window. Late requests are counted, not finished ones, so a write the
/// store loses only ever makes the route look healthier: the throttle fails
/// open.
const KINDS: [&str; 2] = ["admitted", "late"];

/// The low bits of a window's counter that hold the count; the rest hold
/// the milliseconds. 2^24 requests and 2^39 ms (over 17 years of request
/// time) per window: a window is a fraction of a second.
const COUNT_BITS: u32 = 24;

/// `count` requests that took `ms` in all, as one counter's increment:
/// increments of packed values add up to the packed sums.
fn pack(count: i64, ms: i64) -> i64 {
    count.saturating_add(ms.saturating_mul(1 << COUNT_BITS))
}

/// A packed counter's count and milliseconds (a negative one, which no
/// increment makes, as nothing).
fn unpack(value: i64) -> (i64, i64) {
    let value = value.max(0);
    (value & ((1 << COUNT_BITS) - 1), value >> COUNT_BITS)
}

/// Throttle of one route (method and template) at the gateway, for one
/// tenant when the request names one.
pub struct Throttle<'a, K: Counters> {
    counters: &'a K,
    config: ThrottleConfig,
    prefix: String,
    /// The tenant's own window of the route, beside the route's.
    tenant: Option<String>,
    /// Whether identity vouched for the caller (its resolution is
    /// remembered): only then is the tenant's window read for it.
    vouched: bool,
}

impl<'a, K: Counters> Throttle<'a, K> {
    /// Throttle of requests to `route` (`GET /v1/{tenant}/residents`).
    pub fn new(counters: &'a K, config: ThrottleConfig, route: &str) -> Self {
        Self {
            counters,
            config,
            prefix: format!("meridian/admit/{route}"),
            tenant: None,
            vouched: false,
        }
    }

    /// The same, for the tenant `slug`'s requests: they are also counted
    /// in a window of their own.
    pub fn for_tenant(self, slug: &str) -> Self {
        let tenant = Some(format!("{}/tenant/{slug}", self.prefix));
        Self { tenant, ..self }
    }

    /// The same, for a caller identity vouched for (or not).
    pub fn vouched(self, vouched: bool) -> Self {
        Self { vouched, ..self }
    }

    fn window_ms(&self) -> u64 {
        u64::try_from(self.config.window.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn key(prefix: &str, epoch: u64, kind: &str) -> String {
        format!("{prefix}/{epoch}/{kind}")
    }

    /// The windows read: the route's, then the tenant's when there is one.
    fn prefixes(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.prefix.as_str()).chain(self.tenant.as_deref())
    }

    /// The keys [`Self::load`] reads at `now` (none when off): the route's
    /// window, now and before, then the tenant's.
    pub fn read_keys(&self, now: UnixMillis) -> Vec<String> {
        if !self.config.enabled {
            return Vec::new();
        }
        let epoch = now.as_millis() / self.window_ms();
        let mut keys = Vec::with_capacity(2 * 2 * KINDS.len());
        for prefix in self.prefixes() {
            for e in [epoch, epoch.saturating_sub(1)] {
                keys.extend(KINDS.iter().map(|k| Self::key(prefix, e, k)));
            }
        }
        keys
    }

    /// The route's window at `now`, and the tenant's (empty when there is
    /// none), in one read (empty when off or when the store cannot be read).
    pub fn load(&self, now: UnixMillis) -> (RouteLoad, RouteLoad) {
        let empty = (RouteLoad::default(), RouteLoad::default());
        if !self.config.enabled {
            return empty;
        }
        let Ok(values) = self.counters.read(&self.read_keys(now)) else {
            return empty;
        };
        let into = (now.as_millis() % self.window_ms()) as f64 / self.window_ms() as f64;
        let weigh = |now: i64, before: i64| now.max(0) as f64 + before.max(0) as f64 * (1.0 - into);
        let window = |values: &[i64]| {
            let [admitted, late, admitted_before, late_before] = values[..] else {
                return RouteLoad::default();
            };
            let ((admitted, all_ms), (late, late_ms)) = (unpack(admitted), unpack(late));
            let ((admitted_before, all_ms_before), (late_before, late_ms_before)) =
                (unpack(admitted_before), unpack(late_before));
            let admitted = weigh(admitted, admitted_before);
            let late_ms = weigh(late_ms, late_ms_before);
            RouteLoad {
                admitted,
                finished: (admitted - weigh(late, late_before)).max(0.0),
                finished_ms: (weigh(all_ms, all_ms_before) - late_ms).max(0.0),
                late_ms,
            }
        };
        let mut windows = values.chunks(2 * KINDS.len()).map(window);
        let route = windows.next().unwrap_or_default();
        (route, windows.next().unwrap_or_default())
    }

    /// Whether a request with `remaining` budget may start at `now`;
    /// `roll` is a random number (the throttle's draw).
    pub fn judge(&self, now: UnixMillis, remaining: Duration, roll: u64) -> ThrottleVerdict {
        if !self.config.enabled {
            return ThrottleVerdict::Yes;
        }
        let (route, tenant) = self.load(now);
        let cost = route.mean_cost();
        if let Some(cost) = cost.filter(|&cost| remaining < cost) {
            return ThrottleVerdict::TooLittleBudget(cost);
        }
        if !self.config.throttle {
            return ThrottleVerdict::Yes;
        }
        let chance = self.chance(&route, &tenant, remaining);
        let draw = (roll % 1_000_000) as f64 / 1_000_000.0;
        if draw < chance {
            ThrottleVerdict::Throttled { chance, cost }
        } else {
            ThrottleVerdict::Yes
        }
    }

    /// Records how an admitted request ended: `finished` unless it ran out
    /// of budget, after `took`. The route's window is sampled: written
    /// when `roll` picks it (one in `sample`), counting for `sample`. The
    /// tenant's is written every time (a quiet tenant must not look
    /// absent for want of a sample). The first write to a window forgets
    /// the windows before the previous one ([`opened_window`]).
    pub fn record(&self, now: UnixMillis, finished: bool, took: Duration, roll: u64) {
        if !self.config.enabled {
            return;
        }
        let sample = u64::from(self.config.sample.max(1));
        let tenant_sample = u64::from(self.config.tenant_sample.max(1));
        let epoch = now.as_millis() / self.window_ms();
        let sampled = (roll % sample == 0).then_some((self.prefix.as_str(), sample));
        // The tenant's draw from the roll's other half, apart from the route's.
        let tenant = self
            .tenant
            .as_deref()
            .filter(|_| roll.rotate_right(32) % tenant_sample == 0)
            .map(|prefix| (prefix, tenant_sample));
        for (prefix, weight) in sampled.into_iter().chain(tenant) {
            let weight = i64::try_from(weight).unwrap_or(1);
            let key = |kind| Self::key(prefix, epoch, kind);
            let ms = i64::try_from(duration_ms(took))
                .unwrap_or(i64::MAX)
                .saturating_mul(weight);
            let counted = pack(weight, ms);
            let first = self.counters.add(&key("admitted"), counted) == Ok(counted);
            if !finished {
                let _ = self.counters.add(&key("late"), counted);
            }
            if first {
                opened_window(self.counters, prefix, epoch, |e| {
                    KINDS.iter().map(|k| Self::key(prefix, e, k)).collect()
                });
            }
        }
    }

    /// The chance a request is refused. A caller identity has not vouched
    /// for meets the route's figures alone, whatever slug it names: the
    /// tenant's window is its callers', and a stranger's answers must tell
    /// nothing of it (its exemption, its load). For a vouched caller, per
    /// tenant, so that one tenant's flood does not refuse another's
    /// requests: a tenant with volume in the window (`min_volume`) is
    /// refused in proportion to whichever says more, its own lateness or
    /// the route's; a quiet tenant (fewer requests than that, none
    /// included: its first request after a pause) is not refused for the
    /// route's lateness — its rate limit is what bounds it.
    fn chance(&self, route: &RouteLoad, tenant: &RouteLoad, remaining: Duration) -> f64 {
        let route_chance = route.refusal_chance(remaining, &self.config);
        if self.tenant.is_none() || !self.vouched {
            return route_chance;
        }
        if tenant.admitted < f64::from(self.config.min_volume) {
            return 0.0;
        }
        tenant
            .refusal_chance(remaining, &self.config)
            .max(route_chance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::LocalCounters;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000 + ms)
    }

    fn exact() -> ThrottleConfig {
        ThrottleConfig {
            sample: 1,
            ..ThrottleConfig::default()
        }
    }

    const MS: Duration = Duration::from_millis(1);
    const BUDGET: Duration = Duration::from_millis(100);

    /// Throttle of the residents list, every request written.
    fn residents(counters: &LocalCounters) -> Throttle<'_, LocalCounters> {
        Throttle::new(counters, exact(), "GET /v1/{tenant}/residents")
    }

    /// Rolls spread evenly over the draw's range.
    fn rolls(n: u64) -> impl Iterator<Item = u64> {
        (0..n).map(move |i| i * 1_000_000 / n)
    }

    /// 300 requests: a third finish, in 20 ms; the rest run out of their
    /// 100 ms.
    fn a_third_finish(a: &Throttle<'_, LocalCounters>) {
        for i in 0..300 {
            match i % 3 == 0 {
                true => a.record(at(i), true, 20 * MS, 0),
                false => a.record(at(i), false, 100 * MS, 0),
            }
        }
    }

    #[test]
    fn a_route_whose_requests_finish_is_never_throttled() {
        let a = residents(LocalCounters::leaked());
        for i in 0..500 {
            a.record(at(i), true, 5 * MS, 0);
        }
        assert!(rolls(1_000).all(|roll| a.judge(at(600), BUDGET, roll) == ThrottleVerdict::Yes));
    }

    #[test]
    fn overload_is_shed_in_proportion_and_never_all_of_it() {
        let counters = LocalCounters::default();
        let a = residents(&counters);
        // A third finish, in 20 ms; the rest run out of their 100 ms. The
        // throttle: (300 − 1.25·100) / 301 ≈ 58 %; the cap: in flight
        // (100·20 + 200·100) ms per window, allowed 100 finishing × 50 ms,
        // so 1 − 5,000 / 22,000 ≈ 77 % refused (the windows' weighing
        // keeps the shares).
        a_third_finish(&a);
        let (load, _) = a.load(at(300));
        assert!((0.57..0.59).contains(&load.reject_chance(&exact())));
        assert!((0.76..0.78).contains(&load.concurrency_chance(50 * MS, &exact())));
        let refused = rolls(1_000)
            .filter(|&roll| {
                matches!(
                    a.judge(at(300), BUDGET, roll),
                    ThrottleVerdict::Throttled { .. }
                )
            })
            .count();
        assert!((750..=790).contains(&refused), "{refused}");
        // None finish at all: still only the cap is refused.
        let counters = LocalCounters::default();
        let a = residents(&counters);
        for i in 0..300 {
            a.record(at(i), false, 100 * MS, 0);
        }
        let admitted = rolls(1_000)
            .filter(|&roll| a.judge(at(300), BUDGET, roll) == ThrottleVerdict::Yes)
            .count();
        assert_eq!(admitted, 100, "the cap leaves a tenth through");
    }

    /// Behind a front proxy that bounds the work (`admission = "proxy"`):
    /// the same overloaded window refuses nothing in proportion, and a
    /// request whose budget left is below what the route's requests take
    /// (it queued at the proxy) is still refused at once.
    #[test]
    fn behind_a_proxy_only_the_cost_history_refuses() {
        let counters = LocalCounters::default();
        let proxied = ThrottleConfig {
            sample: 1,
            ..ThrottleConfig::parse(Some("proxy")).unwrap()
        };
        let a = Throttle::new(&counters, proxied, "GET /v1/{tenant}/residents");
        a_third_finish(&a);
        assert!(rolls(1_000).all(|roll| a.judge(at(300), BUDGET, roll) == ThrottleVerdict::Yes));
        assert!(matches!(
            a.judge(at(300), 10 * MS, 0),
            ThrottleVerdict::TooLittleBudget(_)
        ));
        // The same window with the throttle on refuses most of it.
        let throttled = Throttle::new(&counters, exact(), "GET /v1/{tenant}/residents");
        assert!(
            rolls(1_000).any(|roll| throttled.judge(at(300), BUDGET, roll) != ThrottleVerdict::Yes)
        );
        assert!(ThrottleConfig::parse(Some("maybe"))
            .unwrap_err()
            .contains("on, off or proxy"));
    }

    #[test]
    fn past_the_concurrency_littles_law_allows_the_excess_is_refused() {
        let a = residents(LocalCounters::leaked());
        // 200 requests, every one in time, each 40 ms: a request with a
        // 100 ms budget (in time within 50) is never refused; one with
        // 60 ms left (in time within 30) is, for the excess concurrency:
        // 1 − 30 / 40 = 25 %.
        for i in 0..200 {
            a.record(at(i), true, 40 * MS, 0);
        }
        let refused = |remaining| {
            rolls(1_000)
                .filter(|&roll| {
                    matches!(
                        a.judge(at(200), remaining, roll),
                        ThrottleVerdict::Throttled { .. }
                    )
                })
                .count()
        };
        assert_eq!(refused(BUDGET), 0);
        assert!(
            (230..=270).contains(&refused(60 * MS)),
            "{}",
            refused(60 * MS)
        );
    }

    #[test]
    fn the_cap_fails_open_when_the_times_are_lost() {
        // ThrottleVerdict and late counted, no time: nothing is in flight that
        // the cap could see, so only the throttle speaks.
        let load = RouteLoad {
            admitted: 100.0,
            finished: 100.0,
            finished_ms: 0.0,
            late_ms: 0.0,
        };
        assert_eq!(load.concurrency_chance(50 * MS, &exact()), 0.0);
        let few = RouteLoad {
            admitted: 19.0,
            finished: 0.0,
            finished_ms: 0.0,
            late_ms: 1_900.0,
        };
        assert_eq!(
            few.concurrency_chance(50 * MS, &exact()),
            0.0,
            "below the volume"
        );
    }

    #[test]
    fn a_few_requests_never_throttle() {
        let a = residents(LocalCounters::leaked());
        for i in 0..19 {
            a.record(at(i), false, 100 * MS, 0);
        }
        assert_eq!(a.judge(at(20), BUDGET, 0), ThrottleVerdict::Yes);
    }

    #[test]
    fn the_overload_forgotten_two_windows_on_admits_everything_again() {
        let a = residents(LocalCounters::leaked());
        for i in 0..300 {
            a.record(at(i), false, 100 * MS, 0);
        }
        // Nothing recorded since (every request refused, say): the window
        // slides on its own, so nothing stays refused.
        assert!(rolls(100).all(|roll| a.judge(at(2_000), BUDGET, roll) == ThrottleVerdict::Yes));
    }

    #[test]
    fn half_a_second_after_an_overload_ends_everything_is_admitted_again() {
        let a = residents(LocalCounters::leaked());
        for i in 0..1_000 {
            a.record(at(i), false, 100 * MS, 0);
        }
        assert!(
            rolls(100).any(|roll| a.judge(at(1_000), BUDGET, roll) != ThrottleVerdict::Yes),
            "refusing while it lasts"
        );
        assert!(rolls(100).all(|roll| a.judge(at(1_500), BUDGET, roll) == ThrottleVerdict::Yes));
    }

    #[test]
    fn one_tenants_flood_does_not_refuse_a_quiet_tenants_requests() {
        let counters = LocalCounters::default();
        let route = "GET /v1/{tenant}/residents";
        let flood = || Throttle::new(&counters, exact(), route).for_tenant("flood");
        let quiet = || Throttle::new(&counters, exact(), route).for_tenant("quiet");
        // The flood: 200 requests in the window, none in time; the quiet
        // tenant: 5, in time (they too would be late on a starved host).
        for i in 0..200 {
            flood().record(at(i), false, 100 * MS, 0);
        }
        for i in 0..5 {
            quiet().record(at(i * 40), i % 2 == 0, 60 * MS, 0);
        }
        let refused = |a: Throttle<'_, LocalCounters>| {
            rolls(1_000)
                .filter(|&roll| {
                    matches!(
                        a.judge(at(220), BUDGET, roll),
                        ThrottleVerdict::Throttled { .. }
                    )
                })
                .count()
        };
        assert_eq!(
            refused(quiet().vouched(true)),
            0,
            "the quiet tenant's caller is not shed"
        );
        assert!(
            refused(flood().vouched(true)) >= 850,
            "the flood is shed up to the cap"
        );
        // A slug with nothing in the window meets the route's throttle...
        let stranger = || Throttle::new(&counters, exact(), route).for_tenant("stranger");
        assert!(refused(stranger()) >= 850);
        // ...unless identity vouched for its caller: a tenant's first
        // request in a while is not shed for another tenant's flood.
        assert_eq!(refused(stranger().vouched(true)), 0);
        // A caller nobody vouched for is judged by the route alone, whatever
        // slug it names: the quiet tenant's exemption is its callers', and
        // a stranger's answers tell nothing of a tenant's window.
        let route_alone = refused(Throttle::new(&counters, exact(), route));
        assert_eq!(refused(quiet()), route_alone);
        assert_eq!(refused(flood()), route_alone);
        assert_eq!(refused(stranger()), route_alone);
        // And the route alone (a request that names no tenant) as before.
        assert!(refused(Throttle::new(&counters, exact(), route)) >= 850);
    }

    #[test]
    fn a_tenant_with_volume_is_shed_for_the_routes_lateness_too() {
        let counters = LocalCounters::default();
        let route = "GET /v1/{tenant}/residents";
        let a = || Throttle::new(&counters, exact(), route).for_tenant("a");
        let b = || Throttle::new(&counters, exact(), route).for_tenant("b");
        // Both send 100; a's are late, b's finish: the route is half late.
        for i in 0..100 {
            a().record(at(i), false, 100 * MS, 0);
            b().record(at(i), true, 40 * MS, 0);
        }
        let refused = rolls(1_000)
            .filter(|&roll| {
                matches!(
                    b().judge(at(120), BUDGET, roll),
                    ThrottleVerdict::Throttled { .. }
                )
            })
            .count();
        // The route's throttle: (200 − 1.25·100) / 201 ≈ 37 %; its cap,
        // in flight 100·100 + 100·40 ms, allowed 100 × 50 ms: 64 %.
        assert!((610..=670).contains(&refused), "{refused}");
    }

    #[test]
    fn a_budget_below_the_routes_recent_cost_is_refused_at_once() {
        let a = Throttle::new(
            LocalCounters::leaked(),
            exact(),
            "POST /v1/{tenant}/invoices",
        );
        for i in 0..10 {
            a.record(at(i), true, 40 * MS, 0);
        }
        assert_eq!(
            a.judge(at(20), 30 * MS, 0),
            ThrottleVerdict::TooLittleBudget(40 * MS)
        );
        assert_eq!(a.judge(at(20), 45 * MS, 0), ThrottleVerdict::Yes);
    }

    #[test]
    fn sampled_records_count_for_the_ones_not_written() {
        let counters = LocalCounters::default();
        let a = Throttle::new(
            &counters,
            ThrottleConfig::default(),
            "GET /v1/{tenant}/residents",
        );
        for roll in 0..400 {
            a.record(at(0), true, 10 * MS, roll);
        }
        let (load, _) = a.load(at(0));
        assert_eq!((load.admitted, load.finished), (400.0, 400.0));
        assert_eq!(load.mean_cost(), Some(10 * MS));
        assert_eq!(
            counters.len(),
            2,
            "the admitted with their time in one counter (and the marker of \
             the window it opened); nothing was late"
        );
    }

    /// Sampled for a store with a write quota (`count_sample` 16): a
    /// tenant's 1,600 requests make about 100 writes to its window and
    /// 25 to the route's, and both windows still count all 1,600.
    #[test]
    fn a_count_sample_bounds_the_writes_and_keeps_the_counts() {
        let counters = LocalCounters::default();
        let config = ThrottleConfig::default().sampled(16);
        assert_eq!((config.sample, config.tenant_sample), (64, 16));
        let a = Throttle::new(&counters, config, "GET /v1/{tenant}/residents").for_tenant("acme");
        let mut roll = 0x2545_F491_4F6C_DD1D_u64;
        for _ in 0..1_600 {
            roll = roll
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            a.record(at(0), true, 10 * MS, roll >> 3);
        }
        let writes = counters.writes();
        assert!(
            (80..=190).contains(&writes),
            "{writes} writes for 1,600 requests"
        );
        let (load, tenant) = a.load(at(0));
        assert!(
            (1_000.0..=2_300.0).contains(&load.admitted),
            "route {}",
            load.admitted
        );
        assert!(
            (1_200.0..=2_000.0).contains(&tenant.admitted),
            "tenant {}",
            tenant.admitted
        );
    }

    /// A tenant whose requests come further apart than two windows: each
    /// opens a window and forgets the older ones, so the store keeps at
    /// most two windows of the route's and the tenant's counts.
    #[test]
    fn requests_far_apart_leave_at_most_two_windows_in_the_store() {
        let counters = LocalCounters::default();
        let a = Throttle::new(&counters, exact(), "GET /v1/{tenant}/residents").for_tenant("acme");
        for i in 0..40 {
            a.record(at(i * 1_000), i % 2 == 0, 10 * MS, 0);
        }
        let stored = counters.keys();
        for prefix in [
            "meridian/admit/GET /v1/{tenant}/residents/",
            "meridian/admit/GET /v1/{tenant}/residents/tenant/acme/",
        ] {
            let windows: std::collections::BTreeSet<&str> = stored
                .iter()
                .filter_map(|k| k.strip_prefix(prefix)?.split('/').next())
                .filter(|e| e.bytes().all(|b| b.is_ascii_digit()))
                .collect();
            assert!(
                !windows.is_empty() && windows.len() <= 2,
                "{prefix}: {stored:?}"
            );
        }
    }

    #[test]
    fn a_request_in_time_is_one_write_a_late_one_two() {
        let counters = LocalCounters::default();
        let config = ThrottleConfig {
            sample: 1,
            ..ThrottleConfig::default()
        };
        let a = Throttle::new(&counters, config, "GET /v1/{tenant}/residents");
        // The route's count and the marker of the window it opened.
        a.record(at(0), true, 10 * MS, 0);
        assert_eq!(counters.len(), 2);
        a.record(at(0), false, 90 * MS, 0);
        assert_eq!(counters.len(), 3);
        let (load, _) = a.load(at(0));
        assert_eq!((load.admitted, load.finished), (2.0, 1.0));
        assert_eq!((load.finished_ms, load.late_ms), (10.0, 90.0));
    }

    #[test]
    fn packed_counts_and_times_add_up_and_come_apart() {
        let sum = pack(3, 250) + pack(16, 1_600) + pack(1, 9_999);
        assert_eq!(unpack(sum), (20, 11_849));
        assert_eq!(
            unpack(pack((1 << COUNT_BITS) - 1, 0)),
            ((1 << COUNT_BITS) - 1, 0)
        );
        assert_eq!(unpack(-5), (0, 0));
    }

    #[test]
    fn off_it_admits_everything_and_writes_nothing() {
        let counters = LocalCounters::default();
        let config = ThrottleConfig::parse(Some("off")).unwrap();
        let a = Throttle::new(&counters, config, "GET /v1/{tenant}/residents");
        a.record(at(0), false, 100 * MS, 0);
        assert_eq!(a.judge(at(1), MS, 0), ThrottleVerdict::Yes);
        assert!(counters.is_empty());
        assert!(ThrottleConfig::parse(Some("maybe")).is_err());
    }

    /// A store that loses writes (a file-backed store under contention)
    /// makes a route look healthier, never sicker: here every write but
    /// the admitted count is lost.
    #[test]
    fn lost_writes_fail_open() {
        struct Losing(LocalCounters);
        impl Counters for Losing {
            fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
                if key.ends_with("/admitted") {
                    self.0.add(key, delta)
                } else {
                    Err("database is locked".into())
                }
            }
            fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
                self.0.read(keys)
            }
            fn set(&self, key: &str, value: i64) -> Result<(), String> {
                self.0.set(key, value)
            }
            fn forget(&self, keys: &[String]) -> Result<(), String> {
                self.0.forget(keys)
            }
        }
        let counters = Losing(LocalCounters::default());
        let a = Throttle::new(&counters, exact(), "GET /v1/{tenant}/residents");
        for i in 0..300 {
            a.record(at(i), true, 5 * MS, 0);
        }
        assert!(rolls(1_000).all(|roll| a.judge(at(300), BUDGET, roll) == ThrottleVerdict::Yes));
    }
}
