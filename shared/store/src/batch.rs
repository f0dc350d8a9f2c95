//! Writes that commit together, made in as few round trips as the engine
//! allows: on PostgreSQL one statement (a data-modifying `WITH`, atomic
//! without `BEGIN`/`COMMIT`, so no transaction is ever open between two
//! round trips — or left open by a request that traps), on SQLite one
//! transaction holding the write lock.
//!
//! A write may have to change a row ([`Write::changing`]): the idempotency
//! claim it completes, say. When it changes none the whole batch is
//! refused ([`DbError::Refused`]) and nothing of it is written. The writes
//! of a batch are independent: on PostgreSQL each sees the database as it
//! was before the statement, not the batch's other writes.

use crate::db::{Database, DbError, Dialect, Store, Value, NOT_INHERITED};
use meridian_deadline::time::Clock;
use meridian_deadline::HopBudget;

/// One `INSERT`, `UPDATE` or `DELETE` of a batch, in the SQL both engines
/// speak, with a plain `?` for each parameter (a numbered `?NNN` would
/// name a place in the whole batch, not in this write) and no
/// `RETURNING` of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    sql: String,
    params: Vec<Value>,
    /// Must change at least one row, or the batch is refused.
    changing: bool,
}

impl Write {
    /// A write that may change any number of rows.
    pub fn new(sql: impl Into<String>, params: Vec<Value>) -> Self {
        Self {
            sql: sql.into(),
            params,
            changing: false,
        }
    }

    /// The same write, which must change a row: when it changes none the
    /// batch is refused whole.
    pub fn changing(self) -> Self {
        Self {
            changing: true,
            ..self
        }
    }

    /// The statement as a batch runs it: returning a row per row changed.
    fn returning(&self) -> String {
        format!("{} RETURNING 1 AS changed", self.sql.trim_end())
    }

    /// The write, unless it names a parameter by number (`?1`), which a
    /// batch cannot renumber: refused as every write is, so that a
    /// write's text is valid wherever it runs.
    fn checked(&self) -> Result<&Self, DbError> {
        let numbered = self
            .sql
            .as_bytes()
            .windows(2)
            .any(|w| matches!(w, [b'?', digit] if digit.is_ascii_digit()));
        match numbered {
            true => Err(DbError::Decode(format!(
                "a write numbers its parameters: {}",
                self.sql
            ))),
            false => Ok(self),
        }
    }
}

/// The name of the function (migrations/postgres/shared/0009_*.sql) a
/// batch's statement calls to refuse itself, as `store` has it.
const REFUSE: &str = "meridian_refuse";

impl<D: Database, C: Clock> Store<D, C> {
    /// Makes `writes` together or not at all, once the budget allows a
    /// statement: on PostgreSQL as one statement, two round trips; on
    /// SQLite in one transaction. [`DbError::Refused`] names the first
    /// write that had to change a row and changed none.
    pub fn write_all(&self, ctx: &impl AsRef<HopBudget>, writes: &[Write]) -> Result<(), DbError> {
        for w in writes {
            w.checked()?;
        }
        match self.db().dialect() {
            Dialect::Postgres => {
                let (sql, params) = self.as_one_statement(writes);
                self.query_one_row(ctx, &sql, &params).map(drop)
            }
            Dialect::Sqlite => self.transaction(ctx, |tx| {
                for (i, w) in writes.iter().enumerate() {
                    match w.changing {
                        true if !tx.changes(ctx, w)? => return Err(DbError::Refused(i)),
                        true => {}
                        false => tx.make(ctx, w)?,
                    }
                }
                Ok(())
            }),
        }
    }

    /// Makes `write` now, on its own or inside the caller's transaction:
    /// whether it changed a row.
    pub fn changes(&self, ctx: &impl AsRef<HopBudget>, write: &Write) -> Result<bool, DbError> {
        let w = write.checked()?;
        Ok(!self.query(ctx, &w.returning(), &w.params)?.is_empty())
    }

    /// Makes `write` now, on its own or inside the caller's transaction.
    pub fn make(&self, ctx: &impl AsRef<HopBudget>, write: &Write) -> Result<(), DbError> {
        let w = write.checked()?;
        self.execute(ctx, &w.sql, &w.params)
    }

