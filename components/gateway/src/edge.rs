//! The public request and response as plain values, and the header hygiene
//! applied at the edge.

use meridian_platform::headers;

/// A public request, as the gateway received it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeRequest {
    /// Upper-case method.
    pub method: String,
    /// Path, starting with `/`.
    pub path: String,
    /// Query string without `?`, possibly empty.
    pub query: String,
    /// Headers with lowercase names.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl EdgeRequest {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Path and query as sent upstream.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query)
        }
    }

    /// The headers that may travel upstream: no internal, hop-by-hop or
    /// runtime-added header, and no credentials unless `keep_authorization`.
    /// Internal headers are stripped here so that only the gateway's own,
    /// set by the client afterwards, ever reach a service.
    pub fn forwardable_headers(&self, keep_authorization: bool) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter(|(n, _)| {
                !headers::is_internal(n)
                    && !headers::is_hop_by_hop(n)
                    && !headers::is_runtime_added(n)
                    && n != headers::REQUEST_ID
                    && (keep_authorization || !n.eq_ignore_ascii_case("authorization"))
            })
            .cloned()
            .collect()
    }
}

/// The gateway's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeResponse {
    /// Status code.
    pub status: u16,
    /// Headers with lowercase names.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl EdgeResponse {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Sets a header, replacing any value it had.
    pub fn set_header(&mut self, name: &str, value: impl Into<String>) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.into()));
    }
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
        let names: Vec<_> = r
            .forwardable_headers(false)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["content-type", "accept"]);
    }

    #[test]
    fn credentials_travel_only_when_asked() {
        let r = request(&[("authorization", "Bearer t")]);
        assert!(r.forwardable_headers(false).is_empty());
        assert_eq!(r.forwardable_headers(true).len(), 1);
    }

    #[test]
    fn connection_and_runtime_headers_are_dropped() {
        let r = request(&[
            ("connection", "close"),
            ("host", "x"),
            ("spin-full-url", "u"),
        ]);
        assert!(r.forwardable_headers(true).is_empty());
    }

    #[test]
    fn path_and_query_are_rejoined() {
        let mut r = request(&[]);
        assert_eq!(r.path_and_query(), "/v1/acme/residents");
        r.query = "limit=5".into();
        assert_eq!(r.path_and_query(), "/v1/acme/residents?limit=5");
    }
}
