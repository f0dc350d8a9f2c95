//! Calls to other services: the HTTP client with the clock, sleeper and
//! jitter its retry loop needs, so that a call site only says which policy.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::budget::context::RequestContext;
use crate::counts::Counters;
use crate::http::memory::{FailureMemory, MemoryConfig, Outcome, Permit};
use crate::http::request_line::route_template;
use crate::http::retry::{self, classify_status, Jitter, RetryPolicy, Sleeper, Verdict};
use crate::http::{HttpClient, Request, Response, ResponseExt, SendError};
use crate::log::journal::{self, CallRecord, Event};
use crate::tenancy::cache::Entries;
use crate::time::{duration_ms, Clock};
use crate::wire::headers::RETRY_AFTER;
use crate::wire::problem::ErrorCode;
use crate::wire::unprefixed;

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
pub struct CallOutcome {
    /// The last attempt's result.
    pub response: Result<Response, SendError>,
    /// Attempts made.
    pub attempts: u32,
    /// Wall time spent, backoff included.
    pub took: Duration,
    /// Whether the shared retry budget refused a retry the policy allowed.
    pub retry_refused: bool,
}

impl CallOutcome {
    /// A call never attempted: its request could not be built (a
    /// [`SendError::Refused`]).
    pub fn refused(error: SendError) -> Self {
        Self {
            response: Err(error),
            attempts: 0,
            took: Duration::ZERO,
            retry_refused: false,
        }
    }
}

impl<E: Calls> Upstream<E> {
    /// The keys a call from `ctx`'s hop to the service `to` reads before
    /// it starts (its breaker's state), to be read ahead with the
    /// request's other reads ([`Counters::read_ahead`]).
    pub fn read_keys(&self, ctx: &RequestContext, to: &str) -> Vec<String> {
        FailureMemory::new(&self.counters, self.memory, ctx.hop(), to).read_keys()
    }

    /// Sends `request` to the service `to` under `ctx`'s budget, repeating
    /// transient failures only as far as `policy` allows. The policy is the
    /// caller's statement of whether the call is safe to repeat. The
    /// failure memory is the service's, whatever its URL: where every
    /// service is reached through one origin (a platform without service
    /// chaining), each still has a breaker of its own.
    ///
    /// The call, its retries and the deadline it carries end at the hop's
    /// work deadline: a downstream that runs out answers (or is abandoned)
    /// while this hop still has its answer reserve.
    ///
    /// Its layers, outermost first: the breaker ([`FailureMemory::permit`]),
    /// the retry loop gated by the shared retry budget (`attempts`),
    /// and each attempt on the transport, judged once ([`judge`]).
    pub async fn call(
        &self,
        ctx: &RequestContext,
        to: &str,
        policy: &RetryPolicy,
        request: Request,
    ) -> CallOutcome {
        let ctx = &ctx.for_step();
        let started = self.clock.now();
        // The service's own route, without the prefix a platform without
        // service chaining reaches it under.
        let path = request.uri().path();
        let route = route_template(None, unprefixed(path, to).unwrap_or(path));
        let to = to.to_owned();
        let memory = FailureMemory::new(&self.counters, self.memory, ctx.hop(), &to);
        let (outcome, retry_refused) = match memory.permit(started) {
            // History says this downstream is failing: answer now instead
            // of waiting out what it would do.
            Permit::Refuse(wait) => {
                journal::event(Event::CircuitOpen {
                    to: to.clone(),
                    retry_after_ms: duration_ms(wait),
                });
                let refused = retry::Attempted {
                    last: Err(SendError::CircuitOpen(wait)),
                    attempts: 0,
                    gave_up: None,
                };
                (refused, false)
            }
            permitted => {
                self.attempts(ctx, policy, &request, &memory, permitted, &to)
                    .await
            }
        };
        let took = self.clock.now().since(started);
        journal::call(CallRecord {
            to,
            method: request.method().to_string(),
            route,
            attempts: outcome.attempts,
            status: outcome.last.as_ref().ok().map(|r| r.status().as_u16()),
            took_ms: duration_ms(took),
        });
        CallOutcome {
            response: outcome.last,
            attempts: outcome.attempts,
            took,
            retry_refused,
        }
    }

