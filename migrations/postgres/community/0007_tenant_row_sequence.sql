-- One row counter per tenant, not one per database: every insert took the
-- database-wide counter's row lock until its commit, so writes of every
-- tenant waited for each other. Lists page within one tenant, and the
-- tenant's counter row is still locked from the insert to the commit, so
-- a tenant's rows take their numbers in commit order and a page never
-- skips one (tests/tests/distance.rs pages while 8 writers insert).
--
-- A tenant's counter starts above every number the database-wide counter
-- gave, so a cursor a client holds stays valid. That counter is kept, no
-- longer advanced.

CREATE TABLE {own}tenant_row_sequence (
    tenant_id  TEXT PRIMARY KEY,
    last       BIGINT NOT NULL
);
INSERT INTO {own}tenant_row_sequence (tenant_id, last)
    SELECT DISTINCT tenant_id, (SELECT last FROM {own}row_sequence WHERE id = 1)
    FROM (SELECT tenant_id FROM residents UNION SELECT tenant_id FROM complaints UNION SELECT tenant_id FROM announcements UNION SELECT tenant_id FROM notifications) AS listed;

CREATE OR REPLACE FUNCTION {own}next_row_seq() RETURNS trigger AS $$
BEGIN
    INSERT INTO {own}tenant_row_sequence AS s (tenant_id, last)
        VALUES (NEW.tenant_id, (SELECT last FROM {own}row_sequence WHERE id = 1) + 1)
        ON CONFLICT (tenant_id) DO UPDATE SET last = s.last + 1
        RETURNING last INTO NEW.seq;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
