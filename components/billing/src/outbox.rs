//! Delivering outbox events to community: inline after a write when the
//! budget allows, and by the relay for whatever is left. Delivery is a
//! retry-safe POST keyed by the event id, so delivering twice (inline and
//! relay, or relay twice) still leaves one notification.

use crate::app::COMMUNITY;
use std::time::Duration;

use meridian_platform::budget::steps;
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::time::Timestamp;
use meridian_platform::wire::headers;
use meridian_platform::UnixMillis;
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};
use serde::Serialize;

use crate::app::{Billing, Env};
use crate::model::OutboxEvent;
use crate::repo;
use crate::Call;

/// Events one relay run looks at.
pub const RELAY_BATCH: i64 = 100;

/// How long a delivered event is kept (for an operator tracing a
/// delivery), after which the relay removes it.
pub const OUTBOX_RETENTION: Duration = Duration::from_secs(7 * 24 * 3_600);

/// Delivered events one relay run removes at most: a backlog of them is
/// worked off over runs, each run's statement bounded.
pub const PURGE_BATCH: i64 = 500;

/// What a delivery run achieved.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct DeliveryReport {
    /// Events the consumer acknowledged.
    pub delivered: u32,
    /// Events whose delivery failed this time (they stay pending).
    pub failed: u32,
    /// Events not attempted for lack of budget.
    pub skipped: u32,
}

/// Backoff before the next relay attempt of an event: doubling from 1 s, at most 256 s.
pub fn redelivery_delay(attempts: i64) -> Duration {
    Duration::from_secs(1u64 << attempts.clamp(0, 8) as u32).min(Duration::from_secs(300))
}

impl<E: Env> Billing<E> {
    /// Delivers `events` in order while the budget allows.
    ///
    /// Each delivery is an optional step: it works to the hop's work
    /// deadline less the time to record its outcome, not to its own, so a
    /// consumer that hangs until the call is abandoned still leaves this hop
    /// the time to record the failure and schedule the retry, and then its
    /// answer reserve to answer in. That time is [`steps::RECORD`] until a
    /// recording took longer (a synced commit on a slow disk, a lock
    /// wait): from then on the longest one this run has seen.
    pub async fn deliver(
        &self,
        ctx: &RequestContext,
        events: &[(OutboxEvent, i64)],
    ) -> DeliveryReport {
        let mut recording = steps::RECORD;
        let mut report = DeliveryReport::default();
        for (event, attempts) in events {
            let step = ctx.for_step_leaving(recording);
            if step
                .ensure(self.store.clock().now(), steps::DELIVERY)
                .is_err()
            {
                journal::event(Event::StepSkipped {
                    step: "delivery",
                    cause: format!("budget, event {}", event.event_id),
                });
                report.skipped += 1;
                continue;
            }
            let url = format!("{}/internal/events", self.community_url);
            let body = serde_json::to_vec(event).unwrap_or_default();
            let response = match outbound::request(Method::POST, &url, body) {
                Ok(mut request) => {
                    message::set_header(request.headers_mut(), "content-type", "application/json");
                    // The event's tenant as its outbox row has it, apart from
                    // the body: the consumer binds the event to this one.
                    message::set_header(
                        request.headers_mut(),
                        headers::EVENT_TENANT,
                        &event.tenant_id,
                    );
                    // Safe to repeat: the consumer keys notifications by event id.
                    let call = self
                        .upstream
                        .call(&step, COMMUNITY, &RetryPolicy::standard(), request)
                        .await;
                    call.response
                }
                Err(refused) => Err(refused),
            };
            let outcome = match &response {
                Ok(r) if r.status() == 200 => Ok(()),
                Ok(r) => Err(format!("community answered {}", r.status().as_u16())),
                Err(e) => Err(e.to_string()),
            };
            let began = self.store.clock().now();
            let recorded = match outcome {
                Ok(()) => {
                    report.delivered += 1;
                    repo::mark_delivered(&self.store, ctx, &event.event_id, &self.timestamp())
                }
                Err(error) => {
                    report.failed += 1;
                    journal::event(Event::OutboxDeliveryFailed {
                        event_id: event.event_id.clone(),
                        cause: error.clone(),
                    });
                    self.back_off(ctx, &event.event_id, *attempts, &error)
                }
            };
            recording = recording.max(self.store.clock().now().since(began));
            if let Err(e) = recorded {
                // The event stays pending; the relay delivers it again and
                // the consumer ignores the duplicate.
                journal::event(Event::Failure {
                    what: "recording an outbox delivery",
                    cause: format!("event {}: {e}", event.event_id),
                });
            }
        }
        report
    }

