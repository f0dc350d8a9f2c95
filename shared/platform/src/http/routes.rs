//! A route table as data: the path templates a component serves and the
//! methods each takes. A 405's `Allow`, the gateway's routing and the API
//! contract (`openapi.yaml`) are all checked against this one list.

use crate::wire::problem::Problem;

/// One path template and the methods it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// The template as the contract writes it: `/v1/{tenant}/residents/{id}`.
    /// A `{name}` segment matches any one non-empty segment.
    pub path: &'static str,
    /// The methods, as an `Allow` header lists them: `GET, HEAD, POST`.
    pub allow: &'static str,
}

impl RouteSpec {
    /// A template and its methods.
    pub const fn new(path: &'static str, allow: &'static str) -> Self {
        Self { path, allow }
    }

    /// Whether a path, split into segments, is an instance of this template.
    pub fn matches(&self, segments: &[&str]) -> bool {
        let template = self.path.trim_start_matches('/').split('/');
        template.clone().count() == segments.len()
            && template.zip(segments).all(|(t, s)| {
                if t.starts_with('{') && t.ends_with('}') {
                    !s.is_empty()
                } else {
                    t == *s
                }
            })
    }

    /// The methods one by one.
    pub fn methods(&self) -> impl Iterator<Item = &'static str> {
        self.allow.split(", ")
    }
}

/// The methods the first template `segments` matches takes; `None` for a
/// path no route serves.
pub fn allowed(routes: &[RouteSpec], segments: &[&str]) -> Option<&'static str> {
    routes.iter().find(|r| r.matches(segments)).map(|r| r.allow)
}

/// The answer for a request no handler took: 405 with the path's `Allow`
/// when the table lists the path, else 404.
pub fn unmatched(routes: &[RouteSpec], method: &str, segments: &[&str]) -> Problem {
    match allowed(routes, segments) {
        Some(allow) => Problem::method_not_allowed(method, allow),
        None => Problem::no_route(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &[RouteSpec] = &[
        RouteSpec::new("/v1/tenants", "POST"),
        RouteSpec::new("/v1/{tenant}", "GET, HEAD"),
        RouteSpec::new("/v1/{tenant}/things/{id}", "GET, HEAD, DELETE"),
    ];

    #[test]
    fn literal_segments_match_exactly_and_parameters_any_non_empty_one() {
        assert_eq!(allowed(ROUTES, &["v1", "tenants"]), Some("POST"));
        assert_eq!(allowed(ROUTES, &["v1", "acme"]), Some("GET, HEAD"));
        assert_eq!(
            allowed(ROUTES, &["v1", "acme", "things", "7"]),
            Some("GET, HEAD, DELETE")
        );
        for unknown in [
            &["v1", ""][..],
            &["v1", "acme", "things", ""],
            &["v1", "acme", "things"],
            &["v1", "acme", "others", "7"],
            &["v1", "acme", "things", "7", "more"],
            &["v2", "acme"],
        ] {
            assert_eq!(allowed(ROUTES, unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn methods_are_listed_one_by_one() {
        let methods: Vec<_> = ROUTES[2].methods().collect();
        assert_eq!(methods, ["GET", "HEAD", "DELETE"]);
    }
}
