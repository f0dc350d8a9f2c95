//! Outbound HTTP under the request budget.
//!
//! Both halves of the budget are applied: the wasi:http request options
//! (connect, first-byte, between-bytes) are set from the time left, and the
//! whole exchange is raced against a timer for the same time, because Spin
//! ignores request options on `*.spin.internal` calls and runs them
//! in-process to completion.

use std::time::Duration;

use futures::future::{select, Either};
use futures::SinkExt;
use meridian_platform::budget::steps;
use meridian_platform::http::message;
use meridian_platform::http::{internal_headers, signed, HttpClient, Request, Response, SendError};
use meridian_platform::wire::signature::CallKey;
use meridian_platform::{Clock, RequestContext, SystemClock};
use spin_sdk::http::{IncomingResponse, Method, OutgoingRequest, Scheme};
use spin_sdk::wit::wasi::http0_2_0::outgoing_handler;
use spin_sdk::wit::wasi::http0_2_0::types::{ErrorCode, FutureIncomingResponse, RequestOptions};

use crate::convert::{fields, header_map};
use crate::timer::Timer;

/// The budget-aware client every component uses for internal calls.
#[derive(Debug, Clone)]
pub struct SpinHttp {
    key: CallKey,
}

impl SpinHttp {
    /// A client that signs its calls with `key`.
    pub fn new(key: CallKey) -> Self {
        Self { key }
    }
}

impl HttpClient for SpinHttp {
    async fn send(&self, ctx: &RequestContext, request: Request) -> Result<Response, SendError> {
        let now = SystemClock.now();
        ctx.ensure(now, steps::CALL)?;
        let remaining = ctx.remaining(now);
        let internal = internal_headers(ctx, now);
        let exchange = Box::pin(exchange(request, internal, &self.key, remaining));
        match select(exchange, Box::pin(Timer::after(remaining))).await {
            // A transport timeout set from the budget can fire a hair before
            // the race timer: a failure once the budget is gone is the deadline.
            Either::Left((Err(_), _)) if ctx.ensure(SystemClock.now(), steps::CALL).is_err() => {
                Err(ctx.spent().into())
            }
            Either::Left((result, _)) => result,
            // Dropping the exchange drops the pending response, which
            // abandons the call.
            Either::Right(((), _)) => Err(ctx.spent().into()),
        }
    }
}

