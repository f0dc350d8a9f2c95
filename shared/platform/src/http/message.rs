//! The one message type every part of Meridian handles: the `http` crate's
//! [`Request`] and [`Response`] over bytes. The pipeline, the handlers, the
//! outbound client and the host tests all pass these; the Spin adapter
//! converts to and from the runtime's types at the edge. What the crate
//! does not say directly, and every component reads, is here: a header as
//! text, the bearer token, the path's segments, a JSON body; and the
//! answers every component gives ([`json`], [`problem`], [`no_content`]).

use http::header::{HeaderName, HeaderValue, ALLOW, CONTENT_TYPE, RETRY_AFTER};
use http::StatusCode;
use serde::Serialize;

use crate::budget::context::RequestContext;
use crate::wire::headers;
use crate::wire::problem::{Problem, PROBLEM_JSON};

/// A request, inbound or outbound. Inbound, its URI is the path and query
/// (`/v1/acme/residents?limit=5`); outbound, it is absolute
/// (`http://community.spin.internal/v1/acme/residents`).
pub type Request = http::Request<Vec<u8>>;

/// An answer, given or received.
pub type Response = http::Response<Vec<u8>>;

/// What every component reads of a request.
pub trait RequestExt {
    /// The first value of header `name`, if it is text (UTF-8).
    fn header(&self, name: &str) -> Option<&str>;
    /// The token of an `Authorization: Bearer <token>` header.
    fn bearer(&self) -> Option<&str>;
    /// The path, starting with `/`.
    fn path(&self) -> &str;
    /// The query string without `?`, possibly empty.
    fn query(&self) -> &str;
    /// Path and query, as the request line had them.
    fn path_and_query(&self) -> &str;
    /// The path's segments ([`segments`]).
    fn segments(&self) -> Vec<&str>;
}

impl RequestExt for Request {
    fn header(&self, name: &str) -> Option<&str> {
        text(self.headers().get(name))
    }

    fn bearer(&self) -> Option<&str> {
        self.header("authorization").and_then(headers::bearer_token)
    }

    fn path(&self) -> &str {
        self.uri().path()
    }

    fn query(&self) -> &str {
        self.uri().query().unwrap_or("")
    }

    fn path_and_query(&self) -> &str {
        self.uri()
            .path_and_query()
            .map_or_else(|| self.uri().path(), |pq| pq.as_str())
    }

    fn segments(&self) -> Vec<&str> {
        segments(self.path())
    }
}

/// What every component reads of an answer.
pub trait ResponseExt {
    /// The first value of header `name`, if it is text (UTF-8).
    fn header(&self, name: &str) -> Option<&str>;
    /// The body as JSON (`null` when it is not), for callers reading
    /// another service and for tests.
    fn json_body(&self) -> serde_json::Value;
    /// The `code` member of a problem+json body, if this is one.
    fn problem_code(&self) -> Option<String>;
    /// Whether the answer is the budget's own 504 `deadline_exceeded`: for
    /// the caller the budget is spent as well.
    fn spent_the_budget(&self) -> bool;
    /// Sets header `name` ([`set_header`]).
    fn set_header(&mut self, name: &str, value: impl AsRef<str>);
}

impl ResponseExt for Response {
    fn header(&self, name: &str) -> Option<&str> {
        text(self.headers().get(name))
    }

    fn json_body(&self) -> serde_json::Value {
        serde_json::from_slice(self.body()).unwrap_or(serde_json::Value::Null)
    }

    fn problem_code(&self) -> Option<String> {
        crate::wire::problem::code_of(self.header("content-type"), self.body())
    }

    fn spent_the_budget(&self) -> bool {
        self.problem_code().as_deref() == Some(crate::ErrorCode::DeadlineExceeded.as_str())
    }

    fn set_header(&mut self, name: &str, value: impl AsRef<str>) {
        set_header(self.headers_mut(), name, value.as_ref());
    }
}

/// A header value as text: `None` unless it is UTF-8.
fn text(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
}

/// Sets header `name` to `value`, replacing any value it had. A name or
/// value that cannot be a header (a control character) is left out: every
/// header set this way is Meridian's own (an id, a number, a media type),
/// or one a client already sent through the runtime's own checks.
pub fn set_header(headers: &mut http::HeaderMap, name: &str, value: &str) {
    if let (Ok(name), Ok(value)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_bytes(value.as_bytes()),
    ) {
        headers.insert(name, value);
    }
}

