//! A test-only private component with two ways of being slow, chosen by
//! the path it is asked for:
//!
//! - In place of `community` (any path without `/invoices`), it holds every
//!   request for ten seconds before answering. The end-to-end suite reaches
//!   it through `*.spin.internal`, where Spin runs the call in-process and
//!   ignores wasi:http request options: only the caller's own budget timer
//!   can end the wait.
//! - In place of `billing` (a path with `/invoices`), it answers at once
//!   through Meridian's pipeline (`meridian_spin::service::run_hop`) and
//!   then keeps its thread busy for two seconds in the work left for after
//!   the answer, as a synchronous host call does (billing's SQLite
//!   connection closing, with its checkpoint's fsyncs): the caller must
//!   have the answer long before that work ends.
// `deny`, not `forbid`: the SDK's export macro needs its own `allow`.
#![deny(unsafe_code)]

use std::time::{Duration, Instant};

use meridian_platform::http::body::BodyError;
use meridian_platform::http::message;
use meridian_platform::http::pipeline::{Admission, Hop};
use meridian_platform::http::Request;
use meridian_platform::service::Answer;
use meridian_platform::{Clock, Deadline, SystemClock};

/// How long every request is held in place of `community`.
pub const HOLD: Duration = Duration::from_secs(10);

/// How long the thread is kept busy after the answer in place of `billing`.
pub const HOLD_AFTER_ANSWER: Duration = Duration::from_secs(2);

/// Whether a request for `path` is one billing would serve.
pub fn stands_in_for_billing(path: &str) -> bool {
    path.contains("/invoices")
}

/// Answers an empty page at once, then holds the thread without giving it
/// back to the runtime for [`HOLD_AFTER_ANSWER`].
pub struct AnswerThenHold;

impl Hop for AnswerThenHold {
    type Admitted = ();

    const WORK_AFTER_HOLDS_THE_THREAD: bool = true;

    fn admit(&self, _head: &Request) -> Admission<()> {
        Admission::Admitted {
            admitted: (),
            read_until: Deadline::after(SystemClock.now(), Duration::from_secs(1)),
        }
    }

    async fn serve(&self, _: (), _: Request, _: Option<BodyError>) -> Answer<'_> {
        let page = br#"{"items":[],"next_cursor":null}"#.to_vec();
        Answer::then(message::raw_json(http::StatusCode::OK, page), async {
            let end = Instant::now() + HOLD_AFTER_ANSWER;
            while Instant::now() < end {
                std::hint::spin_loop();
            }
        })
    }
}

// Wasm only: its export names are not valid symbols for a host cdylib.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod entry {
    use spin_sdk::http::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};
    use spin_sdk::http_component;

    #[http_component]
    async fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let head = meridian_spin::convert::read_head(&request);
        if crate::stands_in_for_billing(head.uri().path()) {
            return meridian_spin::service::run_hop(head, request, out, &crate::AnswerThenHold)
                .await;
        }
        meridian_spin::sleep(crate::HOLD).await;
        let response = OutgoingResponse::new(Fields::new());
        let _ = response.set_status_code(200);
        out.set(response);
    }
}
