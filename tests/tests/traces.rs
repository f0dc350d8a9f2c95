//! Traces, proven on a real `spin up`: Spin exports its spans over OTLP to
//! a local receiver, and one public request is one trace across every
//! component it crossed, continuing the client's own `traceparent`, with
//! each component's log line naming the same trace.

use std::time::Duration;

use meridian_e2e::otlp::{OtlpReceiver, Span};
use meridian_e2e::{SpinApp, SpinOptions};
use serde_json::json;

/// The client's trace and its own (caller-side) span.
const READ_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const WRITE_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str) -> String {
    format!("00-{trace}-{CLIENT_SPAN}-01")
}

/// A trace's spans, with lookups by name and parent.
struct Trace(Vec<Span>);

impl Trace {
    fn of(spans: &[Span], trace_id: &str) -> Self {
        Self(
            spans
                .iter()
                .filter(|s| s.trace_id == trace_id)
                .cloned()
                .collect(),
        )
    }

    /// The span in which `component` ran.
    fn component(&self, component: &str) -> Option<&Span> {
        let name = format!("execute_wasm_component {component}");
        self.0.iter().find(|s| s.name == name)
    }

    /// The outbound call made from `parent` to a URL containing `host`.
    fn call(&self, parent: &Span, host: &str) -> Option<&Span> {
        self.0.iter().find(|s| {
            s.parent_span_id == parent.span_id
                && s.attribute("url.full").is_some_and(|u| u.contains(host))
        })
    }

    fn parent_of(&self, span: &Span) -> Option<&Span> {
        self.0.iter().find(|s| s.span_id == span.parent_span_id)
    }

    fn names(&self) -> Vec<String> {
        self.0.iter().map(|s| s.name.clone()).collect()
    }
}

/// `callee` ran inside the call `caller` made to it: the chain
/// caller's component → outbound call → (the callee's inbound request, in
/// the split layout) → callee's component.
fn called<'t>(app: &SpinApp, trace: &'t Trace, caller: &str, callee: &str) -> (&'t Span, &'t Span) {
    let names = trace.names();
    let from = trace
        .component(caller)
        .unwrap_or_else(|| panic!("no {caller} span: {names:?}"));
    let call = trace
        .call(from, &app.call_target(callee))
        .unwrap_or_else(|| panic!("no call {caller} → {callee}: {names:?}"));
    let to = trace
        .component(callee)
        .unwrap_or_else(|| panic!("no {callee} span: {names:?}"));
    // Chained in one app, the callee runs right under the call; in the
    // split layout, under the inbound request its own Spin received.
    let parent = trace.parent_of(to).expect("the callee's parent span");
    let linked = parent.span_id == call.span_id
        || (parent.attribute("http.route").is_some() && parent.parent_span_id == call.span_id);
    assert!(linked, "{callee} runs inside {caller}'s call: {names:?}");
    // The callee starts inside the call. (Its span may end after the
    // caller has its answer: the instance is torn down after it responds.)
    assert!(call.start_ns <= to.start_ns && to.start_ns <= call.end_ns);
    (call, to)
}

