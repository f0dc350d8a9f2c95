//! Spin SQLite behind the platform's `Database` trait.

use std::sync::Arc;

use crate::db::{Database, DbError, Row, StorageFault, Value};
use spin_sdk::sqlite::{Connection, Error, Value as SpinValue};

/// A connection to one of the app's SQLite databases, by label.
pub struct SpinSqlite {
    connection: Connection,
}

impl SpinSqlite {
    /// Opens the database with this label (`identity`, `community`, `billing`).
    pub fn open(label: &str) -> Result<Self, DbError> {
        let connection = Connection::open(label).map_err(map_error)?;
        Ok(Self { connection })
    }
}

impl Database for SpinSqlite {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let params: Vec<SpinValue> = params.iter().map(to_spin).collect();
        let result = self.connection.execute(sql, &params).map_err(map_error)?;
        let columns: Arc<[String]> = result.columns.into();
        Ok(result
            .rows
            .into_iter()
            .map(|r| {
                Row::new(
                    columns.clone(),
                    r.values.into_iter().map(from_spin).collect(),
                )
            })
            .collect())
    }
}

fn to_spin(v: &Value) -> SpinValue {
    match v {
        Value::Null => SpinValue::Null,
        Value::Integer(i) => SpinValue::Integer(*i),
        Value::Real(f) => SpinValue::Real(*f),
        Value::Text(s) => SpinValue::Text(s.clone()),
        Value::Blob(b) => SpinValue::Blob(b.clone()),
    }
}

fn from_spin(v: SpinValue) -> Value {
    match v {
        SpinValue::Null => Value::Null,
        SpinValue::Integer(i) => Value::Integer(i),
        SpinValue::Real(f) => Value::Real(f),
        SpinValue::Text(s) => Value::Text(s),
        SpinValue::Blob(b) => Value::Blob(b),
    }
}

fn map_error(e: Error) -> DbError {
    match e {
        // Spin reports SQLite errors as text; constraint failures are the
        // ones callers act on (a duplicate key is a 409, not a 500).
        Error::Io(message) if message.contains("constraint failed") => DbError::Constraint(message),
        // SQLITE_INTERRUPT, which a libSQL server answers when it gives up
        // a statement it could not run in time under load: transient, but
        // the statement may have done its work (or rolled its transaction
        // back), so it is not the lock's "did nothing".
        Error::Io(message) if message.contains("SQLITE_INTERRUPT") => DbError::Interrupted(message),
        // SQLITE_BUSY / SQLITE_LOCKED once the lock wait (busy_timeout) ran
        // out: the statement did nothing; the same request may succeed at once.
        Error::Io(message) if message.contains("is locked") => DbError::Locked(message),
        Error::DatabaseFull => DbError::Unavailable(StorageFault::Full, "database full".into()),
        other => DbError::sqlite(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_error_text_is_read_as_the_fault_it_names() {
        let io = |m: &str| map_error(Error::Io(m.to_owned()));
        // A libSQL server that interrupted a statement under load: transient.
        let interrupted = "Hrana: `cursor error: `error at step 0: (error code: SQLITE_INTERRUPT) `SQLite error: interrupted```";
        assert!(matches!(io(interrupted), DbError::Interrupted(_)));
        assert!(matches!(io("database is locked"), DbError::Locked(_)));
        assert!(matches!(
            io("UNIQUE constraint failed: residents.id"),
            DbError::Constraint(_)
        ));
        assert!(matches!(
            io("database or disk is full"),
            DbError::Unavailable(StorageFault::Full, _)
        ));
        assert!(matches!(
            map_error(Error::DatabaseFull),
            DbError::Unavailable(StorageFault::Full, _)
        ));
        assert!(matches!(
            io("no such table: residents"),
            DbError::Missing(_)
        ));
        assert!(matches!(io("near \"x\": syntax error"), DbError::Sqlite(_)));
        // A libSQL server whose host does not resolve (as Spin reported it).
        let unresolved = "Hrana: `http error: `error trying to connect: dns error: failed to lookup address information: Name or service not known``";
        assert!(matches!(
            io(unresolved),
            DbError::Unavailable(StorageFault::Unreachable, _)
        ));
    }
}
