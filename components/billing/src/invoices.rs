//! Invoices: `GET, POST /v1/{tenant}/invoices`, `GET, PATCH
//! /v1/{tenant}/invoices/{id}`. Creating one is a single budget: check the
//! resident at community, write invoice + idempotency record + outbox event
//! in one transaction, then deliver the event if time allows.

use crate::app::COMMUNITY;
use meridian_platform::http::idempotency::{self, Begun, Written};
use meridian_platform::http::page::{Cursors, PageRequest};
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::http::SendError;
use meridian_platform::ids::new_id;
use meridian_platform::input::query::query_param;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::wire::problem::FieldError;
use meridian_platform::{ErrorCode, Problem, RequestContext};
use serde_json::json;

use crate::app::{Billing, Env};
use crate::model::{Invoice, InvoiceId, InvoiceStatus, OutboxEvent, ResidentId};
use crate::money::{AmountCents, Currency, DueDate, MAX_AMOUNT_CENTS};
use crate::repo::{self, InvoiceFilter};
use crate::Call;

/// A validated invoice to create.
struct NewInvoice {
    resident_id: ResidentId,
    amount_cents: AmountCents,
    currency: Currency,
    description: String,
    due_date: DueDate,
}

impl TryFrom<&[u8]> for NewInvoice {
    type Error = Problem;

    fn try_from(body: &[u8]) -> Result<Self, Problem> {
        let mut b = JsonBody::parse(body)?;
        let fields = (
            b.parsed("resident_id", |s| {
                ResidentId::parse(s).ok_or("must be a UUID")
            }),
            b.integer("amount_cents", 1, MAX_AMOUNT_CENTS)
                .and_then(AmountCents::new),
            b.parsed("currency", Currency::parse),
            b.text("description", 1, 500),
            b.parsed("due_date", DueDate::parse),
        );
        let (resident_id, amount_cents, currency, description, due_date) = b.complete(fields)?;
        Ok(Self {
            resident_id,
            amount_cents,
            currency,
            description,
            due_date,
        })
    }
}

/// The problem for a community call that did not give a usable answer:
/// the hop's 504 when the budget ran out (there or here), else a final
/// `upstream_unavailable` (the call was already retried).
pub(crate) fn community_failure(
    ctx: &RequestContext,
    outcome: Result<Response, SendError>,
    what: &str,
) -> Problem {
    match outcome {
        Ok(r) if r.spent_the_budget() => ctx.spent().into(),
        Err(SendError::Deadline(spent)) => spent.into(),
        Err(SendError::CircuitOpen(wait)) => Problem::downstream_failing("community", wait),
        Ok(r) => {
            journal::event(Event::Failure {
                what: "calling community",
                cause: format!("answered {} when asked to {what}", r.status().as_u16()),
            });
            Problem::new(
                ErrorCode::UpstreamUnavailable,
                format!("the community service could not {what}"),
            )
        }
        Err(e) => {
            journal::event(Event::Failure {
                what: "calling community",
                cause: e.to_string(),
            });
            Problem::new(
                ErrorCode::UpstreamUnavailable,
                "the community service could not be reached",
            )
        }
    }
}

impl<E: Env> Billing<E> {
    /// An invoice the caller may see.
    pub(crate) async fn find_visible_invoice(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<Invoice, Problem> {
        let invoice = self.find_invoice(ctx, id)?;
        match self.visible_residents(ctx).await? {
            Some(ids) if !ids.contains(&invoice.resident_id) => Err(Problem::not_found("invoice")),
            _ => Ok(invoice),
        }
    }

    pub(crate) fn find_invoice(&self, ctx: &RequestContext, id: &str) -> Result<Invoice, Problem> {
        let id = InvoiceId::parse(id).ok_or_else(|| Problem::not_found("invoice"))?;
        repo::invoice(&self.scoped(ctx)?, &id)?.ok_or_else(|| Problem::not_found("invoice"))
    }

    /// Reads `path` from community under the same budget: a read, so safe
    /// to repeat while the budget lasts.
    async fn read_community(
        &self,
        ctx: &RequestContext,
        path: &str,
    ) -> Result<Response, SendError> {
        let url = format!("{}{path}", self.community_url);
        let request = outbound::request(Method::GET, &url, Vec::new())?;
        let call = self
            .upstream
            .call(ctx, COMMUNITY, &RetryPolicy::standard(), request)
            .await;
        call.response
    }

    /// Asks community whether the resident exists, under the same budget.
    async fn check_resident(
        &self,
        ctx: &RequestContext,
        resident_id: &ResidentId,
    ) -> Result<(), Problem> {
        let path = format!("/internal/residents/{resident_id}");
        match self.read_community(ctx, &path).await {
            Ok(r) if r.status() == 200 => Ok(()),
            Ok(r) if r.status() == 404 => Err(Problem::validation(vec![FieldError::new(
                "resident_id",
                "no such resident",
            )])),
            other => Err(community_failure(ctx, other, "check the resident")),
        }
    }

    /// Whose bills the caller may see: `None` for staff (everyone's); for a
    /// resident-role member, the residents linked to them, asked of
    /// community under the same budget (a read, safe to repeat).
    pub(crate) async fn visible_residents(
        &self,
        ctx: &RequestContext,
    ) -> Result<Option<Vec<ResidentId>>, Problem> {
        let (_, scope) = ctx.member()?;
        if scope.role.is_staff() {
            return Ok(None);
        }
        match self.read_community(ctx, "/internal/linked-residents").await {
            Ok(r) if r.status() == 200 => {
                let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap_or_default();
                let ids = body
                    .get("resident_ids")
                    .and_then(|ids| ids.as_array())
                    .map(|ids| {
                        ids.iter()
                            .filter_map(|id| id.as_str().and_then(ResidentId::parse))
                            .collect()
                    });
                ids.map(Some)
                    .ok_or_else(|| community_failure(ctx, Ok(r), "list the caller's residents"))
            }
            other => Err(community_failure(ctx, other, "list the caller's residents")),
        }
    }
}

/// Lists invoices, optionally `?status=` and `?resident_id=`; a
/// resident-role member sees only the invoices of their own residents.
pub async fn list<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    let ctx = call.ctx;
    let s = app.scoped(ctx)?;
    let page = PageRequest::from_query(call.query(), Cursors::of(call.ctx)?)?;
    let invalid =
        |what: &str| Problem::new(ErrorCode::InvalidRequest, format!("{what} is not valid"));
    let filter = InvoiceFilter {
        status: query_param(call.query(), "status")
            .map(|s| InvoiceStatus::parse(&s).map_err(|_| invalid("status")))
            .transpose()?,
        resident_id: query_param(call.query(), "resident_id")
            .map(|s| ResidentId::parse(&s).ok_or_else(|| invalid("resident_id")))
            .transpose()?,
        visible_to: app.visible_residents(ctx).await?,
    };
    page.list(|window| repo::list_invoices(&s, &filter, window))
}

