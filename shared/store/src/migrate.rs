//! Schema migrations: numbered SQL files applied once, in order, recorded.

use std::time::Duration;

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::db::{Database, DbError, Dialect, Store, Value};
use meridian_deadline::time::Clock;
use meridian_deadline::HopBudget;

/// One migration file, embedded in the component at build time.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The file's number (`0001_…` is 1).
    pub version: u32,
    /// The file name, for the record.
    pub name: &'static str,
    /// The SQL: statements separated by `;`. A table every service has
    /// (its idempotency records, its row sequence) is written `{own}name`:
    /// `name` in a database of the service's own, `{service}_name` in one
    /// it shares ([`Store::render`]).
    pub sql: &'static str,
}

/// The migrations of a service, embedded at build time from
/// `migrations/<dir>/`: `migrations!("billing": 1 => "0001_billing.sql", ...)`.
/// The version is written beside the file so a gap or a swap is visible. A
/// schema every service shares (the platform's idempotency records) is one
/// file in `migrations/shared/`, named with `in "shared"`.
#[macro_export]
macro_rules! migrations {
    ($dir:literal: $($version:literal => $name:literal $(in $from:literal)?),+ $(,)?) => {
        &[$($crate::migrate::Migration {
            version: $version,
            name: $name,
            sql: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/../../migrations/",
                $crate::migrations!(@dir $dir $(, $from)?), "/", $name
            )),
        }),+]
    };
    (@dir $dir:literal) => { $dir };
    (@dir $dir:literal, $from:literal) => { $from };
}

/// Why migrating failed.
#[derive(Debug, Error, PartialEq)]
pub enum MigrationError {
    /// The storage failed (or the budget ran out).
    #[error(transparent)]
    Db(#[from] DbError),
    /// An applied migration's SQL changed since it was applied.
    #[error("migration {version} ({name}) was changed after it was applied")]
    Edited {
        /// The migration's number.
        version: u32,
        /// Its file name.
        name: &'static str,
    },
    /// The list is not strictly increasing.
    #[error("migration versions must be strictly increasing, {0} is out of order")]
    OutOfOrder(u32),
}

/// The ledger's table, by the name every service has it
/// ([`Store::table`]).
const LEDGER: &str = "schema_migrations";

/// The statement that makes the ledger `table`, in `dialect`.
fn create_ledger(table: &str, dialect: Dialect) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {table} (
    version {integer} PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL DEFAULT {now}
)",
        integer = dialect.integer(),
        now = dialect.now_text()
    )
}

/// Applies every migration not yet recorded and returns the versions it
/// applied. Safe to call on every request: once up to date it costs one
/// read.
///
/// Pending migrations are applied together, in order, in one transaction
/// that holds the service's schema lock ([`Store::schema_transaction`]) —
/// a migration of settings alone (SQLite's `PRAGMA`s) apart, outside any.
/// On a PostgreSQL server a network away each transaction is round trips
/// of its own: one for all is what lets a fresh database's first request
/// fit its budget. On PostgreSQL an instance that finds another migrating
/// holds nothing and looks at the ledger again after a pause, until the
/// work is done or its budget is spent.
pub fn migrate<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &impl AsRef<HopBudget>,
    migrations: &[Migration],
) -> Result<Vec<u32>, MigrationError> {
    let ctx = ctx.as_ref();
    let mut versions = migrations.iter().map(|m| m.version);
    if let Some(prev) = versions.next() {
        let mut prev = prev;
        for version in versions {
            if prev >= version {
                return Err(MigrationError::OutOfOrder(version));
            }
            prev = version;
        }
    }
    let mut applied = Vec::new();
    let mut pause = FIRST_LOOK_AGAIN;
    loop {
        match migrate_once(store, ctx, migrations, &mut applied)? {
            Progress::Done => return Ok(applied),
            // Another instance is migrating: look at the ledger again after
            // a pause, while the budget lasts (each statement checks it).
            Progress::AnotherIsMigrating => {
                store.pause(pause);
                pause = (pause * 2).min(LAST_LOOK_AGAIN);
            }
        }
    }
}

/// The first pause before an instance that found another migrating looks
/// at the ledger again; each next one twice as long, up to
/// [`LAST_LOOK_AGAIN`].
const FIRST_LOOK_AGAIN: Duration = Duration::from_millis(10);
const LAST_LOOK_AGAIN: Duration = Duration::from_millis(80);

/// A migration the ledger does not hold, as this store runs it: its SQL
/// rendered, that SQL's checksum, and whether it is of settings alone.
struct Pending<'m> {
    migration: &'m Migration,
    sql: String,
    sum: String,
    settings: bool,
}

/// What one pass at the ledger achieved.
enum Progress {
    /// Nothing is pending any more.
    Done,
    /// Another instance holds the schema lock: to be read again.
    AnotherIsMigrating,
}

