-- Identity: tenants, users, memberships and API tokens (the schema of
-- migrations/identity/0001, 0003 and 0004). Times are RFC 3339 UTC text.

CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    slug        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

-- A user may belong to several tenants; the email is unique across the platform.
CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

-- What a tenant sees of a person is its own: person_id and name.
CREATE TABLE memberships (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    user_id     TEXT NOT NULL REFERENCES users (id),
    role        TEXT NOT NULL CHECK (role IN ('admin', 'manager', 'resident')),
    created_at  TEXT NOT NULL,
    person_id   TEXT,
    name        TEXT,
    seq         BIGINT,
    UNIQUE (tenant_id, user_id)
);

CREATE INDEX memberships_tenant ON memberships (tenant_id, id);
CREATE UNIQUE INDEX memberships_person ON memberships (person_id);

-- Tokens are stored only as SHA-256 hashes; the token itself is shown once.
CREATE TABLE api_tokens (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id),
    membership_id  TEXT NOT NULL REFERENCES memberships (id),
    token_hash     TEXT NOT NULL UNIQUE,
    created_at     TEXT NOT NULL,
    last_used_at   TEXT,
    revoked_at     TEXT
);

CREATE INDEX api_tokens_membership ON api_tokens (membership_id);