#[test]
fn one_request_is_one_trace_across_the_components_it_crossed_and_its_log_lines_name_it() {
    let receiver = OtlpReceiver::start();
    let app = SpinApp::start_with(
        SpinOptions::default()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
            // Export within a fraction of a second, not the default 5 s.
            .env("OTEL_BSP_SCHEDULE_DELAY", "200")
            // Every read crosses identity: the resolution is one of the
            // hops the trace must name (remembered, it would be none).
            .variable("resolution_cache", "off"),
    );
    let acme = app.tenant("acme");
    let resident = acme.resident("Ada");

    // A read: gateway → identity (resolution), then gateway → community.
    let read = acme
        .get("/residents?limit=5")
        .header("x-request-id", "traced-read")
        .header("traceparent", &traceparent(READ_TRACE))
        .send();
    assert_eq!(read.status, 200, "{}", read.body);
    // A write that calls on: gateway → billing → community.
    let write = acme
        .post("/invoices")
        .key("traced-write")
        .header("x-request-id", "traced-write")
        .header("traceparent", &traceparent(WRITE_TRACE))
        .json(
            &json!({"resident_id": resident, "amount_cents": 1200, "currency": "EUR",
            "description": "Service charge", "due_date": "2026-12-31"}),
        );
    assert_eq!(write.status, 201, "{}", write.body);

    let spans = receiver.wait_for(Duration::from_secs(15), |spans| {
        let (r, w) = (Trace::of(spans, READ_TRACE), Trace::of(spans, WRITE_TRACE));
        // Each Spin process exports on its own schedule: wait for all.
        ["gateway", "identity", "community"]
            .iter()
            .all(|c| r.component(c).is_some())
            && ["gateway", "identity", "billing", "community"]
                .iter()
                .all(|c| w.component(c).is_some())
            && [&r, &w]
                .iter()
                .all(|t| t.0.iter().any(|s| s.parent_span_id == CLIENT_SPAN))
    });

    // The read: the client's trace continued (its span is the root's
    // parent), and each hop a child of the call that reached it, in order.
    let trace = Trace::of(&spans, READ_TRACE);
    let gateway = trace.component("gateway").expect("gateway span");
    let root = trace
        .parent_of(gateway)
        .expect("the inbound request's span");
    assert_eq!(
        root.parent_span_id, CLIENT_SPAN,
        "the client's traceparent is continued, not replaced"
    );
    assert_eq!(root.attribute("http.response.status_code"), Some("200"));
    let (resolve, identity) = called(&app, &trace, "gateway", "identity");
    let (forward, community) = called(&app, &trace, "gateway", "community");
    assert!(
        resolve.end_ns <= forward.start_ns,
        "the tenant is resolved before the request is forwarded"
    );
    // Storage shows up inside the component that used it: Spin's SQLite
    // spans, or its outbound PostgreSQL's (`MERIDIAN_DB=postgres`).
    let storage = match app.postgres() {
        Some(_) => "spin_outbound_pg",
        None => "spin_sqlite",
    };
    for component in [identity, community] {
        assert!(
            trace
                .0
                .iter()
                .any(|s| s.parent_span_id == component.span_id && s.name.starts_with(storage)),
            "{} has no storage spans",
            component.name
        );
    }

    // Its configuration cost the gateway one variable read (the composed
    // `settings`), not one per setting — and one more here: the suite's
    // tokens are published values, so the development switch that accepts
    // them is read (once an instance; a deployment with sound secrets
    // never reads it).
    let reads = |trace: &Trace, component: &Span| {
        trace
            .0
            .iter()
            .filter(|s| s.parent_span_id == component.span_id && s.name == "spin_variables.get")
            .count()
    };
    assert_eq!(reads(&trace, gateway), 2, "variable reads at the gateway");

    // The write: billing's call to community is part of the same trace.
    let trace = Trace::of(&spans, WRITE_TRACE);
    let (_, billing) = called(&app, &trace, "gateway", "billing");
    assert_eq!(reads(&trace, billing), 2, "variable reads at billing");
    let (_, community) = called(&app, &trace, "billing", "community");
    assert!(billing.start_ns <= community.start_ns && community.start_ns <= billing.end_ns);

    // Every component's log line for each request names the same trace.
    for (request_id, trace_id, components) in [
        (
            "traced-read",
            READ_TRACE,
            &["gateway", "identity", "community"][..],
        ),
        (
            "traced-write",
            WRITE_TRACE,
            &["gateway", "identity", "billing", "community"][..],
        ),
    ] {
        for component in components {
            let lines: Vec<_> = app
                .log_lines(component)
                .into_iter()
                .filter(|l| l["request_id"] == request_id && l.get("event").is_none())
                .collect();
            assert!(
                !lines.is_empty(),
                "{component} logged nothing for {request_id}"
            );
            for line in lines {
                assert_eq!(line["trace_id"], trace_id, "{component}: {line}");
            }
        }
    }
}
