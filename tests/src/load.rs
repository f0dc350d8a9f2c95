//! Load for the benchmarks and the overload tests: keep-alive HTTP/1.1
//! connections on hyper's client, and the closed loop they run in — each
//! client sending its next request as soon as the last is answered, all
//! of them tasks on one thread. Every answer is read whole (hyper reads a length or a chunked
//! body alike), so the connection is ready for the next request.

use std::time::{Duration, Instant, SystemTime};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;

/// One request the load sends, again and again.
#[derive(Debug, Clone)]
pub struct Target {
    /// `127.0.0.1:port`.
    pub addr: String,
    /// Path and query.
    pub path: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Whether each request carries `X-Request-Start` stamped when it
    /// arrived, as a front proxy stamps a request.
    pub stamp: bool,
}

impl Target {
    /// `GET path` at `base` (`http://127.0.0.1:port`) with `headers`.
    pub fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> Self {
        Self {
            addr: base.trim_start_matches("http://").to_owned(),
            path: path.to_owned(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            stamp: false,
        }
    }

    /// `GET path` at `base` as `token`'s caller (`Bearer`), with a
    /// budget of `budget_ms` (`x-meridian-timeout-ms`).
    pub fn as_caller(base: &str, path: &str, token: &str, budget_ms: u64) -> Self {
        let (auth, budget) = (format!("Bearer {token}"), budget_ms.to_string());
        Self::get(
            base,
            path,
            &[("authorization", &auth), ("x-meridian-timeout-ms", &budget)],
        )
    }

    /// The request as sent for one that `arrived` then.
    fn request(&self, arrived: SystemTime) -> Option<http::Request<Empty<Bytes>>> {
        let mut request = http::Request::get(self.path.as_str()).header("host", &self.addr);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        if self.stamp {
            let at = arrived.duration_since(std::time::UNIX_EPOCH).ok()?;
            request = request.header("x-request-start", format!("t={}", at.as_micros()));
        }
        request.body(Empty::new()).ok()
    }
}

/// The sending half of one keep-alive connection, opened on first use and
/// again when it breaks.
type Sender = Option<SendRequest<Empty<Bytes>>>;

/// Sends `target`'s request for one that `arrived` then on `sender` and
/// reads its answer whole; a broken connection is opened once more. `None`
/// when no answer came within 10 s.
async fn send_on(
    sender: &mut Sender,
    target: &Target,
    arrived: SystemTime,
) -> Option<http::Response<Bytes>> {
    for _ in 0..2 {
        let request = target.request(arrived)?;
        let answer = tokio::time::timeout(Duration::from_secs(10), async {
            if sender.as_ref().is_none_or(|s| s.is_closed()) {
                let stream = tokio::net::TcpStream::connect(&target.addr).await.ok()?;
                stream.set_nodelay(true).ok()?;
                let (opened, connection) = http1::handshake(TokioIo::new(stream)).await.ok()?;
                tokio::spawn(connection);
                *sender = Some(opened);
            }
            let s = sender.as_mut()?;
            s.ready().await.ok()?;
            let (head, body) = s.send_request(request).await.ok()?.into_parts();
            let body = body.collect().await.ok()?.to_bytes();
            Some(http::Response::from_parts(head, body))
        })
        .await
        .ok()
        .flatten();
        if answer.is_some() {
            return answer;
        }
        *sender = None;
    }
    None
}

/// One keep-alive connection driven by the thread that sends on it (the
/// open loop's workers).
pub struct Connection {
    runtime: tokio::runtime::Runtime,
    sender: Sender,
}

impl Connection {
    /// A connection not yet opened (the first request opens it).
    pub fn new() -> Self {
        Self {
            runtime: runtime(),
            sender: None,
        }
    }

