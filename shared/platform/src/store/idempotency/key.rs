//! The `Idempotency-Key` header value.

use thiserror::Error;

use crate::http::message::{Request, RequestExt};
use crate::wire::headers;
use crate::wire::problem::{ErrorCode, Problem};

/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 255;

/// A client's `Idempotency-Key`: 1–255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

/// A key that is empty, too long, or not visible ASCII.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("Idempotency-Key must be 1-255 visible ASCII characters")]
pub struct InvalidIdempotencyKey;

impl IdempotencyKey {
    /// Accepts a well-formed key.
    pub fn parse(raw: &str) -> Result<Self, InvalidIdempotencyKey> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_KEY_LEN
            && raw.bytes().all(|b| b.is_ascii_graphic());
        ok.then(|| Self(raw.to_owned()))
            .ok_or(InvalidIdempotencyKey)
    }

    /// The `Idempotency-Key` a request carries, if any; a malformed key is
    /// a 400 `invalid_idempotency_key`.
    pub fn of(request: &Request) -> Result<Option<Self>, Problem> {
        request
            .header(headers::IDEMPOTENCY_KEY)
            .map(Self::parse)
            .transpose()
            .map_err(|e| Problem::new(ErrorCode::InvalidIdempotencyKey, e.to_string()))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn visible_ascii_keys_are_accepted() {
        let longest = "k".repeat(255);
        for k in ["a", "4f8e-uuid-like", "!~{}[]", longest.as_str()] {
            assert!(IdempotencyKey::parse(k).is_ok(), "{k}");
        }
    }

    #[test]
    fn empty_long_spaced_or_non_ascii_keys_are_refused() {
        let long = "k".repeat(256);
        for k in ["", " ", "a b", "tab\t", "ключ", long.as_str()] {
            assert_eq!(
                IdempotencyKey::parse(k),
                Err(InvalidIdempotencyKey),
                "{k:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn an_accepted_key_round_trips(k in "[!-~]{1,255}") {
            let key = IdempotencyKey::parse(&k).unwrap();
            prop_assert_eq!(key.as_str(), k.as_str());
        }
    }

    #[test]
    fn a_request_carries_its_key_or_none_and_a_malformed_one_is_a_400() {
        let request = |key: Option<&str>| {
            let mut r = http::Request::builder()
                .method("POST")
                .uri("/v1/acme/invoices");
            if let Some(k) = key {
                r = r.header("Idempotency-Key", k);
            }
            r.body(Vec::new()).unwrap()
        };
        assert_eq!(
            IdempotencyKey::of(&request(Some("k-1")))
                .unwrap()
                .map(|k| k.as_str().to_owned()),
            Some("k-1".to_owned())
        );
        assert_eq!(IdempotencyKey::of(&request(None)).unwrap(), None);
        let p = IdempotencyKey::of(&request(Some("a b"))).unwrap_err();
        assert_eq!(
            (p.status().as_u16(), p.code()),
            (400, ErrorCode::InvalidIdempotencyKey)
        );
    }
}
