//! A PostgreSQL server behind the platform's `Database` trait, through
//! Spin's outbound `pg4` interface. Spin keeps a pool of connections per
//! address on the host; one `Connection` holds one of them until the
//! request's instance ends, so a transaction's statements share it.
//!
//! A statement that returns no rows runs as `execute`. One that returns
//! rows runs as `query`, wrapped so that the server always sends at least
//! one row (`at_least_one_row`): Spin's `pg4` host after 3.6 (its "async
//! PostgreSQL API", commit 3f9a0d78, in the 4.x line) waits for a first row
//! to learn a result's columns, and a `query` that matches no row never
//! returns. Released 3.6 and earlier are unaffected; the wrapping costs
//! one extra scan of the rows already found, and goes when the host is
//! fixed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::db::{
    Database, DbError, Dialect, Row, StorageFault, Value, INHERITED_MARKER, NOT_INHERITED,
};
use meridian_deadline::time::duration_ms;
use meridian_log::journal;
use spin_sdk::pg4::{Connection, DbValue, ParameterValue, PgError as Error, QueryError};

/// A connection to the PostgreSQL server at an address
/// (`postgres://user:password@host:port/database`).
pub struct SpinPostgres {
    session: Rc<Session>,
}

/// One checked-out connection, and whether a transaction the store began
/// on it is open (its statements then run as they are; outside one each
/// carries [`NOT_INHERITED`]).
struct Session {
    connection: Connection,
    in_transaction: Cell<bool>,
}

impl Session {
    /// `sql`'s column names and rows, as the host returns them.
    fn query(
        &self,
        sql: &str,
        params: &[ParameterValue],
    ) -> Result<(Vec<String>, Vec<Vec<DbValue>>), DbError> {
        let result = self.connection.query(sql, params).map_err(map_error)?;
        let names = result.columns.into_iter().map(|c| c.name).collect();
        Ok((names, result.rows))
    }
}

thread_local! {
    /// The connections this instance has checked out, by address: an
    /// instance serves one request, and whatever of it opens an address
    /// again (a service's failure memory beside its store) shares the
    /// connection instead of checking out another.
    static OPEN: RefCell<Vec<(String, Rc<Session>)>> = const { RefCell::new(Vec::new()) };
}

impl SpinPostgres {
    /// A connection to `address`: the one this instance holds already, or
    /// one taken from Spin's pool. Statements on a shared connection share
    /// its session — a transaction among them — so nothing may open one
    /// that another user of the address could run into: the store's
    /// transactions are synchronous, and no call to another service (nor
    /// its failure memory's counts) happens inside one.
    pub fn open(address: &str) -> Result<Self, DbError> {
        if let Some(session) = OPEN.with_borrow(|open| {
            open.iter()
                .find(|(a, _)| a == address)
                .map(|(_, s)| s.clone())
        }) {
            return Ok(Self { session });
        }
        let session = Rc::new(Session {
            connection: Connection::open(address).map_err(map_error)?,
            in_transaction: Cell::new(false),
        });
        OPEN.with_borrow_mut(|open| open.push((address.to_owned(), session.clone())));
        Ok(Self { session })
    }

    /// Runs `attempt` outside a transaction of the store's: when its
    /// statement found itself inside another's ([`NOT_INHERITED`]), that
    /// transaction — a trapped request's, left on the pooled connection —
    /// is rolled back, trapped writes and all, and the statement run again,
    /// so nothing of this request joins it (and is lost when it ends).
    fn on_its_own<T>(&self, attempt: impl Fn() -> Result<T, DbError>) -> Result<T, DbError> {
        match attempt() {
            Err(DbError::Inherited(cause)) => {
                journal::event(journal::Event::Failure {
                    what: "a pooled connection in another request's transaction",
                    cause: format!("{cause}: rolled back"),
                });
                self.session
                    .connection
                    .execute("ROLLBACK", &[])
                    .map_err(map_error)?;
                attempt()
            }
            other => other,
        }
    }

    /// Opens a connection to `address` whose statements wait for a lock
    /// and run at most `wait` each: the bounds ride in the connection's
    /// startup options ([`bounded_address`]), so no statement sets them.
    pub fn open_bounded(address: &str, wait: Duration) -> Result<Self, DbError> {
        Self::open(&bounded_address(address, wait))
    }
}