    /// Sends `target`'s request for one that `arrived` then and reads its
    /// answer whole; a broken connection is opened once more.
    pub fn send(&mut self, target: &Target, arrived: SystemTime) -> Option<http::Response<Bytes>> {
        self.runtime
            .block_on(send_on(&mut self.sender, target, arrived))
    }
}

impl Default for Connection {
    fn default() -> Self {
        Self::new()
    }
}

/// A single-threaded Tokio runtime with its timers.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

/// One request's outcome in a run, and what `keep` took from its answer.
#[derive(Debug, Clone, Copy)]
pub struct Sample<T> {
    /// The status; 0 when no answer came.
    pub status: u16,
    /// From when it was sent (or due) to its answer.
    pub latency: Duration,
    /// When, since the run started, its answer came.
    pub ended: Duration,
    /// What `keep` took from the answer (`None` when none came).
    pub kept: Option<T>,
}

impl<T> Sample<T> {
    /// Whether it counts as goodput: a 200 within `budget`.
    pub fn in_time(&self, budget: Duration) -> bool {
        self.status == 200 && self.latency <= budget
    }

    /// When (since the run started) it was sent, or due.
    pub fn sent(&self) -> Duration {
        self.ended.saturating_sub(self.latency)
    }
}

/// A closed loop: `connections` clients, each sending `target` again as
/// soon as it is answered, for `run`; `keep` takes what the caller needs
/// of each answer. The clients are tasks on one thread: the load costs
/// the machine little beside the app it measures.
pub fn closed_loop<T: Send + 'static>(
    target: &Target,
    connections: usize,
    run: Duration,
    keep: impl Fn(&http::Response<Bytes>) -> T + Send + Sync + 'static,
) -> Vec<Sample<T>> {
    let keep = std::sync::Arc::new(keep);
    runtime().block_on(async {
        let start = Instant::now();
        let until = start + run;
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..connections {
            let (target, keep) = (target.clone(), keep.clone());
            clients.spawn(async move {
                let mut sender = None;
                let mut mine = Vec::new();
                while Instant::now() < until {
                    let sent = Instant::now();
                    let answer = send_on(&mut sender, &target, SystemTime::now()).await;
                    let now = Instant::now();
                    mine.push(Sample {
                        status: answer.as_ref().map_or(0, |a| a.status().as_u16()),
                        latency: now - sent,
                        ended: now - start,
                        kept: answer.as_ref().map(|a| keep(a)),
                    });
                }
                mine
            });
        }
        let mut samples = Vec::new();
        while let Some(mine) = clients.join_next().await {
            samples.extend(mine.unwrap_or_default());
        }
        samples
    })
}

/// `requests` calls of `call` shared out over `clients` threads (the
/// remainder to the first ones), each client sending its next as soon as
/// its last is answered; every result, client by client. A client that
/// panics fails the caller the same way.
pub fn on_threads<T: Send>(clients: usize, requests: usize, call: impl Fn() -> T + Sync) -> Vec<T> {
    let call = &call;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let n = requests / clients + usize::from(c < requests % clients);
                s.spawn(move || (0..n).map(|_| call()).collect::<Vec<T>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loopback::{Loopback, LoopbackReply, ReceivedExt};

    /// Answers of either framing leave the connection ready for the next
    /// request (the hand-written client before this one read only a
    /// length, and broke on every other chunked answer).
    #[test]
    fn a_closed_loop_reads_whole_answers_and_keeps_its_connections() {
        let server = Loopback::serve(|request| LoopbackReply {
            status: 200,
            headers: vec![("x-seen".into(), request.header("x-a").unwrap_or("").into())],
            body: vec![b'x'; 3_000],
        });
        let target = Target::get(&server.url(), "/p?q=1", &[("x-a", "b")]);
        let samples = closed_loop(&target, 4, Duration::from_millis(300), |r| {
            (r.body().len(), r.headers().get("x-seen").cloned())
        });
        assert!(samples.len() > 20, "{}", samples.len());
        for s in &samples {
            assert_eq!(s.status, 200);
            let (len, seen) = s.kept.clone().expect("an answer");
            assert_eq!(
                (len, seen.as_ref().map(|v| v.as_bytes())),
                (3_000, Some(&b"b"[..]))
            );
        }
    }

    #[test]
    fn no_server_is_no_answer() {
        let target = Target::get("http://127.0.0.1:9", "/", &[]);
        assert!(Connection::new().send(&target, SystemTime::now()).is_none());
    }
}
