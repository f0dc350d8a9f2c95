//! Billing's SQL. A tenant-scoped function takes the store scoped to the
//! request and its tenant first, and invoices and payments by their typed
//! ids; the outbox's take the request context first. The store checks the
//! budget before each statement; every query filters by tenant (the
//! relay's outbox scan is the one cross-tenant read, by design).

use meridian_platform::http::page::Window;
use meridian_platform::http::scoped::Scoped;
use meridian_platform::store::batch::Write;
use meridian_platform::store::db::{Database, DbError, Row, Store, Value};
use meridian_platform::time::Timestamp;
use meridian_platform::{Clock, RequestContext};

use crate::model::{
    Invoice, InvoiceId, InvoiceStatus, OutboxEvent, Payment, PaymentId, ResidentId,
};
use crate::money::{AmountCents, Currency, DueDate, PaymentMethod};

/// Billing's storage.
pub type Db<D, C> = Store<D, C>;

const INVOICE_COLUMNS: &str = "id, resident_id, amount_cents, currency, description, due_date, status, balance_cents, created_at";

fn amount(r: &Row) -> Result<AmountCents, DbError> {
    let cents = r.integer("amount_cents")?;
    AmountCents::new(cents)
        .ok_or_else(|| DbError::Decode(format!("column amount_cents: unexpected {cents}")))
}

fn status(r: &Row) -> Result<InvoiceStatus, DbError> {
    r.parsed("status", InvoiceStatus::parse)
}

fn invoice_from(r: &Row) -> Result<Invoice, DbError> {
    Ok(Invoice {
        id: InvoiceId::stored(r.text("id")?),
        resident_id: ResidentId::stored(r.text("resident_id")?),
        amount_cents: amount(r)?,
        currency: r.parsed("currency", Currency::parse)?,
        description: r.text("description")?.to_owned(),
        due_date: r.parsed("due_date", DueDate::parse)?,
        status: status(r)?,
        balance_cents: r.integer("balance_cents")?,
        created_at: r.timestamp("created_at")?,
    })
}

/// Which invoices a list shows.
#[derive(Debug, Default)]
pub struct InvoiceFilter {
    /// Only this status.
    pub status: Option<InvoiceStatus>,
    /// Only this resident's.
    pub resident_id: Option<ResidentId>,
    /// Only these residents' (what a resident-role member may see).
    pub visible_to: Option<Vec<ResidentId>>,
}

/// A page of invoices after `after`, in creation order.
pub fn list_invoices<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    filter: &InvoiceFilter,
    window: Window,
) -> Result<Vec<(i64, Invoice)>, DbError> {
    let visible = filter.visible_to.as_ref().map(|ids| {
        serde_json::Value::from(ids.iter().map(ResidentId::as_str).collect::<Vec<_>>()).to_string()
    });
    s.listed(
        &format!(
            "SELECT {INVOICE_COLUMNS}, seq FROM invoices
             WHERE tenant_id = ? AND (CAST(? AS TEXT) IS NULL OR status = ?) AND (CAST(? AS TEXT) IS NULL OR resident_id = ?)
               AND (CAST(? AS TEXT) IS NULL OR resident_id IN ({visible_ids})) AND seq > ?
             ORDER BY seq LIMIT ?",
            visible_ids = s.store.db().dialect().json_text_elements()
        ),
        [
            s.tenant(),
            filter.status.map(InvoiceStatus::as_str).into(),
            filter.status.map(InvoiceStatus::as_str).into(),
            filter
                .resident_id
                .as_ref()
                .map(ResidentId::to_string)
                .into(),
            filter
                .resident_id
                .as_ref()
                .map(ResidentId::to_string)
                .into(),
            visible.clone().into(),
            visible.into(),
        ],
        window,
        invoice_from)
}

/// An invoice of the tenant.
pub fn invoice<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &InvoiceId,
) -> Result<Option<Invoice>, DbError> {
    s.one(
        &format!("SELECT {INVOICE_COLUMNS} FROM invoices WHERE tenant_id = ? AND id = ?"),
        &[s.tenant(), id.into()],
        invoice_from,
    )
}

