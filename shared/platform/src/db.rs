//! The storage contract: a SQLite connection as a trait, and the `Store`
//! that checks the request budget before every statement.

use std::time::Duration;

use thiserror::Error;

use crate::context::{BudgetSpent, RequestContext};
use crate::time::Clock;

/// A SQLite value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A double.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Self::Integer(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

impl Row {
    /// Column `i` as an integer.
    pub fn integer(&self, i: usize) -> Result<i64, DbError> {
        match self.0.get(i) {
            Some(Value::Integer(v)) => Ok(*v),
            other => Err(DbError::Decode(format!(
                "column {i}: expected integer, got {other:?}"
            ))),
        }
    }

    /// Column `i` as text.
    pub fn text(&self, i: usize) -> Result<&str, DbError> {
        match self.0.get(i) {
            Some(Value::Text(v)) => Ok(v),
            other => Err(DbError::Decode(format!(
                "column {i}: expected text, got {other:?}"
            ))),
        }
    }

    /// Column `i` as text or NULL.
    pub fn opt_text(&self, i: usize) -> Result<Option<&str>, DbError> {
        match self.0.get(i) {
            Some(Value::Null) => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
}

/// A storage failure.
#[derive(Debug, Error, PartialEq)]
pub enum DbError {
    /// The budget could not fit the statement; it was not run.
    #[error(transparent)]
    Budget(#[from] BudgetSpent),
    /// A uniqueness or other constraint refused the write.
    #[error("constraint violated: {0}")]
    Constraint(String),
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(String),
    /// A row did not have the expected shape.
    #[error("decode: {0}")]
    Decode(String),
}

impl From<DbError> for crate::problem::Problem {
    /// Budget: the hop's 504. Constraint: a 409. Anything else: a 500 whose
    /// cause is logged, never sent.
    fn from(e: DbError) -> Self {
        use crate::problem::{ErrorCode, Problem};
        match e {
            DbError::Budget(spent) => spent.to_problem(),
            DbError::Constraint(detail) => {
                eprintln!("storage constraint: {detail}");
                Problem::new(
                    ErrorCode::Conflict,
                    "the write conflicts with existing data",
                )
            }
            other => {
                eprintln!("storage failure: {other}");
                Problem::new(ErrorCode::Internal, "an internal error occurred")
            }
        }
    }
}

/// One SQLite connection. Implemented by the Spin adapter over
/// `spin_sdk::sqlite` and by the test kit over rusqlite.
pub trait Database {
    /// Runs one statement and returns its rows (none for a write).
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError>;
}

impl<D: Database + ?Sized> Database for &D {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        (**self).run(sql, params)
    }
}

/// The least budget worth starting a statement with.
pub const DEFAULT_STATEMENT_BUDGET: Duration = Duration::from_millis(2);

/// A database whose every statement first checks the request budget.
pub struct Store<D, C> {
    db: D,
    clock: C,
    statement_budget: Duration,
}

impl<D: Database, C: Clock> Store<D, C> {
    /// Wraps a connection.
    pub fn new(db: D, clock: C) -> Self {
        Self {
            db,
            clock,
            statement_budget: DEFAULT_STATEMENT_BUDGET,
        }
    }

    /// Runs a statement if the budget can fit one, and returns its rows.
    pub fn query(
        &self,
        ctx: &RequestContext,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Row>, DbError> {
        ctx.ensure(self.clock.now(), self.statement_budget)?;
        self.db.run(sql, params)
    }

    /// Runs a write if the budget can fit one.
    pub fn execute(
        &self,
        ctx: &RequestContext,
        sql: &str,
        params: &[Value],
    ) -> Result<(), DbError> {
        self.query(ctx, sql, params).map(drop)
    }

    /// Runs `work` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it
    /// fails. The rollback runs whatever the budget: leaving a transaction
    /// open would be worse than finishing a little late.
    pub fn transaction<T, E: From<DbError>>(
        &self,
        ctx: &RequestContext,
        work: impl FnOnce(&Self) -> Result<T, E>,
    ) -> Result<T, E> {
        self.execute(ctx, "BEGIN IMMEDIATE", &[])?;
        match work(self) {
            Ok(value) => match self.execute(ctx, "COMMIT", &[]) {
                Ok(()) => Ok(value),
                Err(e) => {
                    let _ = self.db.run("ROLLBACK", &[]);
                    Err(e.into())
                }
            },
            Err(e) => {
                let _ = self.db.run("ROLLBACK", &[]);
                Err(e)
            }
        }
    }

    /// The clock the store checks the budget against.
    pub fn clock(&self) -> &C {
        &self.clock
    }
}
