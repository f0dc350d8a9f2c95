//! Between Spin's HTTP types and the `http` crate's: reading a request (head
//! first, then its body within limit and budget), and sending a response
//! whole.

use futures::future::{select, Either};
use futures::StreamExt;
use meridian_platform::http::body::{declared_too_large, BodyBuffer, BodyError};
use meridian_platform::http::{Request, RequestExt, Response};
use meridian_platform::log::journal::{self, Event};
use meridian_platform::{Clock, Deadline, SystemClock};
use spin_sdk::http::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

use crate::timer::Timer;

/// A method as the `http` crate names it. A method Spin's listener let
/// through is always a token; were it not, it is read as `CONNECT`, which
/// no route takes (a 405).
pub fn method(method: &Method) -> http::Method {
    match method {
        Method::Other(name) => {
            http::Method::from_bytes(name.as_bytes()).unwrap_or(http::Method::CONNECT)
        }
        standard => http::Method::from(standard.clone()),
    }
}

/// Headers as the `http` crate keeps them. Both inbound requests and
/// outbound calls' responses are read this way; a name or value the crate
/// would refuse (which the runtime's own parser would have refused first)
/// is left out.
pub fn header_map(fields: &Fields) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in fields.entries() {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_bytes(&value),
        ) {
            map.append(name, value);
        }
    }
    map
}

/// Headers as Spin's fields, every value of every name.
pub fn fields(headers: &http::HeaderMap) -> Result<Fields, String> {
    let entries: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect();
    Fields::from_list(&entries).map_err(|e| format!("{e:?}"))
}

/// The request line and headers, read without touching the body, so the
/// budget and the declared length can be checked before any byte of it.
/// A target the listener let through always parses; were it not to, it is
/// read as `/`, which no route serves (a 404).
pub fn read_head(request: &IncomingRequest) -> Request {
    let target = request.path_with_query().unwrap_or_else(|| "/".to_owned());
    let mut head = Request::new(Vec::new());
    *head.method_mut() = method(&request.method());
    *head.uri_mut() = target
        .parse()
        .unwrap_or_else(|_| http::Uri::from_static("/"));
    *head.headers_mut() = header_map(&request.headers());
    head
}

/// Reads the body of `request` (whose head is `head`): refused unread when
/// its declared length is over `limit`, refused one byte past `limit`
/// otherwise, and abandoned when `until` passes, because a slow upload
/// spends the same budget as slow work.
pub async fn read_body(
    request: IncomingRequest,
    head: &Request,
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
pub fn send_response(out: ResponseOutparam, response: Response) {
    let (head, body) = response.into_parts();
    let mut headers = head.headers;
    headers.remove(http::header::CONTENT_LENGTH);
    // 204 and 304 carry no body and, by RFC 9110, no length either.
    if !matches!(
        head.status,
        http::StatusCode::NO_CONTENT | http::StatusCode::NOT_MODIFIED
    ) {
        headers.insert(
            http::header::CONTENT_LENGTH,
            http::HeaderValue::from(body.len()),
        );
    }
    let fields = fields(&headers).unwrap_or_else(|cause| {
        journal::event(Event::Failure {
            what: "setting response headers (dropped)",
            cause,
        });
        Fields::new()
    });
    let outgoing = OutgoingResponse::new(fields);
    let _ = outgoing.set_status_code(head.status.as_u16());
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