async fn exchange(
    request: Request,
    internal: Vec<(&'static str, String)>,
    key: &CallKey,
    remaining: Duration,
) -> Result<Response, SendError> {
    let (head, body) = request.into_parts();
    let outgoing = build(head, &internal, key)?;
    let body_sink = outgoing.take_body();
    let pending =
        outgoing_handler::handle(outgoing, Some(options(remaining)?)).map_err(map_error)?;
    let mut body_sink = body_sink;
    if !body.is_empty() {
        body_sink
            .send(body)
            .await
            .map_err(|e| SendError::Transport(format!("writing the request body: {e:?}")))?;
    }
    drop(body_sink);
    let response = ResponseFuture::new(pending).await?;
    read(response).await
}

fn build(
    head: http::request::Parts,
    internal: &[(&'static str, String)],
    key: &CallKey,
) -> Result<OutgoingRequest, SendError> {
    let refused = |what: &str| SendError::Refused(format!("invalid {what}"));
    let http::request::Parts {
        method,
        uri,
        mut headers,
        ..
    } = head;
    let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
        return Err(SendError::Refused(format!("not an absolute URL: {uri}")));
    };
    let scheme = match scheme.as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(SendError::Refused(format!("not an http URL: {other}"))),
    };
    // The internal headers are set last, so no value the caller passed
    // can stand in for them; the signature covers them as they are sent.
    for (name, value) in internal {
        let value = http::HeaderValue::from_str(value).map_err(|_| refused(name))?;
        headers.insert(*name, value);
    }
    let target = uri.path_and_query().map_or("/", |pq| pq.as_str());
    signed(key, method.as_str(), target, &mut headers);
    let fields =
        fields(&headers).map_err(|e| SendError::Refused(format!("invalid header: {e}")))?;
    let outgoing = OutgoingRequest::new(fields);
    outgoing
        .set_method(&Method::from(method))
        .map_err(|()| refused("method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| refused("scheme"))?;
    outgoing
        .set_authority(Some(authority.as_str()))
        .map_err(|()| refused("authority"))?;
    outgoing
        .set_path_with_query(Some(target))
        .map_err(|()| refused("path"))?;
    Ok(outgoing)
}

/// Transport timers set from the remaining budget, so none outlives it.
fn options(remaining: Duration) -> Result<RequestOptions, SendError> {
    let nanos = u64::try_from(remaining.as_nanos()).unwrap_or(u64::MAX);
    let options = RequestOptions::new();
    // A runtime that does not support a timeout refuses to set it; the race
    // against the budget timer still bounds the call.
    let _ = options.set_connect_timeout(Some(nanos));
    let _ = options.set_first_byte_timeout(Some(nanos));
    let _ = options.set_between_bytes_timeout(Some(nanos));
    Ok(options)
}

/// Waits for the response head, registering the pollable with Spin's executor.
struct ResponseFuture {
    pending: FutureIncomingResponse,
    registration: Option<spin_executor::CancelOnDropToken>,
}

impl Drop for ResponseFuture {
    fn drop(&mut self) {
        // The pollable is a child of the pending response: it must go first,
        // or the runtime traps with "resource has children" when the budget
        // timer abandons the call.
        self.registration = None;
    }
}

impl ResponseFuture {
    fn new(pending: FutureIncomingResponse) -> Self {
        Self {
            pending,
            registration: None,
        }
    }
}

impl std::future::Future for ResponseFuture {
    type Output = Result<IncomingResponse, SendError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        match self.pending.get() {
            Some(Ok(Ok(response))) => Poll::Ready(Ok(response)),
            Some(Ok(Err(code))) => Poll::Ready(Err(map_error(code))),
            Some(Err(())) => {
                Poll::Ready(Err(SendError::Transport("response already taken".into())))
            }
            None => {
                let pollable = self.pending.subscribe();
                self.registration = Some(
                    spin_executor::push_waker_and_get_token(pollable, cx.waker().clone()).into(),
                );
                Poll::Pending
            }
        }
    }
}

async fn read(response: IncomingResponse) -> Result<Response, SendError> {
    let status = http::StatusCode::from_u16(response.status())
        .map_err(|_| SendError::Transport(format!("invalid status {}", response.status())))?;
    let headers = header_map(&response.headers());
    let body = response
        .into_body()
        .await
        .map_err(|e| SendError::Transport(format!("reading the response body: {e:?}")))?;
    Ok(message::response(status, headers, body))
}

fn map_error(code: ErrorCode) -> SendError {
    match code {
        // The transport's timeouts are set from the budget: `send` turns a
        // failure once the budget is gone into the deadline.
        ErrorCode::ConnectionTimeout
        | ErrorCode::HttpResponseTimeout
        | ErrorCode::ConnectionReadTimeout => SendError::Transport(format!("timed out: {code:?}")),
        ErrorCode::HttpRequestDenied
        | ErrorCode::HttpRequestUriInvalid
        | ErrorCode::HttpRequestMethodInvalid => SendError::Refused(format!("{code:?}")),
        ErrorCode::DnsTimeout
        | ErrorCode::DnsError(_)
        | ErrorCode::DestinationNotFound
        | ErrorCode::DestinationUnavailable
        | ErrorCode::DestinationIpProhibited
        | ErrorCode::DestinationIpUnroutable
        | ErrorCode::ConnectionRefused
        | ErrorCode::ConnectionLimitReached
        | ErrorCode::TlsProtocolError
        | ErrorCode::TlsCertificateError
        | ErrorCode::TlsAlertReceived(_) => SendError::Connect(format!("{code:?}")),
        other => SendError::Transport(format!("{other:?}")),
    }
}
