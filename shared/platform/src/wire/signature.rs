//! Internal calls carry a signature, never the secret: a caller proves it
//! is one of Meridian's components with an HMAC-SHA-256, under a key
//! derived from the internal secret, over what the callee acts on — the
//! method, the path and query as sent, the budget, the request id, and the
//! identity and key headers ([`SIGNED_HEADERS`]).
//!
//! Why not the token itself: where the services are reached over the
//! public internet (a platform without service chaining, docs/deploy.md)
//! whoever learnt a token that travels would be admin of every tenant. A
//! signature that leaks is good for one request only — the same method,
//! path, tenant, actor and role — and only until its deadline, which the
//! gateway caps at `max_request_budget_ms` (10 s by default): the callee
//! refuses an expired deadline before it looks at anything else.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::secrets::{derived_key, CursorKey};

use crate::wire::headers;

/// The headers a signature covers, besides the method and the path: every
/// header a service reads to decide what a call may do or as whom.
pub const SIGNED_HEADERS: [&str; 8] = [
    headers::DEADLINE,
    headers::BUDGET_MS,
    headers::REQUEST_ID,
    headers::TENANT_ID,
    headers::ACTOR_ID,
    headers::ACTOR_ROLE,
    headers::EVENT_TENANT,
    headers::IDEMPOTENCY_KEY,
];

/// The key internal calls are signed and checked with, derived from the
/// internal secret and good for nothing else.
#[derive(Clone)]
pub struct CallKey {
    /// `None` when no secret is configured: nothing signs, nothing verifies.
    key: Option<[u8; 32]>,
}

impl std::fmt::Debug for CallKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallKey(..)")
    }
}

/// One call as its signature sees it.
pub struct SignedCall<'a, H: Fn(&str) -> Option<&'a str>> {
    /// The method, as sent (`GET`).
    pub method: &'a str,
    /// The path and query, as sent (`/_meridian/identity/internal/resolve?slug=acme`).
    pub target: &'a str,
    /// Looks a header up by lowercase name.
    pub header: H,
}

impl CallKey {
    /// The key of the internal secret `secret` (the `internal_token`
    /// variable), domain-separated from every other use of it. An empty
    /// secret gives a key that signs nothing and accepts nothing.
    pub fn derive(secret: &str) -> Self {
        let key = (!secret.is_empty()).then(|| derived_key(b"meridian internal call v1\0", secret));
        Self { key }
    }

    /// The key cursors are sealed with, derived from this one; `None`
    /// without a secret.
    pub fn cursor_key(&self) -> Option<CursorKey> {
        self.key.as_ref().map(CursorKey::derive)
    }

    /// The signature of `call`, in hex; `None` without a secret.
    pub fn sign<'a, H: Fn(&str) -> Option<&'a str>>(
        &self,
        call: &SignedCall<'a, H>,
    ) -> Option<String> {
        let mac = self.mac(call)?;
        Some(hex::encode(mac.finalize().into_bytes()))
    }

