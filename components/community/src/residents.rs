//! Residents: `POST /v1/{tenant}/residents`, `GET, PATCH, DELETE
//! /v1/{tenant}/residents/{id}`, and the internal reads billing uses. The
//! list (`GET /v1/{tenant}/residents`) is a plain page of the store's rows,
//! served from the route table (`lib.rs`).

use meridian_platform::http::idempotency::Written;
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::{Scoped, ServiceStore};
use meridian_platform::ids::parse_id;
use meridian_platform::input::validate::{normalize_email, JsonBody};
use meridian_platform::store::db::Database;
use meridian_platform::wire::problem::FieldError;
use meridian_platform::{Clock, Problem};

use crate::app::Community;
use crate::model::{Resident, ResidentId};
use crate::repo;
use crate::Call;

fn user_id(raw: &str) -> Result<String, &'static str> {
    parse_id(raw).ok_or("must be a UUID")
}

/// The resident id of a path, or a 404: a malformed id names no resident.
fn resident_id(raw: &str) -> Result<ResidentId, Problem> {
    ResidentId::parse(raw).ok_or_else(|| Problem::not_found("resident"))
}

/// The live resident `id` names, or a 404.
/// The name a patch gives a resident to make a `trap-points` build trap
/// mid-transaction.
#[cfg(feature = "trap-points")]
const TRAP_MID_TRANSACTION: &str = "trap: mid-transaction";

fn found<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ResidentId,
) -> Result<Resident, Problem> {
    repo::resident(s, id)?.ok_or_else(|| Problem::not_found("resident"))
}

/// One resident (any member; also the internal read billing makes).
pub fn get<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let resident = found(&app.scoped(call.ctx)?, &resident_id(call.id())?)?;
    Ok(message::json(StatusCode::OK, &resident))
}

/// `GET /internal/linked-residents`: the ids of the residents linked to the
/// calling member, for a service that shows a resident only their own.
pub fn linked<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let ids = repo::residents_linked_to(&s, &s.scope.actor_id.to_string())?;
    Ok(message::json(
        StatusCode::OK,
        &serde_json::json!({ "resident_ids": ids }),
    ))
}

/// Adds a resident (admins and managers).
pub fn create<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let mut b = JsonBody::parse(call.body())?;
    let name = b.text("name", 1, 200);
    let unit = b.text("unit", 1, 50);
    let email = b.patch_parsed("email", true, normalize_email);
    let user = b.patch_parsed("user_id", true, user_id);
    let (name, unit, email, user) = b.complete((name, unit, email, user))?;
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
    // Known before it runs: the resident and the key's answer are one
    // batch (on PostgreSQL one statement).
    s.write_all_once(
        call,
        vec![repo::save_resident(&s, &resident)],
        Written::same(StatusCode::CREATED, &resident),
    )
}

/// Changes some of a resident's fields (admins and managers). `email` and
/// `user_id` may be cleared with `null`.
pub fn update<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let id = resident_id(call.id())?;
    let mut b = JsonBody::parse(call.body())?;
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
    s.write_once(call, |s| {
        let mut r = repo::resident_held(s, &id)?.ok_or_else(|| Problem::not_found("resident"))?;
        name.apply_to_required(&mut r.name);
        unit.apply_to_required(&mut r.unit);
        email.apply_to(&mut r.email);
        user.apply_to(&mut r.user_id);
        r.updated_at = app.timestamp();
        s.store.make(s.ctx, &repo::save_resident(s, &r))?;
        // A test build's trap point (feature `trap-points`, in no deployed
        // build): the instance traps with its transaction open and its
        // write made (tests/tests/postgres.rs shows the next requests on
        // that pooled connection commit nothing of it).
        #[cfg(feature = "trap-points")]
        if r.name == TRAP_MID_TRANSACTION {
            std::process::abort();
        }
        Ok(Written::same(StatusCode::OK, &r))
    })
}

/// Removes a resident (admins and managers); it is "not found" from then on.
pub fn delete<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let id = resident_id(call.id())?;
    s.write_once(call, |s| {
        found(s, &id)?;
        repo::delete_resident(s, &id, &app.timestamp())?;
        Ok(Written::no_content())
    })
}
