-- Community: residents, complaints, announcements and notifications (the
-- schema of migrations/community/0001 and 0003). Every table holds tenant
-- data and so carries tenant_id; every query filters by it.

CREATE TABLE residents (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    unit        TEXT NOT NULL,
    email       TEXT,
    user_id     TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    -- Removed residents are kept for the complaints and notifications that
    -- refer to them, and are "not found" everywhere.
    deleted_at  TEXT,
    seq         BIGINT
);

CREATE INDEX residents_tenant ON residents (tenant_id, id);

CREATE TABLE complaints (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    resident_id  TEXT NOT NULL REFERENCES residents (id),
    subject      TEXT NOT NULL,
    body         TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'resolved', 'closed')),
    filed_by     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    seq          BIGINT
);

CREATE INDEX complaints_tenant ON complaints (tenant_id, id);

CREATE TABLE announcements (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    title         TEXT NOT NULL,
    body          TEXT NOT NULL,
    author_id     TEXT NOT NULL,
    published_at  TEXT NOT NULL,
    seq           BIGINT
);

CREATE INDEX announcements_tenant ON announcements (tenant_id, id);

-- One row per delivered event: the event id as primary key makes a
-- repeated delivery a no-op.
CREATE TABLE notifications (
    event_id     TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    resident_id  TEXT NOT NULL,
    type         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    seq          BIGINT
);

CREATE INDEX notifications_resident ON notifications (tenant_id, resident_id, event_id);