/// `address` with `lock_timeout` and `statement_timeout` of `wait` as
/// startup options (`options=-c …`, which the server applies when the
/// session begins, and a pool's `RESET ALL` returns to): a session
/// setting that costs no round trip. An address with `options` of its own
/// is the operator's, and kept as it is.
pub fn bounded_address(address: &str, wait: Duration) -> String {
    if address.contains("options=") {
        return address.to_owned();
    }
    // Zero means "no limit" to PostgreSQL; a spent wait is 1 ms.
    let ms = duration_ms(wait).max(1);
    let separator = if address.contains('?') { '&' } else { '?' };
    format!("{address}{separator}options=-c%20lock_timeout%3D{ms}%20-c%20statement_timeout%3D{ms}")
}

impl Database for SpinPostgres {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let params: Vec<ParameterValue> = params.iter().map(to_pg).collect();
        let (connection, open) = (&self.session.connection, &self.session.in_transaction);
        let execute = |sql: &str| connection.execute(sql, &params).map_err(map_error);
        let rows = |sql: &str| {
            let (names, rows) = self.session.query(sql, &params)?;
            unpadded(names, rows)
        };
        match Kind::of(sql) {
            Kind::Begin => {
                execute(sql)?;
                open.set(true);
                Ok(Vec::new())
            }
            Kind::End => {
                // Ended whatever its outcome: a failed COMMIT rolls back.
                open.set(false);
                execute(sql).map(|_| Vec::new())
            }
            Kind::Rows if open.get() => rows(&at_least_one_row(sql, false)),
            Kind::Rows => self.on_its_own(|| rows(&at_least_one_row(sql, true))),
            Kind::Write if !open.get() => self
                .on_its_own(|| rows(&guarded_write(sql)))
                .map(|_| Vec::new()),
            Kind::Write | Kind::Other => execute(sql).map(|_| Vec::new()),
        }
    }

    /// A batch (meridian_store::batch) is a statement of its own, never
    /// part of a transaction: its text carries [`NOT_INHERITED`] itself.
    fn run_one_row(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        if self.session.in_transaction.get() {
            return Err(DbError::Decode(
                "a one-statement batch runs on its own, not inside a transaction".into(),
            ));
        }
        let params: Vec<ParameterValue> = params.iter().map(to_pg).collect();
        self.on_its_own(|| {
            let (names, rows) = self.session.query(sql, &params)?;
            decoded(names, rows, 0)
        })
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    /// Both server-side bounds at once, for this connection's session:
    /// how long a statement waits for a lock, and how long it runs at all.
    /// The pool resets them (`RESET ALL`) before the connection serves
    /// another request.
    fn set_lock_wait(&self, wait: Duration) -> Result<(), DbError> {
        // Zero means "no limit" to PostgreSQL; a spent wait is 1 ms.
        let ms = duration_ms(wait).max(1).to_string();
        self.run(
            "SELECT set_config('lock_timeout', $1, false) AS lock_timeout, \
             set_config('statement_timeout', $1, false) AS statement_timeout",
            &[Value::Text(ms)],
        )
        .map(drop)
    }
}

/// What a statement is, to the connection's session.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// `BEGIN`/`START`: a transaction of the store's opens.
    Begin,
    /// `COMMIT`/`ROLLBACK`/`END`/`ABORT`: it ends.
    End,
    /// A `SELECT` or `WITH` query, or a write with `RETURNING` (a
    /// function's body may say `RETURNING` too: its `CREATE` is `Other`).
    Rows,
    /// An `INSERT`, `UPDATE` or `DELETE` that returns nothing.
    Write,
    /// Anything else (`CREATE`, `ALTER`, `SET`, …): run as it is.
    Other,
}

impl Kind {
    fn of(sql: &str) -> Self {
        let mut words = sql
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty());
        let first = words.next().unwrap_or_default();
        let is = |word: &str| first.eq_ignore_ascii_case(word);
        if is("BEGIN") || is("START") {
            Self::Begin
        } else if is("COMMIT") || is("ROLLBACK") || is("END") || is("ABORT") {
            Self::End
        } else if is("SELECT") || is("WITH") {
            Self::Rows
        } else if is("INSERT") || is("UPDATE") || is("DELETE") {
            match words.any(|w| w.eq_ignore_ascii_case("RETURNING")) {
                true => Self::Rows,
                false => Self::Write,
            }
        } else {
            Self::Other
        }
    }
}

