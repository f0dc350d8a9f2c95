//! Idempotency over HTTP: the `Idempotency-Key` a request carries, and the
//! keyed write that answers a repeat with the stored answer
//! (`write_once`, `begin`). The records underneath are the store's
//! (`crate::store::idempotency`), re-exported here so that a handler needs
//! one import.

mod write;

pub use crate::store::idempotency::*;
pub use write::{begin, write_all_once, write_once, Begun, KeyedWrite, Written};

use crate::http::message::{Request, RequestExt};
use crate::wire::headers;
use crate::wire::problem::{ErrorCode, Problem};

impl From<IdempotencyError> for Problem {
    /// The problem a claim's refusal is answered with.
    fn from(e: IdempotencyError) -> Self {
        match e {
            IdempotencyError::Reused => {
                Problem::new(ErrorCode::IdempotencyKeyReused, e.to_string())
            }
            IdempotencyError::InProgress | IdempotencyError::TakenOver => {
                Problem::new(ErrorCode::IdempotencyKeyInProgress, e.to_string())
            }
            IdempotencyError::Db(e) => e.into(),
        }
    }
}

/// The `Idempotency-Key` a request carries, if any; a malformed key is a
/// 400 `invalid_idempotency_key`.
pub fn key_of(request: &Request) -> Result<Option<IdempotencyKey>, Problem> {
    request
        .header(headers::IDEMPOTENCY_KEY)
        .map(IdempotencyKey::parse)
        .transpose()
        .map_err(|e| Problem::new(ErrorCode::InvalidIdempotencyKey, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            key_of(&request(Some("k-1")))
                .unwrap()
                .map(|k| k.as_str().to_owned()),
            Some("k-1".to_owned())
        );
        assert_eq!(key_of(&request(None)).unwrap(), None);
        let p = key_of(&request(Some("a b"))).unwrap_err();
        assert_eq!(
            (p.status().as_u16(), p.code()),
            (400, ErrorCode::InvalidIdempotencyKey)
        );
    }
}
