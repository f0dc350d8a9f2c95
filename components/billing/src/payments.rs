//! Payments: `POST, GET /v1/{tenant}/invoices/{id}/payments`. A payment
//! lowers the balance atomically, marks the invoice paid at zero, and emits
//! `payment.received` in the same transaction.

use meridian_platform::http::idempotency::Written;
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::ids::new_id;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::wire::problem::FieldError;
use meridian_platform::Problem;
use serde_json::json;

use crate::app::{Billing, Env};
use crate::model::{OutboxEvent, Payment, PaymentId, RecordedPayment};
use crate::money::{AmountCents, PaymentMethod, MAX_AMOUNT_CENTS};
use crate::repo::{self, NewPayment};
use crate::Call;

/// Records a payment (admins and managers). Overpaying, or paying a
/// void or paid invoice, is a 422.
pub async fn create<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    let ctx = call.ctx;
    let invoice_id = call.id();
    let s = app.scoped(ctx)?;
    let (tenant, scope) = (s.scope.tenant_id.to_string(), s.scope);
    let actor = scope.actor_id.to_string();
    let invoice = app.find_invoice(ctx, invoice_id)?;
    let mut b = JsonBody::parse(call.body())?;
    let fields = (
        b.integer("amount_cents", 1, MAX_AMOUNT_CENTS)
            .and_then(AmountCents::new),
        b.parsed("method", PaymentMethod::parse),
    );
    let (amount, method) = b.complete(fields)?;
    let mut emitted = None;
    let response = s.write_once(call, |s| {
        let now = app.timestamp();
        let Some((balance, status)) = repo::apply_payment(s, &invoice.id, amount, &now)?
        else {
            // Re-read inside the transaction for an exact reason.
            let current =
                repo::invoice(s, &invoice.id)?.ok_or_else(|| Problem::not_found("invoice"))?;
            let message = match current.status.refuses_payment() {
                Some(reason) => reason.to_owned(),
                None => format!(
                    "exceeds the balance of {} {}",
                    current.balance_cents, current.currency
                ),
            };
            return Err(Problem::validation(vec![FieldError::new(
                "amount_cents",
                message,
            )]));
        };
        let payment = RecordedPayment {
            payment: Payment {
                id: PaymentId::fresh(),
                invoice_id: invoice.id.clone(),
                amount_cents: amount,
                method,
                created_at: now.clone(),
            },
            currency: invoice.currency.clone(),
            balance_cents: balance,
            invoice_status: status,
        };
        repo::insert_payment(
            s,
            &NewPayment {
                id: &payment.payment.id,
                invoice_id: &payment.payment.invoice_id,
                amount_cents: amount,
                method,
                created_by: &actor,
                created_at: &now,
            },
        )?;
        let event = OutboxEvent {
            event_id: new_id(),
            tenant_id: tenant.clone(),
            resident_id: invoice.resident_id.clone(),
            kind: "payment.received".into(),
            payload: json!({
                "payment_id": payment.payment.id, "invoice_id": payment.payment.invoice_id, "amount_cents": amount,
                "currency": payment.currency, "balance_cents": payment.balance_cents,
                "invoice_status": payment.invoice_status,
            }),
            created_at: now,
        };
        s.store.make(ctx, &repo::enqueue(&event))?;
        emitted = Some(event);
        Ok(Written::same(StatusCode::CREATED, &payment))
    })?;
    if let Some(event) = emitted {
        app.deliver_later(vec![event]);
    }
    Ok(response)
}

/// An invoice's payments, a page at a time (any member who may see
/// the invoice).
pub async fn list<E: Env>(app: &Billing<E>, call: &Call<'_>) -> Result<Response, Problem> {
    let ctx = call.ctx;
    let invoice_id = call.id();
    let s = app.scoped(ctx)?;
    let invoice = app.find_visible_invoice(ctx, invoice_id).await?;
    s.page(call, |s, window| {
        repo::list_payments(s, &invoice.id, window)
    })
}
