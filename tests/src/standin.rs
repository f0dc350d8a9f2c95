//! Stand-in downstream services on 127.0.0.1: they record what the app sent
//! them and answer as each test scripts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::loopback::{Loopback, LoopbackReply, ReceivedExt, Request};

/// A request as a stand-in received it.
pub type Received = Request;

/// How a stand-in answers.
#[derive(Debug, Clone)]
pub enum StandInReply {
    /// A JSON answer.
    Json(u16, String),
    /// Any answer: status, content type and body as given (a trap's
    /// plain-text 500, a proxy's HTML 502).
    Raw(u16, &'static str, String),
    /// A JSON answer after a delay, with extra headers (e.g. `Retry-After`).
    Delayed {
        /// Wait this long first (bounded to 10 s).
        delay: Duration,
        /// Status.
        status: u16,
        /// Extra headers.
        headers: Vec<(&'static str, String)>,
        /// JSON body.
        body: String,
    },
    /// No answer for this long (bounded), then a 200.
    Hang(Duration),
    /// Forward the request to `to` (a base URL) and pass its answer back —
    /// or, with `lose_answer`, answer 503 instead, as if the response were
    /// lost on the way back after the work was done.
    Forward {
        /// Base URL of the real service.
        to: String,
        /// Replace the answer with a 503.
        lose_answer: bool,
    },
}

/// A scripted HTTP server on a free loopback port, stopped when dropped.
pub struct StandIn {
    server: Loopback,
    received: Arc<Mutex<Vec<Received>>>,
}

impl StandIn {
    /// Starts a stand-in that answers each request with `script`.
    pub fn start(script: impl Fn(&Received) -> StandInReply + Send + Sync + 'static) -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let server = {
            let received = received.clone();
            Loopback::serve(move |request| answer(request, &received, &script))
        };
        Self { server, received }
    }

    /// In front of the service at `real` (a [`crate::SpinApp::service_beside`]):
    /// every request is passed on to it, but for event deliveries
    /// (`/internal/events`), which `events` answers, given `real`'s URL.
    pub fn events_of(
        real: &crate::SpinApp,
        events: impl Fn(&str) -> StandInReply + Send + Sync + 'static,
    ) -> Self {
        let to = real.url().to_owned();
        Self::start(move |r| match r.url().starts_with("/internal/events") {
            true => events(&to),
            false => StandInReply::Forward {
                to: to.clone(),
                lose_answer: false,
            },
        })
    }

    /// The stand-in's base URL.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// How many requests for paths starting with `prefix` arrived.
    pub fn count(&self, prefix: &str) -> usize {
        self.received()
            .iter()
            .filter(|r| r.url().starts_with(prefix))
            .count()
    }
}

fn answer(
    request: &Request,
    received: &Mutex<Vec<Received>>,
    script: &impl Fn(&Received) -> StandInReply,
) -> LoopbackReply {
    received.lock().expect("lock").push(request.clone());
    let mut content_type = "application/json";
    let mut extra: Vec<(String, String)> = Vec::new();
    let (status, body) = match script(request) {
        StandInReply::Delayed {
            delay,
            status,
            headers,
            body,
        } => {
            std::thread::sleep(delay.min(Duration::from_secs(10)));
            extra = headers
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect();
            (status, body)
        }
        StandInReply::Json(status, body) => (status, body),
        StandInReply::Raw(status, kind, body) => {
            content_type = kind;
            (status, body)
        }
        StandInReply::Hang(d) => {
            std::thread::sleep(d.min(Duration::from_secs(10)));
            (200, "{}".to_owned())
        }
        StandInReply::Forward { to, lose_answer } => {
            let (status, headers, body) = forward(&to, request);
            if lose_answer {
                (503, r#"{"code":"upstream_unavailable"}"#.to_owned())
            } else {
                // Pass the service's own headers back (the proxy is
                // transparent), less those the stand-in sets itself.
                for (name, value) in headers {
                    if name == "content-type" {
                        content_type = if value.starts_with("application/problem+json") {
                            "application/problem+json"
                        } else {
                            "application/json"
                        };
                    } else if !matches!(
                        name.as_str(),
                        "content-length" | "connection" | "transfer-encoding" | "date"
                    ) {
                        extra.push((name, value));
                    }
                }
                (status, body)
            }
        }
    };
    let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
    headers.extend(extra);
    LoopbackReply {
        status,
        headers,
        body: body.into_bytes(),
    }
}

/// Sends `request` on to `base` and returns its status, headers and body.
fn forward(base: &str, request: &Received) -> (u16, Vec<(String, String)>, String) {
    let url = format!("{base}{}", request.url());
    let mut outbound = ureq::request(request.method().as_str(), &url);
    for (name, value) in request.headers() {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "connection" | "transfer-encoding"
        ) {
            outbound = outbound.set(name.as_str(), value.to_str().unwrap_or_default());
        }
    }
    let result = if request.body().is_empty() {
        outbound.call()
    } else {
        outbound.send_bytes(request.body())
    };
    match result {
        Ok(r) | Err(ureq::Error::Status(_, r)) => {
            let status = r.status();
            let headers = r
                .headers_names()
                .into_iter()
                .filter_map(|n| r.header(&n).map(|v| (n.to_ascii_lowercase(), v.to_owned())))
                .collect();
            (status, headers, r.into_string().unwrap_or_default())
        }
        Err(e) => (
            502,
            Vec::new(),
            format!(r#"{{"error":{:?}}}"#, e.to_string()),
        ),
    }
}

/// A stand-in that answers every request with a response head and the
/// first bytes of its body, then closes the connection: a reset mid-body.
/// Stopped when dropped.
pub struct Truncating {
    server: Loopback,
    count: Arc<AtomicUsize>,
}

impl Truncating {
    /// Starts one on a free loopback port.
    pub fn start() -> Self {
        let count = Arc::new(AtomicUsize::new(0));
        let server = {
            let count = count.clone();
            Loopback::accept(move |stream| truncate(stream, &count))
        };
        Self { server, count }
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Requests it has cut off.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

fn truncate(mut stream: TcpStream, count: &AtomicUsize) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    // Read the head and any declared body, so the request is whole.
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&seen).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                break;
            }
        }
    }
    count.fetch_add(1, Ordering::SeqCst);
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"par",
    );
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}
