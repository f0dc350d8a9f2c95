//! Idempotency: the key a client sends to make a write safe to repeat, and
//! the store that makes the write happen once.

mod key;
mod store;
mod write;

pub use key::{IdempotencyKey, InvalidIdempotencyKey, MAX_KEY_LEN};
pub use store::{
    claim, complete, fingerprint, release, Claimed, IdempotencyError, Scope, StoredResponse,
    RETENTION,
};
pub use write::{begin, write_once, Begun, KeyedWrite, Written};
