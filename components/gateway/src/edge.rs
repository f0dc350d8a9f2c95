//! The public request and response as plain values, and the header hygiene
//! applied at the edge.

use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::wire::headers;

/// A public request, as the gateway received it.
pub type EdgeRequest = ServiceRequest;

/// The gateway's answer.
pub type EdgeResponse = ServiceResponse;

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
pub fn forwardable_headers(
    request: &EdgeRequest,
    credentials: Credentials,
) -> Vec<(String, String)> {
    request
        .headers
        .iter()
        .filter(|(n, _)| {
            !headers::is_internal(n)
                && !headers::is_hop_by_hop(n)
                && !headers::is_runtime_added(n)
                && n != headers::REQUEST_ID
                && (credentials == Credentials::Keep || !n.eq_ignore_ascii_case("authorization"))
        })
        .cloned()
        .collect()
}

/// Whether an upstream response header may be passed to the client.
pub fn is_returnable(name: &str) -> bool {
    !headers::is_internal(name) && !headers::is_hop_by_hop(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> EdgeRequest {
        EdgeRequest {
            method: "GET".into(),
            path: "/v1/acme/residents".into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            ..EdgeRequest::default()
        }
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
        let names: Vec<_> = forwardable_headers(&r, Credentials::Strip)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["content-type", "accept"]);
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

    #[test]
    fn path_and_query_are_rejoined() {
        let mut r = request(&[]);
        assert_eq!(r.path_and_query(), "/v1/acme/residents");
        r.query = "limit=5".into();
        assert_eq!(r.path_and_query(), "/v1/acme/residents?limit=5");
    }
}