/// One pass: reads the ledger, and applies what is pending (adding the
/// versions to `applied`).
fn migrate_once<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &HopBudget,
    migrations: &[Migration],
    applied: &mut Vec<u32>,
) -> Result<Progress, MigrationError> {
    let ledger = store.table(LEDGER);
    let recorded = match store.query(
        ctx,
        &format!("SELECT version, checksum FROM {ledger} ORDER BY version"),
        &[],
    ) {
        Ok(rows) => rows,
        // Made under the schema lock: first requests racing to make it on a
        // PostgreSQL server would otherwise meet each other's half-made
        // table ("type … already exists"); the second waits, and `IF NOT
        // EXISTS` then finds the first's.
        Err(DbError::Missing(_)) => {
            let create = create_ledger(&ledger, store.db().dialect());
            match store.schema_transaction(ctx, |tx| tx.execute(ctx, &create, &[]))? {
                Some(()) => Vec::new(),
                None => return Ok(Progress::AnotherIsMigrating),
            }
        }
        Err(e) => return Err(e.into()),
    };
    // What runs, and what its checksum covers, is the SQL as this store
    // has it: in a database of the service's own, the file's text as it
    // always was, so the ledgers of existing databases still agree.
    let mut pending = Vec::new();
    for m in migrations {
        let sql = store.render(m.sql);
        let sum = checksum(&sql);
        let row = recorded
            .iter()
            .find(|r| r.integer("version").ok() == Some(i64::from(m.version)));
        match row {
            Some(row) if row.text("checksum")? != sum => {
                return Err(MigrationError::Edited {
                    version: m.version,
                    name: m.name,
                })
            }
            Some(_) => {}
            None => {
                let settings = is_settings(&split_statements(&sql));
                pending.push(Pending {
                    migration: m,
                    sql,
                    sum,
                    settings,
                });
            }
        }
    }
    // Runs of migrations that take a transaction, between those of
    // settings alone.
    let mut rest = pending.as_slice();
    while let Some((first, after)) = rest.split_first() {
        if first.settings {
            let statements = split_statements(&first.sql);
            if apply_settings(store, ctx, first.migration, &statements, &first.sum)? {
                applied.push(first.migration.version);
            }
            rest = after;
            continue;
        }
        let run = rest.iter().take_while(|p| !p.settings).count();
        let (group, after) = rest.split_at(run);
        match store.schema_transaction(ctx, |tx| apply_group(tx, ctx, &ledger, group))? {
            Some(versions) => applied.extend(versions),
            None => return Ok(Progress::AnotherIsMigrating),
        }
        rest = after;
    }
    Ok(Progress::Done)
}

