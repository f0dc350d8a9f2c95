//! Fuzz bytes as a request: a few bytes choose its shape (method, route
//! template, which headers), the rest is the text the client controls.

use http::Method;
use meridian_platform::http::prelude::*;
use meridian_platform::wire::headers;

/// The methods a request may carry; past the end, any text at all.
const METHODS: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
    Method::TRACE,
    Method::CONNECT,
];

/// Headers some component reads; past the end, a name from the input.
const HEADERS: [&str; 18] = [
    "content-type",
    "authorization",
    "if-none-match",
    "traceparent",
    "x-request-start",
    "content-length",
    "accept",
    headers::TIMEOUT_MS,
    headers::REQUEST_ID,
    headers::IDEMPOTENCY_KEY,
    headers::DEADLINE,
    headers::BUDGET_MS,
    headers::SIGNATURE,
    headers::ATTEMPTS,
    headers::TENANT_ID,
    headers::TENANT_SLUG,
    headers::ACTOR_ID,
    headers::ACTOR_ROLE,
];

/// The bytes of one fuzz input, read front to back.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte, 0 once the input is used up.
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// Up to `max` bytes (their count is the next byte), as text: Spin
    /// hands a component UTF-8 only, so invalid sequences become U+FFFD —
    /// which is itself a three-byte, non-ASCII character.
    pub fn text(&mut self, max: usize) -> String {
        let len = usize::from(self.byte()).min(max).min(self.data.len());
        let (taken, rest) = self.data.split_at(len);
        self.data = rest;
        String::from_utf8_lossy(taken).into_owned()
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.data).to_vec()
    }

    /// A request on one of `templates` (`{tenant}` the tenant `acme`, an
    /// `{id}` one of `ids`, or the input's own text for either), or on a
    /// path of the input's own when the choice falls past the list.
    pub fn request(&mut self, templates: &[&str], ids: &[&str]) -> Request {
        let method = match METHODS.get(usize::from(self.byte() % 12)) {
            Some(m) => m.clone(),
            // Spin's listener passes on only a token; anything else is a
            // method no route takes.
            None => Method::from_bytes(self.text(12).as_bytes()).unwrap_or(Method::CONNECT),
        };
        let choice = usize::from(self.byte());
        let path = match templates.get(choice % (templates.len() + 2)) {
            Some(template) => self.fill(template, ids),
            None => self.text(80),
        };
        let path = format!("{path}{}", self.text(24));
        let query = self.text(60);
        let mut request = http::Request::new(Vec::new());
        *request.method_mut() = method;
        *request.uri_mut() = meridian_testing::http::target(&path, &query);
        for _ in 0..self.byte() % 8 {
            let name = match HEADERS.get(usize::from(self.byte() % 22)) {
                Some(name) => (*name).to_owned(),
                None => header_name(&self.text(16)),
            };
            let value = self.text(80);
            // A value with a control character never gets past the
            // runtime's parser.
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.as_bytes()),
                http::HeaderValue::from_bytes(value.as_bytes()),
            ) {
                request.headers_mut().append(name, value);
            }
        }
        *request.body_mut() = self.rest();
        request
    }

    fn fill(&mut self, template: &str, ids: &[&str]) -> String {
        template
            .split('/')
            .map(|segment| match segment {
                "{tenant}" if self.byte() < 224 => "acme".to_owned(),
                "{id}" => match ids.get(usize::from(self.byte() % 4)) {
                    Some(id) => (*id).to_owned(),
                    None => self.text(40),
                },
                s if s.starts_with('{') => self.text(40),
                s => s.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// A header name as Spin would pass one on: lowercase token characters
/// only (anything else never reaches a component), never empty.
fn header_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if name.is_empty() {
        "x-empty".to_owned()
    } else {
        name
    }
}
