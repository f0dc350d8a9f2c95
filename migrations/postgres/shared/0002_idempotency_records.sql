-- Idempotency records for keyed writes (see meridian_platform::idempotency).
-- The same table exists in every service that takes writes.

CREATE TABLE {own}idempotency_records (
    tenant_id        TEXT NOT NULL,
    actor_id         TEXT NOT NULL,
    operation        TEXT NOT NULL,
    idem_key         TEXT NOT NULL,
    request_hash     TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
    response_status  BIGINT,
    response_body    TEXT,
    locked_until_ms  BIGINT NOT NULL,
    created_at_ms    BIGINT NOT NULL,
    expires_at_ms    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, actor_id, operation, idem_key)
);

CREATE INDEX {own}idempotency_records_expiry ON {own}idempotency_records (expires_at_ms);
