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
ALTER TABLE memberships ADD COLUMN seq INTEGER;

-- Existing rows keep their insertion order.
UPDATE memberships SET seq = rowid;
INSERT INTO {own}row_sequence (id, last) VALUES (1, (SELECT MAX(n) FROM (SELECT COALESCE(MAX(seq), 0) AS n FROM memberships)));

CREATE TRIGGER memberships_seq AFTER INSERT ON memberships
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE memberships SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX memberships_seq_order ON memberships (tenant_id, seq);