/// The write that inserts an invoice.
pub fn insert_invoice<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    created_by: &str,
    i: &Invoice,
) -> Write {
    Write::new(
        "INSERT INTO invoices (id, tenant_id, resident_id, amount_cents, currency, description, due_date, status,
                               balance_cents, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        vec![
            i.id.as_str().into(),
            s.tenant(),
            i.resident_id.as_str().into(),
            Value::Integer(i.amount_cents.get()),
            i.currency.as_str().into(),
            i.description.as_str().into(),
            i.due_date.as_str().into(),
            i.status.as_str().into(),
            Value::Integer(i.balance_cents),
            created_by.into(),
            (&i.created_at).into(),
            (&i.created_at).into(),
        ],
    )
}

/// Lowers an open invoice's balance by `amount`, marking it paid at zero.
/// Returns the new `(balance, status)`, or `None` if the invoice was not
/// open or its balance was smaller than `amount` (checked in the statement
/// itself, so concurrent payments cannot overdraw it).
pub fn apply_payment<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    invoice_id: &InvoiceId,
    amount: AmountCents,
    at: &Timestamp,
) -> Result<Option<(i64, InvoiceStatus)>, DbError> {
    let rows = s.store.query(
        s.ctx,
        "UPDATE invoices
         SET balance_cents = balance_cents - ?1,
             status = CASE WHEN balance_cents - ?1 = 0 THEN ?5 ELSE status END,
             updated_at = ?2
         WHERE tenant_id = ?3 AND id = ?4 AND status = ?6 AND balance_cents >= ?1
         RETURNING balance_cents, status",
        &[
            Value::Integer(amount.get()),
            at.into(),
            s.tenant(),
            invoice_id.into(),
            InvoiceStatus::Paid.as_str().into(),
            InvoiceStatus::Open.as_str().into(),
        ],
    )?;
    rows.first()
        .map(|r| Ok((r.integer("balance_cents")?, status(r)?)))
        .transpose()
}

/// Voids an open invoice with no payments; false if it was not open or had payments.
pub fn void_invoice<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    invoice_id: &InvoiceId,
    at: &Timestamp,
) -> Result<bool, DbError> {
    let rows = s.store.query(
        s.ctx,
        "UPDATE invoices SET status = ?, updated_at = ?
         WHERE tenant_id = ? AND id = ? AND status = ? AND balance_cents = amount_cents
         RETURNING id",
        &[
            InvoiceStatus::Void.as_str().into(),
            at.into(),
            s.tenant(),
            invoice_id.into(),
            InvoiceStatus::Open.as_str().into(),
        ],
    )?;
    Ok(!rows.is_empty())
}

/// A payment row to insert.
pub struct NewPayment<'a> {
    /// UUID.
    pub id: &'a PaymentId,
    /// Invoice UUID.
    pub invoice_id: &'a InvoiceId,
    /// Amount.
    pub amount_cents: AmountCents,
    /// How it was paid.
    pub method: PaymentMethod,
    /// The user recording it.
    pub created_by: &'a str,
    /// When.
    pub created_at: &'a Timestamp,
}

/// Inserts a payment.
pub fn insert_payment<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    p: &NewPayment<'_>,
) -> Result<(), DbError> {
    s.store.execute(
        s.ctx,
        "INSERT INTO payments (id, tenant_id, invoice_id, amount_cents, method, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[
            p.id.into(),
            s.tenant(),
            p.invoice_id.into(),
            Value::Integer(p.amount_cents.get()),
            p.method.as_str().into(),
            p.created_by.into(),
            p.created_at.into(),
        ],
    )
}

/// A page of an invoice's payments.
pub fn list_payments<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    invoice_id: &InvoiceId,
    window: Window,
) -> Result<Vec<(i64, Payment)>, DbError> {
    s.listed(
        "SELECT id, amount_cents, method, created_at, seq FROM payments
         WHERE tenant_id = ? AND invoice_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        [s.tenant(), invoice_id.into()],
        window,
        |r| {
            Ok(Payment {
                id: PaymentId::stored(r.text("id")?),
                invoice_id: invoice_id.clone(),
                amount_cents: amount(r)?,
                method: r.parsed("method", PaymentMethod::parse)?,
                created_at: r.timestamp("created_at")?,
            })
        },
    )
}

/// The write that puts an event in the outbox: made with the business
/// write it reports, in one batch or one transaction.
pub fn enqueue(e: &OutboxEvent) -> Write {
    Write::new(
        "INSERT INTO outbox_events (id, tenant_id, type, resident_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        vec![
            e.event_id.as_str().into(),
            e.tenant_id.as_str().into(),
            e.kind.as_str().into(),
            e.resident_id.as_str().into(),
            e.payload.to_string().into(),
            (&e.created_at).into(),
        ],
    )
}

