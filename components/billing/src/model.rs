//! Billing's resources as the API shows them, and the events it emits.

use meridian_platform::time::Timestamp;
use serde::Serialize;

use crate::money::{AmountCents, Currency, DueDate, PaymentMethod};

/// An invoice's place in its life: `open`, then `paid` (its balance
/// reached zero) or `void` (withdrawn before any payment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvoiceStatus {
    /// Owed.
    Open,
    /// Paid in full.
    Paid,
    /// Withdrawn.
    Void,
}

meridian_platform::serialize_as_str!(InvoiceStatus);

impl InvoiceStatus {
    /// The wire (and column) name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Paid => "paid",
            Self::Void => "void",
        }
    }

    /// Parses a wire name.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        match raw {
            "open" => Ok(Self::Open),
            "paid" => Ok(Self::Paid),
            "void" => Ok(Self::Void),
            _ => Err("must be open, paid or void"),
        }
    }

    /// Why an invoice in this state takes no payment, if it takes none.
    pub const fn refuses_payment(self) -> Option<&'static str> {
        match self {
            Self::Open => None,
            Self::Paid => Some("the invoice is already paid"),
            Self::Void => Some("the invoice is void"),
        }
    }

    /// Whether an invoice in this state may be voided (if it has no
    /// payments either; the statement checks both at once).
    pub const fn may_be_voided(self) -> bool {
        matches!(self, Self::Open)
    }
}

meridian_platform::row_id!(
    /// An invoice's id.
    InvoiceId
);
meridian_platform::row_id!(
    /// A payment's id.
    PaymentId
);
meridian_platform::row_id!(
    /// A resident's id, as community issued it: billing stores it beside
    /// its invoices and events and asks community about it, never makes one.
    ResidentId
);

/// An invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Invoice {
    /// UUID.
    pub id: InvoiceId,
    /// The resident billed.
    pub resident_id: ResidentId,
    /// Total.
    pub amount_cents: AmountCents,
    /// ISO 4217.
    pub currency: Currency,
    /// What it is for.
    pub description: String,
    /// When it is due.
    pub due_date: DueDate,
    /// Where it is in its life.
    pub status: InvoiceStatus,
    /// Still owed, minor units.
    pub balance_cents: i64,
    /// When it was created.
    pub created_at: Timestamp,
}

/// A payment against an invoice, as an invoice's payments list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payment {
    /// UUID.
    pub id: PaymentId,
    /// The invoice paid.
    pub invoice_id: InvoiceId,
    /// Amount.
    pub amount_cents: AmountCents,
    /// How it was paid.
    pub method: PaymentMethod,
    /// When it was recorded.
    pub created_at: Timestamp,
}

/// A payment as its creation answers it: with what it did to the invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordedPayment {
    /// The payment.
    #[serde(flatten)]
    pub payment: Payment,
    /// The invoice's currency.
    pub currency: Currency,
    /// The invoice's balance after this payment.
    pub balance_cents: i64,
    /// The invoice's status after this payment.
    pub invoice_status: InvoiceStatus,
}

/// An event waiting in (or delivered from) the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxEvent {
    /// UUID: the consumer's deduplication key.
    pub event_id: String,
    /// Tenant UUID.
    pub tenant_id: String,
    /// The resident concerned.
    pub resident_id: ResidentId,
    /// `invoice.created` or `payment.received`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's data.
    pub payload: serde_json::Value,
    /// When it happened.
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invoice_statuses_have_one_wire_name_each() {
        for status in [
            InvoiceStatus::Open,
            InvoiceStatus::Paid,
            InvoiceStatus::Void,
        ] {
            assert_eq!(InvoiceStatus::parse(status.as_str()), Ok(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert!(InvoiceStatus::parse("draft").is_err());
    }

    #[test]
    fn only_an_open_invoice_takes_payments_or_may_be_voided() {
        assert_eq!(InvoiceStatus::Open.refuses_payment(), None);
        assert!(InvoiceStatus::Paid.refuses_payment().is_some());
        assert!(InvoiceStatus::Void.refuses_payment().is_some());
        assert!(InvoiceStatus::Open.may_be_voided());
        assert!(!InvoiceStatus::Paid.may_be_voided());
        assert!(!InvoiceStatus::Void.may_be_voided());
    }
}
