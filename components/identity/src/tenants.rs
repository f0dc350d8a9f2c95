//! `POST /v1/tenants` (platform admin) and `GET /v1/{tenant}`.

use meridian_platform::http::idempotency::{self, Begun, StoredResponse, Written};
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::{Scoped, ServiceStore};
use meridian_platform::input::validate::{normalize_email, JsonBody};
use meridian_platform::log::journal::{self, Event};
use meridian_platform::secrets::{generate_token, token_hash};
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::{ActorId, Role, TenantId, TenantScope, TenantSlug};
use meridian_platform::{Clock, ErrorCode, Problem};
use serde_json::json;

use crate::app::Identity;
use crate::model::{Member, MembershipId, Tenant, TokenId, UserId};
use crate::repo::{self, NewToken};
use crate::Call;

/// Slugs that would collide with a route of the public API.
const RESERVED_SLUGS: &[&str] = &["tenants", "internal", "health", "healthz", "readyz"];

/// Idempotency scope of platform-level writes, which have no tenant or user.
const PLATFORM: (&str, &str) = ("platform", "platform-admin");

/// A validated tenant creation.
struct NewTenant {
    slug: TenantSlug,
    name: String,
    admin_email: String,
    admin_name: String,
}

impl TryFrom<&[u8]> for NewTenant {
    type Error = Problem;

    fn try_from(body: &[u8]) -> Result<Self, Problem> {
        let mut b = JsonBody::parse(body)?;
        let fields = (
            b.parsed("slug", |s| {
                let slug = TenantSlug::parse(s).map_err(|e| e.to_string())?;
                if RESERVED_SLUGS.contains(&slug.as_str()) {
                    return Err("is reserved".to_owned());
                }
                Ok(slug)
            }),
            b.text("name", 1, 200),
            b.parsed("admin_email", normalize_email),
            b.text("admin_name", 1, 200),
        );
        let (slug, name, admin_email, admin_name) = b.complete(fields)?;
        Ok(Self {
            slug,
            name,
            admin_email,
            admin_name,
        })
    }
}

/// Creates a tenant with its first admin and that admin's first token.
pub fn create<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let ctx = call.ctx;
    if !app.admin_token.admits(call.request.bearer()) {
        return Err(Problem::new(
            ErrorCode::Unauthorized,
            "creating a tenant needs the platform admin token",
        ));
    }
    let input = NewTenant::try_from(call.body())?;
    let (key, operation) = (idempotency::key_of(call.request)?, call.operation());
    let write = match idempotency::begin(
        &app.store,
        ctx,
        key.as_ref(),
        PLATFORM,
        &operation,
        call.body(),
    )? {
        Begun::Replay(response) => return Ok(response),
        Begun::Proceed(write) => write,
    };
    let token = new_token()?;
    write.commit(&app.store, ctx, |tx| {
        if repo::tenant_by_slug(tx, ctx, &input.slug)?.is_some() {
            return Err(Problem::new(ErrorCode::Conflict, "that slug is taken"));
        }
        let now = app.timestamp();
        let tenant = Tenant {
            id: TenantId::fresh(),
            slug: input.slug.as_str().to_owned(),
            name: input.name.clone(),
            created_at: now.clone(),
        };
        repo::insert_tenant(tx, ctx, &tenant)?;
        let platform_user =
            repo::ensure_user(tx, ctx, &input.admin_email, &input.admin_name, UserId::fresh(), &now)?;
        let admin = Member {
            id: MembershipId::fresh(),
            user_id: ActorId::fresh(),
            email: input.admin_email.clone(),
            name: input.admin_name.clone(),
            role: Role::Admin,
            created_at: now.clone(),
        };
        // From here the writes are the new tenant's, made as its admin.
        let scope = TenantScope {
            tenant_id: tenant.id,
            actor_id: admin.user_id,
            role: Role::Admin,
        };
        let s = Scoped::new(tx, ctx, &scope);
        repo::insert_membership(&s, &platform_user, &admin)?;
        let token_id = TokenId::fresh();
        repo::insert_token(
            &s,
            &NewToken {
                id: &token_id,
                membership_id: &admin.id,
                hash: &token_hash(&token),
                created_at: &now,
            },
        )?;
        let body = |token: serde_json::Value| {
            json!({
                "tenant": {"id": tenant.id, "slug": tenant.slug, "name": tenant.name, "created_at": tenant.created_at},
                "admin": {"user_id": admin.user_id, "membership_id": admin.id},
                "token": token,
                "token_id": token_id,
            })
        };
        Ok(Written {
            sent: stored(StatusCode::CREATED, &body(json!(token))),
            // The token is shown once: a replay gets everything but the secret.
            kept: stored(StatusCode::CREATED, &body(serde_json::Value::Null)),
        })
    })
}

/// `GET /v1/{tenant}`: the caller's tenant.
pub fn get<D: Database, C: Clock>(
    app: &Identity<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let ctx = call.ctx;
    let scope = ctx.scope()?;
    let tenant = repo::tenant_by_id(&app.store, ctx, &scope.tenant_id)?
        .ok_or_else(|| Problem::not_found("tenant"))?;
    Ok(message::json(StatusCode::OK, &tenant))
}

/// A response body for the idempotency record.
pub fn stored(status: StatusCode, body: &serde_json::Value) -> StoredResponse {
    StoredResponse {
        status,
        body: body.to_string(),
    }
}

/// A new API token (500 if the host has no randomness to give).
pub fn new_token() -> Result<String, Problem> {
    generate_token().map_err(|e| {
        journal::event(Event::Failure {
            what: "generating a token",
            cause: e.to_string(),
        });
        Problem::new(ErrorCode::Internal, "could not create a token")
    })
}
