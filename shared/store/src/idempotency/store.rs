//! The idempotency record store, shared by every service.
//!
//! A write with a key goes through three steps. `claim` records the key as
//! `in_progress` for its owner — one request, named by a value no other
//! holds — (or finds it done, reused, or busy) in one statement of its own,
//! so a concurrent duplicate sees it at once. The business write then calls
//! `complete` inside its own transaction, so the record, the write and any
//! outbox rows commit together. If the write fails, `release` drops the
//! claim so the client can try again; a claim whose owner died is taken
//! over once the owner's deadline has passed.
//!
//! "Passed" is judged by the clock of the host that takes over, which may
//! run ahead of the owner's: a takeover can come while the owner is still
//! working. So `complete` and `release` act only on a claim their request
//! still owns: an owner whose claim was taken over completes nothing, its
//! transaction rolls back, and it answers a conflict — one write of one
//! key, whatever the hosts' clocks say.
//!
//! Table (in each service's migrations):
//! `idempotency_records(tenant_id, actor_id, operation, idem_key,
//! request_hash, state, response_status, response_body, locked_until_ms,
//! created_at_ms, expires_at_ms, claimed_by)`, primary key on the first
//! four.

use std::time::Duration;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::key::IdempotencyKey;
use crate::batch::Write;
use crate::db::{Database, DbError, Row, Store, Value};
use meridian_deadline::time::Clock;
use meridian_deadline::HopBudget;
use meridian_log::journal::{self, Event};

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
    /// Another request took this one's claim over (its deadline looked
    /// passed to another host's clock) and writes in its place.
    #[error("a request with this Idempotency-Key took over from this one")]
    TakenOver,
    /// Storage failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The request's fingerprint: SHA-256 of the body, after canonicalising
/// JSON (key order and whitespace do not make a body "different").
pub fn fingerprint(body: &[u8]) -> String {
    let canonical = serde_json::from_slice::<Json>(body)
        .ok()
        .and_then(|v| serde_json::to_vec(&v).ok());
    hex::encode(Sha256::digest(canonical.as_deref().unwrap_or(body)))
}

/// The records' table, by the name every service has it
/// ([`Store::table`]).
const TABLE: &str = "idempotency_records";

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

/// Claims `scope` for a request whose body has `fingerprint`, as `owner`
/// (a value no other request holds: [`complete`] and [`release`] act only
/// on a claim `owner` still holds).
///
/// The claim is one statement, an upsert that takes a free key (new,
/// expired, or left by an owner whose deadline has passed) and writes
/// nothing otherwise: the write lock is held for that statement alone,
/// not across round trips from the instance, so writers queued on it
/// (SQLite has one) wait less. A key it did not take is read without the
/// lock to say why: replayed, reused, or still in progress. A record that
/// changed between the two (its owner released it, or it expired) is
/// tried once more; if it changed again the key is busy.
pub fn claim<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &impl AsRef<HopBudget>,
    scope: &Scope<'_>,
    fingerprint: &str,
    owner: &str,
) -> Result<Claimed, IdempotencyError> {
    let ctx = ctx.as_ref();
    for _ in 0..2 {
        let now = store.clock().now().as_millis();
        if take(store, ctx, scope, fingerprint, owner, now)? {
            return Ok(Claimed::Fresh);
        }
        let rows = store.query(
            ctx,
            &format!(
                "SELECT request_hash, state, response_status, response_body, locked_until_ms, expires_at_ms
                 FROM {} WHERE {WHERE_SCOPE}",
                store.table(TABLE)
            ),
            &scope_params(scope),
        )?;
        if let Some(row) = rows.first() {
            if let Some(decided) = decide(row, fingerprint, now)? {
                return Ok(decided);
            }
        }
    }
    Err(IdempotencyError::InProgress)
}

/// Takes `scope` at `now` if it is free: no record, an expired one, or an
/// unfinished one with the same body whose owner's deadline has passed
/// (it can no longer complete). Whether it was taken.
fn take<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &HopBudget,
    scope: &Scope<'_>,
    fingerprint: &str,
    owner: &str,
    now: u64,
) -> Result<bool, DbError> {
    let mut params = scope_params(scope);
    params.extend([
        fingerprint.into(),
        ms(ctx.deadline().instant().as_millis()),
        ms(now),
        ms(now.saturating_add(RETENTION.as_millis() as u64)),
        owner.into(),
    ]);
    let taken = store.query(
        ctx,
        &format!(
            "INSERT INTO {} AS r
         (tenant_id, actor_id, operation, idem_key, request_hash, state, locked_until_ms, created_at_ms, expires_at_ms, claimed_by)
         VALUES (?, ?, ?, ?, ?, 'in_progress', ?, ?, ?, ?)
         ON CONFLICT (tenant_id, actor_id, operation, idem_key) DO UPDATE SET
           request_hash = excluded.request_hash, state = 'in_progress',
           response_status = NULL, response_body = NULL,
           locked_until_ms = excluded.locked_until_ms,
           created_at_ms = excluded.created_at_ms, expires_at_ms = excluded.expires_at_ms,
           claimed_by = excluded.claimed_by
         WHERE r.expires_at_ms <= excluded.created_at_ms
            OR (r.state = 'in_progress' AND r.locked_until_ms <= excluded.created_at_ms
                AND r.request_hash = excluded.request_hash)
         RETURNING state",
            store.table(TABLE)
        ),
        &params,
    )?;
    Ok(!taken.is_empty())
}

