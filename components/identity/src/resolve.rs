//! `GET /internal/resolve?slug=`: the gateway's one call per request, from
//! slug and bearer token to tenant, actor and role.

use std::time::Duration;

use meridian_platform::budget::steps;
use meridian_platform::http::prelude::*;
use meridian_platform::input::query::query_param;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::secrets::{constant_time_eq, token_hash};
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::TenantSlug;
use meridian_platform::time::Timestamp;
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};

use crate::app::Identity;
use crate::model::Resolution;
use crate::repo;
use crate::Call;

/// `last_used_at` is refreshed at most this often, so that reads do not
/// each turn into a write.
const TOUCH_INTERVAL: Duration = Duration::from_secs(60);

/// Resolves the slug and token: 401 for a missing, unknown or revoked token
/// whatever the slug; then 404 for an unknown tenant or a token of another
/// tenant (no existence leak).
pub fn resolve<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let ctx = call.ctx;
    let tenant_not_found = || Problem::new(ErrorCode::TenantNotFound, "no such tenant");
    let unauthorized = || {
        Problem::new(
            ErrorCode::Unauthorized,
            "the bearer token is missing, unknown or revoked",
        )
    };
    let token = call.request.bearer().ok_or_else(unauthorized)?;
    let hash = token_hash(token);
    let slug = query_param(call.query(), "slug").and_then(|s| TenantSlug::parse(&s).ok());
    // One statement: the token's owner, and the slug's tenant beside it (a
    // malformed slug is looked up as "", which names none).
    let looked_up = slug.as_ref().map_or("", TenantSlug::as_str);
    let (owner, slug_tenant) = repo::token_owner(&app.store, ctx, &hash, looked_up)?
        .filter(|(o, _)| constant_time_eq(&o.hash, &hash))
        .ok_or_else(unauthorized)?;
    // Only a caller with a valid token learns whether the slug exists, so a
    // wrong token gets the same 401 for a real slug and an unknown one.
    if slug.is_none() || slug_tenant.as_deref() != Some(owner.tenant_id.as_str()) {
        return Err(tenant_not_found());
    }
    touch(app, ctx, &owner);
    Ok(message::json(
        StatusCode::OK,
        &Resolution {
            tenant_id: owner.tenant_id,
            actor_id: owner.user_id,
            role: owner.role,
        },
    ))
}

/// Records use of the token — an optional step, skipped when the budget
/// is short or the last record is recent.
fn touch<D: Database, C: Clock>(
    app: &Identity<D, C>,
    ctx: &RequestContext,
    owner: &repo::TokenOwner,
) {
    let now = app.store.clock().now();
    let recent = owner
        .last_used_at
        .as_ref()
        .is_some_and(|last| *last >= Timestamp::at(now.minus(TOUCH_INTERVAL)));
    // Optional: it works to the hop's work deadline, never into the reserve
    // the resolution's answer needs.
    let step = ctx.for_step();
    if recent {
        return;
    }
    let skipped = |cause: String| {
        journal::event(Event::StepSkipped {
            step: "token_touch",
            cause,
        })
    };
    if step.ensure(now, steps::TOKEN_TOUCH).is_err() {
        return skipped("budget".into());
    }
    if let Err(e) = repo::touch_token(&app.store, &step, &owner.token_id, &Timestamp::at(now)) {
        skipped(e.to_string());
    }
}
