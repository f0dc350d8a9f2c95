//! The two SQL dialects a store speaks. Services write their statements
//! once, in the SQL SQLite and PostgreSQL agree on, with `?` for each
//! parameter; the store turns that into PostgreSQL's `$1, $2 …` when its
//! database is a PostgreSQL server. Where the two do not agree (a JSON
//! array's elements, a transaction's write lock, the migration ledger's
//! clock) the store says which text to run.

/// Which SQL a database speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: a local file, or a libSQL server.
    Sqlite,
    /// A PostgreSQL server (Spin's outbound `pg4`).
    Postgres,
}

impl Dialect {
    /// `sql` as this dialect runs it: for PostgreSQL every `?` outside a
    /// quoted string or identifier, and outside a comment, is numbered
    /// `$1, $2 …` in order, and SQLite's numbered `?NNN` is `$NNN`.
    pub fn statement(self, sql: &str) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Sqlite => sql.into(),
            Self::Postgres if !sql.contains('?') => sql.into(),
            Self::Postgres => numbered(sql).into(),
        }
    }

    /// A subquery of one text column, `value`, holding the elements of
    /// the JSON array of strings given as the one parameter (as text).
    pub const fn json_text_elements(self) -> &'static str {
        match self {
            Self::Sqlite => "SELECT value FROM json_each(?)",
            Self::Postgres => {
                "SELECT jsonb_array_elements_text(CAST(CAST(? AS TEXT) AS jsonb)) AS value"
            }
        }
    }

    /// The column type of a 64-bit integer (a SQLite `INTEGER` is one;
    /// PostgreSQL's `INTEGER` is 32 bits, and `pg4` will not bind an `i64`
    /// to it).
    pub const fn integer(self) -> &'static str {
        match self {
            Self::Sqlite => "INTEGER",
            Self::Postgres => "BIGINT",
        }
    }

    /// What ends a subquery that picks rows to delete or update, so that
    /// rows another transaction holds are passed over rather than waited
    /// for: PostgreSQL's `FOR UPDATE SKIP LOCKED`; nothing on SQLite, where
    /// a writer holds the one write lock and no row is locked apart.
    pub const fn skip_locked(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// Ends a read of the row a write's rule rests on, so that the row
    /// stays as read until the transaction ends: PostgreSQL's `FOR
    /// UPDATE`, which makes another writer of the same row wait; nothing on
    /// SQLite, whose transaction already holds the one write lock.
    pub const fn for_update(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE",
        }
    }

    /// The current time as the migration ledger records it (UTC, ISO 8601
    /// with milliseconds), as a column default.
    pub const fn now_text(self) -> &'static str {
        match self {
            Self::Sqlite => "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            Self::Postgres => {
                "(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))"
            }
        }
    }
}

/// Numbers the placeholders of `sql`.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0u32;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            // SQLite's `?NNN` names its parameter: PostgreSQL's `$NNN`.
            '?' if chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            '?' => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_for_postgres_and_left_alone_for_sqlite() {
        let sql = "SELECT a FROM t WHERE x = ? AND (CAST(? AS TEXT) IS NULL OR y = ?) LIMIT ?";
        assert_eq!(
            Dialect::Postgres.statement(sql),
            "SELECT a FROM t WHERE x = $1 AND (CAST($2 AS TEXT) IS NULL OR y = $3) LIMIT $4"
        );
        assert_eq!(Dialect::Sqlite.statement(sql), sql);
        assert_eq!(Dialect::Postgres.statement("COMMIT"), "COMMIT");
        assert_eq!(
            Dialect::Postgres.statement("SET b = b - ?1, s = CASE WHEN b - ?1 = 0 THEN ?12 END"),
            "SET b = b - $1, s = CASE WHEN b - $1 = 0 THEN $12 END"
        );
    }

    #[test]
    fn a_question_mark_in_a_string_an_identifier_or_a_comment_is_not_a_parameter() {
        let sql = "SELECT '?' AS \"why?\", x -- or ?\nFROM t WHERE y = ? AND z = 'it''s ?'";
        assert_eq!(
            Dialect::Postgres.statement(sql),
            "SELECT '?' AS \"why?\", x -- or ?\nFROM t WHERE y = $1 AND z = 'it''s ?'"
        );
    }

    #[test]
    fn the_dialects_differ_only_where_they_must() {
        assert!(Dialect::Sqlite
            .json_text_elements()
            .contains("json_each(?)"));
        assert!(Dialect::Postgres
            .json_text_elements()
            .contains("jsonb_array_elements_text"));
        assert!(Dialect::Postgres.now_text().contains("now()"));
        assert_eq!(Dialect::Sqlite.skip_locked(), "");
        assert_eq!(Dialect::Sqlite.for_update(), "");
        assert!(Dialect::Postgres.skip_locked().ends_with("SKIP LOCKED"));
    }
}