/// The headers of `headers` whose name `keeps` (lower-case, as the map
/// holds it), every value of each: what a hop passes on of another's.
pub fn headers_where(headers: &http::HeaderMap, keeps: impl Fn(&str) -> bool) -> http::HeaderMap {
    (headers.iter())
        .filter(|(name, _)| keeps(name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// An answer with `status`, `headers` and `body`.
pub fn response(status: StatusCode, headers: http::HeaderMap, body: Vec<u8>) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A JSON answer.
pub fn json(status: StatusCode, body: &impl Serialize) -> Response {
    raw_json(
        status,
        serde_json::to_vec(body).unwrap_or_else(|_| b"null".to_vec()),
    )
}

/// A JSON answer from bytes already serialised.
pub fn raw_json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut headers = http::HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response(status, headers, body)
}

/// A problem+json answer carrying the request's id.
pub fn problem(ctx: &RequestContext, problem: Problem) -> Response {
    problem_for(ctx.request_id().as_str(), problem)
}

/// A problem+json answer carrying `request_id`, with the `Allow` and
/// `Retry-After` the problem names.
pub fn problem_for(request_id: &str, problem: Problem) -> Response {
    let problem = problem.with_request_id(request_id);
    let mut headers = http::HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    if let Some(allow) = problem.allow() {
        set_header(&mut headers, ALLOW.as_str(), allow);
    }
    if let Some(seconds) = problem.retry_after() {
        headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response(problem.status(), headers, problem.to_json())
}

/// `204 No Content`.
pub fn no_content() -> Response {
    response(StatusCode::NO_CONTENT, http::HeaderMap::new(), Vec::new())
}

/// A path's segments, without the leading empty one: what the route
/// tables' `lookup`, `dispatch` and `template` take.
pub fn segments(path: &str) -> Vec<&str> {
    path.trim_start_matches('/').split('/').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str) -> Request {
        http::Request::builder().uri(uri).body(Vec::new()).unwrap()
    }

    #[test]
    fn requests_read_path_query_and_segments() {
        let r = request("/v1/acme/members?limit=2");
        assert_eq!((r.path(), r.query()), ("/v1/acme/members", "limit=2"));
        assert_eq!(r.segments(), ["v1", "acme", "members"]);
        assert_eq!(r.path_and_query(), "/v1/acme/members?limit=2");
        assert_eq!(request("/v1/acme").query(), "");
    }

    #[test]
    fn a_header_that_is_not_text_is_absent() {
        let mut r = request("/");
        r.headers_mut().insert(
            "idempotency-key",
            HeaderValue::from_bytes(b"k\xff").unwrap(),
        );
        r.headers_mut()
            .insert("authorization", HeaderValue::from_static("Bearer t-1"));
        assert_eq!(r.header("idempotency-key"), None);
        assert_eq!(r.header("Authorization"), Some("Bearer t-1"));
        assert_eq!(r.bearer(), Some("t-1"));
    }

    #[test]
    fn setting_a_header_replaces_it() {
        let mut r = no_content();
        r.set_header(headers::REQUEST_ID, "a");
        r.set_header("X-Request-Id", "b");
        assert_eq!(r.headers().len(), 1);
        assert_eq!(r.header("x-request-id"), Some("b"));
    }

    #[test]
    fn a_problem_code_is_read_only_from_problem_bodies() {
        let mut r = raw_json(
            StatusCode::GATEWAY_TIMEOUT,
            br#"{"code":"deadline_exceeded"}"#.to_vec(),
        );
        assert_eq!(r.problem_code(), None);
        assert!(!r.spent_the_budget());
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        assert_eq!(r.problem_code().as_deref(), Some("deadline_exceeded"));
        assert!(r.spent_the_budget());
    }

    #[test]
    fn problems_carry_their_allow_and_retry_after() {
        let p = Problem::method_not_allowed("PUT", "GET, HEAD");
        let r = problem_for("r-1", p);
        assert_eq!(r.status().as_u16(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
        assert_eq!(r.json_body()["request_id"], "r-1");
    }
}