    /// Whether `presented` (the [`headers::SIGNATURE`] header) is `call`'s
    /// signature, compared in constant time.
    pub fn verifies<'a, H: Fn(&str) -> Option<&'a str>>(
        &self,
        call: &SignedCall<'a, H>,
        presented: Option<&str>,
    ) -> bool {
        let (Some(mac), Some(presented)) = (self.mac(call), presented) else {
            return false;
        };
        match hex::decode(presented.trim()) {
            Ok(bytes) => mac.verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }

    /// The MAC over `call`'s canonical text: one line for the method, one
    /// for the target, then one per signed header — `-` when it is absent,
    /// `=value` when present, so that absent and empty differ. No header
    /// value or target can hold a line break.
    fn mac<'a, H: Fn(&str) -> Option<&'a str>>(
        &self,
        call: &SignedCall<'a, H>,
    ) -> Option<Hmac<Sha256>> {
        let key = self.key.as_ref()?;
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
        mac.update(call.method.as_bytes());
        mac.update(b"\n");
        mac.update(call.target.as_bytes());
        mac.update(b"\n");
        for name in SIGNED_HEADERS {
            match (call.header)(name) {
                Some(value) => {
                    mac.update(b"=");
                    mac.update(value.as_bytes());
                }
                None => mac.update(b"-"),
            }
            mac.update(b"\n");
        }
        Some(mac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn call<'a>(
        method: &'a str,
        target: &'a str,
        h: &'a HashMap<&'static str, &'a str>,
    ) -> SignedCall<'a, impl Fn(&str) -> Option<&'a str>> {
        SignedCall {
            method,
            target,
            header: move |name: &str| h.get(name).copied(),
        }
    }

    fn headers() -> HashMap<&'static str, &'static str> {
        HashMap::from([
            (headers::DEADLINE, "1700000003000"),
            (headers::BUDGET_MS, "2990"),
            (headers::REQUEST_ID, "req-1"),
            (headers::TENANT_ID, "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01"),
            (headers::ACTOR_ID, "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02"),
            (headers::ACTOR_ROLE, "resident"),
        ])
    }

    #[test]
    fn a_signature_verifies_the_call_it_was_made_for() {
        let key = CallKey::derive("the-internal-secret-0123456789abcdef");
        let h = headers();
        let signed = call("GET", "/internal/residents?limit=5", &h);
        let signature = key.sign(&signed).unwrap();
        assert_eq!(signature.len(), 64);
        assert!(key.verifies(&signed, Some(&signature)));
        assert!(key.verifies(&signed, Some(&format!(" {signature} "))));
    }

    #[test]
    fn changing_anything_signed_breaks_the_signature() {
        let key = CallKey::derive("the-internal-secret-0123456789abcdef");
        let h = headers();
        let signature = key
            .sign(&call("GET", "/internal/residents?limit=5", &h))
            .unwrap();
        assert!(!key.verifies(
            &call("POST", "/internal/residents?limit=5", &h),
            Some(&signature)
        ));
        assert!(!key.verifies(
            &call("GET", "/internal/residents?limit=6", &h),
            Some(&signature)
        ));
        assert!(!key.verifies(
            &call("GET", "/internal/invoices?limit=5", &h),
            Some(&signature)
        ));
        for name in SIGNED_HEADERS {
            let mut changed = headers();
            match changed.get(name) {
                Some(_) => changed.insert(name, "admin"),
                None => changed.insert(name, ""),
            };
            assert!(
                !key.verifies(
                    &call("GET", "/internal/residents?limit=5", &changed),
                    Some(&signature)
                ),
                "{name}"
            );
            let mut dropped = headers();
            if dropped.remove(name).is_some() {
                assert!(
                    !key.verifies(
                        &call("GET", "/internal/residents?limit=5", &dropped),
                        Some(&signature)
                    ),
                    "{name} dropped"
                );
            }
        }
    }

    #[test]
    fn another_secret_no_secret_or_a_malformed_signature_never_verifies() {
        let h = headers();
        let signed = call("GET", "/health", &h);
        let key = CallKey::derive("the-internal-secret-0123456789abcdef");
        let signature = key.sign(&signed).unwrap();
        let other = CallKey::derive("another-internal-secret-0123456789ab");
        assert!(!other.verifies(&signed, Some(&signature)));
        let none = CallKey::derive("");
        assert_eq!(none.sign(&signed), None);
        assert!(!none.verifies(&signed, Some(&signature)));
        let short: String = signature.chars().take(62).collect();
        let flipped: String = signature
            .chars()
            .map(|c| if c == '0' { '1' } else { '0' })
            .collect();
        for bad in ["", "zz", &short, &flipped, &format!("{signature}00")] {
            assert!(!key.verifies(&signed, Some(bad)), "{bad:?}");
        }
        assert!(!key.verifies(&signed, None));
    }

    #[test]
    fn the_secret_is_not_the_key() {
        // A signature made with the secret itself as the HMAC key (as a
        // caller that skipped the derivation would) does not verify.
        let secret = "the-internal-secret-0123456789abcdef";
        let h = headers();
        let signed = call("GET", "/health", &h);
        let mut naive = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
        naive.update(b"GET\n/health\n");
        let naive = hex::encode(naive.finalize().into_bytes());
        assert!(!CallKey::derive(secret).verifies(&signed, Some(&naive)));
    }
}