    /// `writes` as one PostgreSQL statement and its parameters: each write
    /// a data-modifying `WITH` query (`meridian_w0 …`; one that must change
    /// a row returns a row per row it changed), then one row that calls
    /// the refusal function with the first write that had to change a row
    /// and changed none (`NULL` when every one did, and it returns).
    fn as_one_statement(&self, writes: &[Write]) -> (String, Vec<Value>) {
        let queries: Vec<String> = writes
            .iter()
            .enumerate()
            .map(|(i, w)| match w.changing {
                true => format!("meridian_w{i} AS ({})", w.returning()),
                false => format!("meridian_w{i} AS ({})", w.sql.trim_end()),
            })
            .collect();
        let checks: Vec<String> = writes
            .iter()
            .enumerate()
            .filter(|(_, w)| w.changing)
            .map(|(i, _)| {
                format!("CASE WHEN NOT EXISTS (SELECT 1 FROM meridian_w{i}) THEN {i} END")
            })
            .collect();
        let refused = match checks.as_slice() {
            [] => "CAST(NULL AS BIGINT)".to_owned(),
            [one] => one.clone(),
            many => format!("COALESCE({})", many.join(", ")),
        };
        // A statement of its own: refused inside another's transaction.
        let sql = format!(
            "WITH {} SELECT {}({refused}) AS refused WHERE {NOT_INHERITED}",
            queries.join(", "),
            self.table(REFUSE)
        );
        let params = writes.iter().flat_map(|w| w.params.clone()).collect();
        (sql, params)
    }
}

/// The marker of a batch's refusal in the server's message:
/// `meridian_refused:<write>`.
pub const REFUSED_MARKER: &str = "meridian_refused:";

/// The write a refusal's message names.
pub fn refused_write(message: &str) -> Option<usize> {
    let (_, after) = message.split_once(REFUSED_MARKER)?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Row;
    use meridian_deadline::time::{ManualClock, UnixMillis};
    use meridian_deadline::Deadline;
    use std::cell::RefCell;
    use std::time::Duration;

    /// Records what reaches the server.
    struct Postgres(RefCell<Vec<(String, Vec<Value>)>>);

    impl Database for Postgres {
        fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
            self.0.borrow_mut().push((sql.to_owned(), params.to_vec()));
            Ok(Vec::new())
        }
        fn dialect(&self) -> Dialect {
            Dialect::Postgres
        }
    }

    fn ctx() -> HopBudget {
        let now = UnixMillis::from_millis(1_700_000_000_000);
        HopBudget::new(Deadline::after(now, Duration::from_secs(1)), now, "billing")
    }

    #[test]
    fn on_postgres_a_batch_is_one_statement_numbered_in_order() {
        let clock = ManualClock::new(UnixMillis::from_millis(1_700_000_000_000));
        let db = Postgres(RefCell::default());
        let store = Store::new(&db, &clock);
        let writes = [
            Write::new(
                "INSERT INTO a (x, y) VALUES (?, ?)",
                vec![1.into(), 2.into()],
            ),
            Write::new("UPDATE b SET z = ? WHERE k = ?", vec![3.into(), 4.into()]).changing(),
            Write::new("DELETE FROM c WHERE k = ?", vec![5.into()]),
        ];
        store.write_all(&ctx(), &writes).unwrap();
        let sent = db.0.borrow();
        assert_eq!(sent.len(), 1, "one statement: {sent:?}");
        assert_eq!(
            sent[0].0,
            format!("WITH meridian_w0 AS (INSERT INTO a (x, y) VALUES ($1, $2)), \
             meridian_w1 AS (UPDATE b SET z = $3 WHERE k = $4 RETURNING 1 AS changed), \
             meridian_w2 AS (DELETE FROM c WHERE k = $5) \
             SELECT meridian_refuse(CASE WHEN NOT EXISTS (SELECT 1 FROM meridian_w1) THEN 1 END) AS refused WHERE {NOT_INHERITED}")
        );
        let params: Vec<Value> = (1..=5).map(Value::Integer).collect();
        assert_eq!(sent[0].1, params);
    }

    #[test]
    fn a_write_that_numbers_its_parameters_is_refused_before_anything_runs() {
        let clock = ManualClock::new(UnixMillis::from_millis(1_700_000_000_000));
        let db = Postgres(RefCell::default());
        let store = Store::new(&db, &clock);
        let writes = [Write::new(
            "UPDATE b SET z = ?1 WHERE k = ?1",
            vec![1.into()],
        )];
        assert!(matches!(
            store.write_all(&ctx(), &writes),
            Err(DbError::Decode(_))
        ));
        assert!(db.0.borrow().is_empty());
    }

    #[test]
    fn a_refusal_names_its_write() {
        assert_eq!(
            refused_write("ERROR: meridian_refused:2 (a write changed nothing)"),
            Some(2)
        );
        assert_eq!(refused_write("something else"), None);
    }
}
