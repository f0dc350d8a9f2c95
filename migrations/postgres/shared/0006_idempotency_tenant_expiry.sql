-- Expired idempotency records are cleared within the writing request's
-- tenant (meridian_store::idempotency::complete): writes of different
-- tenants never touch, or wait for, each other's records.
DROP INDEX {own}idempotency_records_expiry;
CREATE INDEX {own}idempotency_records_tenant_expiry ON {own}idempotency_records (tenant_id, expires_at_ms);
