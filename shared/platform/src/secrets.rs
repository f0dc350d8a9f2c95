//! Secrets: API tokens made from the host's randomness, stored only as
//! hashes, and compared in constant time; and the rule a deployment's own
//! secrets must meet before a component serves ([`judge_secret`]).

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

/// The platform admin's token where a service checks it: read only when
/// a request presents a bearer at a route that takes it, so the routes
/// that do not (every other request) make no host call for it.
pub struct AdminToken(fn() -> String);

impl AdminToken {
    /// The token `read` returns (empty when unset or refused).
    pub fn read_with(read: fn() -> String) -> Self {
        Self(read)
    }

    /// Whether `bearer` is the admin's token: never when none was
    /// presented or the token is empty.
    pub fn admits(&self, bearer: Option<&str>) -> bool {
        bearer.is_some_and(|presented| {
            let token = (self.0)();
            !token.is_empty() && constant_time_eq(presented, &token)
        })
    }
}

/// A key for one use of a deployment secret: SHA-256 of `domain` (which
/// names the use, ending in a NUL) and `secret`, so that the key of one
/// use is good for nothing else.
pub fn derived_key(domain: &[u8], secret: &str) -> [u8; 32] {
    Sha256::new()
        .chain_update(domain)
        .chain_update(secret.as_bytes())
        .finalize()
        .into()
}

/// The key a service seals its page cursors with
/// ([`crate::http::page::Cursors`]): derived from the internal secret, so
/// every instance of every service seals and opens alike, and no client
/// can read or forge a cursor.
#[derive(Clone, PartialEq, Eq)]
pub struct CursorKey(pub(crate) [u8; 32]);

impl CursorKey {
    /// The key of the internal secret's call key `call_key` (itself
    /// derived from the secret), for cursors alone.
    pub fn derive(call_key: &[u8; 32]) -> Self {
        Self(
            Sha256::new()
                .chain_update(b"meridian page cursor v1\0")
                .chain_update(call_key)
                .finalize()
                .into(),
        )
    }

    /// The key of a context the internal gate did not admit (a host test
    /// that makes its own): the gate admits nothing without a secret, so
    /// no deployment's service ever seals with it.
    pub fn unkeyed() -> Self {
        Self([0; 32])
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
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

/// How many bins a tenant has in the shared store for its tokens'
/// remembered resolutions, and as many for their rate marks. A token's
/// bin is read from its hash ([`TokenBin::of`]), so a tenant holds at
/// most this many keys of each family whatever its members mint: two
/// tokens in one bin take turns (the one not kept asks identity, as
/// without the cache). 64 keeps a tenant with a few dozen callers active
/// at once mostly apart.
pub const TOKEN_BINS: u8 = 64;

/// Where the token whose hash is `hash` is kept among its tenant's
/// [`TOKEN_BINS`], and a fingerprint that tells it from the other tokens
/// of that bin where a value cannot hold the whole hash (a rate mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBin {
    /// The bin, below [`TOKEN_BINS`].
    pub index: u8,
    /// 27 bits of the hash that are not the bin's.
    pub fingerprint: u32,
}

impl TokenBin {
    /// The bits of a fingerprint.
    pub const FINGERPRINT_BITS: u32 = 27;

    /// The bin of the token whose [`token_hash`] is `hash` (anything else
    /// is hashed first, so that every text has one).
    pub fn of(hash: &str) -> Self {
        let bytes = match hex::decode(hash) {
            Ok(bytes) if bytes.len() >= 5 => bytes,
            _ => Sha256::digest(hash.as_bytes()).to_vec(),
        };
        let [first, a, b, c, d, ..] = bytes[..] else {
            return Self {
                index: 0,
                fingerprint: 0,
            };
        };
        Self {
            index: first % TOKEN_BINS,
            fingerprint: u32::from_be_bytes([a, b, c, d]) >> (32 - Self::FINGERPRINT_BITS),
        }
    }
}

/// The fewest bytes a deployment secret (`internal_token`, `admin_token`)
/// may have: 256 bits when it is hex or base64 of random bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// Values published in this repository (the development scripts'
/// defaults, the end-to-end suite's, the deploy files' former
/// placeholders) and the usual
/// stand-ins: a deployment that runs with one of them runs with a secret
/// anyone can read.
pub const KNOWN_SECRETS: &[&str] = &[
    "dev-internal-token",
    "dev-admin-token",
    "REPLACE-with-a-random-secret",
    "REPLACE-with-another-random-secret",
    "e2e-internal-token",
    "e2e-admin-token",
    // The end-to-end suite's (and the smoke tool's default admin token).
    "e2e-internal-4d9f2a7c1e8b3f6a0c5d9e2b7f1a4c8e",
    "e2e-admin-7b3e9c1f5a2d8e4b0f6c3a9d1e7b5f2c",
];

/// Why a deployment secret is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeakSecret {
    /// Not set, or empty.
    Missing,
    /// Shorter than [`MIN_SECRET_BYTES`] (its length).
    TooShort(usize),
    /// A published or stand-in value ([`KNOWN_SECRETS`], or one that
    /// names itself a placeholder).
    Known,
}

