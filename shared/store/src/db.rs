//! The storage contract: a SQLite connection as a trait, and the `Store`
//! that checks the request budget before every statement. Values and rows
//! are in `row`, failures in `error`; both are re-exported here.

use std::cell::Cell;
use std::time::{Duration, Instant};

use meridian_deadline::steps;
use meridian_deadline::time::{duration_ms, Clock, UnixMillis};
use meridian_deadline::HopBudget;
use meridian_log::journal;

pub use super::dialect::Dialect;
pub use super::error::{failure, DbError, StorageFault};
pub use super::row::{sequenced, Row, Value};

/// One database connection: SQLite, or a PostgreSQL server. Implemented by
/// the Spin adapter over `spin_sdk::sqlite` and `spin_sdk::pg4`, and by the
/// test kit over rusqlite.
pub trait Database {
    /// Runs one statement, already in this connection's dialect, and
    /// returns its rows (none for a write).
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError>;

    /// Runs one statement that returns exactly one row whatever it
    /// matches (it ends in a `SELECT` without `FROM`): a PostgreSQL
    /// connection runs it as it is, where [`Self::run`] pads a query so
    /// that the server always sends a row — a padding that cannot wrap a
    /// data-modifying `WITH` ([`crate::batch`]).
    fn run_one_row(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        self.run(sql, params)
    }

    /// The SQL this connection speaks.
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    /// Bounds how long the next statements wait for another connection's
    /// lock before failing with [`DbError::Locked`] — and, on a database
    /// that can bound it (PostgreSQL's `statement_timeout`), how long each
    /// runs at all. The store sets it on SQLite only, whose setting costs
    /// no round trip ([`Store::query`]).
    fn set_lock_wait(&self, wait: Duration) -> Result<(), DbError> {
        self.run(&format!("PRAGMA busy_timeout = {}", duration_ms(wait)), &[])
            .map(drop)
    }

    /// Waits `d` before the store tries to take the write lock again: the
    /// lock wait it keeps itself on a connection that refused
    /// [`Self::set_lock_wait`].
    fn pause(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

impl<D: Database + ?Sized> Database for &D {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        (**self).run(sql, params)
    }

    fn run_one_row(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        (**self).run_one_row(sql, params)
    }

    fn dialect(&self) -> Dialect {
        (**self).dialect()
    }

    fn set_lock_wait(&self, wait: Duration) -> Result<(), DbError> {
        (**self).set_lock_wait(wait)
    }

    fn pause(&self, d: Duration) {
        (**self).pause(d);
    }
}

/// How a transaction begins on PostgreSQL: `DEFERRABLE`, which PostgreSQL
/// refuses inside a transaction a trapped request left on a pooled
/// connection, and which marks every transaction the store begins (it
/// changes nothing else: it matters only to a serializable read-only
/// transaction). docs/storage.md, "No request inherits another's
/// transaction".
pub const BEGIN_POSTGRES: &str = "BEGIN DEFERRABLE";

/// What a statement made outside the store's transactions carries on
/// PostgreSQL: a condition that is true, or — inside a transaction the
/// store began ([`BEGIN_POSTGRES`]'s mark), which on a statement of its own
/// can only be one a trapped request left on the pooled connection — an
/// error whose message names [`INHERITED_MARKER`]: the statement does
/// nothing, and the connection's adapter rolls that transaction back and
/// runs it again. (The error is a cast: a condition cannot raise on its
/// own, and the text is not a constant, so the planner never folds it.)
pub const NOT_INHERITED: &str = "(CASE WHEN current_setting('transaction_deferrable') = 'on' \
     THEN CAST('meridian_inherited: a statement of its own inside another request''s \
     transaction at ' || statement_timestamp() AS boolean) ELSE true END)";

/// The words of the error [`NOT_INHERITED`] raises.
pub const INHERITED_MARKER: &str = "meridian_inherited";

/// How much earlier than needed a lock wait is set to end, so that one
/// setting stays valid for this long of later statements. Without it the
/// bound would need a `PRAGMA` before every statement.
pub const LOCK_WAIT_SLACK: Duration = Duration::from_millis(5);

/// The longest one lock wait lasts on a local SQLite before the store
/// tries the statement again, until the work deadline: the busy handler's
/// first three sleeps, so no waiter sleeps through the lock's free moments
/// for long (docs/benchmarks.md, "Why the constants are what they are").
pub const LOCK_SLICE: Duration = Duration::from_millis(8);

/// The longest pause between two tries at the write lock where the store
/// keeps the lock wait itself (the first is 2 ms, each next one twice as
/// long).
const MAX_LOCK_PAUSE: Duration = Duration::from_millis(50);

/// A database whose every statement first checks the request budget, and
/// whose lock waits end by the hop's work deadline (the deadline less the
/// answer reserve), so that a statement stuck behind another writer gives
/// up while the hop can still answer.
pub struct Store<D, C> {
    db: D,
    clock: C,
    /// The service whose tables these are, when it shares its database
    /// with other services ([`Self::shared_by`]); empty when it owns it.
    owner: &'static str,
    statement_budget: Duration,
    /// The lock wait last set on the connection, if any.
    lock_wait: Cell<LockWait>,
}

/// What a statement returns: rows, or exactly one row whatever it matches.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Rows,
    OneRow,
}

