//! `GET, POST /v1/{tenant}/members` and `DELETE /v1/{tenant}/members/{id}` (admins).

use meridian_platform::http::idempotency::Written;
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::input::validate::{normalize_email, JsonBody};
use meridian_platform::secrets::token_hash;
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::{ActorId, Role};
use meridian_platform::{Clock, ErrorCode, Problem};
use serde_json::json;

use crate::app::Identity;
use crate::model::{Member, MembershipId, TokenId, UserId};
use crate::repo::{self, NewToken};
use crate::tenants::{new_token, stored};
use crate::Call;

/// Lists the tenant's members, a page at a time.
pub fn list<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    app.scoped(call.ctx)?.page(call, repo::list_members)
}

/// Adds a member (creating the user if the email is new). The answer
/// carries the member's first API token, shown once.
pub fn create<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let mut b = JsonBody::parse(call.body())?;
    let fields = (
        b.parsed("email", normalize_email),
        b.text("name", 1, 200),
        b.parsed("role", |r| r.parse::<Role>()),
    );
    let (email, name, role) = b.complete(fields)?;
    app.scoped(call.ctx)?.write_once(call, |s| {
        let now = app.timestamp();
        let platform_user =
            repo::ensure_user(s.store, s.ctx, &email, &name, UserId::fresh(), &now)?;
        if repo::membership_of(s, &platform_user)?.is_some() {
            return Err(Problem::new(
                ErrorCode::Conflict,
                "that user is already a member",
            ));
        }
        let member = Member {
            id: MembershipId::fresh(),
            user_id: ActorId::fresh(),
            email: email.clone(),
            name,
            role,
            created_at: now,
        };
        repo::insert_membership(s, &platform_user, &member)?;
        // The new member's first token, so they can sign in at all; shown
        // once, like the admin's at tenant creation.
        let token = new_token()?;
        repo::insert_token(
            s,
            &NewToken {
                id: &TokenId::fresh(),
                membership_id: &member.id,
                hash: &token_hash(&token),
                created_at: &member.created_at,
            },
        )?;
        let body = |token: serde_json::Value| {
            let mut body = json!(member);
            if let Some(fields) = body.as_object_mut() {
                fields.insert("token".into(), token);
            }
            body
        };
        Ok(Written {
            sent: stored(StatusCode::CREATED, &body(json!(token))),
            kept: stored(StatusCode::CREATED, &body(serde_json::Value::Null)),
        })
    })
}

/// Removes a membership; its tokens stop working at once. The last admin
/// cannot be removed.
pub fn delete<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let id = MembershipId::parse(call.id()).ok_or_else(|| Problem::not_found("member"))?;
    let stopped = std::cell::Cell::new(Vec::new());
    let answer = app.scoped(call.ctx)?.write_once(call, |s| {
        repo::hold_tenant(s)?;
        let member = repo::member(s, &id)?.ok_or_else(|| Problem::not_found("member"))?;
        if member.role == Role::Admin && repo::admin_count(s)? <= 1 {
            return Err(Problem::new(
                ErrorCode::Conflict,
                "a tenant must keep at least one admin",
            ));
        }
        stopped.set(repo::delete_membership(s, &id)?);
        Ok(Written::no_content())
    })?;
    app.tokens_stopped(call.param("tenant"), &stopped.take());
    Ok(answer)
}
