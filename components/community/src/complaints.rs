//! Complaints: `GET, POST /v1/{tenant}/complaints`, `GET, PATCH
//! /v1/{tenant}/complaints/{id}`. Any member files; residents see their
//! own; admins and managers see all and move them along.

use meridian_platform::http::idempotency::Written;
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::{Scoped, ServiceStore};
use meridian_platform::input::query::query_param;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::TenantScope;
use meridian_platform::wire::problem::FieldError;
use meridian_platform::{Clock, ErrorCode, Problem};

use crate::app::Community;
use crate::model::{Complaint, ComplaintId, ComplaintStatus, ResidentId};
use crate::repo::{self, ComplaintFilter};
use crate::Call;

/// Whom a list or read is limited to: residents see what they filed.
fn visible_to(scope: &TenantScope) -> Option<String> {
    (!scope.role.is_staff()).then(|| scope.actor_id.to_string())
}

/// Lists complaints, optionally `?status=`, a page at a time.
pub fn list<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let status = query_param(call.query(), "status")
        .map(|s| {
            ComplaintStatus::parse(&s)
                .map_err(|e| Problem::new(ErrorCode::InvalidRequest, format!("status {e}")))
        })
        .transpose()?;
    let filed_by = visible_to(s.scope);
    let filter = ComplaintFilter {
        filed_by: filed_by.as_deref(),
        status,
    };
    s.page(call, |s, window| repo::list_complaints(s, &filter, window))
}

fn find<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ComplaintId,
) -> Result<Complaint, Problem> {
    let filed_by = visible_to(s.scope);
    repo::complaint(s, id)?
        .filter(|c| filed_by.as_ref().is_none_or(|me| *me == c.filed_by))
        .ok_or_else(|| Problem::not_found("complaint"))
}

/// One complaint.
pub fn get<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let id = ComplaintId::parse(call.id()).ok_or_else(|| Problem::not_found("complaint"))?;
    let s = app.scoped(call.ctx)?;
    let complaint = find(&s, &id)?;
    Ok(message::json(StatusCode::OK, &complaint))
}

/// Files a complaint about a resident of the tenant (any member).
pub fn create<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let mut b = JsonBody::parse(call.body())?;
    let fields = (
        b.parsed("resident_id", |s| {
            ResidentId::parse(s).ok_or("must be a UUID")
        }),
        b.text("subject", 1, 200),
        b.text("body", 1, 5_000),
    );
    let (resident_id, subject, body) = b.complete(fields)?;
    let filed_by = s.scope.actor_id.to_string();
    s.write_once(call, |s| {
        if repo::resident(s, &resident_id)?.is_none() {
            return Err(Problem::validation(vec![FieldError::new(
                "resident_id",
                "no such resident",
            )]));
        }
        let now = app.timestamp();
        let complaint = Complaint {
            id: ComplaintId::fresh(),
            resident_id,
            subject,
            body,
            status: ComplaintStatus::Open,
            filed_by,
            created_at: now.clone(),
            updated_at: now,
        };
        repo::insert_complaint(s, &complaint)?;
        Ok(Written::same(StatusCode::CREATED, &complaint))
    })
}

/// Moves a complaint one step along `open → in_progress → resolved →
/// closed` (admins and managers); any other move is a 409.
pub fn update<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let mut b = JsonBody::parse(call.body())?;
    let status = b.parsed("status", ComplaintStatus::parse);
    let (to,) = b.complete((status,))?;
    let id = ComplaintId::parse(call.id()).ok_or_else(|| Problem::not_found("complaint"))?;
    s.write_once(call, |s| {
        let mut complaint = find(s, &id)?;
        let from = complaint.status;
        if !from.can_become(to) {
            return Err(Problem::new(
                ErrorCode::Conflict,
                format!(
                    "a complaint that is {} cannot become {}",
                    from.as_str(),
                    to.as_str()
                ),
            ));
        }
        let now = app.timestamp();
        // Guarded by the old status, so a concurrent change cannot be overwritten.
        if !repo::set_complaint_status(s, &id, (from, to), &now)? {
            return Err(Problem::new(
                ErrorCode::Conflict,
                "the complaint changed meanwhile",
            ));
        }
        complaint.status = to;
        complaint.updated_at = now;
        Ok(Written::same(StatusCode::OK, &complaint))
    })
}
