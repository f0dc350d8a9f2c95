//! SQLite on the host, through rusqlite, behind the store's `Database`:
//! the engine Spin embeds, for tests that run the real SQL.

use std::time::Duration;

use meridian_platform::store::db::{Database, DbError, Row, Value};
use rusqlite::types::ValueRef;

/// An in-memory SQLite database, the same engine Spin embeds.
pub struct HostSqlite(rusqlite::Connection);

impl HostSqlite {
    /// A fresh, empty database.
    pub fn in_memory() -> Self {
        Self(rusqlite::Connection::open_in_memory().expect("in-memory sqlite"))
    }

    /// A database in a file, shared by every connection opened on `path`.
    pub fn open(path: &std::path::Path) -> Self {
        Self(rusqlite::Connection::open(path).expect("sqlite file"))
    }

    /// An in-memory copy of this database, page for page (SQLite's online
    /// backup): a fuzz run copies one migrated, seeded database per input
    /// instead of migrating a new one.
    pub fn copy(&self) -> Self {
        let mut copy = rusqlite::Connection::open_in_memory().expect("in-memory sqlite");
        rusqlite::backup::Backup::new(&self.0, &mut copy)
            .and_then(|b| b.run_to_completion(i32::MAX, Duration::ZERO, None))
            .expect("copy the database");
        Self(copy)
    }

    /// Registers `f` as the SQL function `name()` on this connection: a
    /// trigger that calls it lets a test act when a statement changes a
    /// table (a commit that takes a while on a slow disk: the function
    /// moves a manual clock on).
    pub fn on_call(&self, name: &str, f: impl Fn() + Send + 'static) {
        self.0
            .create_scalar_function(
                name,
                0,
                rusqlite::functions::FunctionFlags::SQLITE_UTF8,
                move |_| {
                    f();
                    Ok(0)
                },
            )
            .expect("register the function");
    }
}

impl Database for HostSqlite {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let mut stmt = self.0.prepare(sql).map_err(map_err)?;
        let names: std::sync::Arc<[String]> =
            stmt.column_names().into_iter().map(str::to_owned).collect();
        let columns = names.len();
        let params = rusqlite::params_from_iter(params.iter().map(to_sql));
        let mut rows = stmt.query(params).map_err(map_err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(map_err)? {
            let values = (0..columns)
                .map(|i| row.get_ref(i).map(from_sql).map_err(map_err))
                .collect::<Result<_, _>>()?;
            out.push(Row::new(names.clone(), values));
        }
        Ok(out)
    }
}

fn to_sql(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Null => V::Null,
        Value::Integer(i) => V::Integer(*i),
        Value::Real(f) => V::Real(*f),
        Value::Text(s) => V::Text(s.clone()),
        Value::Blob(b) => V::Blob(b.clone()),
    }
}

fn from_sql(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

fn map_err(e: rusqlite::Error) -> DbError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ConstraintViolation) => DbError::Constraint(e.to_string()),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            DbError::Locked(e.to_string())
        }
        Some(rusqlite::ErrorCode::OperationInterrupted) => DbError::Interrupted(e.to_string()),
        _ => DbError::sqlite(e.to_string()),
    }
}
