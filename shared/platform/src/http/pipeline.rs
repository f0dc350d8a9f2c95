//! The one request pipeline every component runs, the gateway and the
//! three services alike: the head admitted on its own (the budget, and who
//! is calling, decided before a byte of the body is read), the body read
//! within what admission granted, the request served, and the answer with
//! whatever is left to do after it. A component says what each step means
//! for it by implementing [`Hop`]; `meridian-spin` runs [`run`] on Spin's
//! request and sends the answer, host tests run it on bytes in hand.

use std::future::Future;
use std::pin::Pin;

use crate::budget::deadline::Deadline;
use crate::http::body::{BodyError, MAX_REQUEST_BODY_BYTES};
use crate::http::message::{Request, Response};

/// What admission made of a request's head.
pub enum Admission<A> {
    /// Go on: read the body until `read_until`, then serve with `admitted`.
    Admitted {
        /// What serving needs of the decision (its context, its arrival).
        admitted: A,
        /// The instant by which the body must be in.
        read_until: Deadline,
    },
    /// Answered on the head alone; the body is never read.
    Answered(Answer<'static>),
}

/// One component's way with a request.
// Components are single-threaded, so the futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait Hop {
    /// What admission decided, handed to [`Hop::serve`].
    type Admitted;

    /// Whether the work left for after an answer may hold the thread
    /// without giving it back to the runtime (a service's store closing
    /// its database connection, which can checkpoint and sync the file):
    /// the runtime is then let deliver the answer first, at the price of a
    /// timer tick of the instance's life. The gateway's work after the
    /// answer (admission's counts) does not delay it, so it does not pay.
    const WORK_AFTER_HOLDS_THE_THREAD: bool = false;

    /// Admits a request on its head alone, or answers it.
    fn admit(&self, head: &Request) -> Admission<Self::Admitted>;

    /// Serves an admitted request: `request` has its body, or `unread`
    /// says why it could not be read.
    async fn serve(
        &self,
        admitted: Self::Admitted,
        request: Request,
        unread: Option<BodyError>,
    ) -> Answer<'_>;
}

/// Where a request's body comes from: Spin's incoming stream in a
/// component, bytes in hand on the host.
#[allow(async_fn_in_trait)]
pub trait Body {
    /// The body of the request whose head is `head`, at most `limit` bytes,
    /// in by `until`.
    async fn read(
        self,
        head: &Request,
        limit: usize,
        until: Deadline,
    ) -> Result<Vec<u8>, BodyError>;
}

/// Runs one request through `hop`: admit its head, read its body from
/// `body` (only if admitted), serve it.
pub async fn run<H: Hop>(hop: &H, mut request: Request, body: impl Body) -> Answer<'_> {
    let (admitted, until) = match hop.admit(&request) {
        Admission::Answered(answer) => return answer,
        Admission::Admitted {
            admitted,
            read_until,
        } => (admitted, read_until),
    };
    let unread = match body.read(&request, MAX_REQUEST_BODY_BYTES, until).await {
        Ok(bytes) => {
            *request.body_mut() = bytes;
            None
        }
        Err(e) => Some(e),
    };
    hop.serve(admitted, request, unread).await
}

/// A body already in hand (tests, and callers that read it elsewhere):
/// refused past the limit, never late.
pub struct InHand(pub Vec<u8>);

impl Body for InHand {
    async fn read(
        self,
        _head: &Request,
        limit: usize,
        _until: Deadline,
    ) -> Result<Vec<u8>, BodyError> {
        match self.0.len() > limit {
            true => Err(BodyError::TooLarge(limit)),
            false => Ok(self.0),
        }
    }
}
/// What a hop gives back: the response, and work to do once it has been
/// sent, which the caller need not wait for (a write's event deliveries,
/// the gateway's admission bookkeeping). `'a`: what that work may borrow
/// (the hop itself; a service's handler moves what it needs).
pub struct Answer<'a> {
    /// Sent as soon as the handler returns.
    pub response: Response,
    /// Run after the response has gone.
    pub after: Option<Pin<Box<dyn Future<Output = ()> + 'a>>>,
}

impl<'a> Answer<'a> {
    /// `response` now, then `after`.
    pub fn then(response: Response, after: impl Future<Output = ()> + 'a) -> Self {
        Self {
            response,
            after: Some(Box::pin(after)),
        }
    }

    /// The response, once the work left for after it is done: for a
    /// caller with nothing to send first (tests, host callers).
    pub async fn finish(self) -> Response {
        if let Some(after) = self.after {
            after.await;
        }
        self.response
    }
}

impl From<Response> for Answer<'_> {
    fn from(response: Response) -> Self {
        Self {
            response,
            after: None,
        }
    }
}