/// What the connection's lock wait is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockWait {
    /// Never set: the driver's default (rusqlite's is 5 s) applies.
    Unset,
    /// Set to this long.
    Set(Duration),
    /// The connection refused the setting (a remote database); not tried again.
    Unsupported,
}

impl<D: Database, C: Clock> Store<D, C> {
    /// Wraps a connection.
    pub fn new(db: D, clock: C) -> Self {
        Self {
            db,
            clock,
            owner: "",
            statement_budget: steps::STATEMENT,
            lock_wait: Cell::new(LockWait::Unset),
        }
    }

    /// The same store, in a database `service` shares with other services
    /// (one SQLite database for the whole app): the tables every service
    /// has — its migration ledger, its idempotency records, its row
    /// sequence — are then its own by name ([`Self::table`]).
    pub fn shared_by(self, service: &'static str) -> Self {
        Self {
            owner: service,
            ..self
        }
    }

    /// The name of the table every service has by the name `name`, as
    /// this store's service has it: `name` in a database of its own,
    /// `{service}_{name}` in a shared one.
    pub fn table(&self, name: &str) -> String {
        match self.owner {
            "" => name.to_owned(),
            owner => format!("{owner}_{name}"),
        }
    }

    /// A migration's SQL as this store runs it: each `{own}` (written
    /// before the name of a table every service has) becomes the
    /// service's prefix in a shared database, and nothing in a database of
    /// its own — where the text is then the file's as it always was.
    pub fn render(&self, sql: &str) -> String {
        match self.owner {
            "" => sql.replace("{own}", ""),
            owner => sql.replace("{own}", &format!("{owner}_")),
        }
    }

