//! Idempotency's storage: the key a client sends to make a write safe to
//! repeat, and the records that make the write happen once (claimed,
//! completed with the answer to replay, released). The HTTP side — the
//! header, the keyed write's answer — is the platform's `http::idempotency`.

mod key;
mod store;

pub use key::{IdempotencyKey, InvalidIdempotencyKey, MAX_KEY_LEN};
pub use store::{
    claim, complete, completion, fingerprint, housekeeping, release, taken_over, Claimed,
    IdempotencyError, Scope, StoredResponse, RETENTION,
};
