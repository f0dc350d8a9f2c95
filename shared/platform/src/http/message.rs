//! Plain inbound requests and outbound answers, so handlers are functions
//! over values that host tests can build directly.

use serde::Serialize;

use crate::budget::context::RequestContext;
use crate::wire::headers;
use crate::wire::problem::{Problem, PROBLEM_JSON};

/// A request a component received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceRequest {
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

impl ServiceRequest {
    /// A bodiless request, for tests and internal callers.
    pub fn new(method: &str, path_and_query: &str) -> Self {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        Self {
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
            query: query.to_owned(),
            ..Self::default()
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Sets the body.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The token of an `Authorization: Bearer <token>` header.
    pub fn bearer(&self) -> Option<&str> {
        self.header("authorization").and_then(headers::bearer_token)
    }

    /// Path and query, rejoined.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query)
        }
    }

    /// The method to route by: `HEAD` is served as `GET` (the runtime sends
    /// no body for it).
    pub fn route_method(&self) -> &str {
        if self.method == "HEAD" {
            "GET"
        } else {
            &self.method
        }
    }

    /// The path's segments, without the leading empty one.
    pub fn segments(&self) -> Vec<&str> {
        self.path.trim_start_matches('/').split('/').collect()
    }
}

/// A component's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceResponse {
    /// Status code.
    pub status: u16,
    /// Headers with lowercase names.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl ServiceResponse {
    /// A JSON answer.
    pub fn json(status: u16, body: &impl Serialize) -> Self {
        Self::raw_json(
            status,
            serde_json::to_vec(body).unwrap_or_else(|_| b"null".to_vec()),
        )
    }

    /// A JSON answer from bytes already serialised.
    pub fn raw_json(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body,
        }
    }

    /// A problem+json answer carrying the request's id.
    pub fn problem(ctx: &RequestContext, problem: Problem) -> Self {
        Self::problem_for(ctx.request_id().as_str(), problem)
    }

    /// A problem+json answer carrying `request_id`.
    pub fn problem_for(request_id: &str, problem: Problem) -> Self {
        let problem = problem.with_request_id(request_id);
        let mut headers = vec![("content-type".into(), PROBLEM_JSON.to_owned())];
        if let Some(allow) = problem.allow() {
            headers.push(("allow".into(), allow.to_owned()));
        }
        if let Some(seconds) = problem.retry_after() {
            headers.push((
                crate::wire::headers::RETRY_AFTER.into(),
                seconds.to_string(),
            ));
        }
        Self {
            status: problem.status(),
            headers,
            body: problem.to_json(),
        }
    }

    /// `204 No Content`.
    pub fn no_content() -> Self {
        Self {
            status: 204,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// Sets a header, replacing any value it had.
    pub fn set_header(&mut self, name: &str, value: impl Into<String>) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_ascii_lowercase(), value.into()));
    }

    /// The body as JSON, for tests and callers reading another service.
    pub fn json_body(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// The first value of header `name` (any case) among `headers`.
pub(crate) fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_split_path_and_query() {
        let r = ServiceRequest::new("get", "/v1/acme/members?limit=2");
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.query.as_str()),
            ("GET", "/v1/acme/members", "limit=2")
        );
        assert_eq!(r.segments(), ["v1", "acme", "members"]);
        assert_eq!(r.path_and_query(), "/v1/acme/members?limit=2");
    }

    #[test]
    fn setting_a_header_replaces_it() {
        let mut r = ServiceResponse::no_content();
        r.set_header("X-Request-Id", "a");
        r.set_header("x-request-id", "b");
        assert_eq!(r.headers, [("x-request-id".to_owned(), "b".to_owned())]);
    }
}
