//! What statements take and give back: SQLite values, and rows read by
//! column name.

use std::sync::Arc;

use super::error::DbError;
use crate::timestamp::Timestamp;

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

impl Value {
    /// The value's SQLite type, for an error that must not carry the data.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Integer(_) => "integer",
            Self::Real(_) => "real",
            Self::Text(_) => "text",
            Self::Blob(_) => "blob",
        }
    }
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

impl From<&Timestamp> for Value {
    fn from(t: &Timestamp) -> Self {
        Self::Text(t.as_str().to_owned())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// One result row, read by column name (the name SQLite reports: the
/// column's own, or its `AS` alias), never by position, so a change to a
/// `SELECT` list cannot silently shift what a field reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    /// A row of `values`, named by `columns` (shared by a result's rows).
    pub fn new(columns: Arc<[String]>, values: Vec<Value>) -> Self {
        Self { columns, values }
    }

    fn value(&self, column: &str) -> Result<&Value, DbError> {
        self.columns
            .iter()
            .position(|c| c == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| DbError::Decode(format!("no column {column} in the result")))
    }

    /// A column as bytes, `None` when it is NULL.
    pub fn opt_blob(&self, column: &str) -> Result<Option<&[u8]>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Blob(b) => Ok(Some(b)),
            other => Err(DbError::Decode(format!(
                "column {column}: expected bytes, got {}",
                other.kind()
            ))),
        }
    }

    /// A column as an integer.
    pub fn integer(&self, column: &str) -> Result<i64, DbError> {
        match self.value(column)? {
            Value::Integer(v) => Ok(*v),
            other => Err(DbError::Decode(format!(
                "column {column}: expected integer, got {}",
                other.kind()
            ))),
        }
    }

    /// A column as text.
    pub fn text(&self, column: &str) -> Result<&str, DbError> {
        match self.value(column)? {
            Value::Text(v) => Ok(v),
            other => Err(DbError::Decode(format!(
                "column {column}: expected text, got {}",
                other.kind()
            ))),
        }
    }

    /// A column as a [`Timestamp`].
    pub fn timestamp(&self, column: &str) -> Result<Timestamp, DbError> {
        self.parsed(column, |raw| Timestamp::stored(raw).ok_or(()))
    }

    /// A text column turned into `T` by `parse`: a value that does not parse
    /// means the row is not one the service wrote, a decode error naming
    /// the column and the value.
    pub fn parsed<T, E>(
        &self,
        column: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, DbError> {
        let raw = self.text(column)?;
        parse(raw).map_err(|_| DbError::Decode(format!("column {column}: unexpected {raw:?}")))
    }

    /// A column as text or NULL.
    pub fn opt_text(&self, column: &str) -> Result<Option<&str>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            _ => self.text(column).map(Some),
        }
    }
}

/// Decodes the rows of a list query that selects the row's sequence
/// number (`SELECT …, seq`), as `(seq, row)` pairs for a page.
pub fn sequenced<T>(
    rows: &[Row],
    decode: impl Fn(&Row) -> Result<T, DbError>,
) -> Result<Vec<(i64, T)>, DbError> {
    rows.iter()
        .map(|r| {
            let seq = r.integer("seq")?;
            Ok((seq, decode(r)?))
        })
        .collect()
}
