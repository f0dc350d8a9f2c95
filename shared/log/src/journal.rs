//! What the request being served has done so far — time in storage, the
//! outbound calls and their attempts — and the notable events on the way,
//! each written as its own JSON line naming the request.
//!
//! A Spin component instance serves one request and is then dropped, so
//! the journal is per request without being passed through every layer:
//! it lives in a thread local that [`begin`] resets when a request arrives
//! (on the host, where a thread may serve many requests in tests, the same
//! call starts each one afresh).

use std::cell::RefCell;
use std::time::Duration;

use serde::Serialize;

use meridian_deadline::time::{duration_ms, Clock, SystemClock};

/// One outbound call as the request line reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRecord {
    /// The service called: the host's first label (`identity` for
    /// `identity.spin.internal`), or `host:port` for a configured URL.
    pub to: String,
    /// The method.
    pub method: String,
    /// The path as a template (`/internal/invoices/{id}`).
    pub route: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last attempt's status; none when no answer came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Wall time of the call, retries and backoff included, ms.
    pub took_ms: u64,
}

/// What the current request has spent, read once by its request line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Spent {
    /// Statements run.
    pub statements: u32,
    /// Time inside them.
    pub storage: Duration,
    /// Statements that started after the request's deadline.
    pub late_statements: u32,
    /// Outbound calls, in the order they ended.
    pub calls: Vec<CallRecord>,
}

/// Who the current request is, for event lines.
#[derive(Debug, Default, Clone)]
struct Scope {
    service: &'static str,
    request_id: String,
    trace_id: Option<String>,
}

#[derive(Debug, Default)]
struct Journal {
    scope: Scope,
    spent: Spent,
}

thread_local! {
    static JOURNAL: RefCell<Journal> = RefCell::default();
}

/// Starts the journal of a request that `service` is serving.
pub fn begin(service: &'static str, request_id: &str, traceparent: Option<&str>) {
    JOURNAL.with(|j| {
        *j.borrow_mut() = Journal {
            scope: Scope {
                service,
                request_id: request_id.to_owned(),
                trace_id: super::trace_id(traceparent).map(str::to_owned),
            },
            spent: Spent::default(),
        }
    });
}

/// Counts a statement that took `took`.
pub fn statement(took: Duration) {
    JOURNAL.with(|j| {
        let spent = &mut j.borrow_mut().spent;
        spent.statements += 1;
        spent.storage += took;
    });
}

/// Counts a statement that started `late` after the request's deadline,
/// and logs it.
pub fn statement_late(statement: &str, late: Duration) {
    JOURNAL.with(|j| j.borrow_mut().spent.late_statements += 1);
    event(Event::StatementLate {
        statement: statement.to_owned(),
        late_ms: duration_ms(late),
    });
}

/// Records an outbound call that ended.
pub fn call(record: CallRecord) {
    JOURNAL.with(|j| j.borrow_mut().spent.calls.push(record));
}

/// What the current request has spent so far; the journal keeps counting.
pub fn spent() -> Spent {
    JOURNAL.with(|j| j.borrow().spent.clone())
}

/// The component, request id and trace id [`begin`] was given.
pub fn scope() -> (&'static str, String, Option<String>) {
    JOURNAL.with(|j| {
        let scope = &j.borrow().scope;
        (
            scope.service,
            scope.request_id.clone(),
            scope.trace_id.clone(),
        )
    })
}

/// A notable event of the request being served, logged as its own line.
/// Fields are ids, counts, durations and error kinds: never a token, a
/// body or an email.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A failed call is being repeated.
    Retry {
        /// The service called.
        to: String,
        /// The attempt about to start (2 or more).
        attempt: u32,
        /// What the previous attempt got: a status, or why none came.
        after: String,
    },
    /// The shared retry budget refused a retry the policy allowed.
    RetryRefused {
        /// The service called.
        to: String,
    },
    /// A call was not made: the downstream's recent calls mostly failed.
    CircuitOpen {
        /// The service not called.
        to: String,
        /// When a call may be tried again, ms.
        retry_after_ms: u64,
    },
    /// The budget could not fit the next step: the hop answers 504.
    BudgetSpent {
        /// The hop that ran out.
        hop: &'static str,
        /// The budget it had on arrival, ms.
        budget_ms: u64,
    },
    /// An optional step was not done; the request went on without it.
    StepSkipped {
        /// The step.
        step: &'static str,
        /// Why.
        cause: String,
    },
    /// An outbox event could not be delivered; it stays for the relay.
    OutboxDeliveryFailed {
        /// The outbox row.
        event_id: String,
        /// Why.
        cause: String,
    },
    /// Migrations were applied on this request.
    MigrationApplied {
        /// Their versions.
        versions: Vec<u32>,
    },
    /// The caller's clock disagrees with this hop's.
    ClockSkew {
        /// How far apart the two clocks are, ms (positive: the caller's is ahead).
        skew_ms: i64,
    },
    /// A statement started after its request's deadline. The budget checks
    /// before every statement should make this never happen; the overload
    /// benchmark counts these lines.
    StatementLate {
        /// The statement's first word (`SELECT`, `COMMIT`, `ROLLBACK`, …).
        statement: String,
        /// How long after the deadline it started, ms.
        late_ms: u64,
    },
    /// Something failed that the answer only summarizes (a 500 or 503):
    /// the cause, for the operator.
    Failure {
        /// What was being done.
        what: &'static str,
        /// The cause.
        cause: String,
    },
}

#[derive(Serialize)]
struct EventLine<'a> {
    /// RFC 3339, UTC, milliseconds.
    ts: String,
    service: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    #[serde(flatten)]
    event: &'a Event,
}

/// The JSON line of `event` for the current request.
pub fn event_line(event: &Event) -> String {
    JOURNAL.with(|j| {
        let j = j.borrow();
        let line = EventLine {
            ts: SystemClock.now().to_rfc3339(),
            service: j.scope.service,
            request_id: &j.scope.request_id,
            trace_id: j.scope.trace_id.as_deref(),
            event,
        };
        serde_json::to_string(&line).unwrap_or_default()
    })
}

/// Logs `event` for the current request, on stderr.
pub fn event(event: Event) {
    super::write_line(event_line(&event));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_starts_with_nothing_spent_and_counts_what_it_does() {
        begin("billing", "req-1", None);
        statement(Duration::from_micros(300));
        statement(Duration::from_micros(200));
        let record = CallRecord {
            to: "community".into(),
            method: "GET".into(),
            route: "/internal/residents/{id}".into(),
            attempts: 2,
            status: Some(200),
            took_ms: 12,
        };
        call(record.clone());
        assert_eq!(
            spent(),
            Spent {
                statements: 2,
                storage: Duration::from_micros(500),
                late_statements: 0,
                calls: vec![record]
            }
        );
        begin("billing", "req-2", None);
        assert_eq!(spent(), Spent::default());
    }

    #[test]
    fn an_event_line_names_the_request_it_belongs_to() {
        begin(
            "identity",
            "req-9",
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let line: serde_json::Value = serde_json::from_str(&event_line(&Event::StepSkipped {
            step: "token_touch",
            cause: "budget".into(),
        }))
        .unwrap();
        assert_eq!(line["service"], "identity");
        assert_eq!(line["request_id"], "req-9");
        assert_eq!(line["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(line["event"], "step_skipped");
        assert_eq!(line["step"], "token_touch");
        assert_eq!(line["cause"], "budget");
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    }
}
