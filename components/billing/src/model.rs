//! Billing's resources as the API shows them, and the events it emits.

use serde::Serialize;

/// An invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Invoice {
    /// UUID.
    pub id: String,
    /// The resident billed.
    pub resident_id: String,
    /// Total, minor units.
    pub amount_cents: i64,
    /// ISO 4217.
    pub currency: String,
    /// What it is for.
    pub description: String,
    /// `YYYY-MM-DD`.
    pub due_date: String,
    /// `open`, `paid` or `void`.
    pub status: String,
    /// Still owed, minor units.
    pub balance_cents: i64,
    /// RFC 3339.
    pub created_at: String,
}

/// A payment against an invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payment {
    /// UUID.
    pub id: String,
    /// The invoice paid.
    pub invoice_id: String,
    /// Amount, minor units.
    pub amount_cents: i64,
    /// The invoice's currency.
    pub currency: String,
    /// `card`, `bank_transfer`, ...
    pub method: String,
    /// RFC 3339.
    pub created_at: String,
    /// The invoice's balance after this payment.
    pub balance_cents: i64,
    /// The invoice's status after this payment.
    pub invoice_status: String,
}

/// An event waiting in (or delivered from) the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxEvent {
    /// UUID: the consumer's deduplication key.
    pub event_id: String,
    /// Tenant UUID.
    pub tenant_id: String,
    /// The resident concerned.
    pub resident_id: String,
    /// `invoice.created` or `payment.received`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's data.
    pub payload: serde_json::Value,
    /// RFC 3339.
    pub created_at: String,
}