    /// Runs a statement if the budget can fit one, and returns its rows. A
    /// statement that waited out its lock wait has spent the hop's budget.
    ///
    /// On a connection that refused a lock wait (a remote libSQL server,
    /// which answers a held lock at once with "database is locked"), a
    /// statement that meets a lock another connection holds is tried again
    /// here, in pauses of 2 ms doubling to 50 ms, until the work deadline
    /// less the slack, as a local SQLite's `busy_timeout` waits. On a local
    /// file SQLite waits itself, in slices of [`LOCK_SLICE`], and the
    /// statement is tried again after each until the same bound. That is
    /// safe for every statement: SQLite answers "locked" only for one that
    /// did nothing (an autocommit write, `BEGIN IMMEDIATE`, a `COMMIT` that
    /// leaves the transaction open to be committed again). An interrupted
    /// statement ([`DbError::Interrupted`]) is not: it may have done its
    /// work, and inside a transaction SQLite rolls the whole transaction
    /// back, so running it again would write it twice or outside its
    /// transaction.
    pub fn query(
        &self,
        ctx: &impl AsRef<HopBudget>,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Row>, DbError> {
        self.query_shaped(ctx.as_ref(), sql, params, Shape::Rows)
    }

    /// [`Self::query`] for a statement that returns exactly one row
    /// whatever it matches ([`Database::run_one_row`]).
    pub fn query_one_row(
        &self,
        ctx: &impl AsRef<HopBudget>,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Row>, DbError> {
        self.query_shaped(ctx.as_ref(), sql, params, Shape::OneRow)
    }

    fn query_shaped(
        &self,
        ctx: &HopBudget,
        sql: &str,
        params: &[Value],
        shape: Shape,
    ) -> Result<Vec<Row>, DbError> {
        let now = self.clock.now();
        ctx.ensure(now, self.statement_budget)?;
        if self.bound_lock_wait(ctx, now) {
            // Setting it was a statement of its own, on a fresh connection
            // the slowest of the request (an overloaded host queues it):
            // the budget is checked again before the statement starts.
            ctx.ensure(self.clock.now(), self.statement_budget)?;
        }
        let mut pause = Duration::from_millis(2);
        loop {
            let left = |now| {
                ctx.work_deadline()
                    .remaining(now)
                    .saturating_sub(LOCK_WAIT_SLACK)
            };
            let started = self.clock.now();
            match self.run_shaped(ctx, sql, params, shape) {
                // The wait ran to its bound: the time it had is gone.
                Err(DbError::Locked(_)) if left(self.clock.now()).is_zero() => {
                    return Err(DbError::Budget(ctx.spent()))
                }
                // PostgreSQL waited in one piece, and a refused statement
                // has aborted the transaction it was in: never again here.
                Err(e @ DbError::Locked(_)) if self.db.dialect() == Dialect::Postgres => {
                    return Err(e)
                }
                Err(DbError::Locked(_)) if self.lock_wait.get() == LockWait::Unsupported => {
                    self.db.pause(pause.min(left(self.clock.now())));
                    pause = (pause * 2).min(MAX_LOCK_PAUSE);
                    ctx.ensure(self.clock.now(), self.statement_budget)?;
                }
                // SQLite's own wait ran its slice: try again, with a
                // slice that still ends by the work deadline. A lock lost
                // sooner (SQLite answers a deadlock at once) is the
                // caller's `Locked`: trying again could spin.
                Err(DbError::Locked(_)) if self.slice_ran_out(started) => {
                    let now = self.clock.now();
                    ctx.ensure(now, self.statement_budget)?;
                    self.bound_lock_wait(ctx, now);
                }
                other => return other,
            }
        }
    }

    /// Runs `sql` now, timed for the request's journal. A statement that
    /// starts after the request's deadline is logged (`statement_late`):
    /// the checks before every statement should make that never happen, and
    /// the overload benchmark counts the lines to show it. The check is one
    /// wall-clock read per statement and writes nothing while none is late.
    fn run(&self, ctx: &HopBudget, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        self.run_shaped(ctx, sql, params, Shape::Rows)
    }

    fn run_shaped(
        &self,
        ctx: &HopBudget,
        sql: &str,
        params: &[Value],
        shape: Shape,
    ) -> Result<Vec<Row>, DbError> {
        let late = self.clock.now().since(ctx.deadline().instant());
        if !late.is_zero() {
            journal::statement_late(sql.split_whitespace().next().unwrap_or_default(), late);
        }
        let started = Instant::now();
        let sql = self.db.dialect().statement(sql);
        let result = match shape {
            Shape::Rows => self.db.run(&sql, params),
            Shape::OneRow => self.db.run_one_row(&sql, params),
        };
        journal::statement(started.elapsed());
        result
    }

    /// Makes sure a lock wait that starts at `now` ends by the work
    /// deadline. The setting is made `LOCK_WAIT_SLACK` shorter than it could
    /// be, so it stays valid for the statements of the next few ms. Whether
    /// it had to be (re)set, which took a statement.
    ///
    /// Never on PostgreSQL: a setting there is a statement of its own, a
    /// round trip to a server that may be a network away, before nearly
    /// every statement. Its bounds are ceilings the migrations put on the
    /// service's role in its database (`lock_timeout`,
    /// `statement_timeout`, `idle_in_transaction_session_timeout`:
    /// migrations/postgres/shared/0008_role_ceilings.sql); the budget check before
    /// each statement keeps late work from starting, and a statement that
    /// started in time ends by the ceiling, not by its request's deadline
    /// (the hop that called this one still answers by its own).
    fn bound_lock_wait(&self, ctx: &HopBudget, now: UnixMillis) -> bool {
        if self.db.dialect() == Dialect::Postgres {
            return false;
        }
        let until = ctx.work_deadline();
        let fits = match self.lock_wait.get() {
            LockWait::Unsupported => return false,
            LockWait::Unset => false,
            LockWait::Set(wait) => wait.is_zero() || now.plus(wait) <= until.instant(),
        };
        if fits {
            return false;
        }
        let wait = until
            .remaining(now)
            .saturating_sub(LOCK_WAIT_SLACK)
            .min(LOCK_SLICE);
        match self.db.set_lock_wait(wait) {
            Ok(()) => self.lock_wait.set(LockWait::Set(wait)),
            // A remote libSQL refuses pragmas ("unsupported statement"):
            // its server's own timeouts apply, and every request would say
            // so again, so the refusal is not logged.
            Err(_) => self.lock_wait.set(LockWait::Unsupported),
        }
        true
    }

    /// Whether a statement that started at `started` and met a held lock
    /// waited out the lock wait last set (less a millisecond of the
    /// clock's rounding), rather than losing the lock at once.
    fn slice_ran_out(&self, started: UnixMillis) -> bool {
        match self.lock_wait.get() {
            LockWait::Set(wait) => {
                !wait.is_zero()
                    && self.clock.now().since(started) + Duration::from_millis(1) >= wait
            }
            LockWait::Unset | LockWait::Unsupported => false,
        }
    }

    /// Runs a write if the budget can fit one.
    pub fn execute(
        &self,
        ctx: &impl AsRef<HopBudget>,
        sql: &str,
        params: &[Value],
    ) -> Result<(), DbError> {
        self.query(ctx, sql, params).map(drop)
    }

    /// Runs `work` inside a transaction that holds the service's write
    /// lock (`begin`), rolling back when it fails. The rollback runs
    /// whatever the budget: leaving a transaction open would be worse than
    /// finishing a little late.
    pub fn transaction<T, E: From<DbError>>(
        &self,
        ctx: &impl AsRef<HopBudget>,
        work: impl FnOnce(&Self) -> Result<T, E>,
    ) -> Result<T, E> {
        let ctx = ctx.as_ref();
        self.begin(ctx)?;
        match work(self) {
            Ok(value) => match self.execute(ctx, "COMMIT", &[]) {
                Ok(()) => Ok(value),
                Err(e) => {
                    let _ = self.run(ctx, "ROLLBACK", &[]);
                    Err(e.into())
                }
            },
            Err(e) => {
                let _ = self.run(ctx, "ROLLBACK", &[]);
                Err(e)
            }
        }
    }

    /// Begins a transaction, waiting for the write lock as every statement
    /// waits ([`Self::query`]): nothing of the transaction has run.
    ///
    /// SQLite's `BEGIN IMMEDIATE` takes the database's one write lock:
    /// one writing transaction at a time. PostgreSQL needs no such rule,
    /// and has none here: writes of different tenants never wait for each
    /// other, and each rule a write keeps holds by the server's own means
    /// (docs/storage.md, "Rules without a service lock").
    ///
    /// On PostgreSQL the transaction begins `DEFERRABLE` ([`BEGIN_POSTGRES`],
    /// which changes nothing else) because that form refuses to run inside a
    /// transaction that has already run a query: a pooled connection
    /// still in the transaction of a request that trapped (Spin's pool
    /// cleans a connection without a `ROLLBACK`). That transaction is then
    /// rolled back — none of its writes can reach this request's `COMMIT`
    /// — and the transaction begun again.
    fn begin(&self, ctx: &HopBudget) -> Result<(), DbError> {
        match self.db.dialect() {
            Dialect::Sqlite => self.execute(ctx, "BEGIN IMMEDIATE", &[]),
            Dialect::Postgres => match self.execute(ctx, BEGIN_POSTGRES, &[]) {
                Err(DbError::Inherited(cause)) => {
                    journal::event(journal::Event::Failure {
                        what: "a pooled connection in another request's transaction",
                        cause: format!("{cause}: rolled back"),
                    });
                    self.run(ctx, "ROLLBACK", &[])?;
                    self.execute(ctx, BEGIN_POSTGRES, &[])
                }
                other => other,
            },
        }
    }

    /// Runs `work` inside a transaction that holds the service's schema
    /// lock: its migrations, which first requests of a fresh database race
    /// to apply (on PostgreSQL two would otherwise meet each other's
    /// half-made table). SQLite's write lock is that lock already (waited
    /// for as every statement waits). On PostgreSQL it is a
    /// transaction-scoped advisory lock, one per service — taken by
    /// migrations alone, never by a request's writes — tried, not waited
    /// for: when another instance holds it the answer is `None` at once,
    /// nothing held, for the caller to read the ledger again after a pause
    /// (waiters queued on the lock would each hold it a few round trips in
    /// turn; waiters holding it shared kept every other try from taking it).
    pub fn schema_transaction<T, E: From<DbError>>(
        &self,
        ctx: &impl AsRef<HopBudget>,
        work: impl FnOnce(&Self) -> Result<T, E>,
    ) -> Result<Option<T>, E> {
        let ctx = ctx.as_ref();
        self.transaction(ctx, |tx| {
            if tx.db.dialect() == Dialect::Postgres {
                let key = [Value::Integer(tx.schema_lock_key())];
                let got = tx.query(ctx, "SELECT pg_try_advisory_xact_lock(?) AS got", &key)?;
                if got.first().and_then(|r| r.integer("got").ok()) != Some(1) {
                    return Ok(None);
                }
            }
            work(tx).map(Some)
        })
    }

    /// Waits `d` (a pause between two looks at something another
    /// instance is doing).
    pub fn pause(&self, d: Duration) {
        self.db.pause(d);
    }

    /// The key of the service's advisory schema lock on PostgreSQL: one
    /// per service in a shared database (FNV-1a of its name), the same for
    /// every store of a database of its own.
    fn schema_lock_key(&self) -> i64 {
        let hash = self.owner.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        i64::from_ne_bytes(hash.to_ne_bytes())
    }

    /// The clock the store checks the budget against.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The connection underneath (a test copies a seeded database from it).
    pub fn db(&self) -> &D {
        &self.db
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian_deadline::time::ManualClock;
    use meridian_deadline::Deadline;
    use std::cell::RefCell;

    const START: u64 = 1_700_000_000_000;

    #[test]
    fn a_missing_table_or_column_says_the_schema_is_behind() {
        for message in ["no such table: residents", "no such column: role"] {
            assert!(matches!(
                DbError::sqlite(message.into()),
                DbError::Missing(_)
            ));
        }
        let other = DbError::sqlite("table half already exists".into());
        assert!(matches!(other, DbError::Sqlite(_)));
    }

    /// Records every statement; fails with `Locked` after moving the clock
    /// by the lock wait in force, as SQLite's busy handler would.
    struct Recorder<'c> {
        clock: &'c ManualClock,
        sql: RefCell<Vec<String>>,
        wait: Cell<Duration>,
        locked: Cell<bool>,
        pragmas_refused: bool,
        /// How long setting the lock wait takes.
        pragma_takes: Cell<Duration>,
        /// How many more statements fail with `Locked` (while `locked`).
        locked_for: Cell<u32>,
        /// The pauses the store asked for.
        pauses: RefCell<Vec<Duration>>,
        /// The next statement starting with this is interrupted
        /// (`SQLITE_INTERRUPT`).
        interrupts: Cell<Option<&'static str>>,
    }

    impl<'c> Recorder<'c> {
        fn new(clock: &'c ManualClock) -> Self {
            Self {
                clock,
                sql: RefCell::default(),
                wait: Cell::new(Duration::from_secs(5)),
                locked: Cell::new(false),
                pragmas_refused: false,
                pragma_takes: Cell::new(Duration::ZERO),
                locked_for: Cell::new(u32::MAX),
                pauses: RefCell::default(),
                interrupts: Cell::new(None),
            }
        }

        /// A remote libSQL whose write lock another connection holds: it
        /// refuses `busy_timeout` and answers a held lock at once.
        fn remote_and_locked(clock: &'c ManualClock) -> Self {
            let mut db = Self::new(clock);
            db.pragmas_refused = true;
            db.wait.set(Duration::ZERO);
            db.locked.set(true);
            db
        }

        /// How many statements run so far start with `prefix`.
        fn count(&self, prefix: &str) -> usize {
            let sql = self.sql.borrow();
            sql.iter().filter(|s| s.starts_with(prefix)).count()
        }

        fn pragmas(&self) -> Vec<String> {
            let sql = self.sql.borrow();
            sql.iter()
                .filter(|s| s.starts_with("PRAGMA"))
                .cloned()
                .collect()
        }
    }

    impl Database for Recorder<'_> {
        fn run(&self, sql: &str, _params: &[Value]) -> Result<Vec<Row>, DbError> {
            self.sql.borrow_mut().push(sql.to_owned());
            if let Some(ms) = sql.strip_prefix("PRAGMA busy_timeout = ") {
                self.clock.advance(self.pragma_takes.get());
                if self.pragmas_refused {
                    return Err(DbError::Sqlite("not supported".into()));
                }
                self.wait.set(Duration::from_millis(ms.parse().unwrap()));
                return Ok(Vec::new());
            }
            if self.interrupts.get().is_some_and(|p| sql.starts_with(p)) {
                self.interrupts.set(None);
                return Err(DbError::Interrupted("SQLITE_INTERRUPT".into()));
            }
            if self.locked.get() && self.locked_for.get() > 0 {
                self.locked_for.set(self.locked_for.get() - 1);
                self.clock.advance(self.wait.get());
                return Err(DbError::Locked("database is locked".into()));
            }
            Ok(Vec::new())
        }

        fn pause(&self, d: Duration) {
            self.pauses.borrow_mut().push(d);
            self.clock.advance(d);
        }
    }

    fn ctx(budget_ms: u64) -> HopBudget {
        let now = UnixMillis::from_millis(START);
        HopBudget::new(
            Deadline::after(now, Duration::from_millis(budget_ms)),
            now,
            "billing",
        )
    }

    /// A PostgreSQL server: its statements recorded as the recorder's. A
    /// lock wait it is asked for gives up a millisecond short of the wait
    /// (the clocks' rounding: a sliced SQLite wait would try again); the
    /// first `inherited` statements that begin a transaction meet one a
    /// trapped request left open.
    struct Postgres<'c> {
        db: Recorder<'c>,
        inherited: Cell<u32>,
    }

