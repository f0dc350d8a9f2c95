-- One row counter per tenant, not one per database: every insert took the
-- database-wide counter's row lock until its commit, so writes of every
-- tenant waited for each other. Lists page within one tenant, and the
-- tenant's counter row is still locked from the insert to the commit, so
-- a tenant's rows take their numbers in commit order and a page never
-- skips one (tests/tests/community.rs pages while 8 writers insert).
--
-- A tenant's counter starts, at its first insert from now on, one above
-- the database-wide counter, which is kept and no longer advanced: above
-- every number it gave, so a cursor a client holds stays valid.

CREATE TABLE {own}tenant_row_sequence (
    tenant_id  TEXT PRIMARY KEY,
    last       BIGINT NOT NULL
);

CREATE OR REPLACE FUNCTION {own}next_row_seq() RETURNS trigger AS $$
BEGIN
    INSERT INTO {own}tenant_row_sequence AS s (tenant_id, last)
        VALUES (NEW.tenant_id, (SELECT last FROM {own}row_sequence WHERE id = 1) + 1)
        ON CONFLICT (tenant_id) DO UPDATE SET last = s.last + 1
        RETURNING last INTO NEW.seq;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