/// `sql` as a query that returns its rows, in order, each after two
/// columns of its own (`meridian_row`, true; `meridian_n`, its place) —
/// or, when it matches none, one row of nulls. `guarded`: refused, by
/// [`NOT_INHERITED`], inside a transaction the store did not begin here.
fn at_least_one_row(sql: &str, guarded: bool) -> String {
    let guard = match guarded {
        true => format!(" WHERE {NOT_INHERITED}"),
        false => String::new(),
    };
    format!(
        "WITH meridian_s AS MATERIALIZED ({sql}) \
         SELECT q.* FROM (VALUES (0)) AS meridian_one (x) LEFT JOIN \
         (SELECT true AS meridian_row, row_number() OVER () AS meridian_n, meridian_s.* \
          FROM meridian_s) AS q ON true{guard} ORDER BY q.meridian_n"
    )
}

/// A write that returns nothing, as a query of one row (a padding row for
/// [`unpadded`] to drop) that [`NOT_INHERITED`] refuses inside another's
/// transaction.
fn guarded_write(sql: &str) -> String {
    format!("WITH meridian_w AS ({sql}) SELECT NULL AS meridian_row WHERE {NOT_INHERITED}")
}

/// The rows of an [`at_least_one_row`] query as the statement returned
/// them: the padding row dropped, and the two leading columns.
fn unpadded(names: Vec<String>, rows: Vec<Vec<DbValue>>) -> Result<Vec<Row>, DbError> {
    let found = rows
        .into_iter()
        .filter(|r| !matches!(r.first(), None | Some(DbValue::DbNull)));
    decoded(names, found, 2)
}

/// `rows` read as the platform reads them, under the column `names`, each
/// without its first `skip` columns.
fn decoded(
    names: Vec<String>,
    rows: impl IntoIterator<Item = Vec<DbValue>>,
    skip: usize,
) -> Result<Vec<Row>, DbError> {
    let columns: Arc<[String]> = names.into_iter().skip(skip).collect();
    rows.into_iter()
        .map(|r| {
            let values = r
                .into_iter()
                .skip(skip)
                .map(from_pg)
                .collect::<Result<_, _>>()?;
            Ok(Row::new(columns.clone(), values))
        })
        .collect()
}

fn to_pg(v: &Value) -> ParameterValue {
    match v {
        Value::Null => ParameterValue::DbNull,
        Value::Integer(i) => ParameterValue::Int64(*i),
        Value::Real(f) => ParameterValue::Floating64(*f),
        Value::Text(s) => ParameterValue::Str(s.clone()),
        Value::Blob(b) => ParameterValue::Binary(b.clone()),
    }
}

/// A column's value as the platform reads it: every integer as
/// `Integer`, a boolean as 0 or 1 (as SQLite has them).
fn from_pg(v: DbValue) -> Result<Value, DbError> {
    Ok(match v {
        DbValue::DbNull => Value::Null,
        DbValue::Boolean(b) => Value::Integer(i64::from(b)),
        DbValue::Int8(i) => Value::Integer(i64::from(i)),
        DbValue::Int16(i) => Value::Integer(i64::from(i)),
        DbValue::Int32(i) => Value::Integer(i64::from(i)),
        DbValue::Int64(i) => Value::Integer(i),
        DbValue::Floating32(f) => Value::Real(f64::from(f)),
        DbValue::Floating64(f) => Value::Real(f),
        DbValue::Str(s) | DbValue::Decimal(s) | DbValue::Uuid(s) => Value::Text(s),
        DbValue::Binary(b) => Value::Blob(b),
        other => {
            return Err(DbError::Decode(format!(
                "a PostgreSQL value of a type the store does not read: {}",
                unread_type(&other)
            )))
        }
    })
}

/// The type of a value [`from_pg`] does not read, by name: a value's
/// `Debug` would pull the formatting of every type it can hold (floats
/// among them) into each component that reads PostgreSQL.
fn unread_type(v: &DbValue) -> &'static str {
    match v {
        DbValue::Date(_) => "date",
        DbValue::Time(_) => "time",
        DbValue::Datetime(_) => "timestamp",
        DbValue::Timestamp(_) => "Unix timestamp",
        DbValue::Jsonb(_) => "jsonb",
        DbValue::RangeInt32(_) | DbValue::RangeInt64(_) | DbValue::RangeDecimal(_) => "range",
        DbValue::ArrayInt32(_)
        | DbValue::ArrayInt64(_)
        | DbValue::ArrayDecimal(_)
        | DbValue::ArrayStr(_) => "array",
        DbValue::Interval(_) => "interval",
        _ => "unsupported",
    }
}