    impl<'c> Postgres<'c> {
        fn new(clock: &'c ManualClock) -> Self {
            Self {
                db: Recorder::new(clock),
                inherited: Cell::new(0),
            }
        }
    }

    impl Database for Postgres<'_> {
        fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
            if sql == BEGIN_POSTGRES && self.inherited.get() > 0 {
                self.inherited.set(self.inherited.get() - 1);
                self.db.sql.borrow_mut().push(sql.to_owned());
                return Err(DbError::Inherited("25001".into()));
            }
            self.db.run(sql, params)
        }
        fn dialect(&self) -> Dialect {
            Dialect::Postgres
        }
        fn set_lock_wait(&self, wait: Duration) -> Result<(), DbError> {
            self.db
                .wait
                .set(wait.saturating_sub(Duration::from_millis(1)));
            self.db.sql.borrow_mut().push("SET lock_timeout".into());
            Ok(())
        }
    }

    /// A PostgreSQL server whose lock wait ran out: the transaction the
    /// statement was in is aborted, so the store answers at once.
    #[test]
    fn on_postgres_a_refused_lock_is_never_tried_again() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Postgres::new(&clock);
        db.db.locked.set(true);
        db.db.wait.set(Duration::from_millis(100));
        let store = Store::new(&db, &clock);
        let err = store.query(&ctx(400), "SELECT 1", &[]).unwrap_err();
        assert!(matches!(err, DbError::Locked(_)), "{err:?}");
        assert_eq!(db.db.count("SELECT 1"), 1);
    }

    /// Each statement is its own round trip to a server that may be a
    /// network away: no setting before it, no lock wider than the rows a
    /// write touches around a transaction.
    #[test]
    fn on_postgres_a_transaction_is_its_statements_and_nothing_else() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Postgres::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        store
            .transaction(&ctx, |tx| tx.execute(&ctx, "INSERT INTO t VALUES (1)", &[]))
            .unwrap();
        store.query(&ctx, "SELECT 1", &[]).unwrap();
        assert_eq!(
            *db.db.sql.borrow(),
            [
                BEGIN_POSTGRES,
                "INSERT INTO t VALUES (1)",
                "COMMIT",
                "SELECT 1"
            ]
        );
    }

    /// Migrations, which first requests race to apply, hold the service's
    /// schema lock on PostgreSQL; a request's writes never take it.
    #[test]
    fn on_postgres_only_a_schema_transaction_takes_the_services_lock() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Postgres::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        // The recorder answers no row: the lock is another instance's, so
        // the work does not run, and nothing is waited for or held.
        let ran = store
            .schema_transaction(&ctx, |tx| tx.execute(&ctx, "CREATE TABLE t (a INT)", &[]))
            .unwrap();
        assert_eq!(ran, None);
        let sql = db.db.sql.borrow();
        assert_eq!(sql.len(), 3, "{sql:?}");
        assert!(sql[1].contains("pg_try_advisory_xact_lock"), "{sql:?}");
        assert_eq!(sql[2], "COMMIT");
    }

    /// A pooled connection still in a trapped request's transaction:
    /// rolled back before this request's transaction begins, so its
    /// writes never reach this request's commit.
    #[test]
    fn on_postgres_a_transaction_left_open_by_a_trapped_request_is_rolled_back_first() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Postgres::new(&clock);
        db.inherited.set(1);
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        store
            .transaction(&ctx, |tx| tx.execute(&ctx, "INSERT INTO t VALUES (1)", &[]))
            .unwrap();
        assert_eq!(
            *db.db.sql.borrow(),
            [
                BEGIN_POSTGRES,
                "ROLLBACK",
                BEGIN_POSTGRES,
                "INSERT INTO t VALUES (1)",
                "COMMIT"
            ]
        );
        // Met twice in a row: the request fails, nothing of it written.
        db.inherited.set(2);
        let err = store
            .transaction(&ctx, |tx| tx.execute(&ctx, "INSERT INTO t VALUES (2)", &[]))
            .unwrap_err();
        assert!(matches!(err, DbError::Inherited(_)), "{err:?}");
        assert_eq!(db.db.count("INSERT INTO t VALUES (2)"), 0);
    }

    #[test]
    fn a_lock_wait_ends_an_answer_reserve_before_the_deadline() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(400);
        db.locked.set(true);
        let err = store.query(&ctx, "SELECT 1", &[]).unwrap_err();
        // Waited until the work deadline (less the slack), then gave up with
        // the hop's own 504, leaving the 12 ms reserve to answer in.
        assert_eq!(steps::ANSWER_COST, Duration::from_millis(12));
        assert_eq!(err, DbError::Budget(ctx.spent()));
        // In slices of 8 ms, tried again after each, the last ending 4 ms
        // before the work deadline (388 ms): less than the slack was left.
        assert_eq!(db.pragmas(), ["PRAGMA busy_timeout = 8"]);
        assert_eq!(db.count("SELECT 1"), 48);
        assert!(db.pauses.borrow().is_empty());
        assert_eq!(ctx.remaining(clock.now()), Duration::from_millis(16));
    }

    #[test]
    fn the_lock_wait_is_set_before_the_first_statement_and_kept_while_it_fits() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        store.execute(&ctx, "SELECT 1", &[]).unwrap();
        assert_eq!(db.sql.borrow()[0], "PRAGMA busy_timeout = 8");
        clock.advance(Duration::from_millis(900));
        store.execute(&ctx, "SELECT 2", &[]).unwrap();
        assert_eq!(db.pragmas().len(), 1, "still fits: not set again");
        // The work deadline is at 988 ms: a slice from 982 would end past it.
        clock.advance(Duration::from_millis(82));
        store.execute(&ctx, "SELECT 3", &[]).unwrap();
        assert_eq!(
            db.pragmas(),
            ["PRAGMA busy_timeout = 8", "PRAGMA busy_timeout = 1"]
        );
    }

    #[test]
    fn a_statement_is_refused_when_setting_the_lock_wait_spent_the_budget() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(100);
        // The first statement of a connection on an overloaded host: the
        // pragma waited 99 ms for a thread.
        db.pragma_takes.set(Duration::from_millis(99));
        journal::begin("billing", "req-1", None);
        let err = store.query(&ctx, "SELECT 1", &[]).unwrap_err();
        assert_eq!(err, DbError::Budget(ctx.spent()));
        assert_eq!(
            db.sql.borrow().len(),
            1,
            "the pragma only: {:?}",
            db.sql.borrow()
        );
        assert_eq!(journal::spent().late_statements, 0);
    }

    #[test]
    fn only_a_statement_started_after_the_deadline_is_counted_late() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = &ctx(100);
        journal::begin("billing", "req-1", None);
        let clock = &clock;
        let work = |ms: u64| {
            move |tx: &Store<&Recorder<'_>, &ManualClock>| -> Result<(), DbError> {
                tx.execute(ctx, "INSERT INTO t VALUES (1)", &[])?;
                clock.advance(Duration::from_millis(ms));
                Ok(())
            }
        };
        store.transaction(ctx, work(50)).unwrap();
        assert_eq!(journal::spent().late_statements, 0);
        // Work that outlives the deadline: COMMIT is refused before it
        // starts; the ROLLBACK runs whatever the budget, 10 ms late.
        let refused = store.transaction(ctx, work(60));
        assert_eq!(refused, Err(DbError::Budget(ctx.spent())));
        // Refused statements never start, so are never late.
        assert!(store.query(ctx, "SELECT 1", &[]).is_err());
        let spent = journal::spent();
        assert_eq!(spent.late_statements, 1, "the rollback alone");
        assert_eq!(
            spent.statements, 6,
            "BEGIN INSERT COMMIT BEGIN INSERT ROLLBACK"
        );
    }

    #[test]
    fn nothing_runs_once_the_budget_is_spent_not_even_the_pragma() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(100);
        clock.advance(Duration::from_millis(99));
        assert_eq!(
            store.query(&ctx, "SELECT 1", &[]),
            Err(DbError::Budget(ctx.spent()))
        );
        assert!(db.sql.borrow().is_empty());
    }

    #[test]
    fn an_interrupted_statement_is_never_run_again_and_its_transaction_fails_whole() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        // A remote libSQL server: locks are waited for here, by running the
        // statement again; an interrupt must not be.
        let db = Recorder::new(&clock);
        let db = Recorder {
            pragmas_refused: true,
            ..db
        };
        db.interrupts.set(Some("INSERT"));
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        let err = store
            .transaction(&ctx, |tx| {
                tx.execute(&ctx, "INSERT INTO memberships VALUES (1)", &[])?;
                tx.execute(&ctx, "INSERT INTO api_tokens VALUES (1)", &[])
            })
            .unwrap_err();
        assert!(matches!(err, DbError::Interrupted(_)), "{err:?}");
        assert_eq!(db.count("INSERT"), 1, "{:?}", db.sql.borrow());
        assert_eq!(db.count("COMMIT"), 0);
        assert_eq!(db.count("ROLLBACK"), 1);
        assert!(db.pauses.borrow().is_empty());
    }

    #[test]
    fn a_lock_lost_early_is_a_busy_service_not_a_deadline() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        store.query(&ctx, "SELECT 0", &[]).unwrap();
        // The connection's lock is lost at once (SQLite answers a
        // deadlock without waiting), long before the deadline: not tried
        // again in a loop.
        db.wait.set(Duration::ZERO);
        db.locked.set(true);
        let err = store.query(&ctx, "SELECT 1", &[]).unwrap_err();
        assert!(matches!(err, DbError::Locked(_)));
        assert!(db.pauses.borrow().is_empty());
    }

    #[test]
    fn a_connection_that_refused_the_lock_wait_is_not_asked_again() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let mut db = Recorder::new(&clock);
        db.pragmas_refused = true;
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        store.query(&ctx, "SELECT 1", &[]).unwrap();
        store.query(&ctx, "SELECT 2", &[]).unwrap();
        assert_eq!(db.pragmas().len(), 1);
    }

    #[test]
    fn where_the_connection_keeps_no_lock_wait_a_write_outside_a_transaction_waits_too() {
        // The idempotency claim: an autocommit INSERT that meets another
        // connection's write lock on a remote libSQL.
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::remote_and_locked(&clock);
        db.locked_for.set(2);
        let store = Store::new(&db, &clock);
        let ctx = ctx(1_000);
        assert_eq!(store.execute(&ctx, "INSERT INTO t VALUES (1)", &[]), Ok(()));
        let ms = |n| Duration::from_millis(n);
        assert_eq!(*db.pauses.borrow(), [ms(2), ms(4)]);
        assert_eq!(db.count("INSERT"), 3);
    }

    #[test]
    fn where_the_connection_keeps_no_lock_wait_a_transaction_waits_for_the_lock_itself() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let budget = 1_000;
        let db = Recorder::remote_and_locked(&clock);
        db.locked_for.set(3);
        let store = Store::new(&db, &clock);
        let ctx = ctx(budget);
        let done = store.transaction(&ctx, |tx| tx.execute(&ctx, "INSERT INTO t VALUES (1)", &[]));
        assert_eq!(done, Ok(()));
        let ms = |n| Duration::from_millis(n);
        assert_eq!(*db.pauses.borrow(), [ms(2), ms(4), ms(8)]);
        assert_eq!(db.count("BEGIN IMMEDIATE"), 4);
    }

    #[test]
    fn a_lock_never_released_is_waited_for_no_longer_than_the_work_deadline() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let budget = 1_000;
        let db = Recorder::remote_and_locked(&clock);
        let store = Store::new(&db, &clock);
        let ctx = ctx(budget);
        let err = store
            .transaction(&ctx, |tx| tx.execute(&ctx, "INSERT INTO t VALUES (1)", &[]))
            .unwrap_err();
        // Given up by the work deadline, as the hop's own 504, its reserve
        // left to answer in; the work never ran.
        assert_eq!(err, DbError::Budget(ctx.spent()));
        assert!(ctx.work_deadline().remaining(clock.now()) <= LOCK_WAIT_SLACK);
        assert!(ctx.remaining(clock.now()) >= steps::ANSWER_COST);
        assert!(db.pauses.borrow().iter().all(|p| *p <= MAX_LOCK_PAUSE));
        assert_eq!(db.count("INSERT"), 0);
    }

    #[test]
    fn a_connection_with_its_own_lock_wait_is_not_paused_for() {
        let clock = ManualClock::new(UnixMillis::from_millis(START));
        let db = Recorder::new(&clock);
        db.locked.set(true);
        let store = Store::new(&db, &clock);
        let ctx = ctx(400);
        assert!(store.transaction(&ctx, |_| Ok::<_, DbError>(())).is_err());
        assert!(db.pauses.borrow().is_empty());
    }
}