    /// The retry loop over the transport, each retry the policy grants
    /// asked of the shared retry budget first; every attempt's outcome
    /// told to the failure memory (only the first decides a probe). Also
    /// whether the retry budget refused a retry.
    async fn attempts(
        &self,
        ctx: &RequestContext,
        policy: &RetryPolicy,
        request: &Request,
        memory: &FailureMemory<'_, E::Counters>,
        permitted: Permit,
        to: &str,
    ) -> (retry::Attempted<Result<Response, SendError>>, bool) {
        let mut jitter = self.jitter.clone();
        let roll = jitter.next_u64();
        let refused = Cell::new(false);
        // What the previous attempt came to, for the retry's log event.
        let previous = RefCell::new(String::new());
        let may_retry = |_| {
            let allowed = memory.may_retry(self.clock.now());
            if !allowed {
                refused.set(true);
                journal::event(Event::RetryRefused { to: to.to_owned() });
            }
            allowed
        };
        let attempt = |attempt: u32| {
            let probe = match attempt {
                1 => {
                    memory.first_attempt(self.clock.now(), roll);
                    permitted
                }
                _ => {
                    journal::event(Event::Retry {
                        to: to.to_owned(),
                        attempt,
                        after: previous.take(),
                    });
                    Permit::Call
                }
            };
            let (request, previous) = (request.clone(), &previous);
            async move {
                let response = self.http.send(ctx, request).await;
                let judged = judge(&response);
                memory.outcome(probe, self.clock.now(), judged.outcome);
                *previous.borrow_mut() = judged.label;
                (response, judged.verdict)
            }
        };
        let outcome = retry::run_gated(
            policy,
            ctx.deadline(),
            &self.clock,
            &self.sleeper,
            &mut jitter,
            may_retry,
            attempt,
        )
        .await;
        (outcome, refused.get())
    }
}

/// What one attempt came to, judged once for every layer that asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// For the retry loop: whether another attempt could help.
    pub verdict: Verdict,
    /// For the breaker: the downstream's own failures count, running out
    /// of the shared budget says nothing about it.
    pub outcome: Outcome,
    /// For the log: the status, or the kind of failure.
    pub label: String,
}

/// Judges an attempt's result, reading a problem body's code once.
pub fn judge(result: &Result<Response, SendError>) -> Judged {
    match result {
        Ok(r) => {
            let code = r.problem_code();
            let spent = code.as_deref() == Some(ErrorCode::DeadlineExceeded.as_str());
            Judged {
                verdict: classify_status(r.status(), code.as_deref(), r.header(RETRY_AFTER)),
                outcome: match r.status().is_server_error() {
                    true if spent => Outcome::Ignored,
                    true => Outcome::Failed,
                    false => Outcome::Succeeded,
                },
                label: r.status().as_str().to_owned(),
            }
        }
        Err(e) => Judged {
            verdict: e.verdict(),
            outcome: match e.is_downstream_failure() {
                true => Outcome::Failed,
                false => Outcome::Ignored,
            },
            label: e.kind().to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::budget::context::BudgetSpent;

    fn answer(status: u16, content_type: &str, body: &str) -> Result<Response, SendError> {
        Ok(http::Response::builder()
            .status(status)
            .header("content-type", content_type)
            .header("retry-after", "2")
            .body(body.as_bytes().to_vec())
            .unwrap())
    }

    #[test]
    fn each_attempt_is_judged_once_for_the_retry_loop_the_breaker_and_the_log() {
        let problem = "application/problem+json";
        let transient = Verdict::Transient {
            retry_after: Some(Duration::from_secs(2)),
        };
        let cases = [
            (
                answer(200, "application/json", "{}"),
                Verdict::Final,
                Outcome::Succeeded,
                "200",
            ),
            (
                answer(404, problem, r#"{"code":"not_found"}"#),
                Verdict::Final,
                Outcome::Succeeded,
                "404",
            ),
            (
                answer(503, problem, r#"{"code":"storage_unavailable"}"#),
                transient,
                Outcome::Failed,
                "503",
            ),
            // The downstream ran out of the shared budget: final, and no
            // sign the downstream is failing.
            (
                answer(504, problem, r#"{"code":"deadline_exceeded"}"#),
                Verdict::Final,
                Outcome::Ignored,
                "504",
            ),
            // Only a problem body carries a code.
            (
                answer(504, "text/plain", r#"{"code":"deadline_exceeded"}"#),
                transient,
                Outcome::Failed,
                "504",
            ),
            // It already retried its own dependency.
            (
                answer(503, problem, r#"{"code":"upstream_unavailable"}"#),
                Verdict::Final,
                Outcome::Failed,
                "503",
            ),
            (
                Err(SendError::Connect("refused".into())),
                Verdict::Transient { retry_after: None },
                Outcome::Failed,
                "connect",
            ),
            (
                Err(SendError::from(BudgetSpent {
                    hop: "billing",
                    budget_ms: 400,
                })),
                Verdict::Final,
                Outcome::Ignored,
                "deadline",
            ),
        ];
        for (result, verdict, outcome, label) in cases {
            let judged = judge(&result);
            assert_eq!(
                judged,
                Judged {
                    verdict,
                    outcome,
                    label: label.into()
                },
                "{result:?}"
            );
        }
    }
}
