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
ALTER TABLE residents ADD COLUMN seq INTEGER;
ALTER TABLE complaints ADD COLUMN seq INTEGER;
ALTER TABLE announcements ADD COLUMN seq INTEGER;
ALTER TABLE notifications ADD COLUMN seq INTEGER;

-- Existing rows keep their insertion order.
UPDATE residents SET seq = rowid;
UPDATE complaints SET seq = rowid;
UPDATE announcements SET seq = rowid;
UPDATE notifications SET seq = rowid;
INSERT INTO {own}row_sequence (id, last) VALUES (1, (SELECT MAX(n) FROM (SELECT COALESCE(MAX(seq), 0) AS n FROM residents UNION ALL SELECT COALESCE(MAX(seq), 0) AS n FROM complaints UNION ALL SELECT COALESCE(MAX(seq), 0) AS n FROM announcements UNION ALL SELECT COALESCE(MAX(seq), 0) AS n FROM notifications)));

CREATE TRIGGER residents_seq AFTER INSERT ON residents
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE residents SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX residents_seq_order ON residents (tenant_id, seq);

CREATE TRIGGER complaints_seq AFTER INSERT ON complaints
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE complaints SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX complaints_seq_order ON complaints (tenant_id, seq);

CREATE TRIGGER announcements_seq AFTER INSERT ON announcements
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE announcements SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX announcements_seq_order ON announcements (tenant_id, seq);

CREATE TRIGGER notifications_seq AFTER INSERT ON notifications
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1;
    UPDATE notifications SET seq = (SELECT last FROM {own}row_sequence WHERE id = 1) WHERE rowid = NEW.rowid;
END;
CREATE INDEX notifications_seq_order ON notifications (tenant_id, resident_id, seq);
