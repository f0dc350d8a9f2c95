//! Header names of the wire contract and the hygiene rules for them.

/// Client-chosen or gateway-made id of the request, echoed on every answer.
pub const REQUEST_ID: &str = "x-request-id";
/// Absolute deadline, Unix epoch milliseconds.
pub const DEADLINE: &str = "x-meridian-deadline";
/// Milliseconds left when the request was sent.
pub const BUDGET_MS: &str = "x-meridian-budget-ms";
/// A client's request for a shorter budget.
pub const TIMEOUT_MS: &str = "x-meridian-timeout-ms";
/// Proves the caller is one of Meridian's own services: the call's
/// signature under the internal secret (`wire::signature`).
pub const SIGNATURE: &str = "x-meridian-signature";
/// Number of upstream attempts the gateway made.
pub const ATTEMPTS: &str = "x-meridian-attempts";
/// Gateway → client: retries the shared retry budget refused (absent: none).
pub const RETRIES_REFUSED: &str = "x-meridian-retries-refused";
/// The resolved tenant's id.
pub const TENANT_ID: &str = "x-tenant-id";
/// The tenant of the outbox row an event was delivered from (billing to
/// community; internal: stripped from public requests like every
/// `x-meridian-*`).
pub const EVENT_TENANT: &str = "x-meridian-event-tenant";
/// The resolved tenant's slug.
pub const TENANT_SLUG: &str = "x-tenant-slug";
/// The authenticated user's id.
pub const ACTOR_ID: &str = "x-actor-id";
/// The authenticated member's role in the tenant.
pub const ACTOR_ROLE: &str = "x-actor-role";
/// The client's idempotency key for a write.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Set on a stored response sent again for a repeated key.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
/// Per-hop timings.
pub const SERVER_TIMING: &str = "server-timing";
/// Seconds (or an HTTP date) to wait before retrying.
pub const RETRY_AFTER: &str = "retry-after";

/// Whether a header is one only Meridian itself may set: every
/// `x-meridian-*`, `x-tenant-*` and `x-actor-*`. The gateway strips these
/// from public requests before setting its own.
pub fn is_internal(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("x-meridian-") || name.starts_with("x-tenant-") || name.starts_with("x-actor-")
}

/// Whether a header belongs to one connection and must not be forwarded
/// (RFC 9110 §7.6.1), or is recomputed by the transport.
pub fn is_hop_by_hop(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

/// Whether a header Spin adds to incoming requests (`spin-full-url`,
/// `spin-path-info`, ...), which describes this hop and must not be forwarded.
pub fn is_runtime_added(name: &str) -> bool {
    name.to_ascii_lowercase().starts_with("spin-")
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_recognised() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearer a b"), None);
        assert_eq!(bearer_token("abc"), None);
    }

    #[test]
    fn internal_headers_are_recognised_in_any_case() {
        for name in [
            "x-meridian-deadline",
            "X-Meridian-Signature",
            "x-tenant-id",
            "X-TENANT-ID",
            "x-actor-role",
            "x-actor-id",
            "x-meridian-anything-new",
        ] {
            assert!(is_internal(name), "{name}");
        }
    }

    #[test]
    fn ordinary_headers_are_not_internal() {
        for name in [
            "authorization",
            "content-type",
            "x-request-id",
            "idempotency-key",
            "x-tenant",
        ] {
            assert!(!is_internal(name), "{name}");
        }
    }

    #[test]
    fn connection_headers_are_not_forwarded() {
        assert!(is_hop_by_hop("Connection"));
        assert!(is_hop_by_hop("transfer-encoding"));
        assert!(is_hop_by_hop("Host"));
        assert!(!is_hop_by_hop("content-type"));
        assert!(is_runtime_added("spin-full-url"));
        assert!(!is_runtime_added("x-spin"));
    }
}
