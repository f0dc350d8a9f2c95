//! Conversions between Spin's HTTP types and plain values.

use meridian_platform::message::ServiceRequest;
use spin_sdk::http::{Method, Request, Response};

/// The upper-case name of a method.
pub fn method_name(method: &Method) -> String {
    match method {
        Method::Get => "GET".to_owned(),
        Method::Head => "HEAD".to_owned(),
        Method::Post => "POST".to_owned(),
        Method::Put => "PUT".to_owned(),
        Method::Delete => "DELETE".to_owned(),
        Method::Patch => "PATCH".to_owned(),
        Method::Options => "OPTIONS".to_owned(),
        Method::Connect => "CONNECT".to_owned(),
        Method::Trace => "TRACE".to_owned(),
        Method::Other(other) => other.to_ascii_uppercase(),
    }
}

/// A request's headers as `(lowercase name, value)` pairs.
pub fn header_list(request: &Request) -> Vec<(String, String)> {
    request
        .headers()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// A response from plain parts. The body is complete, so its length is
/// sent: without it the runtime streams the body chunked, in a second write
/// that can stall behind the client's delayed ACK (~40 ms).
pub fn response(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Response {
    let mut builder = Response::builder();
    builder.status(status);
    for (name, value) in headers {
        if !name.eq_ignore_ascii_case("content-length") {
            builder.header(name, value);
        }
    }
    // 204 and 304 carry no body and, by RFC 9110, no length either.
    if !matches!(status, 204 | 304) {
        builder.header("content-length", body.len().to_string());
    }
    builder.body(body).build()
}

/// A Spin request as a plain value.
pub fn service_request(request: Request) -> ServiceRequest {
    ServiceRequest {
        method: method_name(request.method()),
        path: request.path().to_owned(),
        query: request.query().to_owned(),
        headers: header_list(&request),
        body: request.into_body(),
    }
}

/// The value of a request header as text, if present and valid UTF-8.
pub fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.header(name).and_then(|v| v.as_str())
}