fn event_from(r: &Row) -> Result<OutboxEvent, DbError> {
    Ok(OutboxEvent {
        event_id: r.text("id")?.to_owned(),
        tenant_id: r.text("tenant_id")?.to_owned(),
        kind: r.text("type")?.to_owned(),
        resident_id: ResidentId::stored(r.text("resident_id")?),
        payload: serde_json::from_str(r.text("payload")?)
            .map_err(|e| DbError::Decode(e.to_string()))?,
        created_at: r.timestamp("created_at")?,
    })
}

/// An undelivered event due for an attempt.
#[derive(Debug)]
pub enum Due {
    /// An event ready to deliver, with its attempt count so far.
    Ready(OutboxEvent, i64),
    /// A row that could not be read as an event: it is set aside (backed
    /// off like a failed delivery) so that it never blocks the rest.
    Undecodable {
        /// The row's id.
        id: String,
        /// Attempts so far.
        attempts: i64,
        /// Why it could not be read.
        error: DbError,
    },
}

/// Undelivered events due for an attempt at `now_ms`, taken across
/// tenants in turns: every tenant's oldest due event, then every tenant's
/// second, and so on (oldest first within a turn). One tenant's backlog
/// cannot hold back another's events: with at most `limit` tenants
/// waiting, each one's oldest is in this run.
pub fn due_events<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    now_ms: u64,
    limit: i64,
) -> Result<Vec<Due>, DbError> {
    db.query(
        ctx,
        "SELECT id, tenant_id, type, resident_id, payload, created_at, attempts FROM (
           SELECT id, tenant_id, type, resident_id, payload, created_at, attempts,
                  ROW_NUMBER() OVER (PARTITION BY tenant_id ORDER BY id) AS turn
           FROM outbox_events WHERE delivered_at IS NULL AND next_attempt_at_ms <= ?
         ) AS due ORDER BY turn, id LIMIT ?",
        &[
            Value::Integer(i64::try_from(now_ms).unwrap_or(i64::MAX)),
            Value::Integer(limit),
        ],
    )?
    .iter()
    .map(|r| {
        let attempts = r.integer("attempts")?;
        Ok(match event_from(r) {
            Ok(event) => Due::Ready(event, attempts),
            Err(error) => Due::Undecodable {
                id: r.text("id")?.to_owned(),
                attempts,
                error,
            },
        })
    })
    .collect()
}

/// Removes up to `limit` events delivered before `before`, the longest
/// delivered first: how many it removed.
pub fn purge_delivered<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    before: &Timestamp,
    limit: i64,
) -> Result<i64, DbError> {
    db.query(
        ctx,
        "DELETE FROM outbox_events WHERE id IN (
           SELECT id FROM outbox_events WHERE delivered_at IS NOT NULL AND delivered_at < ?
           ORDER BY delivered_at LIMIT ?
         ) RETURNING id",
        &[before.into(), Value::Integer(limit)],
    )
    .map(|rows| i64::try_from(rows.len()).unwrap_or(i64::MAX))
}

/// How many events are still undelivered.
pub fn pending_count<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
) -> Result<i64, DbError> {
    db.query(
        ctx,
        "SELECT COUNT(*) AS pending FROM outbox_events WHERE delivered_at IS NULL",
        &[],
    )?
    .first()
    .map_or(Ok(0), |r| r.integer("pending"))
}

/// Records a delivered event.
pub fn mark_delivered<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    event_id: &str,
    at: &Timestamp,
) -> Result<(), DbError> {
    db.execute(
        ctx,
        "UPDATE outbox_events SET delivered_at = COALESCE(delivered_at, ?), attempts = attempts + 1, last_error = NULL
         WHERE id = ?",
        &[at.into(), event_id.into()],
    )
}

/// Records a failed attempt and when to try next.
pub fn mark_failed<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    event_id: &str,
    error: &str,
    next_attempt_at_ms: u64,
) -> Result<(), DbError> {
    db.execute(
        ctx,
        "UPDATE outbox_events SET attempts = attempts + 1, last_error = ?, next_attempt_at_ms = ?
         WHERE id = ? AND delivered_at IS NULL",
        &[
            error.into(),
            Value::Integer(i64::try_from(next_attempt_at_ms).unwrap_or(i64::MAX)),
            event_id.into(),
        ],
    )
}
