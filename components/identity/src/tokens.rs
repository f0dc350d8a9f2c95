//! `POST /v1/{tenant}/tokens` and `DELETE /v1/{tenant}/tokens/{id}`.

use meridian_platform::http::idempotency::Written;
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::secrets::token_hash;
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::Role;
use meridian_platform::{Clock, ErrorCode, Problem};
use serde_json::json;

use crate::app::Identity;
use crate::model::TokenId;
use crate::repo::{self, NewToken};
use crate::tenants::{new_token, stored};
use crate::Call;

/// The most live (unrevoked) tokens a member holds: each one used leaves
/// a remembered resolution in the shared store (docs/security.md counts
/// the keys), so a member must not be able to mint without bound.
pub const MAX_LIVE_TOKENS: i64 = 20;

/// A new token for the caller, shown once (409 `too_many_tokens` past
/// [`MAX_LIVE_TOKENS`]).
pub fn create<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    // No fields yet; an unknown one is refused rather than ignored.
    JsonBody::parse(call.body())?.finish()?;
    app.scoped(call.ctx)?.write_once(call, |s| {
        let (membership_id, live) =
            repo::member_tokens(s, &s.scope.actor_id)?.ok_or_else(|| {
                Problem::new(ErrorCode::Unauthorized, "the caller is no longer a member")
            })?;
        if live >= MAX_LIVE_TOKENS {
            return Err(Problem::new(
                ErrorCode::TooManyTokens,
                format!("a member holds at most {MAX_LIVE_TOKENS} live tokens; revoke one first"),
            ));
        }
        let token = new_token()?;
        let now = app.timestamp();
        let id = TokenId::fresh();
        repo::insert_token(
            s,
            &NewToken {
                id: &id,
                membership_id: &membership_id,
                hash: &token_hash(&token),
                created_at: &now,
            },
        )?;
        Ok(Written {
            sent: stored(
                StatusCode::CREATED,
                &json!({"id": id, "token": token, "created_at": now}),
            ),
            // Shown once: a replay gets the id but not the secret.
            kept: stored(
                StatusCode::CREATED,
                &json!({"id": id, "token": null, "created_at": now}),
            ),
        })
    })
}

/// Revokes a token: the caller's own, or any in the tenant for an admin.
/// Revoking twice is fine; another member's token is "not found".
pub fn revoke<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let id = TokenId::parse(call.id()).ok_or_else(|| Problem::not_found("token"))?;
    let stopped = std::cell::Cell::new(Vec::new());
    let answer = app.scoped(call.ctx)?.write_once(call, |s| {
        let caller = s.scope;
        let (_, hash) = repo::token_owner_in_tenant(s, &id)?
            .filter(|(owner, _)| caller.role == Role::Admin || *owner == caller.actor_id)
            .ok_or_else(|| Problem::not_found("token"))?;
        repo::revoke_token(s, &id, &app.timestamp())?;
        stopped.set(vec![hash]);
        Ok(Written::no_content())
    })?;
    app.tokens_stopped(call.param("tenant"), &stopped.take());
    Ok(answer)
}
