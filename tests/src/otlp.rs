//! A local OTLP/HTTP trace receiver on 127.0.0.1: Spin exports its spans
//! here (`OTEL_EXPORTER_OTLP_ENDPOINT`), and a test reads them back decoded
//! with the OpenTelemetry project's own protobuf types.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;

use crate::loopback::{Loopback, LoopbackReply, ReceivedExt};

/// One exported span, as a test needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The resource's `service.name`.
    pub service: String,
    /// Trace id, lowercase hex.
    pub trace_id: String,
    /// Span id, lowercase hex.
    pub span_id: String,
    /// The parent's span id, lowercase hex; empty for a root.
    pub parent_span_id: String,
    /// The span's name.
    pub name: String,
    /// Start, Unix ns.
    pub start_ns: u64,
    /// End, Unix ns.
    pub end_ns: u64,
    /// String and integer attributes, as text.
    pub attributes: Vec<(String, String)>,
}

impl Span {
    /// An attribute's value.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The receiver, stopped when dropped.
pub struct OtlpReceiver {
    server: Loopback,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl OtlpReceiver {
    /// Listens on a free loopback port.
    pub fn start() -> Self {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let server = {
            let spans = spans.clone();
            Loopback::serve(move |request| {
                if request.url() == "/v1/traces" {
                    let decoded = ExportTraceServiceRequest::decode(request.body().as_slice())
                        .expect("an OTLP trace export");
                    spans.lock().expect("lock").extend(flatten(decoded));
                }
                // An empty protobuf message is an empty export response.
                LoopbackReply {
                    status: 200,
                    headers: vec![("content-type".into(), "application/x-protobuf".into())],
                    body: Vec::new(),
                }
            })
        };
        Self { server, spans }
    }

    /// The endpoint for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        self.server.url()
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("lock").clone()
    }

    /// Waits (up to `within`) until `done` holds for the spans received,
    /// and returns them; on timeout, returns what arrived.
    pub fn wait_for(&self, within: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let until = Instant::now() + within;
        loop {
            let spans = self.spans();
            if done(&spans) || Instant::now() >= until {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The spans of `trace_id` as an indented tree, children in start order:
/// start offset from the root and duration in ms, name, and the attributes
/// an operator reads first (the URL called, the status answered, the query).
pub fn render_tree(spans: &[Span], trace_id: &str) -> String {
    let spans: Vec<&Span> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    let ids: Vec<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let mut roots: Vec<&Span> = spans
        .iter()
        .copied()
        .filter(|s| !ids.contains(&s.parent_span_id.as_str()))
        .collect();
    roots.sort_by_key(|s| s.start_ns);
    let origin = roots.first().map_or(0, |s| s.start_ns);
    let mut out = String::new();
    let mut stack: Vec<(&Span, usize)> = roots.into_iter().rev().map(|s| (s, 0)).collect();
    while let Some((span, depth)) = stack.pop() {
        let ms = |ns: u64| ns as f64 / 1e6;
        let notes: Vec<String> = ["url.full", "http.response.status_code", "query"]
            .iter()
            .filter_map(|k| {
                span.attribute(k)
                    .map(|v| format!("{k}={}", v.replace('\n', " ")))
            })
            .collect();
        out.push_str(&format!(
            "{:>8.1} ms {:>8.1} ms  {}{}  {}\n",
            ms(span.start_ns.saturating_sub(origin)),
            ms(span.end_ns.saturating_sub(span.start_ns)),
            "  ".repeat(depth),
            span.name,
            notes.join(" ")
        ));
        let mut children: Vec<&Span> = spans
            .iter()
            .copied()
            .filter(|s| s.parent_span_id == span.span_id)
            .collect();
        children.sort_by_key(|s| std::cmp::Reverse(s.start_ns));
        stack.extend(children.into_iter().map(|s| (s, depth + 1)));
    }
    out
}

fn flatten(export: ExportTraceServiceRequest) -> Vec<Span> {
    let mut spans = Vec::new();
    for resource_spans in export.resource_spans {
        let service = resource_spans
            .resource
            .as_ref()
            .and_then(|r| text(&r.attributes, "service.name"))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(Span {
                    service: service.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    name: span.name,
                    start_ns: span.start_time_unix_nano,
                    end_ns: span.end_time_unix_nano,
                    attributes: span
                        .attributes
                        .iter()
                        .filter_map(|kv| Some((kv.key.clone(), value_text(kv)?)))
                        .collect(),
                });
            }
        }
    }
    spans
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(value_text)
}

fn value_text(kv: &KeyValue) -> Option<String> {
    match kv.value.as_ref()?.value.as_ref()? {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(i) => Some(i.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
