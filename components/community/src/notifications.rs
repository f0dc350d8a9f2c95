//! Notifications: billing's events as they reach a resident. The consumer
//! (`POST /internal/events`) is keyed by event id, so a repeated delivery
//! changes nothing and still succeeds.

use meridian_platform::http::page::{Cursors, PageRequest};
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::ids::parse_id;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::TenantId;
use meridian_platform::time::Timestamp;
use meridian_platform::wire::headers;
use meridian_platform::{Clock, ErrorCode, Problem};
use serde_json::json;

use crate::app::Community;
use crate::model::ResidentId;
use crate::repo::{self, NewNotification};
use crate::Call;

/// `GET /v1/{tenant}/residents/{id}/notifications`: staff see any
/// resident's; a resident-role member only those of a resident linked to
/// them (any other is "not found", as if it did not exist).
pub fn list<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let scope = s.scope;
    let page = PageRequest::from_query(call.query(), Cursors::of(call.ctx)?)?;
    let actor = scope.actor_id.to_string();
    let resident = ResidentId::parse(call.id())
        .map(|id| repo::resident(&s, &id))
        .transpose()?
        .flatten()
        .filter(|r| scope.role.is_staff() || r.user_id.as_deref() == Some(actor.as_str()))
        .ok_or_else(|| Problem::not_found("resident"))?;
    page.list(|window| repo::list_notifications(&s, &resident.id, window))
}

/// `POST /internal/events`: stores the event as a notification once.
/// Answers 200 `{"event_id", "stored": true|false}` — a duplicate is a success.
/// The event belongs to the tenant of the outbox row it came from, which
/// billing names in `x-meridian-event-tenant`; the body's `tenant_id` must
/// agree with it.
pub fn consume<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let row_tenant = call
        .request
        .header(headers::EVENT_TENANT)
        .and_then(|raw| parse_id(raw)?.parse::<TenantId>().ok())
        .ok_or_else(|| {
            Problem::new(
                ErrorCode::InvalidRequest,
                "x-meridian-event-tenant must name the tenant of the event's outbox row",
            )
        })?;
    let uuid = |s: &str| parse_id(s).ok_or("must be a UUID");
    let mut b = JsonBody::parse(call.body())?;
    let event_id = b.parsed("event_id", uuid);
    let tenant_id = b.parsed("tenant_id", |s| {
        uuid(s)
            .and_then(|id| id.parse::<TenantId>().map_err(|_| "must be a UUID"))
            .and_then(|id| match id == row_tenant {
                true => Ok(id),
                false => Err("must be the tenant of the event's outbox row"),
            })
    });
    let resident_id = b.parsed("resident_id", |s| {
        ResidentId::parse(s).ok_or("must be a UUID")
    });
    let kind = b.text("type", 1, 100);
    let payload = b.object("payload");
    let created_at = b.parsed("created_at", |s| {
        Timestamp::stored(s).ok_or("must be an RFC 3339 UTC time with milliseconds")
    });
    let fields = (event_id, tenant_id, resident_id, kind, payload, created_at);
    let (event_id, tenant_id, resident_id, kind, payload, created_at) = b.complete(fields)?;
    let stored = repo::insert_notification(
        &app.store,
        call.ctx,
        &NewNotification {
            event_id: &event_id,
            tenant_id: &tenant_id,
            resident_id: &resident_id,
            kind: &kind,
            payload: &serde_json::Value::Object(payload).to_string(),
            created_at: &created_at,
            received_at: &app.timestamp(),
        },
    )?;
    Ok(message::json(
        StatusCode::OK,
        &json!({"event_id": event_id, "stored": stored}),
    ))
}
