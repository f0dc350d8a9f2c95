//! Cursor pagination: `?limit=` (1–100, default 20) and an opaque `?cursor=`.
//!
//! A cursor is the position of the last row a page showed (its sequence
//! number), sealed for the tenant that listed it ([`Cursors`]): a client
//! can neither read the number — on SQLite every tenant's rows of a
//! database share one counter, so its gaps would count other tenants'
//! writes — nor forge one, nor use one in another tenant.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::budget::context::RequestContext;
use crate::http::message::{self, Response};
use crate::input::query::query_param;
use crate::secrets::CursorKey;
use crate::tenancy::TenantId;
use crate::wire::problem::{ErrorCode, Problem};
use http::StatusCode;

/// Seals and opens the cursors of one tenant's lists: deterministic
/// authenticated encryption of the position (SIV: a MAC of the tenant and
/// the position is the cursor's first half and the second half's pad),
/// under the service's [`CursorKey`]. The same position always gives the
/// same cursor, and nothing else opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursors {
    key: CursorKey,
    tenant: TenantId,
}

/// Bytes of a cursor's MAC.
const TAG_BYTES: usize = 12;

impl Cursors {
    /// The cursors of `tenant`'s lists under `key`.
    pub fn new(key: CursorKey, tenant: TenantId) -> Self {
        Self { key, tenant }
    }

    /// The cursors of the tenant `ctx` is scoped to (400 without one).
    pub fn of(ctx: &RequestContext) -> Result<Self, Problem> {
        Ok(Self::new(ctx.cursor_key(), ctx.scope()?.tenant_id))
    }

    fn mac(&self, part: &[u8], bytes: &[u8]) -> Hmac<Sha256> {
        // The key zero-padded to SHA-256's block, as HMAC pads a short key
        // itself: the same MAC, made without a fallible constructor.
        let mut block = hmac::digest::Key::<Hmac<Sha256>>::default();
        block.iter_mut().zip(self.key.0).for_each(|(b, k)| *b = k);
        let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new(&block);
        mac.update(part);
        mac.update(self.tenant.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(bytes);
        mac
    }

    /// The pad the position is hidden under, from the cursor's tag.
    fn pad(&self, tag: &[u8]) -> [u8; 8] {
        let pad = self.mac(b"pad\n", tag).finalize().into_bytes();
        let mut out = [0; 8];
        out.iter_mut().zip(pad).for_each(|(o, p)| *o = p);
        out
    }

    /// The cursor for position `seq`.
    pub fn seal(&self, seq: i64) -> String {
        let plain = seq.to_be_bytes();
        let tag = self.mac(b"tag\n", &plain).finalize().into_bytes();
        let tag: Vec<u8> = tag.into_iter().take(TAG_BYTES).collect();
        let pad = self.pad(&tag);
        let hidden: Vec<u8> = plain.iter().zip(pad).map(|(p, k)| p ^ k).collect();
        format!(
            "{CURSOR_VERSION}{}{}",
            hex::encode(tag),
            hex::encode(hidden)
        )
    }

    /// The position `cursor` holds, if this tenant's key sealed it.
    pub fn open(&self, cursor: &str) -> Option<i64> {
        let bytes = hex::decode(cursor.strip_prefix(CURSOR_VERSION)?).ok()?;
        if bytes.len() != TAG_BYTES + 8 {
            return None;
        }
        let (tag, hidden) = bytes.split_at(TAG_BYTES);
        let pad = self.pad(tag);
        let mut plain = [0; 8];
        for ((out, h), k) in plain.iter_mut().zip(hidden).zip(pad) {
            *out = h ^ k;
        }
        self.mac(b"tag\n", &plain).verify_truncated_left(tag).ok()?;
        Some(i64::from_be_bytes(plain)).filter(|seq| *seq >= 0)
    }
}

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
    /// The tenant's cursors: the one read, and the next page's.
    pub cursors: Cursors,
}

