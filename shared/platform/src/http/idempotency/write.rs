//! A write made exactly once for the caller: claim the key, do the work and
//! complete the record in one transaction, or replay what was done before.

use crate::budget::context::RequestContext;
use crate::http::message::{self, Response, ResponseExt};
use crate::http::routes::Incoming;
use crate::store::batch::Write;
use crate::store::db::{Database, DbError, Store};
use crate::store::idempotency::{
    claim, complete, completion, fingerprint, housekeeping, release, taken_over, Claimed,
    IdempotencyKey, Scope, StoredResponse,
};
use crate::time::Clock;
use crate::wire::headers::IDEMPOTENT_REPLAYED;
use crate::wire::problem::Problem;

/// What a write produced: the response to send, and the one to keep for
/// replays — the same, unless the response holds a secret that must not be
/// stored (a new API token is shown once; a replay says it was withheld).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Sent to the client now.
    pub sent: StoredResponse,
    /// Kept in the idempotency record.
    pub kept: StoredResponse,
}

impl Written {
    /// A response that is sent and kept alike.
    pub fn same(status: http::StatusCode, body: &impl serde::Serialize) -> Self {
        let response = StoredResponse {
            status,
            body: serde_json::to_string(body).unwrap_or_else(|_| "null".into()),
        };
        Self {
            sent: response.clone(),
            kept: response,
        }
    }
}

impl Written {
    /// `204 No Content`, sent and kept.
    pub fn no_content() -> Self {
        let empty = StoredResponse {
            status: http::StatusCode::NO_CONTENT,
            body: String::new(),
        };
        Self {
            sent: empty.clone(),
            kept: empty,
        }
    }
}

/// How a write begins.
#[derive(Debug)]
pub enum Begun<'a> {
    /// The same request was completed before: answer with this.
    Replay(Response),
    /// Go ahead, then [`KeyedWrite::commit`] (or [`KeyedWrite::abandon`]).
    Proceed(KeyedWrite<'a>),
}

/// A write under way, keyed or not.
#[derive(Debug)]
#[must_use = "a claimed key must be committed or abandoned"]
pub struct KeyedWrite<'a> {
    /// The key's scope and this request's claim on it (its owner: a
    /// random UUID), for a keyed write.
    claim: Option<(Scope<'a>, String)>,
}

/// Starts a write in `operation` (method and route template) for the
/// request's tenant and actor. Without a key the write simply proceeds.
pub fn begin<'a, D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &RequestContext,
    key: Option<&'a IdempotencyKey>,
    owner: (&'a str, &'a str),
    operation: &'a str,
    body: &[u8],
) -> Result<Begun<'a>, Problem> {
    let Some(key) = key else {
        return Ok(Begun::Proceed(KeyedWrite { claim: None }));
    };
    let scope = Scope {
        tenant: owner.0,
        actor: owner.1,
        operation,
        key,
    };
    // A value no other request holds: the claim is this request's alone.
    let owner = uuid::Uuid::new_v4().simple().to_string();
    match claim(store, ctx, &scope, &fingerprint(body), &owner) {
        Ok(Claimed::Fresh) => Ok(Begun::Proceed(KeyedWrite {
            claim: Some((scope, owner)),
        })),
        Ok(Claimed::Replay(stored)) => {
            let mut response = into_response(stored);
            response.set_header(IDEMPOTENT_REPLAYED, "true");
            Ok(Begun::Replay(response))
        }
        Err(e) => Err(e.into()),
    }
}

/// A call's tenant-scoped write with no work before its transaction:
/// begins with the request's key (if any) under the caller's tenant and
/// actor and the route's operation, replays or runs `work` and commits.
pub fn write_once<D: Database, C: Clock, Op>(
    store: &Store<D, C>,
    call: &Incoming<'_, Op>,
    work: impl FnOnce(&Store<D, C>) -> Result<Written, Problem>,
) -> Result<Response, Problem> {
    begun_for(store, call, |write| write.commit(store, call.ctx, work))
}

/// A call's tenant-scoped write known before it runs, with nothing to
/// read on the way: begins as [`write_once`] does, then makes `writes`
/// and records `written` as one batch ([`KeyedWrite::commit_all`]: on
/// PostgreSQL one statement).
pub fn write_all_once<D: Database, C: Clock, Op>(
    store: &Store<D, C>,
    call: &Incoming<'_, Op>,
    writes: Vec<Write>,
    written: Written,
) -> Result<Response, Problem> {
    begun_for(store, call, |write| {
        write.commit_all(store, call.ctx, writes, written)
    })
}

