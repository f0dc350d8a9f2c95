//! Secrets: API tokens made from the host's randomness, stored only as
//! hashes, and compared in constant time.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Prefix that makes a Meridian token recognisable in logs and scanners.
pub const TOKEN_PREFIX: &str = "mrd_";

/// Whether `presented` equals `expected`, in time independent of where they
/// differ and of their lengths (both are hashed first).
pub fn constant_time_eq(presented: &str, expected: &str) -> bool {
    let a = Sha256::digest(presented.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.ct_eq(&b).into()
}

/// A new API token: the prefix and 256 random bits in hex.
pub fn generate_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(bytes)))
}

/// The stored form of a token: SHA-256, hex. A token is high-entropy, so a
/// fast hash is enough; nothing reversible is kept.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_secrets_match_and_others_do_not() {
        assert!(constant_time_eq("s3cret", "s3cret"));
        assert!(!constant_time_eq("s3cret", "s3cre"));
        assert!(!constant_time_eq("", "s3cret"));
    }

    #[test]
    fn tokens_are_prefixed_random_and_256_bits() {
        let a = generate_token().unwrap();
        let b = generate_token().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX));
        assert_eq!(a.len(), TOKEN_PREFIX.len() + 64);
    }

    #[test]
    fn the_hash_is_stable_and_not_the_token() {
        let t = generate_token().unwrap();
        assert_eq!(token_hash(&t), token_hash(&t));
        assert_ne!(token_hash(&t), t);
        assert_eq!(token_hash(&t).len(), 64);
    }
}