/// PostgreSQL's SQLSTATE classes and codes, as the store acts on them.
fn map_error(e: Error) -> DbError {
    let inherited = |message: &str| message.contains(INHERITED_MARKER);
    match e {
        Error::QueryFailed(QueryError::DbError(db)) if inherited(&db.message) => {
            DbError::Inherited(db.message)
        }
        Error::QueryFailed(QueryError::Text(message)) if inherited(&message) => {
            DbError::Inherited(message)
        }
        Error::QueryFailed(QueryError::DbError(db)) => {
            by_state(&db.code, format!("{} ({})", db.message, db.code))
        }
        // The pool could not reach the server, or lost it.
        Error::ConnectionFailed(message) => {
            DbError::Unavailable(StorageFault::Unreachable, message)
        }
        // Spin's 4.x host reports an error met while reading a result's
        // rows as the text of the structured error: its SQLSTATE is in it.
        Error::QueryFailed(QueryError::Text(message)) if sqlstate_in(&message).is_some() => {
            let code = sqlstate_in(&message).unwrap_or_default().to_owned();
            by_state(&code, message)
        }
        // Spin 3.6's host reports some server errors as the server's
        // message alone: read by its words.
        Error::QueryFailed(QueryError::Text(message)) if state_of_words(&message).is_some() => {
            let code = state_of_words(&message).unwrap_or_default();
            by_state(code, message)
        }
        Error::QueryFailed(QueryError::Text(message)) if lost(&message) => {
            DbError::Unavailable(StorageFault::Unreachable, message)
        }
        Error::QueryFailed(QueryError::Text(message))
        | Error::BadParameter(message)
        | Error::ValueConversionFailed(message)
        | Error::Other(message) => DbError::Sqlite(message),
    }
}

/// The SQLSTATE a host's text of a structured error names: the record's
/// `code: "NNNNN"`, or the driver's `SqlState(ENNNNN)`.
fn sqlstate_in(text: &str) -> Option<&str> {
    let after = |marker: &str| {
        text.match_indices(marker).find_map(|(at, _)| {
            let code = text.get(at + marker.len()..at + marker.len() + 5)?;
            code.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                .then_some(code)
        })
    };
    after("code: \"").or_else(|| after("SqlState(E"))
}

/// The SQLSTATE a server's message names in words (PostgreSQL's own
/// messages for the errors the store acts on).
fn state_of_words(message: &str) -> Option<&'static str> {
    const WORDS: [(&str, &str); 10] = [
        ("read-only transaction", "25006"),
        ("violates unique constraint", "23505"),
        ("violates foreign key constraint", "23503"),
        ("violates check constraint", "23514"),
        ("violates not-null constraint", "23502"),
        ("due to lock timeout", "55P03"),
        ("due to statement timeout", "57014"),
        ("deadlock detected", "40P01"),
        ("could not serialize access", "40001"),
        ("No space left on device", "53100"),
    ];
    if message.contains("ERROR: relation") && message.contains("does not exist") {
        return Some("42P01");
    }
    if message.contains("ERROR: column") && message.contains("does not exist") {
        return Some("42703");
    }
    if message.contains("ERROR: function") && message.contains("does not exist") {
        return Some("42883");
    }
    WORDS
        .iter()
        .find(|(words, _)| message.contains(words))
        .map(|(_, code)| *code)
}

/// Whether a driver's text says the connection to the server is gone.
fn lost(message: &str) -> bool {
    [
        "connection closed",
        "Connection refused",
        "error connecting",
        "timed out",
    ]
    .iter()
    .any(|t| message.contains(t))
}

