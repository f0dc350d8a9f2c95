-- Two roles for one service's PostgreSQL database (docs/storage.md,
-- "Roles"): a migrating role that owns the schema and is the only one
-- that may change it, and a serving role that reads and writes rows and
-- nothing else. Run once per service database (identity's, community's,
-- billing's), as a superuser or the database's owner, once both roles
-- exist:
--
--   CREATE ROLE meridian_migrator LOGIN PASSWORD '…';
--   CREATE ROLE meridian_server LOGIN PASSWORD '…';
--   psql "postgres://admin@host/identity" -v migrator=meridian_migrator \
--     -v server=meridian_server -f deploy/postgres/roles.sql
--
-- Then the services' addresses (`identity_postgres`, …) name the serving
-- role, `postgres_migrator` is the migrating role's `user:password`, and
-- `POST /ops/migrate` applies migrations as it. Running it again (after
-- migrations ran as another role, say) grants on what exists too.
\set ON_ERROR_STOP on
SELECT current_database() AS database \gset

-- Only the migrating role creates in the schema.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO :"migrator";
GRANT CONNECT ON DATABASE :"database" TO :"migrator", :"server";
GRANT USAGE ON SCHEMA public TO :"server";

-- What the migrating role creates, the serving role may read and write
-- (rows, sequences, the functions triggers and batches call).
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"server";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO :"server";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT EXECUTE ON FUNCTIONS TO :"server";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"server";
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO :"server";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO :"server";

-- The serving role's ceilings. Migration 8 sets them for the role that
-- runs it, which is now the migrating one; these are the same figures
-- (migrations/postgres/shared/0008_role_ceilings.sql).
ALTER ROLE :"server" IN DATABASE :"database" SET lock_timeout = '2s';
ALTER ROLE :"server" IN DATABASE :"database" SET statement_timeout = '10s';
ALTER ROLE :"server" IN DATABASE :"database" SET idle_in_transaction_session_timeout = '5s';