impl std::fmt::Display for WeakSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => f.write_str("is not set"),
            Self::TooShort(n) => write!(
                f,
                "is {n} bytes long; it must have at least {MIN_SECRET_BYTES} (openssl rand -hex 32)"
            ),
            Self::Known => f.write_str("is a published development or placeholder value"),
        }
    }
}

/// Whether `value` may serve as a deployment secret: set, at least
/// [`MIN_SECRET_BYTES`] long, and not a published or stand-in value. The
/// development scripts set a switch that accepts their own values
/// (`allow_dev_secrets`); nothing else does.
pub fn judge_secret(value: Option<&str>) -> Result<(), WeakSecret> {
    let value = value.map(str::trim).unwrap_or("");
    if value.is_empty() {
        return Err(WeakSecret::Missing);
    }
    let lower = value.to_ascii_lowercase();
    let stand_in = ["replace", "changeme", "change-me", "placeholder", "example"]
        .iter()
        .any(|word| lower.contains(word));
    if stand_in
        || KNOWN_SECRETS
            .iter()
            .any(|known| known.eq_ignore_ascii_case(value))
    {
        return Err(WeakSecret::Known);
    }
    if value.len() < MIN_SECRET_BYTES {
        return Err(WeakSecret::TooShort(value.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_token_is_read_only_when_a_bearer_is_presented_and_admits_only_itself() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static READS: AtomicUsize = AtomicUsize::new(0);
        let admin = AdminToken::read_with(|| {
            READS.fetch_add(1, Ordering::SeqCst);
            "the-admins-own-token".to_owned()
        });
        assert!(!admin.admits(None));
        assert_eq!(READS.load(Ordering::SeqCst), 0, "no bearer: not read");
        assert!(admin.admits(Some("the-admins-own-token")));
        assert!(!admin.admits(Some("the-admins-own-tokeN")));
        assert!(!admin.admits(Some("")));
        assert_eq!(READS.load(Ordering::SeqCst), 3);
        let unset = AdminToken::read_with(String::new);
        assert!(!unset.admits(Some("")), "an empty token admits no one");
    }

    #[test]
    fn a_token_has_one_bin_of_the_tenants_and_a_fingerprint_of_27_bits() {
        let bins: Vec<TokenBin> = (0..2_000)
            .map(|n| TokenBin::of(&token_hash(&format!("mrd_{n}"))))
            .collect();
        assert!(bins.iter().all(|s| s.index < TOKEN_BINS));
        assert!(bins.iter().all(|s| s.fingerprint < 1 << 27));
        let used: std::collections::HashSet<u8> = bins.iter().map(|s| s.index).collect();
        assert_eq!(used.len(), usize::from(TOKEN_BINS), "every bin is used");
        let hash = token_hash("mrd_a");
        assert_eq!(TokenBin::of(&hash), TokenBin::of(&hash));
        // Text that is no hash still has a bin.
        assert!(TokenBin::of("not hex").index < TOKEN_BINS);
        assert!(TokenBin::of("").index < TOKEN_BINS);
    }

    #[test]
    fn a_deployment_secret_is_long_and_unpublished() {
        let strong = "3f9c1e0a7b5d4c2e8f6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d0e";
        assert_eq!(judge_secret(Some(strong)), Ok(()));
        assert_eq!(judge_secret(Some(&generate_token().unwrap())), Ok(()));
        assert_eq!(judge_secret(None), Err(WeakSecret::Missing));
        assert_eq!(judge_secret(Some("  ")), Err(WeakSecret::Missing));
        assert_eq!(judge_secret(Some("s3cret")), Err(WeakSecret::TooShort(6)));
        for known in KNOWN_SECRETS {
            assert_eq!(judge_secret(Some(known)), Err(WeakSecret::Known), "{known}");
        }
        let padded = format!("REPLACE-me-{}", "x".repeat(40));
        assert_eq!(judge_secret(Some(&padded)), Err(WeakSecret::Known));
        assert!(WeakSecret::TooShort(6).to_string().contains("at least 32"));
    }

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