/// Why a key [`take`] did not take at `now` is not free, from its record:
/// `None` when the record no longer stands in the way (expired, or its
/// owner's deadline passed since), to be tried again.
fn decide(row: &Row, fingerprint: &str, now: u64) -> Result<Option<Claimed>, IdempotencyError> {
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    if row.integer("expires_at_ms")? <= now {
        return Ok(None);
    }
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
        return Ok(Some(Claimed::Replay(StoredResponse { status, body })));
    }
    match row.integer("locked_until_ms")? > now {
        true => Err(IdempotencyError::InProgress),
        false => Ok(None),
    }
}

/// Marks `owner`'s claim completed with `response`. Call it inside the
/// business write's transaction: a claim another request took over is
/// [`IdempotencyError::TakenOver`], and that transaction must roll back.
/// (A write made as one batch ([`crate::batch`]) puts [`completion`] and
/// [`housekeeping`] in its batch instead.)
pub fn complete<D: Database, C: Clock>(
    tx: &Store<D, C>,
    ctx: &impl AsRef<HopBudget>,
    scope: &Scope<'_>,
    owner: &str,
    response: &StoredResponse,
) -> Result<(), IdempotencyError> {
    let ctx = ctx.as_ref();
    if !tx.changes(ctx, &completion(tx, scope, owner, response))? {
        return Err(taken_over());
    }
    // A budget too short for the housekeeping leaves it to the next
    // write, not this one failed.
    match tx.make(ctx, &housekeeping(tx, scope)) {
        Err(DbError::Budget(_)) => Ok(()),
        other => Ok(other?),
    }
}

/// The write that marks `owner`'s claim completed with `response`: it
/// must change the claim's row ([`Write::changing`]); changing none, the
/// claim was taken over by another request.
pub fn completion<D: Database, C: Clock>(
    store: &Store<D, C>,
    scope: &Scope<'_>,
    owner: &str,
    response: &StoredResponse,
) -> Write {
    let mut params = vec![
        Value::Integer(i64::from(response.status.as_u16())),
        response.body.clone().into(),
    ];
    params.extend(scope_params(scope));
    params.push(owner.into());
    Write::new(
        format!(
            "UPDATE {} SET state = 'completed', response_status = ?, response_body = ?
             WHERE {WHERE_SCOPE} AND state = 'in_progress' AND claimed_by = ?",
            store.table(TABLE)
        ),
        params,
    )
    .changing()
}

/// Housekeeping, bounded and within the writer's tenant: expired records
/// go as new ones complete. On PostgreSQL a record another writer of the
/// tenant is deleting is skipped, not waited for.
pub fn housekeeping<D: Database, C: Clock>(store: &Store<D, C>, scope: &Scope<'_>) -> Write {
    let table = store.table(TABLE);
    Write::new(
        format!(
            "DELETE FROM {table} WHERE (tenant_id, actor_id, operation, idem_key) IN
         (SELECT tenant_id, actor_id, operation, idem_key FROM {table}
          WHERE tenant_id = ? AND expires_at_ms <= ? LIMIT 50{skip})",
            skip = store.db().dialect().skip_locked()
        ),
        vec![scope.tenant.into(), ms(store.clock().now().as_millis())],
    )
}

/// A claim this request no longer owns, logged as it is found.
pub fn taken_over() -> IdempotencyError {
    journal::event(Event::Failure {
        what: "completing an idempotency claim",
        cause: "another request took the claim over (its clock judged this one's deadline passed): this write is rolled back".into(),
    });
    IdempotencyError::TakenOver
}

/// Drops `owner`'s unfinished claim after the write failed, so a retry runs
/// again; a claim another request took over is left to it.
pub fn release<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &impl AsRef<HopBudget>,
    scope: &Scope<'_>,
    owner: &str,
) {
    let ctx = ctx.as_ref();
    let sql = format!(
        "DELETE FROM {} WHERE {WHERE_SCOPE} AND state = 'in_progress' AND claimed_by = ?",
        store.table(TABLE)
    );
    let mut params = scope_params(scope);
    params.push(owner.into());
    if let Err(e) = store.execute(ctx, &sql, &params) {
        // The claim expires with the request's deadline anyway.
        journal::event(Event::Failure {
            what: "releasing an idempotency claim",
            cause: e.to_string(),
        });
    }
}
