//! Storage failures: what went wrong with a statement, what is wrong with
//! a database that cannot take any, and the problem each is answered with.

use thiserror::Error;

use meridian_deadline::BudgetSpent;
use meridian_log::journal::{self, Event};

/// A storage failure.
#[derive(Debug, Error, PartialEq)]
pub enum DbError {
    /// The budget could not fit the statement; it was not run.
    #[error(transparent)]
    Budget(#[from] BudgetSpent),
    /// A uniqueness or other constraint refused the write.
    #[error("constraint violated: {0}")]
    Constraint(String),
    /// Another connection held the lock for longer than this one could wait.
    /// The statement did nothing, so it may be tried again.
    #[error("database locked: {0}")]
    Locked(String),
    /// The database interrupted the statement (`SQLITE_INTERRUPT`: a libSQL
    /// server gives up a statement it could not run in time under load).
    /// Unlike a lock, it may have done its work, or (inside a transaction)
    /// undone the whole transaction: it is never tried again on its own.
    #[error("statement interrupted: {0}")]
    Interrupted(String),
    /// A statement named a table or column that does not exist: the
    /// schema is behind its migrations (a fresh database, or a read that
    /// skipped the ledger). The service's entry point migrates and runs the
    /// request again; it logs the error only when that cannot help.
    #[error("schema behind: {0}")]
    Missing(String),
    /// The database cannot take statements at all until an operator acts:
    /// its disk is full, its file is read-only, unreadable or not a
    /// database, or its server cannot be reached. Nothing was written.
    #[error("storage unavailable ({fault}): {1}", fault = .0.as_str())]
    Unavailable(StorageFault, String),
    /// A PostgreSQL connection came with a transaction already open: a
    /// request whose instance trapped mid-transaction left it, and Spin's
    /// pool cleans a connection at checkout without rolling it back
    /// (`BEGIN DEFERRABLE` refuses to run inside it: SQLSTATE 25001; a
    /// statement of its own fails its [`crate::db::NOT_INHERITED`]). The
    /// store rolls it back and begins again ([`crate::db::Store`]), or the
    /// adapter rolls it back and runs the statement again.
    #[error("inherited transaction: {0}")]
    Inherited(String),
    /// A batch's write that had to change a row changed none (the number
    /// is its place in the batch): nothing of the batch was written
    /// ([`crate::batch`]).
    #[error("write {0} of a batch changed nothing: the batch was not written")]
    Refused(usize),
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(String),
    /// A row did not have the expected shape.
    #[error("decode: {0}")]
    Decode(String),
}

impl DbError {
    /// An error SQLite reported as text: `Missing` when it names a table or
    /// column that does not exist, `Unavailable` when it is a fault of the
    /// storage itself, else `Sqlite`.
    pub fn sqlite(message: String) -> Self {
        if message.contains("no such table") || message.contains("no such column") {
            DbError::Missing(message)
        } else if let Some(fault) = StorageFault::of(&message) {
            DbError::Unavailable(fault, message)
        } else {
            DbError::Sqlite(message)
        }
    }
}

/// What is wrong with a database that cannot take statements. Spin reports
/// SQLite's errors as text, so these are recognised by SQLite's own
/// messages (`sqlite3_errstr`), which rusqlite and libSQL pass on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// `SQLITE_FULL`: the filesystem (or a file-size limit) has no room.
    Full,
    /// `SQLITE_READONLY`: the file cannot be written (a read-only mount,
    /// an immutable file, missing permissions).
    ReadOnly,
    /// `SQLITE_NOTADB` / `SQLITE_CORRUPT`: the file is not a database, or
    /// no longer a whole one.
    NotADatabase,
    /// `SQLITE_CANTOPEN`: the file cannot be opened.
    CannotOpen,
    /// `SQLITE_IOERR`: a read or write of the file failed (a failing
    /// device; a libSQL server reports its full disk so, its write-ahead
    /// log's write having failed).
    Io,
    /// A database server (libSQL) that does not answer.
    Unreachable,
}

impl StorageFault {
    /// SQLite's messages (and a libSQL client's) for each fault.
    const MESSAGES: [(&'static str, StorageFault); 9] = [
        ("database or disk is full", Self::Full),
        ("attempt to write a readonly database", Self::ReadOnly),
        ("file is not a database", Self::NotADatabase),
        ("database disk image is malformed", Self::NotADatabase),
        ("unable to open database file", Self::CannotOpen),
        ("disk I/O error", Self::Io),
        ("error sending request", Self::Unreachable),
        ("Connection refused", Self::Unreachable),
        // A libSQL client's connect failure: its host does not resolve, or
        // nothing accepts the connection.
        ("error trying to connect", Self::Unreachable),
    ];

    /// The fault a storage error's text names, if it names one.
    pub fn of(message: &str) -> Option<Self> {
        Self::MESSAGES
            .iter()
            .find(|(text, _)| message.contains(text))
            .map(|(_, fault)| *fault)
    }

    /// The fault as the `failure` log line names it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Full => "disk full",
            Self::ReadOnly => "read-only",
            Self::NotADatabase => "not a database",
            Self::CannotOpen => "cannot open",
            Self::Io => "i/o error",
            Self::Unreachable => "unreachable",
        }
    }

    /// The `what` of the `failure` event line that reports this fault.
    pub const fn failure(self) -> &'static str {
        match self {
            Self::Full => "storage unavailable: disk full",
            Self::ReadOnly => "storage unavailable: read-only",
            Self::NotADatabase => "storage unavailable: not a database",
            Self::CannotOpen => "storage unavailable: cannot open",
            Self::Io => "storage unavailable: i/o error",
            Self::Unreachable => "storage unavailable: unreachable",
        }
    }
}

/// Logs a storage failure as an event line.
pub fn failure(what: &'static str, cause: String) {
    journal::event(Event::Failure { what, cause });
}
