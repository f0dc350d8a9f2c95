//! A small typed HTTP client for the app.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// An answer from the app, whatever its status.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, lowercase names.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
    /// Time from sending to the end of the body.
    pub elapsed: Duration,
}

impl Reply {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::find_header(&self.headers, name)
    }

    /// The gateway's attempts beyond the tenant's resolution
    /// (`x-meridian-attempts` less the one attempt at identity, which a
    /// resolution remembered by the gateway did not make: `Server-Timing`
    /// then names `resolve-cached`).
    pub fn attempts_beyond_resolution(&self) -> Option<u32> {
        let attempts: u32 = self.header("x-meridian-attempts")?.parse().ok()?;
        let remembered = self
            .header("server-timing")
            .is_some_and(|t| t.contains("resolve-cached;"));
        attempts.checked_sub(u32::from(!remembered))
    }

    /// Asserts that the answer came within `limit` of its sending;
    /// `late` says what a later one means.
    #[track_caller]
    pub fn assert_within(&self, limit: Duration, late: &str) {
        assert!(
            self.elapsed <= limit,
            "{late}: answered after {:?}, the limit {limit:?}",
            self.elapsed
        );
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// Asserts a problem+json answer with this status and code.
    #[track_caller]
    pub fn assert_problem(&self, status: u16, code: &str) -> serde_json::Value {
        assert_eq!(self.status, status, "body: {}", self.body);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let body = self.json();
        assert_eq!(body["code"], code, "body: {}", self.body);
        assert_eq!(body["status"], status);
        assert!(
            body["title"].is_string() && body["detail"].is_string() && body["type"].is_string()
        );
        assert_eq!(
            body["request_id"].as_str(),
            self.header("x-request-id"),
            "problem and header disagree on the request id"
        );
        body
    }
}

/// A client of one app. A client of a [`SpinApp`](crate::SpinApp) follows
/// it when it restarts on another port, so a tenant made before a restart
/// is called at the restarted app.
#[derive(Clone)]
pub struct Client {
    base: Arc<RwLock<String>>,
    agent: ureq::Agent,
}

impl Client {
    /// A client for `base` (`http://127.0.0.1:<port>`).
    pub fn new(base: &str) -> Self {
        Self::following(Arc::new(RwLock::new(base.trim_end_matches('/').to_owned())))
    }

    /// A client for whatever base URL `base` holds at each request.
    pub(crate) fn following(base: Arc<RwLock<String>>) -> Self {
        Self {
            base,
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(30))
                .build(),
        }
    }

    fn base(&self) -> String {
        self.base.read().map(|b| b.clone()).unwrap_or_default()
    }

    /// Sends a request and returns the answer, panicking only on transport failure.
    #[track_caller]
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        self.try_send(method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// `GET` without extra headers.
    #[track_caller]
    pub fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], None)
    }

    /// `GET` that reports transport failures instead of panicking.
    pub fn try_get(&self, path: &str) -> Result<Reply, String> {
        self.try_send("GET", path, &[], None)
    }

    /// Sends a request whose answer may come before its body is all sent
    /// (a 413 for a declared length over the limit): the body is written
    /// from another thread while the answer is read, over a raw HTTP/1.1
    /// connection, so an early answer and a closed connection are seen as
    /// the answer rather than as a broken pipe.
    #[track_caller]
    pub fn send_early(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        use std::io::{Read, Write};
        let addr = self.base().trim_start_matches("http://").to_owned();
        let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let started = Instant::now();
        stream.write_all(head.as_bytes()).expect("head");
        let mut writer = stream.try_clone().expect("clone");
        let body = body.as_bytes().to_vec();
        let sending = std::thread::spawn(move || {
            // The server may refuse the body and close: that is the point.
            let _ = writer.write_all(&body);
        });
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let elapsed = started.elapsed();
        let _ = sending.join();
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{method} {path}: no answer: {text:?}"));
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Reply {
            status,
            headers,
            body: body.to_owned(),
            elapsed,
        }
    }

    /// Sends a request, reporting transport failures instead of panicking.
    pub fn try_send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Result<Reply, String> {
        let mut request = self
            .agent
            .request(method, &format!("{}{path}", self.base()));
        for (name, value) in headers {
            request = request.set(name, value);
        }
        let started = Instant::now();
        let result = match body {
            Some(body) => request.send_string(body),
            None => request.call(),
        };
        let response = match result {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = response.status();
        let headers = response
            .headers_names()
            .into_iter()
            .filter_map(|n| {
                response
                    .header(&n)
                    .map(|v| (n.to_ascii_lowercase(), v.to_owned()))
            })
            .collect();
        let body = response.into_string().map_err(|e| e.to_string())?;
        remember_token(&body);
        Ok(Reply {
            status,
            headers,
            body,
            elapsed: started.elapsed(),
        })
    }
}

/// Every API token the suite was ever handed (a `token` in an answer).
static TOKENS_SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn remember_token(body: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return;
    };
    if let Some(token) = value["token"].as_str() {
        if let Ok(mut seen) = TOKENS_SEEN.lock() {
            seen.push(token.to_owned());
        }
    }
}

/// The secrets `logs` contains: any token an answer carried so far, and
/// the admin and internal tokens the app runs with. Empty is the only
/// acceptable answer.
pub(crate) fn leaked_secrets(logs: &str) -> Vec<String> {
    let mut all = TOKENS_SEEN
        .lock()
        .map(|seen| seen.clone())
        .unwrap_or_default();
    all.extend([
        crate::ADMIN_TOKEN.to_owned(),
        crate::INTERNAL_TOKEN.to_owned(),
    ]);
    all.into_iter()
        .filter(|s| logs.contains(s.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_seen_in_an_answer_is_looked_for_in_the_logs() {
        remember_token(r#"{"id":"t1","token":"mrd_seen_in_this_test"}"#);
        remember_token("not json");
        assert!(leaked_secrets("identity: all quiet").is_empty());
        assert_eq!(
            leaked_secrets("identity: bearer mrd_seen_in_this_test refused"),
            ["mrd_seen_in_this_test"]
        );
        assert_eq!(
            leaked_secrets(&format!("gateway: {}", crate::INTERNAL_TOKEN)),
            [crate::INTERNAL_TOKEN]
        );
    }
}
