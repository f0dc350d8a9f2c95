//! Residents: `GET, POST /v1/{tenant}/residents`, `GET, PATCH, DELETE
//! /v1/{tenant}/residents/{id}`, and the internal read billing uses.

use meridian_platform::http::prelude::*;
use meridian_platform::ids::parse_id;
use meridian_platform::input::validate::{normalize_email, JsonBody, Patch};
use meridian_platform::store::db::Database;
use meridian_platform::store::idempotency::{write_once, Written};
use meridian_platform::store::page::PageRequest;
use meridian_platform::wire::problem::FieldError;
use meridian_platform::{Clock, Problem, RequestContext};

use crate::app::Community;
use crate::model::{Resident, ResidentId};
use crate::repo;

fn user_id(raw: &str) -> Result<String, &'static str> {
    parse_id(raw).ok_or("must be a UUID")
}

/// Lists live residents, a page at a time (any member).
pub fn list<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let page = PageRequest::from_query(request.query())?;
    page.list(|window| repo::list_residents(&s, window))
}

/// One resident (any member; also the internal read billing makes).
pub fn get<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    id: &str,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let resident = ResidentId::parse(id)
        .map(|id| repo::resident(&s, &id))
        .transpose()?
        .flatten()
        .ok_or_else(|| Problem::not_found("resident"))?;
    Ok(message::json(StatusCode::OK, &resident))
}

/// `GET /internal/linked-residents`: the ids of the residents linked to the
/// calling member, for a service that shows a resident only their own.
pub fn linked<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let ids = repo::residents_linked_to(&s, &s.scope.actor_id.to_string())?;
    Ok(message::json(
        StatusCode::OK,
        &serde_json::json!({ "resident_ids": ids }),
    ))
}

/// Adds a resident (admins and managers).
pub fn create<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
    operation: &str,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let mut b = JsonBody::parse(request.body())?;
    let name = b.text("name", 1, 200);
    let unit = b.text("unit", 1, 50);
    let email = b.patch_parsed("email", true, normalize_email);
    let user = b.patch_parsed("user_id", true, user_id);
    let (name, unit, email, user) = b.complete((name, unit, email, user))?;
    write_once(&app.store, ctx, request, operation, |tx| {
        let now = app.timestamp();
        let resident = Resident {
            id: ResidentId::fresh(),
            name,
            unit,
            email: email.into_option(),
            user_id: user.into_option(),
            created_at: now.clone(),
            updated_at: now,
        };
        repo::save_resident(&s.on(tx), &resident)?;
        Ok(Written::same(StatusCode::CREATED, &resident))
    })
}

/// Changes some of a resident's fields (admins and managers). `email` and
/// `user_id` may be cleared with `null`.
pub fn update<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
    id: &str,
    operation: &str,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let id = ResidentId::parse(id).ok_or_else(|| Problem::not_found("resident"))?;
    let mut b = JsonBody::parse(request.body())?;
    if b.is_empty() {
        return Err(Problem::validation(vec![FieldError::new(
            "body",
            "the patch changes nothing: give at least one of name, unit, email, user_id",
        )]));
    }
    let name = b.patch_text("name", 1, 200, false);
    let unit = b.patch_text("unit", 1, 50, false);
    let email = b.patch_parsed("email", true, normalize_email);
    let user = b.patch_parsed("user_id", true, user_id);
    let (name, unit, email, user) = b.complete((name, unit, email, user))?;
    write_once(&app.store, ctx, request, operation, |tx| {
        let s = s.on(tx);
        let mut r = repo::resident(&s, &id)?.ok_or_else(|| Problem::not_found("resident"))?;
        if let Patch::Set(v) = name {
            r.name = v;
        }
        if let Patch::Set(v) = unit {
            r.unit = v;
        }
        apply(&mut r.email, email);
        apply(&mut r.user_id, user);
        r.updated_at = app.timestamp();
        repo::save_resident(&s, &r)?;
        Ok(Written::same(StatusCode::OK, &r))
    })
}

fn apply(slot: &mut Option<String>, patch: Patch<String>) {
    match patch {
        Patch::Keep => {}
        Patch::Clear => *slot = None,
        Patch::Set(v) => *slot = Some(v),
    }
}

/// Removes a resident (admins and managers); it is "not found" from then on.
pub fn delete<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
    id: &str,
    operation: &str,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let id = ResidentId::parse(id).ok_or_else(|| Problem::not_found("resident"))?;
    write_once(&app.store, ctx, request, operation, |tx| {
        let s = s.on(tx);
        repo::resident(&s, &id)?.ok_or_else(|| Problem::not_found("resident"))?;
        repo::delete_resident(&s, &id, &app.timestamp())?;
        Ok(Written::no_content())
    })
}
