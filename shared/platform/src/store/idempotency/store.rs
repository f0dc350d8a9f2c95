//! The idempotency record store, shared by every service.
//!
//! A write with a key goes through three steps. `claim` records the key as
//! `in_progress` (or finds it done, reused, or busy) in a short transaction
//! of its own, so a concurrent duplicate sees it at once. The business write
//! then calls `complete` inside its own transaction, so the record, the
//! write and any outbox rows commit together. If the write fails, `release`
//! drops the claim so the client can try again; a claim whose owner died is
//! taken over once the owner's deadline has passed.
//!
//! Table (in each service's migrations):
//! `idempotency_records(tenant_id, actor_id, operation, idem_key,
//! request_hash, state, response_status, response_body, locked_until_ms,
//! created_at_ms, expires_at_ms)`, primary key on the first four.

use std::time::Duration;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::key::IdempotencyKey;
use crate::budget::context::RequestContext;
use crate::log::journal::{self, Event};
use crate::store::db::{Database, DbError, Row, Store, Value};
use crate::time::Clock;
use crate::wire::problem::{ErrorCode, Problem};

/// How long a completed record is kept: at least a day.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Whose key it is and for what: `(tenant, actor, method + route, key)`.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// Tenant id (or a fixed marker for platform-level writes).
    pub tenant: &'a str,
    /// Actor id.
    pub actor: &'a str,
    /// Method and route template, e.g. `POST /members`.
    pub operation: &'a str,
    /// The client's key.
    pub key: &'a IdempotencyKey,
}

/// A response kept for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// Status code.
    pub status: http::StatusCode,
    /// JSON body.
    pub body: String,
}

/// The outcome of claiming a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// First use (or a takeover): do the work, then `complete`.
    Fresh,
    /// Done before with the same body: send this again.
    Replay(StoredResponse),
}

/// Why a keyed write cannot go ahead.
#[derive(Debug, Error, PartialEq)]
pub enum IdempotencyError {
    /// The key was used with a different body.
    #[error("this Idempotency-Key was used with a different request body")]
    Reused,
    /// The first request with this key is still running.
    #[error("a request with this Idempotency-Key is still in progress")]
    InProgress,
    /// Storage failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl IdempotencyError {
    /// The problem this is answered with.
    pub fn into_problem(self) -> Problem {
        match self {
            Self::Reused => Problem::new(ErrorCode::IdempotencyKeyReused, self.to_string()),
            Self::InProgress => Problem::new(ErrorCode::IdempotencyKeyInProgress, self.to_string()),
            Self::Db(e) => e.into(),
        }
    }
}

/// The request's fingerprint: SHA-256 of the body, after canonicalising
/// JSON (key order and whitespace do not make a body "different").
pub fn fingerprint(body: &[u8]) -> String {
    let canonical = serde_json::from_slice::<Json>(body)
        .ok()
        .and_then(|v| serde_json::to_vec(&v).ok());
    hex::encode(Sha256::digest(canonical.as_deref().unwrap_or(body)))
}

const WHERE_SCOPE: &str = "tenant_id = ? AND actor_id = ? AND operation = ? AND idem_key = ?";

fn scope_params(scope: &Scope<'_>) -> Vec<Value> {
    vec![
        scope.tenant.into(),
        scope.actor.into(),
        scope.operation.into(),
        scope.key.as_str().into(),
    ]
}

