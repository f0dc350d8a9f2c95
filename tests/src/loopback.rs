//! An HTTP/1.1 server on a free 127.0.0.1 port, stopped when dropped: what
//! the stand-ins and the OTLP receiver are built on. It is hyper's server
//! (one connection a task on a small Tokio runtime of its own); each
//! request's handler runs on the runtime's blocking pool, so a stand-in
//! that hangs holds up only its own request.
//!
//! Before, this was a hand-written HTTP/1.1 server (a thread per
//! connection), written after tiny_http (0.12) lost wake-ups: two
//! connections arriving together with one pool thread idle could both be
//! queued for it, and the app saw a call that never reached the stand-in.
//! hyper has no such pool; the burst test below is the check.

use std::convert::Infallible;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// A request as it arrived: `http`'s request over its whole body
/// (de-chunked), with when its head arrived ([`ArrivedAt`]) among its
/// extensions.
pub type Request = http::Request<Vec<u8>>;

/// When a request's head arrived, Unix epoch ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivedAt(pub u64);

/// What the tests read of a request a stand-in received.
pub trait ReceivedExt {
    /// Its path and query, as sent.
    fn url(&self) -> &str;
    /// The first value of a header.
    fn header(&self, name: &str) -> Option<&str>;
    /// When its head arrived, Unix epoch ms.
    fn at_ms(&self) -> u64;
}

impl ReceivedExt for Request {
    fn url(&self) -> &str {
        self.uri().path_and_query().map_or("", |p| p.as_str())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers().get(name).and_then(|v| v.to_str().ok())
    }

    fn at_ms(&self) -> u64 {
        self.extensions().get::<ArrivedAt>().map_or(0, |a| a.0)
    }
}

/// An answer: `Content-Length` is added, any other header is as given.
#[derive(Debug, Clone)]
pub struct LoopbackReply {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

/// The running server.
pub struct Loopback {
    port: u16,
    runtime: Option<tokio::runtime::Runtime>,
}

type Handler = dyn Fn(&Request) -> LoopbackReply + Send + Sync;

impl Loopback {
    /// Serves every request with `handle`, on hyper's HTTP/1.1 server
    /// (keep-alive, chunked bodies, `HEAD`).
    pub fn serve(handle: impl Fn(&Request) -> LoopbackReply + Send + Sync + 'static) -> Self {
        let handle: Arc<Handler> = Arc::new(handle);
        Self::listen(move |stream| {
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| answer(handle.clone(), request));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        })
    }

    /// Hands every connection, as it arrives, to `connection` on a thread
    /// of its own, as a blocking std stream: for a stand-in that speaks (or
    /// breaks) HTTP itself.
    pub fn accept(connection: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let connection = Arc::new(connection);
        Self::listen(move |stream| {
            let Ok(stream) = stream.into_std() else {
                return;
            };
            let _ = stream.set_nonblocking(false);
            let connection = connection.clone();
            std::thread::spawn(move || connection(stream));
        })
    }

    /// Binds a free loopback port and gives each accepted connection to
    /// `each`, on a runtime that lives as long as the server.
    fn listen(each: impl Fn(tokio::net::TcpStream) + Send + 'static) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a Tokio runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        runtime.spawn(async move {
            loop {
                if let Ok((stream, _)) = listener.accept().await {
                    let _ = stream.set_nodelay(true);
                    each(stream);
                }
            }
        });
        Self {
            port,
            runtime: Some(runtime),
        }
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        // Stops accepting and closes its connections now; a handler still
        // running on the blocking pool finishes into nothing.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// One request: read whole, handed to `handle` on the blocking pool, its
/// answer sent.
async fn answer(
    handle: Arc<Handler>,
    request: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let (mut head, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    head.extensions.clear();
    head.extensions.insert(ArrivedAt(at_ms));
    let request = Request::from_parts(head, body);
    let reply = tokio::task::spawn_blocking(move || handle(&request))
        .await
        .unwrap_or_else(|_| LoopbackReply {
            status: 500,
            headers: Vec::new(),
            body: b"the stand-in's handler panicked".to_vec(),
        });
    let mut response = hyper::Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() =
        http::StatusCode::from_u16(reply.status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::time::Duration;

    /// One line without its CRLF.
    fn read_line(reader: &mut impl BufRead) -> Option<String> {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        }
    }

    fn echo() -> Loopback {
        Loopback::serve(|request| LoopbackReply {
            status: 201,
            headers: vec![("x-method".into(), request.method().to_string())],
            body: request.body().clone(),
        })
    }

    #[test]
    fn it_answers_fixed_and_chunked_bodies_on_one_kept_alive_connection() {
        let server = echo();
        let stream = TcpStream::connect(server.url().trim_start_matches("http://")).unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        writer
            .write_all(b"POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello")
            .unwrap();
        writer
            .write_all(b"PUT /b HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n")
            .unwrap();
        for (method, body) in [("POST", "hello"), ("PUT", "abcde")] {
            let mut head = String::new();
            loop {
                let line = read_line(&mut reader).unwrap();
                if line.is_empty() {
                    break;
                }
                head.push_str(&line);
                head.push('\n');
            }
            assert!(head.starts_with("HTTP/1.1 201 Created\n"), "{head}");
            assert!(head.contains(&format!("x-method: {method}")), "{head}");
            let mut got = vec![0; body.len()];
            reader.read_exact(&mut got).unwrap();
            assert_eq!(got, body.as_bytes());
        }
    }

    /// A stand-in's hung answer (a handler asleep) holds up only its own
    /// request: the next one, on another connection, is answered at once.
    #[test]
    fn a_handler_that_hangs_holds_up_only_its_own_request() {
        let server = Loopback::serve(|request| {
            if request.url() == "/slow" {
                std::thread::sleep(Duration::from_secs(3));
            }
            LoopbackReply {
                status: 200,
                headers: Vec::new(),
                body: request.url().as_bytes().to_vec(),
            }
        });
        let slow = format!("{}/slow", server.url());
        let _hung = std::thread::spawn(move || ureq::get(&slow).call().is_ok());
        std::thread::sleep(Duration::from_millis(100));
        let started = std::time::Instant::now();
        let r = ureq::get(&format!("{}/fast?x=1", server.url()))
            .call()
            .unwrap();
        assert_eq!(r.into_string().unwrap(), "/fast?x=1");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    /// Many clients opening their first connection at once are all served
    /// at once (tiny_http's pool could leave one waiting).
    #[test]
    fn a_burst_of_new_connections_is_served_without_waiting() {
        let server = echo();
        let url = format!("{}/x", server.url());
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    let agent = ureq::AgentBuilder::new().build();
                    for _ in 0..5 {
                        let started = std::time::Instant::now();
                        let r = agent.post(&url).send_string("ping").unwrap();
                        assert_eq!(r.status(), 201);
                        assert_eq!(r.into_string().unwrap(), "ping");
                        assert!(started.elapsed() < Duration::from_secs(2));
                    }
                });
            }
        });
    }
}
