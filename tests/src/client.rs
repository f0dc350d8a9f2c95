//! A small typed HTTP client for the app.

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
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
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

/// A client bound to one base URL.
#[derive(Clone)]
pub struct Client {
    base: String,
    agent: ureq::Agent,
}

impl Client {
    /// A client for `base` (`http://127.0.0.1:<port>`).
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_owned(),
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(30))
                .build(),
        }
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

    /// Sends a request, reporting transport failures instead of panicking.
    pub fn try_send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Result<Reply, String> {
        let mut request = self.agent.request(method, &format!("{}{path}", self.base));
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
        Ok(Reply {
            status,
            headers,
            body,
            elapsed: started.elapsed(),
        })
    }
}
