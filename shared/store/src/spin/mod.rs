//! The backends on Spin, one per engine — its SQLite (`sqlite`: a file, or
//! a libSQL server by the runtime config) and its PostgreSQL client
//! (`postgres`, spin-sdk's `pg4`) — and [`SpinDb`], the one a service's
//! variables choose.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

#[cfg(not(feature = "without-postgres"))]
pub mod postgres;
#[cfg(not(feature = "without-sqlite"))]
pub mod sqlite;

#[cfg(any(feature = "without-sqlite", feature = "without-postgres"))]
use crate::db::StorageFault;
use crate::db::{Database, DbError, Dialect, Row, Value};

#[cfg(not(feature = "without-postgres"))]
use postgres::SpinPostgres;
#[cfg(not(feature = "without-sqlite"))]
use sqlite::SpinSqlite;

/// One request's connection to the service's database, and whether a
/// statement on it found a table or column missing: the schema is behind
/// the code (a fresh database, or a migration not yet applied). The flag
/// stays readable after the connection is handed to the store.
pub struct SpinDb {
    connection: Connection,
    schema_behind: Rc<Cell<bool>>,
}

/// The engine underneath.
enum Connection {
    /// A SQLite database, by label.
    #[cfg(not(feature = "without-sqlite"))]
    Sqlite(SpinSqlite),
    /// A PostgreSQL server, by address.
    #[cfg(not(feature = "without-postgres"))]
    Postgres(SpinPostgres),
}

impl SpinDb {
    /// Opens what `choice` names.
    pub fn open(choice: &Engine, label: &str) -> Result<Self, DbError> {
        let connection = match choice {
            #[cfg(not(feature = "without-sqlite"))]
            Engine::Sqlite { one } => {
                Connection::Sqlite(SpinSqlite::open(one.as_deref().unwrap_or(label))?)
            }
            #[cfg(feature = "without-sqlite")]
            Engine::Sqlite { .. } => {
                let _ = label;
                return Err(DbError::Unavailable(
                    StorageFault::CannotOpen,
                    "this build has no SQLite (built for a host without it): set postgres_address"
                        .into(),
                ));
            }
            #[cfg(not(feature = "without-postgres"))]
            Engine::Postgres { address } => Connection::Postgres(SpinPostgres::open(address)?),
            #[cfg(feature = "without-postgres")]
            Engine::Postgres { .. } => {
                return Err(DbError::Unavailable(
                    StorageFault::CannotOpen,
                    "this build has no PostgreSQL (built for a host that does not publish \
                     spin:postgres@4.0.0): leave postgres_address empty"
                        .into(),
                ));
            }
        };
        Ok(Self {
            connection,
            schema_behind: Rc::default(),
        })
    }

    /// `result`, with the flag set when it found the schema behind.
    fn flagged<T>(&self, result: Result<T, DbError>) -> Result<T, DbError> {
        if matches!(result, Err(DbError::Missing(_))) {
            self.schema_behind.set(true);
        }
        result
    }

    /// The flag a statement sets when it finds the schema behind the code.
    pub fn schema_behind(&self) -> Rc<Cell<bool>> {
        self.schema_behind.clone()
    }
}

impl Database for SpinDb {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let result = match &self.connection {
            #[cfg(not(feature = "without-sqlite"))]
            Connection::Sqlite(db) => db.run(sql, params),
            #[cfg(not(feature = "without-postgres"))]
            Connection::Postgres(db) => db.run(sql, params),
        };
        self.flagged(result)
    }

    fn run_one_row(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let result = match &self.connection {
            #[cfg(not(feature = "without-sqlite"))]
            Connection::Sqlite(db) => db.run_one_row(sql, params),
            #[cfg(not(feature = "without-postgres"))]
            Connection::Postgres(db) => db.run_one_row(sql, params),
        };
        self.flagged(result)
    }

    fn dialect(&self) -> Dialect {
        match &self.connection {
            #[cfg(not(feature = "without-sqlite"))]
            Connection::Sqlite(db) => db.dialect(),
            #[cfg(not(feature = "without-postgres"))]
            Connection::Postgres(db) => db.dialect(),
        }
    }

    fn set_lock_wait(&self, wait: Duration) -> Result<(), DbError> {
        match &self.connection {
            #[cfg(not(feature = "without-sqlite"))]
            Connection::Sqlite(db) => db.set_lock_wait(wait),
            #[cfg(not(feature = "without-postgres"))]
            Connection::Postgres(db) => db.set_lock_wait(wait),
        }
    }
}

/// Which database engine a service's requests open, from its variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// Spin's SQLite: each service's own label, or `one` label for the
    /// whole app (`sqlite_database`).
    Sqlite {
        /// The one label every service opens, when the app has one database.
        one: Option<String>,
    },
    /// A PostgreSQL server (`postgres_address`).
    Postgres {
        /// `postgres://user:password@host:port/database`.
        address: String,
    },
}

impl Engine {
    /// As the variables say: `postgres_address` set picks PostgreSQL,
    /// else SQLite (with `sqlite_database` naming one database for all).
    pub fn from(postgres_address: Option<String>, sqlite_database: Option<String>) -> Self {
        match postgres_address {
            Some(address) => Self::Postgres { address },
            None => Self::Sqlite {
                one: sqlite_database,
            },
        }
    }
}
