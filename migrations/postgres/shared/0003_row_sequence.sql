-- Lists page in the order rows were created, by a per-service counter
-- (migrations/<service>/*_row_sequence.sql says why UUIDv7 ids are not
-- enough). A BEFORE INSERT trigger takes the next value inside the INSERT
-- itself; the counter's row stays locked until the transaction commits, so
-- no two writers share a value and values are taken in commit order.

CREATE TABLE {own}row_sequence (
    id    BIGINT PRIMARY KEY CHECK (id = 1),
    last  BIGINT NOT NULL
);
INSERT INTO {own}row_sequence (id, last) VALUES (1, 0);

CREATE FUNCTION {own}next_row_seq() RETURNS trigger AS $$
BEGIN
    UPDATE {own}row_sequence SET last = last + 1 WHERE id = 1 RETURNING last INTO NEW.seq;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