fn ms(v: u64) -> Value {
    Value::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// Claims `scope` for a request whose body has `fingerprint`.
pub fn claim<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &RequestContext,
    scope: &Scope<'_>,
    fingerprint: &str,
) -> Result<Claimed, IdempotencyError> {
    store.transaction(ctx, |tx| {
        let now = tx.clock().now().as_millis();
        let rows = tx.query(
            ctx,
            &format!(
                "SELECT request_hash, state, response_status, response_body, locked_until_ms, expires_at_ms
                 FROM idempotency_records WHERE {WHERE_SCOPE}"
            ),
            &scope_params(scope),
        )?;
        let existing = rows.first().filter(|r| r.integer("expires_at_ms").is_ok_and(|exp| exp > now as i64));
        match existing {
            None => {
                // Housekeeping on the write path, bounded: expired records go.
                tx.execute(
                    ctx,
                    "DELETE FROM idempotency_records WHERE rowid IN
                     (SELECT rowid FROM idempotency_records WHERE expires_at_ms <= ? LIMIT 50)",
                    &[ms(now)],
                )?;
                let mut params = scope_params(scope);
                params.extend([
                    fingerprint.into(),
                    ms(ctx.deadline().instant().as_millis()),
                    ms(now),
                    ms(now.saturating_add(RETENTION.as_millis() as u64)),
                ]);
                tx.execute(
                    ctx,
                    "INSERT OR REPLACE INTO idempotency_records
                     (tenant_id, actor_id, operation, idem_key, request_hash, state, locked_until_ms, created_at_ms, expires_at_ms)
                     VALUES (?, ?, ?, ?, ?, 'in_progress', ?, ?, ?)",
                    &params,
                )?;
                Ok(Claimed::Fresh)
            }
            Some(row) => decide(tx, ctx, scope, fingerprint, row, now),
        }
    })
}

fn decide<D: Database, C: Clock>(
    tx: &Store<D, C>,
    ctx: &RequestContext,
    scope: &Scope<'_>,
    fingerprint: &str,
    row: &Row,
    now: u64,
) -> Result<Claimed, IdempotencyError> {
    if row.text("request_hash")? != fingerprint {
        return Err(IdempotencyError::Reused);
    }
    if row.text("state")? == "completed" {
        let status = u16::try_from(row.integer("response_status")?)
            .ok()
            .and_then(|s| http::StatusCode::from_u16(s).ok())
            .ok_or_else(|| DbError::Decode("response_status".into()))?;
        let body = row
            .opt_text("response_body")?
            .unwrap_or_default()
            .to_owned();
        return Ok(Claimed::Replay(StoredResponse { status, body }));
    }
    if row.integer("locked_until_ms")? > now as i64 {
        return Err(IdempotencyError::InProgress);
    }
    // The previous owner's deadline has passed: it can no longer complete.
    let mut params = vec![ms(ctx.deadline().instant().as_millis())];
    params.extend(scope_params(scope));
    tx.execute(
        ctx,
        &format!("UPDATE idempotency_records SET locked_until_ms = ? WHERE {WHERE_SCOPE}"),
        &params,
    )?;
    Ok(Claimed::Fresh)
}

/// Marks the claim completed with `response`. Call it inside the business
/// write's transaction.
pub fn complete<D: Database, C: Clock>(
    tx: &Store<D, C>,
    ctx: &RequestContext,
    scope: &Scope<'_>,
    response: &StoredResponse,
) -> Result<(), DbError> {
    let mut params = vec![
        Value::Integer(i64::from(response.status.as_u16())),
        response.body.clone().into(),
    ];
    params.extend(scope_params(scope));
    tx.execute(
        ctx,
        &format!(
            "UPDATE idempotency_records SET state = 'completed', response_status = ?, response_body = ?
             WHERE {WHERE_SCOPE}"
        ),
        &params,
    )
}

/// Drops an unfinished claim after the write failed, so a retry runs again.
pub fn release<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &RequestContext,
    scope: &Scope<'_>,
) {
    let sql =
        format!("DELETE FROM idempotency_records WHERE {WHERE_SCOPE} AND state = 'in_progress'");
    if let Err(e) = store.execute(ctx, &sql, &scope_params(scope)) {
        // The claim expires with the request's deadline anyway.
        journal::event(Event::Failure {
            what: "releasing an idempotency claim",
            cause: e.to_string(),
        });
    }
}
