//! Cursor pagination: `?limit=` (1–100, default 20) and an opaque `?cursor=`.

use crate::http::message::{self, Response};
use crate::input::query::query_param;
use crate::wire::problem::{ErrorCode, Problem};
use http::StatusCode;

/// Default page size.
pub const DEFAULT_LIMIT: u32 = 20;
/// Largest page size.
pub const MAX_LIMIT: u32 = 100;

/// The rows a page reads: `seq > after ORDER BY seq LIMIT limit`, one row
/// more than the page holds, to learn whether another page follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The sequence number rows must follow: 0 for the first page.
    pub after: i64,
    /// The SQL `LIMIT`.
    pub limit: i64,
}

/// What page a list request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Rows wanted.
    pub limit: u32,
    /// Sequence number of the last row already seen, from the cursor.
    pub after: Option<i64>,
}

impl PageRequest {
    /// Reads `limit` and `cursor` from a query string; a bad value is a 400.
    pub fn from_query(query: &str) -> Result<Self, Problem> {
        let limit = match query_param(query, "limit") {
            None => DEFAULT_LIMIT,
            Some(raw) => raw
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    Problem::new(
                        ErrorCode::InvalidRequest,
                        format!("limit must be 1 to {MAX_LIMIT}"),
                    )
                })?,
        };
        let after = query_param(query, "cursor")
            .map(|c| {
                decode_cursor(&c)
                    .ok_or_else(|| Problem::new(ErrorCode::InvalidRequest, "cursor is not valid"))
            })
            .transpose()?;
        Ok(Self { limit, after })
    }

    /// The rows to fetch for this page.
    pub fn window(&self) -> Window {
        Window {
            after: self.after.unwrap_or(0),
            limit: i64::from(self.limit) + 1,
        }
    }

    /// The page's answer: `fetch` reads the rows of [`Self::window`] as
    /// `(seq, row)` pairs, and they are cut to the page with the cursor for
    /// the next one.
    pub fn list<T, E>(
        &self,
        fetch: impl FnOnce(Window) -> Result<Vec<(i64, T)>, E>,
    ) -> Result<Response, Problem>
    where
        T: serde::Serialize,
        Problem: From<E>,
    {
        Ok(self.respond(fetch(self.window())?))
    }

    /// Cuts fetched `(seq, row)` pairs to the page and makes the cursor for
    /// the next one from the last row's sequence number.
    pub fn finish<T>(&self, mut rows: Vec<(i64, T)>) -> (Vec<T>, Option<String>) {
        let more = rows.len() > self.limit as usize;
        rows.truncate(self.limit as usize);
        let next = if more {
            rows.last().map(|(seq, _)| encode_cursor(*seq))
        } else {
            None
        };
        (rows.into_iter().map(|(_, row)| row).collect(), next)
    }
}

impl PageRequest {
    /// The `200 {"items": [...], "next_cursor": ...}` answer for fetched
    /// `(seq, row)` pairs, in sequence order.
    pub fn respond<T: serde::Serialize>(&self, rows: Vec<(i64, T)>) -> Response {
        let (items, next_cursor) = self.finish(rows);
        // Serialized straight from the rows, not through a `Value` tree.
        message::json(StatusCode::OK, &Page { items, next_cursor })
    }
}

/// A page as the wire has it.
#[derive(serde::Serialize)]
struct Page<T> {
    items: Vec<T>,
    next_cursor: Option<String>,
}

// c1 cursors held a UUID; c2 hold a row sequence number. A c1 cursor is
// refused as not valid rather than misread.
const CURSOR_VERSION: &str = "c2:";

fn encode_cursor(seq: i64) -> String {
    hex::encode(format!("{CURSOR_VERSION}{seq}"))
}

fn decode_cursor(cursor: &str) -> Option<i64> {
    let bytes = hex::decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let digits = text.strip_prefix(CURSOR_VERSION)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_without_parameters() {
        assert_eq!(
            PageRequest::from_query(""),
            Ok(PageRequest {
                limit: 20,
                after: None
            })
        );
    }

    #[test]
    fn limit_must_be_between_1_and_100() {
        assert_eq!(PageRequest::from_query("limit=100").unwrap().limit, 100);
        for bad in ["limit=0", "limit=101", "limit=-1", "limit=ten", "limit="] {
            assert_eq!(
                PageRequest::from_query(bad).unwrap_err().status(),
                400,
                "{bad}"
            );
        }
    }

    #[test]
    fn a_cursor_round_trips_and_a_forged_one_is_refused() {
        let page = PageRequest {
            limit: 2,
            after: None,
        };
        let (rows, next) = page.finish(vec![(3, "a"), (7, "b"), (9, "c")]);
        assert_eq!(rows, ["a", "b"]);
        let next = next.unwrap();
        let again = PageRequest::from_query(&format!("limit=2&cursor={next}")).unwrap();
        assert_eq!(again.after, Some(7));
        assert_eq!(again.window().after, 7);
        // A cursor of the earlier (UUID) kind is refused, not misread.
        let old = hex::encode("c1:01890a5d-ac96-774b-bcce-b302099a8057");
        assert_eq!(
            PageRequest::from_query(&format!("cursor={old}"))
                .unwrap_err()
                .status(),
            400
        );
        let negative = hex::encode("c2:-5");
        assert!(PageRequest::from_query(&format!("cursor={negative}")).is_err());
        assert_eq!(
            PageRequest::from_query("cursor=zz").unwrap_err().status(),
            400
        );
        assert_eq!(
            PageRequest::from_query("cursor=6869").unwrap_err().status(),
            400
        );
    }

    #[test]
    fn the_last_page_has_no_cursor() {
        let page = PageRequest {
            limit: 5,
            after: None,
        };
        assert_eq!(page.finish(vec![(1, 1), (2, 2)]), (vec![1, 2], None));
    }
}
