//! An HTTP/1.1 server on a free 127.0.0.1 port, one thread per connection,
//! stopped when dropped: what the stand-ins and the OTLP receiver are built
//! on.
//!
//! Written here rather than taken from tiny_http (0.12), whose connection
//! pool can lose a wake-up: two connections arriving together, with one
//! thread idle, could both be queued for it, and the second then waited
//! until some kept-alive connection ended. The app saw a call that never
//! reached the stand-in and answered 504 at the budget (about one run in
//! three of eight concurrent first requests to a stand-in answering 503).
//! A thread per connection has no pool to starve.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A request as it arrived.
#[derive(Debug, Clone)]
pub struct Request {
    /// Method.
    pub method: String,
    /// Path and query.
    pub url: String,
    /// Headers, lowercase names, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Wall-clock arrival of its first line, Unix epoch ms.
    pub at_ms: u64,
}

impl Request {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::find_header(&self.headers, name)
    }
}

/// An answer: `Content-Length` is added, any other header is as given.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

/// How long a kept-alive connection may stay silent before it is closed.
const IDLE: Duration = Duration::from_secs(30);

/// The running server.
pub struct Loopback {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Serves every request with `handle`. Each connection has its own
    /// thread, so a handler that hangs holds up only its own connection
    /// (whose client waits for that answer anyway).
    pub fn serve(handle: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Self {
        Self::accept(move |stream| serve_connection(stream, &handle))
    }

    /// Hands every connection, as it arrives, to `connection` on a thread
    /// of its own: for a stand-in that speaks (or breaks) HTTP itself.
    pub fn accept(connection: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let connection = Arc::new(connection);
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let connection = connection.clone();
                            std::thread::spawn(move || connection(stream));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            })
        };
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers the requests of one connection in turn until the client closes
/// it, asks to, stays idle too long, or sends what is not HTTP/1.1.
fn serve_connection(stream: TcpStream, handle: &dyn Fn(&Request) -> Response) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        let response = handle(&request);
        let head_only = request.method == "HEAD";
        if write_response(&mut writer, &response, head_only).is_err()
            || request
                .header("connection")
                .is_some_and(|c| c.eq_ignore_ascii_case("close"))
        {
            return;
        }
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let line = read_line(reader)?;
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut parts = line.split_whitespace();
    let (method, url) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut request = Request {
        method,
        url,
        headers,
        body: Vec::new(),
        at_ms,
    };
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let size = read_line(reader)?;
            let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, up to the blank line.
                while !read_line(reader)?.is_empty() {}
                break;
            }
            let start = request.body.len();
            request.body.resize(start + size, 0);
            reader.read_exact(&mut request.body[start..]).ok()?;
            read_line(reader)?;
        }
    } else if let Some(length) = request.header("content-length") {
        let length: usize = length.parse().ok()?;
        request.body.resize(length, 0);
        reader.read_exact(&mut request.body).ok()?;
    }
    Some(request)
}

/// One line without its CRLF; `None` at the end of the stream or on error.
fn read_line(reader: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

fn write_response(
    out: &mut impl Write,
    response: &Response,
    head_only: bool,
) -> std::io::Result<()> {
    let reason = http::StatusCode::from_u16(response.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", response.status);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", response.body.len()));
    let mut bytes = head.into_bytes();
    if !head_only {
        bytes.extend_from_slice(&response.body);
    }
    out.write_all(&bytes)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn echo() -> Loopback {
        Loopback::serve(|request| Response {
            status: 201,
            headers: vec![("x-method".into(), request.method.clone())],
            body: request.body.clone(),
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
