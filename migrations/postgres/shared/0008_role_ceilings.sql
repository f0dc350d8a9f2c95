-- Server-side bounds on every statement of the service's role in its
-- database, without a round trip: each new session starts with them. The
-- store used to set lock_timeout and statement_timeout before nearly every
-- statement, to end by the request's deadline; a network away that was two
-- round trips each time. Now the budget is checked before each statement
-- (late work never starts), and a statement that started in time ends by
-- these ceilings, not by its request's deadline: the hop that called the
-- service still answers by its own (docs/storage.md, "Bounds").
--
--   lock_timeout                         2 s  a wait for another writer's row lock
--   statement_timeout                   10 s  the longest budget a request may ask
--   idle_in_transaction_session_timeout  5 s  what a trapped request's open
--                                             transaction holds, at most
--
-- Sessions opened before this migration ran keep the server's defaults
-- until they end (docs/deploy.md says how to set the same in the address).
DO $$
BEGIN
    EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET lock_timeout = %L', current_database(), '2s');
    EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET statement_timeout = %L', current_database(), '10s');
    EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET idle_in_transaction_session_timeout = %L', current_database(), '5s');
END
$$;
