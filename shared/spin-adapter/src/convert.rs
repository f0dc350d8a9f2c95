//! Between Spin's HTTP types and plain values: reading a request (head
//! first, then its body within limit and budget), and sending a response
//! whole.

use futures::future::{select, Either};
use futures::StreamExt;
use meridian_platform::http::body::{declared_too_large, BodyBuffer, BodyError};
use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::log::journal::{self, Event};
use meridian_platform::{Clock, Deadline, SystemClock};
use spin_sdk::http::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

use crate::timer::Timer;

/// The upper-case name of a method (spin-sdk's own spelling; an
/// extension method is upper-cased too).
pub fn method_name(method: &Method) -> String {
    method.to_string().to_ascii_uppercase()
}

/// Headers as plain pairs: lower-case names, values read lossily as UTF-8.
/// Both inbound requests and outbound calls' responses are read this way.
pub fn header_pairs(fields: &Fields) -> Vec<(String, String)> {
    fields
        .entries()
        .into_iter()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect()
}

/// The request line and headers, read without touching the body, so the
/// budget and the declared length can be checked before any byte of it.
pub fn read_head(request: &IncomingRequest) -> ServiceRequest {
    let method = method_name(&request.method());
    let target = request.path_with_query().unwrap_or_else(|| "/".to_owned());
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let headers = header_pairs(&request.headers());
    ServiceRequest {
        method,
        path,
        query,
        headers,
        body: Vec::new(),
    }
}

/// Reads the body of `request` (whose head is `head`): refused unread when
/// its declared length is over `limit`, refused one byte past `limit`
/// otherwise, and abandoned when `until` passes, because a slow upload
/// spends the same budget as slow work.
pub async fn read_body(
    request: IncomingRequest,
    head: &ServiceRequest,
    limit: usize,
    until: Deadline,
) -> Result<Vec<u8>, BodyError> {
    if declared_too_large(head.header("content-length"), limit) {
        return Err(BodyError::TooLarge(limit));
    }
    let remaining = until.remaining(SystemClock.now());
    if remaining.is_zero() {
        return Err(BodyError::Deadline);
    }
    let read = Box::pin(async move {
        let mut stream = std::pin::pin!(request.into_body_stream());
        let mut buffer = BodyBuffer::new(limit);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| BodyError::Broken(format!("{e:?}")))?;
            buffer.push(&chunk)?;
        }
        Ok(buffer.finish())
    });
    match select(read, Box::pin(Timer::after(remaining))).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => Err(BodyError::Deadline),
    }
}

/// Bodies up to this size are written before the response is handed over.
const WRITE_FIRST_LIMIT: usize = 512 * 1024;

/// Sends a response whole. The body's length is sent, and a body that fits
/// the runtime's buffer is written *before* the response is handed over, so
/// head and body leave in one write: otherwise the body follows in a second
/// write that can wait ~40 ms behind the client's delayed ACK (Spin's
/// listener does not set TCP_NODELAY).
pub fn send_response(out: ResponseOutparam, response: ServiceResponse) {
    let ServiceResponse {
        status,
        headers,
        body,
    } = response;
    let mut entries: Vec<(String, Vec<u8>)> = headers
        .into_iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("content-length"))
        .map(|(n, v)| (n, v.into_bytes()))
        .collect();
    // 204 and 304 carry no body and, by RFC 9110, no length either.
    if !matches!(status, 204 | 304) {
        entries.push(("content-length".into(), body.len().to_string().into_bytes()));
    }
    let fields = Fields::from_list(&entries).unwrap_or_else(|e| {
        journal::event(Event::Failure {
            what: "setting response headers (dropped)",
            cause: format!("{e:?}"),
        });
        Fields::new()
    });
    let outgoing = OutgoingResponse::new(fields);
    let _ = outgoing.set_status_code(status);
    let Ok(outgoing_body) = outgoing.body() else {
        out.set(outgoing);
        return;
    };
    if body.len() <= WRITE_FIRST_LIMIT {
        write_all(&outgoing_body, &body);
        let _ = OutgoingBody::finish(outgoing_body, None);
        out.set(outgoing);
    } else {
        out.set(outgoing);
        write_all(&outgoing_body, &body);
        let _ = OutgoingBody::finish(outgoing_body, None);
    }
}

fn write_all(body: &OutgoingBody, bytes: &[u8]) {
    let Ok(stream) = body.write() else { return };
    let mut rest = bytes;
    while !rest.is_empty() {
        // Ask how much the stream takes now, so each write is one chunk.
        let budget = match stream.check_write() {
            Ok(0) => {
                stream.subscribe().block();
                continue;
            }
            Ok(n) => usize::try_from(n).unwrap_or(usize::MAX).min(rest.len()),
            Err(_) => return,
        };
        let (chunk, after) = rest.split_at(budget);
        if stream.write(chunk).is_err() {
            return;
        }
        rest = after;
    }
    let _ = stream.blocking_flush();
}
