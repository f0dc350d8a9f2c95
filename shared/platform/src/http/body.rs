//! Reading a request body within its limits: refused by its declared length
//! before a byte is read, cut off one byte past the limit when undeclared,
//! and read on the request's clock, which started when the request arrived.

use thiserror::Error;

use crate::wire::problem::{ErrorCode, Problem};

/// The largest request body any component accepts.
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;

/// Why a body was not read whole.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BodyError {
    /// Declared or found to be larger than the limit; reading stopped.
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    /// The budget ran out while the body was still arriving.
    #[error("the budget ran out while the body was being read")]
    Deadline,
    /// The connection broke off or the framing was invalid.
    #[error("the body could not be read: {0}")]
    Broken(String),
}

impl BodyError {
    /// The 413 and 400 answers; `Deadline` is the hop's 504, which only the
    /// caller can phrase (it knows the budget), so it is mapped there.
    pub fn to_problem(&self) -> Option<Problem> {
        match self {
            Self::TooLarge(limit) => Some(Problem::new(
                ErrorCode::PayloadTooLarge,
                format!("request bodies are limited to {limit} bytes"),
            )),
            Self::Broken(_) => Some(Problem::new(ErrorCode::InvalidRequest, self.to_string())),
            Self::Deadline => None,
        }
    }
}

/// Whether a `content-length` header already says the body is too large.
/// A malformed value is left to the runtime's framing, which refuses it.
pub fn declared_too_large(content_length: Option<&str>, limit: usize) -> bool {
    content_length
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
}

/// A body being read chunk by chunk, refused as soon as it passes the limit.
#[derive(Debug)]
pub struct BodyBuffer {
    limit: usize,
    bytes: Vec<u8>,
}

impl BodyBuffer {
    /// An empty buffer that accepts at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            bytes: Vec::new(),
        }
    }

    /// Adds a chunk; past the limit, the body is refused and nothing more
    /// needs to be read.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), BodyError> {
        if self.bytes.len() + chunk.len() > self.limit {
            return Err(BodyError::TooLarge(self.limit));
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The whole body.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_declared_length_over_the_limit_is_refused_before_reading() {
        assert!(declared_too_large(Some("1025"), 1024));
        assert!(declared_too_large(Some(" 99999999999999 "), 1024));
        assert!(!declared_too_large(Some("1024"), 1024));
        assert!(!declared_too_large(None, 1024));
        assert!(!declared_too_large(Some("lots"), 1024));
    }

    #[test]
    fn a_body_exactly_at_the_limit_is_accepted() {
        let mut b = BodyBuffer::new(4);
        b.push(b"ab").unwrap();
        b.push(b"cd").unwrap();
        assert_eq!(b.finish(), b"abcd");
    }

    #[test]
    fn one_byte_past_the_limit_is_refused() {
        let mut b = BodyBuffer::new(4);
        b.push(b"abcd").unwrap();
        assert_eq!(b.push(b"e"), Err(BodyError::TooLarge(4)));
    }

    #[test]
    fn the_refusals_are_413_and_400() {
        let p = BodyError::TooLarge(8).to_problem().unwrap();
        assert_eq!(
            (p.status().as_u16(), p.code()),
            (413, ErrorCode::PayloadTooLarge)
        );
        let p = BodyError::Broken("reset".into()).to_problem().unwrap();
        assert_eq!(p.status().as_u16(), 400);
        assert_eq!(BodyError::Deadline.to_problem(), None);
    }

    proptest! {
        #[test]
        fn chunks_are_accepted_exactly_while_their_total_fits(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..10),
            limit in 0usize..200,
        ) {
            let mut b = BodyBuffer::new(limit);
            let mut total = 0;
            for chunk in &chunks {
                total += chunk.len();
                let pushed = b.push(chunk);
                prop_assert_eq!(pushed.is_ok(), total <= limit);
                if pushed.is_err() {
                    return Ok(());
                }
            }
            prop_assert_eq!(b.finish(), chunks.concat());
        }
    }
}
