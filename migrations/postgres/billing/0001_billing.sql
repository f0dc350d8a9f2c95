-- Billing: invoices, payments and the transactional outbox (the schema of
-- migrations/billing/0001 and 0003).
-- Money is integer minor units with an ISO 4217 currency code.

CREATE TABLE invoices (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    resident_id    TEXT NOT NULL,
    amount_cents   BIGINT NOT NULL CHECK (amount_cents > 0),
    currency       TEXT NOT NULL CHECK (length(currency) = 3),
    description    TEXT NOT NULL,
    due_date       TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('open', 'paid', 'void')),
    balance_cents  BIGINT NOT NULL CHECK (balance_cents >= 0 AND balance_cents <= amount_cents),
    created_by     TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    seq            BIGINT
);

CREATE INDEX invoices_tenant ON invoices (tenant_id, id);

CREATE TABLE payments (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    invoice_id    TEXT NOT NULL REFERENCES invoices (id),
    amount_cents  BIGINT NOT NULL CHECK (amount_cents > 0),
    method        TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    seq           BIGINT
);

CREATE INDEX payments_invoice ON payments (tenant_id, invoice_id, id);

-- Events written in the same transaction as the change they describe, and
-- delivered afterwards (inline when the budget allows, else by the relay).
-- The id is the consumer's deduplication key, which makes delivery retry-safe.
CREATE TABLE outbox_events (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL,
    type                TEXT NOT NULL,
    resident_id         TEXT NOT NULL,
    payload             TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    delivered_at        TEXT,
    attempts            BIGINT NOT NULL DEFAULT 0,
    last_error          TEXT,
    next_attempt_at_ms  BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX outbox_events_pending ON outbox_events (next_attempt_at_ms, id) WHERE delivered_at IS NULL;
