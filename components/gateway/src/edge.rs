//! The public request and response as plain values, and the header hygiene
//! applied at the edge.

use meridian_platform::http::prelude::*;
use meridian_platform::tenancy::TenantSlug;
use meridian_platform::wire::headers;

/// Who a tenant request says it is, read from its head once: the slug its
/// path names and the credential it carries. Every step that needs them
/// (the read ahead, the rate, the resolution cache, resolution) takes
/// this instead of reading the header again.
#[derive(Debug, Clone)]
pub struct Caller<'r> {
    /// The slug as the path spells it: the limits' key even when malformed.
    pub slug: &'r str,
    /// The slug parsed; `None` names no tenant, which costs no call to say.
    pub tenant: Option<TenantSlug>,
    /// The `Authorization` header as sent (identity reads it).
    pub authorization: Option<&'r str>,
    /// Its bearer token.
    pub token: Option<&'r str>,
}

impl<'r> Caller<'r> {
    /// The caller of `request`, for the tenant `slug` its path names.
    pub fn of(slug: &'r str, request: &'r Request) -> Self {
        let authorization = request.header("authorization");
        Self {
            slug,
            tenant: TenantSlug::parse(slug).ok(),
            authorization,
            token: authorization.and_then(headers::bearer_token),
        }
    }
}

/// Whether a forwarded request keeps the client's `Authorization`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// Forwarded: the service checks it itself (the platform admin token).
    Keep,
    /// Dropped: the gateway resolved it, and the service trusts the
    /// tenant headers the gateway sets instead.
    Strip,
}

/// The headers of `request` that may travel upstream: no internal,
/// hop-by-hop or runtime-added header, and no credentials unless asked to
/// keep them. Internal headers are stripped here so that only the
/// gateway's own, set by the client afterwards, ever reach a service.
pub fn forwardable_headers(request: &Request, credentials: Credentials) -> http::HeaderMap {
    let travels = |name: &str| {
        !headers::is_internal(name)
            && !headers::is_hop_by_hop(name)
            && !headers::is_runtime_added(name)
            && name != headers::REQUEST_ID
            && (credentials == Credentials::Keep || name != "authorization")
    };
    message::headers_where(request.headers(), travels)
}

/// Whether an upstream response header may be passed to the client.
pub fn is_returnable(name: &str) -> bool {
    !headers::is_internal(name) && !headers::is_hop_by_hop(name)
}

/// Whether a body with this `content-type` may be JSON: undeclared, or
/// `application/json` or a `+json` type, with any parameters.
pub fn declares_json(content_type: Option<&str>) -> bool {
    let Some(value) = content_type else {
        return true;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    // Compared as bytes: a client's header may hold any UTF-8, and a
    // suffix cut by byte count could fall inside a character.
    let subtype = subtype.as_bytes();
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case(b"json")
            || subtype.len() > 5
                && subtype
                    .get(subtype.len() - 5..)
                    .is_some_and(|suffix| suffix.eq_ignore_ascii_case(b"+json")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_are_declared_as_json_or_not_at_all() {
        for ok in [
            None,
            Some("application/json"),
            Some("Application/JSON; charset=utf-8"),
            Some("application/merge-patch+json"),
            Some("application/€+json"),
        ] {
            assert!(declares_json(ok), "{ok:?}");
        }
        for refused in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonp"),
            Some("application/+json"),
            Some("application/a€json"),
            Some("application/€+jsonx"),
            Some("json"),
            Some(""),
        ] {
            assert!(!declares_json(refused), "{refused:?}");
        }
    }
    use meridian_testing::http::Build;

    fn request(headers: &[(&str, &str)]) -> Request {
        headers.iter().fold(
            meridian_testing::http::request("GET", "/v1/acme/residents"),
            |r, (n, v)| r.with_header(n, v),
        )
    }

    #[test]
    fn spoofed_internal_headers_never_travel_upstream() {
        let r = request(&[
            ("x-tenant-id", "spoofed"),
            ("x-actor-role", "admin"),
            ("x-meridian-internal-token", "guess"),
            ("x-meridian-deadline", "99999999999999"),
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ]);
        let kept = forwardable_headers(&r, Credentials::Strip);
        let mut names: Vec<_> = kept.keys().map(|n| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["accept", "content-type"]);
    }

    #[test]
    fn credentials_travel_only_when_asked() {
        let r = request(&[("authorization", "Bearer t")]);
        assert!(forwardable_headers(&r, Credentials::Strip).is_empty());
        assert_eq!(forwardable_headers(&r, Credentials::Keep).len(), 1);
    }

    #[test]
    fn connection_and_runtime_headers_are_dropped() {
        let r = request(&[
            ("connection", "close"),
            ("host", "x"),
            ("spin-full-url", "u"),
        ]);
        assert!(forwardable_headers(&r, Credentials::Keep).is_empty());
    }
}
