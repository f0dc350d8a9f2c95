-- Lists page in the order rows were created, by a per-database sequence.
-- UUIDv7 ids alone are not enough: each request is a fresh Wasm instance,
-- so two ids made in the same millisecond order at random, and a row
-- created while a client pages could sort before its cursor and be missed.

-- One counter per database; a trigger gives every new row the next value
-- inside the INSERT itself, so concurrent writers can neither share nor
-- reuse one (an upsert that updates, or an ignored insert, takes none).
CREATE TABLE {own}row_sequence (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    last  INTEGER NOT NULL
);
ALTER TABLE invoices ADD COLUMN seq INTEGER;
ALTER TABLE payments ADD COLUMN seq INTEGER;

-- Existing rows keep their insertion order.
UPDATE invoices SET seq = rowid;
UPDATE payments SET seq = rowid;
INSERT INTO {own}row_sequence (id, last) VALUES (1, (SELECT MAX(n) FROM (SELECT COALESCE(MAX(seq), 0) AS n FROM invoices UNION ALL SELECT COALESCE(MAX(seq), 0) AS n FROM payments)));

CREATE TRIGGER invoices_seq AFTER INSERT ON invoices
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE invoices SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX invoices_seq_order ON invoices (tenant_id, seq);

CREATE TRIGGER payments_seq AFTER INSERT ON payments
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE payments SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX payments_seq_order ON payments (tenant_id, invoice_id, seq);
