//! Counters and byte entries in a SQL table, for a host whose key-value
//! store cannot carry them: Akamai Functions has no `atomics` and allows
//! 50 key-value writes a second per app. An increment is one
//! `INSERT … ON CONFLICT DO UPDATE … RETURNING`, atomic in PostgreSQL and
//! SQLite alike, so no count is lost; a read of several keys is one
//! `SELECT`. The table (`meridian_counts`) is created on first use.
//! docs/storage.md, "Counts in PostgreSQL".

use super::{Counters, Held};
use crate::store::db::{Database, DbError, Dialect, Row, Value};
use crate::tenancy::cache::Entries;

/// The table every component's counts and entries share.
pub const TABLE: &str = "meridian_counts";

/// Counters and entries in [`TABLE`] of one database.
pub struct TableCounters<D: Database> {
    db: D,
    /// What was read ahead, until the reads that want it.
    held: Held,
    /// Why a statement gave up waiting (a lock held, the server slow):
    /// from then on every count of this instance (a request) fails at
    /// once, so a request pays one bound for its counts, not one per count.
    gave_up: std::cell::RefCell<Option<String>>,
}

impl<D: Database> TableCounters<D> {
    /// Counts in `db`'s [`TABLE`].
    pub fn new(db: D) -> Self {
        Self {
            db,
            held: Held::default(),
            gave_up: std::cell::RefCell::default(),
        }
    }

    /// Runs `sql` (with `?` parameters); when the table is missing,
    /// creates it and runs `sql` once more. A creation that loses a race
    /// to another's fails, and the second try finds the table.
    ///
    /// A statement that gave up waiting ends the counts of this instance
    /// ([`Self::gave_up`]); any other error leaves the next count free.
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, String> {
        if let Some(why) = self.gave_up.borrow().as_ref() {
            return Err(format!("not asked: an earlier count gave up ({why})"));
        }
        let dialect = self.db.dialect();
        let sql = dialect.statement(sql);
        let result = match self.db.run(&sql, params) {
            Err(DbError::Missing(_)) => {
                let _ = self.db.run(&create_table(dialect), &[]);
                self.db.run(&sql, params)
            }
            other => other,
        };
        result.map_err(|e| {
            if matches!(e, DbError::Locked(_) | DbError::Interrupted(_)) {
                *self.gave_up.borrow_mut() = Some(e.to_string());
            }
            e.to_string()
        })
    }

    /// The rows of `keys` that exist (any order).
    fn rows(&self, keys: &[String]) -> Result<Vec<Row>, String> {
        let sql = format!(
            "SELECT name, number, bytes FROM {TABLE} WHERE name IN ({})",
            placeholders(keys.len())
        );
        self.run(&sql, &texts(keys))
    }

    /// The row of each of `keys`, in order (no statement for no keys).
    fn in_order(&self, keys: &[String]) -> Result<Vec<Option<Row>>, String> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = self.rows(keys)?;
        let mut ordered = Vec::with_capacity(keys.len());
        for key in keys {
            let at = rows.iter().position(|r| r.text("name").ok() == Some(key));
            ordered.push(at.map(|at| rows.swap_remove(at)));
        }
        Ok(ordered)
    }
}

fn create_table(dialect: Dialect) -> String {
    let bytes = match dialect {
        Dialect::Sqlite => "BLOB",
        Dialect::Postgres => "BYTEA",
    };
    format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, \
         number {} NOT NULL DEFAULT 0, bytes {bytes})",
        dialect.integer()
    )
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

fn texts(keys: &[String]) -> Vec<Value> {
    keys.iter().map(|k| Value::Text(k.clone())).collect()
}

fn number(row: Option<&Row>) -> Result<i64, String> {
    row.map_or(Ok(0), |r| r.integer("number").map_err(|e| e.to_string()))
}

fn entry(row: Option<&Row>) -> Result<Option<Vec<u8>>, String> {
    Ok(match row {
        None => None,
        Some(r) => r
            .opt_blob("bytes")
            .map_err(|e| e.to_string())?
            .map(<[u8]>::to_vec),
    })
}

impl<D: Database> Counters for TableCounters<D> {
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.held.drop_key(key);
        let rows = self.run(
            &format!(
                "INSERT INTO {TABLE} (name, number) VALUES (?, ?) ON CONFLICT (name) \
                 DO UPDATE SET number = {TABLE}.number + excluded.number RETURNING number"
            ),
            &[Value::Text(key.to_owned()), Value::Integer(delta)],
        )?;
        number(rows.first())
    }

    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
        if let Some(values) = self.held.take_numbers(keys) {
            return Ok(values);
        }
        self.in_order(keys)?
            .iter()
            .map(|row| number(row.as_ref()))
            .collect()
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.held.drop_key(key);
        self.run(
            &format!(
                "INSERT INTO {TABLE} (name, number) VALUES (?, ?) ON CONFLICT (name) \
                 DO UPDATE SET number = excluded.number"
            ),
            &[Value::Text(key.to_owned()), Value::Integer(value)],
        )
        .map(drop)
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        keys.iter().for_each(|key| self.held.drop_key(key));
        if keys.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "DELETE FROM {TABLE} WHERE name IN ({})",
            placeholders(keys.len())
        );
        self.run(&sql, &texts(keys)).map(drop)
    }

    /// One `SELECT` for every key: a counter held as a key-value store's
    /// increment keeps it (8 little-endian bytes), an entry as its bytes.
    fn read_ahead(&self, keys: &[String]) {
        let Ok(rows) = self.in_order(keys) else {
            return;
        };
        let values = rows
            .iter()
            .map(|row| match row {
                None => None,
                Some(r) => match r.opt_blob("bytes") {
                    Ok(Some(bytes)) => Some(bytes.to_vec()),
                    _ => Some(r.integer("number").unwrap_or(0).to_le_bytes().to_vec()),
                },
            })
            .collect();
        self.held.hold(keys, values);
    }

    fn stored_keys(&self) -> Result<Vec<String>, String> {
        let rows = self.run(&format!("SELECT name FROM {TABLE}"), &[])?;
        rows.iter()
            .map(|row| {
                row.text("name")
                    .map(str::to_owned)
                    .map_err(|e| e.to_string())
            })
            .collect()
    }
}

impl<D: Database> Entries for TableCounters<D> {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        if let Some(values) = self.held.take(keys) {
            return Ok(values);
        }
        self.in_order(keys)?
            .iter()
            .map(|row| entry(row.as_ref()))
            .collect()
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.held.drop_key(key);
        self.run(
            &format!(
                "INSERT INTO {TABLE} (name, bytes) VALUES (?, ?) ON CONFLICT (name) \
                 DO UPDATE SET bytes = excluded.bytes"
            ),
            &[Value::Text(key.to_owned()), Value::Blob(value.to_vec())],
        )
        .map(drop)
    }

    fn remove(&self, keys: &[String]) -> Result<(), String> {
        Counters::forget(self, keys)
    }
}
