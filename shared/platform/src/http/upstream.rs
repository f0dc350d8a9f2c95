//! Calls to other services: the HTTP client with the clock, sleeper and
//! jitter its retry loop needs, so that a call site only says which policy.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::budget::context::RequestContext;
use crate::http::memory::{Admit, Counters, FailureMemory, MemoryConfig, Outcome};
use crate::http::retry::{self, Jitter, RetryPolicy, Sleeper};
use crate::http::{HttpClient, OutboundRequest, OutboundResponse, SendError};
use crate::log::journal::{self, CallRecord, Event};
use crate::log::route_template;
use crate::tenancy::cache::Entries;
use crate::time::{duration_ms, Clock};

/// What calls to other services run on, named once: Spin's client, clock,
/// sleeper and jitter in a component, fakes in tests. A component's types
/// take one parameter bounded by this (or by a trait extending it) instead
/// of four.
pub trait Calls {
    /// Outbound HTTP (raced against the budget).
    type Http: HttpClient;
    /// Wall clock.
    type Clock: Clock;
    /// Backoff sleeper.
    type Sleeper: Sleeper;
    /// Backoff jitter.
    type Jitter: Jitter + Clone;
    /// The shared key-value store: the failure memory's counters, and the
    /// resolution cache's entries.
    type Counters: Counters + Entries;
}

/// Everything needed to call another service under the budget.
pub struct Upstream<E: Calls> {
    /// Outbound HTTP (raced against the budget).
    pub http: E::Http,
    /// Wall clock.
    pub clock: E::Clock,
    /// Backoff sleeper.
    pub sleeper: E::Sleeper,
    /// Backoff jitter.
    pub jitter: E::Jitter,
    /// Failure memory shared by every invocation: the retry budget and the
    /// breaker (see [`crate::http::memory`]).
    pub counters: E::Counters,
    /// Its settings.
    pub memory: MemoryConfig,
}

/// The outcome of a call.
#[derive(Debug)]
pub struct Call {
    /// The last attempt's result.
    pub response: Result<OutboundResponse, SendError>,
    /// Attempts made.
    pub attempts: u32,
    /// Wall time spent, backoff included.
    pub took: Duration,
    /// Whether the shared retry budget refused a retry the policy allowed.
    pub retry_refused: bool,
}

impl<E: Calls> Upstream<E> {
    /// Sends `request` under `ctx`'s budget, repeating transient failures
    /// only as far as `policy` allows. The policy is the caller's statement
    /// of whether the call is safe to repeat.
    ///
    /// The call, its retries and the deadline it carries end at the hop's
    /// work deadline: a downstream that runs out answers (or is abandoned)
    /// while this hop still has its answer reserve.
    pub async fn call(
        &self,
        ctx: &RequestContext,
        policy: &RetryPolicy,
        request: OutboundRequest,
    ) -> Call {
        let ctx = &ctx.for_step();
        let started = self.clock.now();
        let mut jitter = self.jitter.clone();
        let (to, route) = target(&request.url);
        let memory = FailureMemory::new(&self.counters, self.memory, ctx.hop(), &to);
        let admitted = memory.admit(started);
        let roll = jitter.next_u64();
        let previous = RefCell::new(String::new());
        let refused = Cell::new(false);
        let outcome = if let Admit::Refuse(wait) = admitted {
            // History says this downstream is failing: answer now instead
            // of waiting out what it would do.
            journal::event(Event::CircuitOpen {
                to: to.clone(),
                retry_after_ms: duration_ms(wait),
            });
            retry::Attempted {
                last: Err(SendError::CircuitOpen(wait)),
                attempts: 0,
                gave_up: None,
            }
        } else {
            retry::run_gated(
                policy,
                ctx.deadline(),
                &self.clock,
                &self.sleeper,
                &mut jitter,
                |_| {
                    let allowed = memory.may_retry(self.clock.now());
                    if !allowed {
                        refused.set(true);
                        journal::event(Event::RetryRefused { to: to.clone() });
                    }
                    allowed
                },
                |attempt| {
                    let request = request.clone();
                    if attempt > 1 {
                        journal::event(Event::Retry {
                            to: to.clone(),
                            attempt,
                            after: previous.take(),
                        });
                    }
                    let (previous, memory) = (&previous, &memory);
                    // Only the first attempt of a probe decides the breaker.
                    let admitted = if attempt == 1 { admitted } else { Admit::Call };
                    if attempt == 1 {
                        memory.first_attempt(self.clock.now(), roll);
                    }
                    async move {
                        let response = self.http.send(ctx, request).await;
                        let verdict = match &response {
                            Ok(r) => r.verdict(),
                            Err(e) => e.verdict(),
                        };
                        memory.outcome(admitted, self.clock.now(), outcome_of(&response));
                        *previous.borrow_mut() = match &response {
                            Ok(r) => r.status.to_string(),
                            Err(e) => e.kind().to_owned(),
                        };
                        (response, verdict)
                    }
                },
            )
            .await
        };
        let took = self.clock.now().since(started);
        journal::call(CallRecord {
            to,
            method: request.method.clone(),
            route,
            attempts: outcome.attempts,
            status: outcome.last.as_ref().ok().map(|r| r.status),
            took_ms: duration_ms(took),
        });
        Call {
            response: outcome.last,
            attempts: outcome.attempts,
            took,
            retry_refused: refused.get(),
        }
    }
}

/// How an attempt ended, for the breaker: the downstream's own failures
/// count, running out of the shared budget says nothing about it.
fn outcome_of(response: &Result<OutboundResponse, SendError>) -> Outcome {
    match response {
        Ok(r) if r.status >= 500 && r.spent_the_budget() => Outcome::Ignored,
        Ok(r) if r.status >= 500 => Outcome::Failed,
        Ok(_) => Outcome::Succeeded,
        Err(e) if e.is_downstream_failure() => Outcome::Failed,
        Err(_) => Outcome::Ignored,
    }
}

/// Who a call to `url` is to, and its path as a template: the host's first
/// label for a Spin internal name (`identity.spin.internal` → `identity`),
/// else `host:port`.
fn target(url: &str) -> (String, String) {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let to = match authority.strip_suffix(".spin.internal") {
        Some(service) => service,
        None => authority,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    (to.to_owned(), route_template(None, path))
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn a_call_is_named_by_its_service_and_path_template() {
        let id = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
        assert_eq!(
            target(&format!(
                "http://community.spin.internal/internal/residents/{id}?x=1"
            )),
            ("community".into(), "/internal/residents/{id}".into())
        );
        assert_eq!(
            target("http://127.0.0.1:3002/internal/health"),
            ("127.0.0.1:3002".into(), "/internal/health".into())
        );
        assert_eq!(target("http://identity"), ("identity".into(), "/".into()));
    }
}
