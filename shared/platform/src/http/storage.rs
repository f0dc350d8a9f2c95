//! What a storage error is answered with: the store gives rows and domain
//! errors ([`DbError`]); this is where they become problem documents — the
//! hop's 504 for a spent budget, the retryable 503 `storage_unavailable`
//! for a lock, an interruption or a storage fault, a 409 for a constraint,
//! and a 500 whose cause is logged, never sent.

use crate::log::journal::{self, Event};
use crate::store::error::{failure, DbError};
use crate::wire::problem::{ErrorCode, Problem};

impl From<DbError> for Problem {
    /// Budget: the hop's 504. Constraint: a 409. Anything else: a 500 whose
    /// cause is logged, never sent.
    fn from(e: DbError) -> Self {
        match e {
            DbError::Budget(spent) => spent.into(),
            // Transient: the same request may succeed at once.
            DbError::Locked(detail) => busy(
                "storage locked",
                detail,
                "the service's storage is busy; try again",
            ),
            // A pooled connection still in a trapped request's transaction,
            // rolled back and met again at once: nothing of this request
            // was written.
            DbError::Inherited(detail) => busy(
                "storage inherited a transaction",
                detail,
                "the service's storage is busy; try again",
            ),
            // A write interrupted inside its transaction was rolled back
            // with it; one interrupted at its commit may have landed, so a
            // write is retried with its Idempotency-Key, answered once.
            DbError::Interrupted(detail) => busy(
                "storage interrupted",
                detail,
                "the service's storage interrupted the request under load; try again (with the same Idempotency-Key for a write)",
            ),
            DbError::Unavailable(fault, detail) => {
                journal::event(Event::Failure {
                    what: fault.failure(),
                    cause: detail,
                });
                Problem::new(
                    ErrorCode::StorageUnavailable,
                    "the service's storage cannot take writes or reads right now; nothing was written, try again later",
                )
            }
            DbError::Constraint(detail) => {
                failure("storage constraint", detail);
                Problem::new(
                    ErrorCode::Conflict,
                    "the write conflicts with existing data",
                )
            }
            // A batch's write that had to change a row found it changed
            // (a caller that expects a refusal answers it itself).
            DbError::Refused(write) => {
                failure("storage refused a batch", format!("write {write}"));
                Problem::new(
                    ErrorCode::Conflict,
                    "the write conflicts with a change made meanwhile; nothing was written",
                )
            }
            // Not logged here: usually the answer is replaced once the
            // schema is brought up to date (see the variant).
            DbError::Missing(_) => Problem::new(ErrorCode::Internal, "an internal error occurred"),
            other => {
                failure("storage", other.to_string());
                Problem::new(ErrorCode::Internal, "an internal error occurred")
            }
        }
    }
}

/// A transient storage failure (a lock, serialization or deadlock refusal,
/// an interrupted statement): logged as `what`, answered the retryable
/// `503 storage_unavailable` that says `said`, which the caller may try
/// again within its budget.
fn busy(what: &'static str, detail: String, said: &str) -> Problem {
    failure(what, detail);
    Problem::new(ErrorCode::StorageUnavailable, said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_or_an_interruption_is_a_busy_service_and_a_schema_behind_a_500() {
        for e in [
            DbError::Locked("database is locked".into()),
            DbError::Interrupted("interrupted".into()),
        ] {
            let problem = Problem::from(e);
            assert_eq!(
                (problem.status().as_u16(), problem.code().retryable()),
                (503, true)
            );
        }
        let problem = Problem::from(DbError::sqlite("no such table: x".into()));
        assert_eq!(problem.status().as_u16(), 500);
    }
}