impl PageRequest {
    /// Reads `limit` and `cursor` from a query string, the cursor opened
    /// with `cursors`; a bad value is a 400.
    pub fn from_query(query: &str, cursors: Cursors) -> Result<Self, Problem> {
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
                cursors
                    .open(&c)
                    .ok_or_else(|| Problem::new(ErrorCode::InvalidRequest, "cursor is not valid"))
            })
            .transpose()?;
        Ok(Self {
            limit,
            after,
            cursors,
        })
    }

    /// The first page of `limit` rows.
    pub fn first(limit: u32, cursors: Cursors) -> Self {
        Self {
            limit,
            after: None,
            cursors,
        }
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
            rows.last().map(|(seq, _)| self.cursors.seal(*seq))
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

// c1 cursors held a UUID, c2 (hex of "c2:" and the number) a row
// sequence number in the clear; c3 are sealed ([`Cursors`]). An older one
// is refused as not valid rather than misread: a client paging across the
// upgrade starts its list again.
const CURSOR_VERSION: &str = "c3";

#[cfg(test)]
mod tests {
    use super::*;

    const ACME: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
    const OTHER: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6b02";

    fn cursors(tenant: &str) -> Cursors {
        Cursors::new(CursorKey::derive(&[7; 32]), tenant.parse().unwrap())
    }

    fn query(q: &str) -> Result<PageRequest, Problem> {
        PageRequest::from_query(q, cursors(ACME))
    }

    #[test]
    fn defaults_apply_without_parameters() {
        assert_eq!(query(""), Ok(PageRequest::first(20, cursors(ACME))));
    }

    #[test]
    fn limit_must_be_between_1_and_100() {
        assert_eq!(query("limit=100").unwrap().limit, 100);
        for bad in ["limit=0", "limit=101", "limit=-1", "limit=ten", "limit="] {
            assert_eq!(query(bad).unwrap_err().status(), 400, "{bad}");
        }
    }

    #[test]
    fn a_cursor_round_trips_and_a_forged_one_is_refused() {
        let page = PageRequest::first(2, cursors(ACME));
        let (rows, next) = page.finish(vec![(3, "a"), (7, "b"), (9, "c")]);
        assert_eq!(rows, ["a", "b"]);
        let next = next.unwrap();
        let again = query(&format!("limit=2&cursor={next}")).unwrap();
        assert_eq!(again.after, Some(7));
        assert_eq!(again.window().after, 7);
        // Cursors of the earlier kinds (a UUID; a number in the clear) are
        // refused, not misread; so is anything else.
        let old = hex::encode("c1:01890a5d-ac96-774b-bcce-b302099a8057");
        let clear = hex::encode("c2:7");
        for bad in [old.as_str(), &clear, "zz", "6869", "c3", "c3zz"] {
            let refused = query(&format!("cursor={bad}")).unwrap_err();
            assert_eq!(refused.status(), 400, "{bad}");
        }
        // One bit changed anywhere is not a cursor.
        for at in 2..next.len() {
            let mut flipped = next.clone().into_bytes();
            flipped[at] = if flipped[at] == b'0' { b'1' } else { b'0' };
            let flipped = String::from_utf8(flipped).unwrap();
            assert!(query(&format!("cursor={flipped}")).is_err(), "{flipped}");
        }
    }

    /// A cursor tells nothing of the position it holds, and is good in
    /// its own tenant only: under another tenant's (or another key's)
    /// cursors it opens to nothing.
    #[test]
    fn a_cursor_is_opaque_and_good_in_its_own_tenant_only() {
        let acme = cursors(ACME);
        let (a, b) = (acme.seal(1_000), acme.seal(1_001));
        assert_eq!(acme.seal(1_000), a, "the same position, the same cursor");
        assert!(!a.contains("1000") && !a.contains(&hex::encode("1000")));
        // Neighbouring positions share no byte pattern a client could count.
        let common = a.bytes().zip(b.bytes()).filter(|(x, y)| x == y).count();
        assert!(common < 12, "{a} {b}");
        assert_eq!(acme.open(&a), Some(1_000));
        assert_eq!(cursors(OTHER).open(&a), None);
        let other_key = Cursors::new(CursorKey::derive(&[8; 32]), ACME.parse().unwrap());
        assert_eq!(other_key.open(&a), None);
        assert!(PageRequest::from_query(&format!("cursor={a}"), cursors(OTHER)).is_err());
    }

    #[test]
    fn the_last_page_has_no_cursor() {
        let page = PageRequest::first(5, cursors(ACME));
        assert_eq!(page.finish(vec![(1, 1), (2, 2)]), (vec![1, 2], None));
    }
}
