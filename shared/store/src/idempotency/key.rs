//! The `Idempotency-Key` header value.

use thiserror::Error;

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
}