/// Applies, inside the schema transaction `tx`, each migration of `group`
/// the ledger (read again under the lock: another instance may have
/// applied it meanwhile) does not hold, and records it; the versions it
/// applied.
fn apply_group<D: Database, C: Clock>(
    tx: &Store<D, C>,
    ctx: &HopBudget,
    ledger: &str,
    group: &[Pending<'_>],
) -> Result<Vec<u32>, MigrationError> {
    let done: Vec<i64> = tx
        .query(ctx, &format!("SELECT version FROM {ledger}"), &[])?
        .iter()
        .map(|r| r.integer("version"))
        .collect::<Result<_, _>>()?;
    let mut applied = Vec::new();
    for Pending {
        migration: m,
        sql,
        sum,
        ..
    } in group
    {
        if done.contains(&i64::from(m.version)) {
            continue;
        }
        for statement in split_statements(sql) {
            tx.execute(ctx, statement, &[])?;
        }
        tx.execute(
            ctx,
            &format!("INSERT INTO {ledger} (version, name, checksum) VALUES (?, ?, ?)"),
            &[
                Value::Integer(i64::from(m.version)),
                m.name.into(),
                sum.clone().into(),
            ],
        )?;
        applied.push(m.version);
    }
    Ok(applied)
}

/// Whether a migration is made of `PRAGMA`s alone: settings of the
/// database file (its journal mode), which SQLite refuses to change inside
/// a transaction.
fn is_settings(statements: &[&str]) -> bool {
    !statements.is_empty()
        && statements.iter().all(|s| {
            // The first line with code on it, past any comment lines.
            let first = code_lines(s).next().unwrap_or("");
            first
                .get(..6)
                .is_some_and(|head| head.eq_ignore_ascii_case("PRAGMA"))
        })
}

/// Applies a migration of settings outside a transaction and records it;
/// whether this call recorded it (another instance may have first). A
/// setting is idempotent, so two instances racing both apply it and one
/// record stands. A database that refuses a setting (a remote libSQL
/// server, which keeps its own journal and answers a `PRAGMA` "unsupported
/// statement") still records it: the setting is the local file's, and the
/// server's own is what it has.
fn apply_settings<D: Database, C: Clock>(
    store: &Store<D, C>,
    ctx: &HopBudget,
    m: &Migration,
    statements: &[&str],
    sum: &str,
) -> Result<bool, MigrationError> {
    for statement in statements {
        match store.query(ctx, statement, &[]) {
            Ok(_) | Err(DbError::Sqlite(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let recorded = store.query(
        ctx,
        &format!(
            "INSERT INTO {} (version, name, checksum) VALUES (?, ?, ?)
         ON CONFLICT (version) DO NOTHING RETURNING version",
            store.table(LEDGER)
        ),
        &[
            Value::Integer(i64::from(m.version)),
            m.name.into(),
            sum.into(),
        ],
    )?;
    Ok(!recorded.is_empty())
}

fn checksum(sql: &str) -> String {
    hex::encode(Sha256::digest(sql.as_bytes()))
}

/// Splits SQL text into statements at `;`, ignoring semicolons inside
/// quotes, comments, a `CREATE TRIGGER … BEGIN … END` body and a
/// PostgreSQL function's `$$ … $$` body, and dropping empty statements.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let at = |i: usize| bytes.get(i).copied();
    // Every cut is at an ASCII `;`, so `get` on a cut always succeeds.
    let piece = |from: usize, to: usize| sql.get(from..to).unwrap_or("");
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while let Some(byte) = at(i) {
        match byte {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while at(i).is_some_and(|b| b != q) {
                    i += 1;
                }
            }
            b'[' => {
                while at(i).is_some_and(|b| b != b']') {
                    i += 1;
                }
            }
            b'$' if at(i + 1) == Some(b'$') => {
                i += 2;
                while at(i + 1).is_some() && !(at(i) == Some(b'$') && at(i + 1) == Some(b'$')) {
                    i += 1;
                }
                i += 1;
            }
            b'-' if at(i + 1) == Some(b'-') => {
                while at(i).is_some_and(|b| b != b'\n') {
                    i += 1;
                }
            }
            b'/' if at(i + 1) == Some(b'*') => {
                i += 2;
                while at(i + 1).is_some() && !(at(i) == Some(b'*') && at(i + 1) == Some(b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b';' if !is_open_trigger(piece(start, i)) => {
                out.push(piece(start, i));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(piece(start.min(sql.len()), sql.len()));
    out.into_iter()
        .filter(|s| has_code(s))
        .map(str::trim)
        .collect()
}

/// Whether `statement` is a `CREATE TRIGGER` whose body has not reached its
/// `END` yet: the semicolons inside the body belong to it.
fn is_open_trigger(statement: &str) -> bool {
    let code: String = statement
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_uppercase();
    let words: Vec<&str> = code.split_whitespace().collect();
    let is_trigger = matches!(
        words.as_slice(),
        ["CREATE", "TRIGGER", ..] | ["CREATE", "TEMP" | "TEMPORARY", "TRIGGER", ..]
    );
    // A PostgreSQL trigger names a function and has no body of its own.
    is_trigger && words.contains(&"BEGIN") && words.last() != Some(&"END")
}

/// Whether a fragment holds anything but whitespace and comments.
fn has_code(fragment: &str) -> bool {
    code_lines(fragment).next().is_some()
}

/// The code of each line of `fragment` that has any, trimmed, without
/// its `--` comment.
fn code_lines(fragment: &str) -> impl Iterator<Item = &str> {
    fragment
        .lines()
        .map(|l| l.split("--").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_of_pragmas_alone_is_one_of_settings() {
        let settings = split_statements("-- why\n-- more\nPRAGMA journal_mode = WAL;\n");
        assert!(is_settings(&settings));
        assert!(is_settings(&split_statements(
            "pragma a = 1; PRAGMA b = 2;"
        )));
        assert!(!is_settings(&split_statements(
            "PRAGMA a = 1; CREATE TABLE t (x);"
        )));
        assert!(!is_settings(&split_statements(
            "-- PRAGMA only in a comment\nCREATE TABLE t (x);"
        )));
        assert!(!is_settings(&[]));
    }

    #[test]
    fn statements_split_at_semicolons_outside_quotes_and_comments() {
        let sql = "-- header; with a semicolon\nCREATE TABLE a (x TEXT DEFAULT ';');\n/* block; */ INSERT INTO a VALUES ('b;c');\n\n";
        let parts = split_statements(sql);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].ends_with("DEFAULT ';')"));
        assert!(parts[1].ends_with("VALUES ('b;c')"));
    }

    #[test]
    fn a_trigger_body_stays_one_statement() {
        let sql = "-- a trigger\nCREATE TRIGGER t_seq AFTER INSERT ON t BEGIN\n  UPDATE s SET n = n + 1;\n  UPDATE t SET seq = 1;\nEND;\nCREATE INDEX i ON t (seq);";
        let parts = split_statements(sql);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].ends_with("END"), "{}", parts[0]);
        assert!(parts[1].starts_with("CREATE INDEX"));
    }

    #[test]
    fn a_postgres_function_body_and_its_trigger_are_one_statement_each() {
        let sql = "CREATE FUNCTION f() RETURNS trigger AS $$\nBEGIN\n  UPDATE s SET n = n + 1;\n  RETURN NEW;\nEND\n$$ LANGUAGE plpgsql;\nCREATE TRIGGER t_seq BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION f();\nCREATE INDEX i ON t (seq);";
        let parts = split_statements(sql);
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert!(parts[0].ends_with("LANGUAGE plpgsql"), "{}", parts[0]);
        assert!(parts[1].ends_with("EXECUTE FUNCTION f()"), "{}", parts[1]);
    }

    #[test]
    fn a_file_of_only_comments_has_no_statements() {
        assert!(split_statements("-- nothing here;\n  \n").is_empty());
    }
}