    /// Records a failed attempt at event `id` and schedules the next one
    /// after its backoff.
    fn back_off(
        &self,
        ctx: &RequestContext,
        id: &str,
        attempts: i64,
        error: &str,
    ) -> Result<(), meridian_platform::store::db::DbError> {
        let next = self
            .store
            .clock()
            .now()
            .plus(redelivery_delay(attempts))
            .as_millis();
        repo::mark_failed(&self.store, ctx, id, error, next)
    }

    /// Backs off an outbox row that cannot be read as an event, so it is
    /// looked at again later (after a fix) but never blocks the others.
    fn set_aside(&self, ctx: &RequestContext, id: &str, attempts: i64, error: &str) {
        journal::event(Event::OutboxDeliveryFailed {
            event_id: id.to_owned(),
            cause: format!("undecodable: {error}"),
        });
        if let Err(e) = self.back_off(ctx, id, attempts, &format!("undecodable: {error}")) {
            journal::event(Event::Failure {
                what: "setting an outbox row aside",
                cause: format!("row {id}: {e}"),
            });
        }
    }

    /// After a write committed: its events, to deliver once the answer
    /// has gone (the component sends the answer, then calls
    /// [`Self::deliver_after_answer`]). The outbox row is committed with the
    /// write, so an instance that dies before delivering loses nothing: the
    /// relay delivers it.
    pub fn deliver_later(&self, events: Vec<OutboxEvent>) {
        self.after_answer.borrow_mut().extend(events);
    }

    /// Delivers the events the request's writes left for after the answer,
    /// if the budget has room for an optional step. Whatever is not
    /// delivered is the relay's. The client has its answer already, so
    /// nothing here can cost it anything.
    pub async fn deliver_after_answer(&self, ctx: &RequestContext) {
        let events = self.after_answer.take();
        if events.is_empty() {
            return;
        }
        if ctx
            .for_step()
            .ensure(self.store.clock().now(), steps::INLINE_DELIVERY)
            .is_err()
        {
            // The relay delivers them later.
            return journal::event(Event::StepSkipped {
                step: "inline_delivery",
                cause: "budget".into(),
            });
        }
        let events: Vec<(OutboxEvent, i64)> = events.into_iter().map(|e| (e, 0)).collect();
        self.deliver(ctx, &events).await;
    }

    /// Removes events delivered more than [`OUTBOX_RETENTION`] ago, at most
    /// [`PURGE_BATCH`]: how many. Housekeeping: a failure (the budget, the
    /// database) only leaves them for the next run.
    fn purge(&self, ctx: &RequestContext) -> i64 {
        let now = self.store.clock().now().as_millis();
        let retention = u64::try_from(OUTBOX_RETENTION.as_millis()).unwrap_or(u64::MAX);
        let before = Timestamp::at(UnixMillis::from_millis(now.saturating_sub(retention)));
        match repo::purge_delivered(&self.store, ctx, &before, PURGE_BATCH) {
            Ok(purged) => purged,
            Err(e) => {
                journal::event(Event::StepSkipped {
                    step: "outbox_purge",
                    cause: e.to_string(),
                });
                0
            }
        }
    }
}

/// `POST /internal/outbox/relay`: delivers due events, oldest first,
/// while the budget lasts. Called by a scheduler through the gateway
/// (`POST /ops/outbox/relay` with the platform admin token).
pub async fn relay<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    let ctx = call.ctx;
    if !app.admin_token.admits(call.request.bearer()) {
        return Err(Problem::new(
            ErrorCode::Unauthorized,
            "the relay needs the platform admin token",
        ));
    }
    let now = app.store.clock().now().as_millis();
    let mut ready = Vec::new();
    let mut unreadable = 0;
    for due in repo::due_events(&app.store, ctx, now, RELAY_BATCH)? {
        match due {
            repo::Due::Ready(event, attempts) => ready.push((event, attempts)),
            repo::Due::Undecodable {
                id,
                attempts,
                error,
            } => {
                unreadable += 1;
                app.set_aside(ctx, &id, attempts, &error.to_string());
            }
        }
    }
    let mut report = app.deliver(ctx, &ready).await;
    report.failed += unreadable;
    let purged = app.purge(ctx);
    let pending = repo::pending_count(&app.store, ctx)?;
    Ok(message::json(
        StatusCode::OK,
        &serde_json::json!({
            "delivered": report.delivered, "failed": report.failed,
            "skipped": report.skipped, "pending": pending, "purged": purged,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redelivery_backs_off_to_a_ceiling() {
        assert_eq!(redelivery_delay(0), Duration::from_secs(1));
        assert_eq!(redelivery_delay(3), Duration::from_secs(8));
        assert_eq!(redelivery_delay(20), Duration::from_secs(256));
        assert_eq!(redelivery_delay(-1), Duration::from_secs(1));
    }
}