/// The error a SQLSTATE `code` is, with `message` for the log.
fn by_state(code: &str, message: String) -> DbError {
    match code {
        // Integrity constraint violations: a duplicate key is a 409.
        c if c.starts_with("23") => DbError::Constraint(message),
        // Undefined table, column or function: the schema is behind the code.
        "42P01" | "42703" | "42883" => DbError::Missing(message),
        // The lock wait ran out (`lock_timeout`): the statement did nothing.
        "55P03" => DbError::Locked(message),
        // Cancelled (`statement_timeout`), a serialization failure or a
        // deadlock: the server undid the statement, and inside a
        // transaction the whole transaction; never tried again on its own.
        "57014" | "40001" | "40P01" => DbError::Interrupted(message),
        // A batch's statement refused itself (meridian_store::batch).
        "MR001" => match crate::batch::refused_write(&message) {
            Some(write) => DbError::Refused(write),
            None => DbError::Sqlite(message),
        },
        // `BEGIN DEFERRABLE` inside a transaction that has run a
        // query: one a trapped request left on the pooled connection.
        "25001" => DbError::Inherited(message),
        // A read-only transaction or a hot standby: no writes now.
        "25006" => DbError::Unavailable(StorageFault::ReadOnly, message),
        // Insufficient resources: disk full, out of memory, too many
        // connections.
        "53100" => DbError::Unavailable(StorageFault::Full, message),
        c if c.starts_with("53") => DbError::Unavailable(StorageFault::Unreachable, message),
        // Connection exceptions; the server shutting down or starting up.
        c if c.starts_with("08") || c.starts_with("57P") => {
            DbError::Unavailable(StorageFault::Unreachable, message)
        }
        // An I/O error of the server's own files.
        c if c.starts_with("58") => DbError::Unavailable(StorageFault::Io, message),
        _ => DbError::Sqlite(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_are_read_as_the_fault_they_name() {
        let of = |code: &str| by_state(code, code.to_owned());
        assert!(matches!(of("23505"), DbError::Constraint(_)));
        assert!(matches!(of("23503"), DbError::Constraint(_)));
        assert!(matches!(of("42P01"), DbError::Missing(_)));
        assert!(matches!(of("42703"), DbError::Missing(_)));
        assert!(matches!(of("42883"), DbError::Missing(_)));
        assert!(matches!(of("55P03"), DbError::Locked(_)));
        assert!(matches!(of("25001"), DbError::Inherited(_)));
        assert_eq!(
            by_state("MR001", "meridian_refused:3 (…) (MR001)".into()),
            DbError::Refused(3)
        );
        for transient in ["57014", "40001", "40P01"] {
            assert!(matches!(of(transient), DbError::Interrupted(_)));
        }
        assert!(matches!(
            of("25006"),
            DbError::Unavailable(StorageFault::ReadOnly, _)
        ));
        assert!(matches!(
            of("53100"),
            DbError::Unavailable(StorageFault::Full, _)
        ));
        for gone in ["08006", "57P01", "57P03", "53300"] {
            assert!(matches!(
                of(gone),
                DbError::Unavailable(StorageFault::Unreachable, _)
            ));
        }
        assert!(matches!(of("42601"), DbError::Sqlite(_)));
    }

    #[test]
    fn statements_are_told_apart_by_what_they_do_to_the_session() {
        for rows in [
            "SELECT 1",
            "  select x FROM t",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO NOTHING RETURNING a",
            "UPDATE t SET a = 1\n RETURNING a",
        ] {
            assert_eq!(Kind::of(rows), Kind::Rows, "{rows}");
        }
        for write in [
            "INSERT INTO t (a) VALUES ($1)",
            "DELETE FROM t WHERE a IN (SELECT a FROM t LIMIT 50)",
            "update t set a = 2",
        ] {
            assert_eq!(Kind::of(write), Kind::Write, "{write}");
        }
        assert_eq!(Kind::of(crate::db::BEGIN_POSTGRES), Kind::Begin);
        for end in ["COMMIT", "ROLLBACK", "rollback"] {
            assert_eq!(Kind::of(end), Kind::End, "{end}");
        }
        for other in [
            "CREATE TABLE t (returning_at TEXT)",
            "CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN UPDATE s SET n = n + 1 RETURNING n INTO NEW.seq; RETURN NEW; END $$ LANGUAGE plpgsql",
            "ALTER ROLE CURRENT_USER SET lock_timeout = '2s'",
        ] {
            assert_eq!(Kind::of(other), Kind::Other, "{other}");
        }
    }

    /// Outside the store's transactions a statement carries the guard
    /// (a read in its padded query's condition, a write as a query of one
    /// row around it); inside one it runs as it is.
    #[test]
    fn a_statement_of_its_own_carries_the_guard_and_one_in_a_transaction_does_not() {
        let read = at_least_one_row("SELECT 1", true);
        assert!(read.contains(&format!("ON true WHERE {NOT_INHERITED} ORDER BY")));
        assert!(!at_least_one_row("SELECT 1", false).contains(NOT_INHERITED));
        assert_eq!(
            guarded_write("DELETE FROM t"),
            format!("WITH meridian_w AS (DELETE FROM t) SELECT NULL AS meridian_row WHERE {NOT_INHERITED}")
        );
        assert!(
            unpadded(vec!["meridian_row".into()], vec![vec![DbValue::DbNull]])
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            map_error(Error::QueryFailed(QueryError::Text(format!(
                "invalid input syntax for type boolean: \"{INHERITED_MARKER}: …\""
            )))),
            DbError::Inherited(_)
        ));
    }

    #[test]
    fn the_padding_row_and_columns_are_dropped() {
        let names = ["meridian_row", "meridian_n", "id", "seq"]
            .map(String::from)
            .to_vec();
        let none = unpadded(
            names.clone(),
            vec![vec![
                DbValue::DbNull,
                DbValue::DbNull,
                DbValue::DbNull,
                DbValue::DbNull,
            ]],
        )
        .unwrap();
        assert!(none.is_empty());
        let two = unpadded(
            names,
            vec![
                vec![
                    DbValue::Boolean(true),
                    DbValue::Int64(1),
                    DbValue::Str("a".into()),
                    DbValue::Int64(7),
                ],
                vec![
                    DbValue::Boolean(true),
                    DbValue::Int64(2),
                    DbValue::Str("b".into()),
                    DbValue::DbNull,
                ],
            ],
        )
        .unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[0].text("id").unwrap(), "a");
        assert_eq!(two[0].integer("seq").unwrap(), 7);
        assert_eq!(two[1].text("id").unwrap(), "b");
        assert!(at_least_one_row("SELECT 1", false)
            .starts_with("WITH meridian_s AS MATERIALIZED (SELECT 1)"));
    }

    #[test]
    fn a_bounded_address_carries_both_bounds_as_startup_options() {
        let ms = Duration::from_millis;
        assert_eq!(
            bounded_address("postgres://u:p@db:5432/counts", ms(250)),
            "postgres://u:p@db:5432/counts?options=-c%20lock_timeout%3D250%20-c%20statement_timeout%3D250"
        );
        assert_eq!(
            bounded_address("postgres://db/counts?sslmode=require", ms(0)),
            "postgres://db/counts?sslmode=require&options=-c%20lock_timeout%3D1%20-c%20statement_timeout%3D1"
        );
        let own = "postgres://db/counts?options=-c%20statement_timeout%3D5s";
        assert_eq!(bounded_address(own, ms(250)), own);
    }

    #[test]
    fn a_structured_error_reported_as_text_is_read_by_its_sqlstate() {
        let text = r#"Error::QueryFailed(QueryError::DbError(DbError { as-text: "Error { kind: Db, cause: Some(DbError { severity: \"ERROR\", code: SqlState(E25006), message: \"cannot execute SELECT in a read-only transaction\" }) }", severity: "ERROR", code: "25006", message: "cannot execute SELECT in a read-only transaction" }))"#;
        assert_eq!(sqlstate_in(text), Some("25006"));
        assert_eq!(sqlstate_in("x SqlState(E40P01) y"), Some("40P01"));
        assert_eq!(sqlstate_in("no code here"), None);
        // Spin 3.6's text of the same error: the server's message alone.
        let words = "db error: ERROR: cannot execute SELECT in a read-only transaction";
        assert!(matches!(
            map_error(Error::QueryFailed(QueryError::Text(words.into()))),
            DbError::Unavailable(StorageFault::ReadOnly, _)
        ));
        let missing = r#"db error: ERROR: relation "residents" does not exist"#;
        assert!(matches!(
            map_error(Error::QueryFailed(QueryError::Text(missing.into()))),
            DbError::Missing(_)
        ));
        let duplicate =
            "db error: ERROR: duplicate key value violates unique constraint \"tenants_slug_key\"";
        assert!(matches!(
            map_error(Error::QueryFailed(QueryError::Text(duplicate.into()))),
            DbError::Constraint(_)
        ));
        assert!(matches!(
            map_error(Error::QueryFailed(QueryError::Text(text.into()))),
            DbError::Unavailable(StorageFault::ReadOnly, _)
        ));
    }

    #[test]
    fn values_cross_both_ways_as_sqlite_has_them() {
        assert_eq!(from_pg(DbValue::Int32(7)), Ok(Value::Integer(7)));
        assert_eq!(from_pg(DbValue::Boolean(true)), Ok(Value::Integer(1)));
        assert_eq!(from_pg(DbValue::DbNull), Ok(Value::Null));
        assert_eq!(
            from_pg(DbValue::Str("x".into())),
            Ok(Value::Text("x".into()))
        );
        assert!(matches!(
            to_pg(&Value::Integer(3)),
            ParameterValue::Int64(3)
        ));
        assert!(from_pg(DbValue::Date((2026, 1, 2))).is_err());
    }
}
