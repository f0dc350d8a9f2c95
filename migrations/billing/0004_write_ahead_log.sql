-- Billing's database file writes ahead (SQLite's WAL journal): a commit
-- syncs one file once instead of the rollback journal's several, and
-- readers do not wait for a writer. Every write request takes billing's
-- write lock three times (the key's claim, the commit, the event marked
-- delivered); BENCHMARKS.md, "The keyed write in write-ahead mode".
-- A settings migration: applied outside a transaction (SQLite changes the
-- journal mode only there), recorded after. A remote libSQL server keeps
-- its own journal and declines it.
PRAGMA journal_mode = WAL;