/// Begins the call's write with its key (if any) under the caller's
/// tenant and actor and the route's operation: a replay is answered, a
/// write that may go ahead is handed to `proceed`.
fn begun_for<D: Database, C: Clock, Op>(
    store: &Store<D, C>,
    call: &Incoming<'_, Op>,
    proceed: impl FnOnce(KeyedWrite<'_>) -> Result<Response, Problem>,
) -> Result<Response, Problem> {
    let (ctx, request) = (call.ctx, call.request);
    let scope = ctx.scope()?;
    let (tenant, actor) = (scope.tenant_id.to_string(), scope.actor_id.to_string());
    let key = super::key_of(request)?;
    match begin(
        store,
        ctx,
        key.as_ref(),
        (&tenant, &actor),
        &call.operation(),
        request.body(),
    )? {
        Begun::Replay(response) => Ok(response),
        Begun::Proceed(write) => proceed(write),
    }
}

impl KeyedWrite<'_> {
    /// Runs `work` and records its response in one transaction. On failure
    /// the transaction rolls back and the key is released for a retry.
    pub fn commit<D: Database, C: Clock>(
        self,
        store: &Store<D, C>,
        ctx: &RequestContext,
        work: impl FnOnce(&Store<D, C>) -> Result<Written, Problem>,
    ) -> Result<Response, Problem> {
        let outcome = store.transaction(ctx, |tx| {
            let written = work(tx)?;
            if let Some((scope, owner)) = &self.claim {
                complete(tx, ctx, scope, owner, &written.kept)?;
            }
            Ok::<_, Problem>(written.sent)
        });
        match outcome {
            Ok(sent) => Ok(into_response(sent)),
            Err(problem) => {
                self.give_up(store, ctx, &problem);
                Err(problem)
            }
        }
    }

    /// Makes `writes` and records `written` as the key's answer together,
    /// as one batch ([`Store::write_all`]: on PostgreSQL one statement,
    /// with no transaction open between round trips): for a write whose
    /// rows are known before it runs, with nothing to read on the way. A
    /// claim taken over meanwhile writes nothing and is a 409; on failure
    /// the key is given back for a retry.
    pub fn commit_all<D: Database, C: Clock>(
        self,
        store: &Store<D, C>,
        ctx: &RequestContext,
        mut writes: Vec<Write>,
        written: Written,
    ) -> Result<Response, Problem> {
        let completed = self.claim.as_ref().map(|(scope, owner)| {
            writes.push(completion(store, scope, owner, &written.kept));
            writes.push(housekeeping(store, scope));
            writes.len() - 2
        });
        let problem = match store.write_all(ctx, &writes) {
            Ok(()) => return Ok(into_response(written.sent)),
            Err(DbError::Refused(at)) if Some(at) == completed => Problem::from(taken_over()),
            Err(e) => Problem::from(e),
        };
        self.give_up(store, ctx, &problem);
        Err(problem)
    }

    /// Gives the key back without writing (the request failed before its write).
    pub fn abandon<D: Database, C: Clock>(self, store: &Store<D, C>, ctx: &RequestContext) {
        if let Some((scope, owner)) = &self.claim {
            release(store, ctx, scope, owner);
        }
    }

    /// Gives the key back after the request failed with `problem` — unless
    /// the budget ran out: then the claim is left to end at the request's
    /// deadline, which it does by itself (a retry can only come after the
    /// 504), and no write is made in the last milliseconds of a spent
    /// budget, where one that is slower than its estimate makes the answer
    /// late (on Spin 3.6.3 a hung downstream's 504 was then the caller's,
    /// not this hop's).
    pub fn give_up<D: Database, C: Clock>(
        self,
        store: &Store<D, C>,
        ctx: &RequestContext,
        problem: &Problem,
    ) {
        if problem.code() != crate::wire::problem::ErrorCode::DeadlineExceeded {
            self.abandon(store, ctx);
        }
    }
}

fn into_response(stored: StoredResponse) -> Response {
    if stored.status == http::StatusCode::NO_CONTENT {
        message::no_content()
    } else {
        message::raw_json(stored.status, stored.body.into_bytes())
    }
}