/// One invoice; for a resident-role member, only one of their own
/// residents' (any other is "not found").
pub async fn get<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    Ok(message::json(
        StatusCode::OK,
        &app.find_visible_invoice(call.ctx, call.id()).await?,
    ))
}

/// Creates an invoice (admins and managers).
pub async fn create<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    let (ctx, operation) = (call.ctx, call.operation());
    let s = app.scoped(ctx)?;
    let (tenant, scope) = (s.scope.tenant_id.to_string(), s.scope);
    let actor = scope.actor_id.to_string();
    let input = NewInvoice::try_from(call.body())?;
    let key = idempotency::key_of(call.request)?;
    // The claim comes first, so a concurrent duplicate is refused at
    // once instead of racing through the resident check.
    let write = match idempotency::begin(
        &app.store,
        ctx,
        key.as_ref(),
        (&tenant, &actor),
        &operation,
        call.body(),
    )? {
        Begun::Replay(response) => return Ok(response),
        Begun::Proceed(write) => write,
    };
    if let Err(problem) = app.check_resident(ctx, &input.resident_id).await {
        write.give_up(&app.store, ctx, &problem);
        return Err(problem);
    }
    let now = app.timestamp();
    let invoice = Invoice {
        id: InvoiceId::fresh(),
        resident_id: input.resident_id,
        amount_cents: input.amount_cents,
        currency: input.currency,
        description: input.description,
        due_date: input.due_date,
        status: InvoiceStatus::Open,
        balance_cents: input.amount_cents.get(),
        created_at: now.clone(),
    };
    let event = OutboxEvent {
        event_id: new_id(),
        tenant_id: tenant.clone(),
        resident_id: invoice.resident_id.clone(),
        kind: "invoice.created".into(),
        payload: json!({
            "invoice_id": invoice.id, "amount_cents": invoice.amount_cents, "currency": invoice.currency,
            "description": invoice.description, "due_date": invoice.due_date,
        }),
        created_at: now,
    };
    // Known before it runs, with nothing to read on the way: the
    // invoice, its event and the key's answer are one batch (on
    // PostgreSQL one statement).
    let response = write.commit_all(
        &app.store,
        ctx,
        vec![
            repo::insert_invoice(&s, &actor, &invoice),
            repo::enqueue(&event),
        ],
        Written::same(StatusCode::CREATED, &invoice),
    )?;
    app.deliver_later(vec![event]);
    Ok(response)
}

/// `PATCH /invoices/{id}` with `{"status": "void"}`: voids an open
/// invoice that has no payments (admins and managers).
pub fn void<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    let ctx = call.ctx;
    let id = call.id();
    let s = app.scoped(ctx)?;
    let mut b = JsonBody::parse(call.body())?;
    let status = b.parsed("status", |s| match InvoiceStatus::parse(s) {
        Ok(InvoiceStatus::Void) => Ok(()),
        _ => Err("can only be set to void"),
    });
    b.complete((status,))?;
    let id = InvoiceId::parse(id).ok_or_else(|| Problem::not_found("invoice"))?;
    s.write_once(call, |s| {
        let mut invoice = repo::invoice(s, &id)?.ok_or_else(|| Problem::not_found("invoice"))?;
        let voided =
            invoice.status.may_be_voided() && repo::void_invoice(s, &id, &app.timestamp())?;
        if !voided {
            return Err(Problem::new(
                ErrorCode::Conflict,
                format!(
                    "an invoice that is {} or has payments cannot be voided",
                    invoice.status.as_str()
                ),
            ));
        }
        invoice.status = InvoiceStatus::Void;
        Ok(Written::same(StatusCode::OK, &invoice))
    })
}
