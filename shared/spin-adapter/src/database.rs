//! The database a service runs on, as configured: Spin's SQLite (a file,
//! or a libSQL server by the runtime config) or a PostgreSQL server.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

#[cfg(feature = "without-sqlite")]
use meridian_platform::store::db::StorageFault;
use meridian_platform::store::db::{Database, DbError, Dialect, Row, Value};

use crate::postgres::SpinPostgres;
#[cfg(not(feature = "without-sqlite"))]
use crate::sqlite::SpinSqlite;

/// One request's connection to the service's database.
pub enum SpinDb {
    /// A SQLite database, by label.
    #[cfg(not(feature = "without-sqlite"))]
    Sqlite(SpinSqlite),
    /// A PostgreSQL server, by address.
    Postgres(SpinPostgres),
}

impl SpinDb {
    /// Opens what `choice` names.
    pub fn open(choice: &Engine, label: &str) -> Result<Self, DbError> {
        Ok(match choice {
            #[cfg(not(feature = "without-sqlite"))]
            Engine::Sqlite { one } => {
                Self::Sqlite(SpinSqlite::open(one.as_deref().unwrap_or(label))?)
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
            Engine::Postgres { address } => Self::Postgres(SpinPostgres::open(address)?),
        })
    }

    /// The flag a statement sets when it finds the schema behind the code.
    pub fn schema_behind(&self) -> Rc<Cell<bool>> {
        match self {
            #[cfg(not(feature = "without-sqlite"))]
            Self::Sqlite(db) => db.schema_behind(),
            Self::Postgres(db) => db.schema_behind(),
        }
    }
}

impl Database for SpinDb {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        match self {
            #[cfg(not(feature = "without-sqlite"))]
            Self::Sqlite(db) => db.run(sql, params),
            Self::Postgres(db) => db.run(sql, params),
        }
    }

    fn dialect(&self) -> Dialect {
        match self {
            #[cfg(not(feature = "without-sqlite"))]
            Self::Sqlite(db) => db.dialect(),
            Self::Postgres(db) => db.dialect(),
        }
    }

    fn lock_slice(&self) -> Duration {
        match self {
            #[cfg(not(feature = "without-sqlite"))]
            Self::Sqlite(db) => db.lock_slice(),
            Self::Postgres(db) => db.lock_slice(),
        }
    }

    fn set_lock_wait(&self, wait: Duration) -> Result<(), DbError> {
        match self {
            #[cfg(not(feature = "without-sqlite"))]
            Self::Sqlite(db) => db.set_lock_wait(wait),
            Self::Postgres(db) => db.set_lock_wait(wait),
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
