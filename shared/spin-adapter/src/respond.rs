//! Turning platform answers into Spin responses: the one place a problem
//! becomes a status code and a problem+json body.

use meridian_platform::headers;
use meridian_platform::problem::{Problem, PROBLEM_JSON};
use spin_sdk::http::Response;

/// A problem+json response carrying the request id.
pub fn problem(request_id: &str, problem: Problem) -> Response {
    let problem = problem.with_request_id(request_id);
    Response::builder()
        .status(problem.status())
        .header("content-type", PROBLEM_JSON)
        .header(headers::REQUEST_ID, request_id)
        .body(problem.to_json())
        .build()
}

/// A JSON response carrying the request id.
pub fn json(request_id: &str, status: u16, body: &serde_json::Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header(headers::REQUEST_ID, request_id)
        .body(body.to_string())
        .build()
}

/// The value of a request header as text, if present and valid UTF-8.
pub fn header<'r>(request: &'r spin_sdk::http::Request, name: &str) -> Option<&'r str> {
    request.header(name).and_then(|v| v.as_str())
}
