//! What one request costs the host, counted: every host call each
//! component makes for a request of each kind, from Spin's own trace of a
//! real `spin up` (each variable lookup, key-value, SQL and outbound call
//! is a span of the component's instance), with the time Spin's spans
//! give each, and the log lines each component writes for it.
//!
//! Kinds: a page read (`GET /v1/{t}/residents?limit=20`, 20 residents), a
//! keyed write (`POST /v1/{t}/invoices` with an `Idempotency-Key`), a
//! `401` (a wrong token), a `504` refused before any call (a 1 ms budget),
//! and a `429` (a tenant over its rate, one request a minute: a credential
//! already refused in the window). Each after a warm-up, `SAMPLES` requests each (default 10);
//! a count is the median of the samples, a time the median of each
//! sample's sum, µs.
//!
//! Run: `cargo run -p meridian-tools --release --bin host_calls [SAMPLES]`
//! after building the components (scripts/bench.sh builds them); prints
//! the table docs/benchmarks.md keeps ("What one request costs the host").
//! The span times are wall time in the host, Spin's tracing on: they rank
//! the calls; the CPU of a whole answer is `costs`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Result};
use meridian_e2e::api::{TenantClient, TenantRequest};
use meridian_e2e::otlp::{OtlpReceiver, Span};
use meridian_e2e::{SpinApp, SpinOptions};
use meridian_tools::{Positionals, Sorted};
use serde_json::json;

/// The components, in the order a request meets them.
const COMPONENTS: [&str; 4] = ["gateway", "identity", "community", "billing"];

/// One sampled request: its trace id and request id.
struct Sample {
    trace: String,
    request_id: String,
}

/// A request of one kind for `tenant`, the `n`-th sent.
type Kind = for<'t> fn(&'t TenantClient, u64) -> TenantRequest<'t>;

fn read(t: &TenantClient, _: u64) -> TenantRequest<'_> {
    t.get("/residents?limit=20")
}

fn keyed_write(t: &TenantClient, n: u64) -> TenantRequest<'_> {
    t.post("/invoices").key(&format!("host-calls-{n}"))
}

fn stranger(t: &TenantClient, _: u64) -> TenantRequest<'_> {
    t.get("/residents?limit=20").token("mrd_not_a_token")
}

fn spent(t: &TenantClient, _: u64) -> TenantRequest<'_> {
    t.get("/residents?limit=20")
        .header("x-meridian-timeout-ms", "1")
}

fn small_read(t: &TenantClient, _: u64) -> TenantRequest<'_> {
    t.get("/residents?limit=1")
}

/// `samples` requests of `kind` after a warm-up of five (every instance's
/// first request and the caches aside), each with its own trace and
/// request id; each must answer `expected`.
fn measure(
    name: &str,
    (tenant, kind, body): (&TenantClient, Kind, Option<&serde_json::Value>),
    expected: u16,
    samples: usize,
    n: &mut u64,
) -> Result<(String, Vec<Sample>)> {
    for _ in 0..5 {
        *n += 1;
        finish(kind(tenant, *n), body);
    }
    let mut taken = Vec::new();
    while taken.len() < samples {
        *n += 1;
        let trace = format!("{:032x}", *n);
        let request_id = format!("host-calls-{}", *n);
        let request = kind(tenant, *n)
            .header("traceparent", &format!("00-{trace}-{:016x}-01", *n))
            .header("x-request-id", &request_id);
        let status = finish(request, body);
        ensure!(
            status == expected,
            "{name}: expected {expected}, got {status}"
        );
        taken.push(Sample { trace, request_id });
    }
    Ok((name.to_owned(), taken))
}

fn main() -> Result<()> {
    let samples: usize = Positionals::from_env()?.get(0, "SAMPLES", 10)?;
    ensure!(samples >= 1, "SAMPLES >= 1");
    let receiver = OtlpReceiver::start();
    let app = SpinApp::start_with(
        SpinOptions::default()
            .sound_secrets()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .env("OTEL_BSP_SCHEDULE_DELAY", "200"),
    );
    app.migrate();
    let acme = app.tenant("acme");
    let resident = (0..20)
        .map(|i| acme.resident(&format!("Resident {i}")))
        .next_back()
        .unwrap_or_default();
    let flood = app.tenant("flood");
    let invoice = json!({"resident_id": resident, "amount_cents": 100, "currency": "EUR", "description": "host calls", "due_date": "2026-12-31"});

    let mut n = 0;
    let mut report = vec![
        measure("GET page", (&acme, read, None), 200, samples, &mut n)?,
        measure(
            "keyed POST",
            (&acme, keyed_write, Some(&invoice)),
            201,
            samples,
            &mut n,
        )?,
        measure("401", (&acme, stranger, None), 401, samples, &mut n)?,
        measure(
            "504 (1 ms budget)",
            (&acme, spent, None),
            504,
            samples,
            &mut n,
        )?,
    ];
    // A tenant over its rate: its override is one request a minute, so its
    // credential, refused once, is refused again before any call.
    let limits = app.client().send(
        "PUT",
        "/ops/tenants/flood/limits",
        &[
            ("authorization", &format!("Bearer {}", app.admin_token())),
            ("content-type", "application/json"),
        ],
        Some(r#"{"quota": 1, "window_s": 60}"#),
    );
    ensure!(
        limits.status == 200,
        "setting flood's rate: {}",
        limits.body
    );
    for _ in 0..3 {
        small_read(&flood, 0).send();
    }
    report.push(measure(
        "429 (over the rate)",
        (&flood, small_read, None),
        429,
        samples,
        &mut n,
    )?);

    let traces: Vec<String> = report
        .iter()
        .flat_map(|(_, taken)| taken.iter().map(|s| s.trace.clone()))
        .collect();
    let spans = receiver.wait_for(Duration::from_secs(20), |spans| {
        traces
            .iter()
            .all(|trace| spans.iter().any(|s| &s.trace_id == trace))
    });
    print_table(&app, &spans, &report);
    Ok(())
}

/// Sends `request` (with `body`, if any) and answers its status.
fn finish(request: TenantRequest<'_>, body: Option<&serde_json::Value>) -> u16 {
    match body {
        Some(body) => request.json(body).status,
        None => request.send().status,
    }
}

/// The component an instance span runs (`execute_wasm_component gateway`).
fn component(span: &Span) -> Option<&str> {
    span.name.strip_prefix("execute_wasm_component ")
}

/// What `instance`'s own host calls were: each call's name and time, ns.
/// An outbound call is named by its method and the component it reached;
/// what that component did is its own instance's.
fn host_calls(spans: &[Span], instance: &Span) -> Vec<(String, u64)> {
    let mut calls = Vec::new();
    let mut stack = vec![instance.span_id.as_str()];
    while let Some(parent) = stack.pop() {
        for span in spans.iter().filter(|s| s.parent_span_id == parent) {
            if component(span).is_some() {
                continue;
            }
            let took = span.end_ns.saturating_sub(span.start_ns);
            match span.attribute("url.full") {
                Some(_) => {
                    let to = spans
                        .iter()
                        .filter(|s| s.parent_span_id == span.span_id)
                        .find_map(component)
                        .unwrap_or("elsewhere");
                    calls.push((format!("outbound {} to {to}", span.name), took));
                    stack.push(span.span_id.as_str());
                }
                None => calls.push((span.name.clone(), took)),
            }
        }
    }
    calls
}

/// Prints, per kind and component, each host call's count and time per
/// request, and the log lines written, as a markdown table.
fn print_table(app: &SpinApp, spans: &[Span], report: &[(String, Vec<Sample>)]) {
    let logs: BTreeMap<&str, Vec<serde_json::Value>> =
        COMPONENTS.iter().map(|c| (*c, app.log_lines(c))).collect();
    println!("| request | component | host call | per request | host µs per request |");
    println!("|---|---|---|---|---|");
    for (kind, taken) in report {
        for name in COMPONENTS {
            // Per sample: each call's count and summed time.
            let mut per_call: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
            let mut instances = Vec::new();
            for sample in taken {
                let mut counts: BTreeMap<String, (f64, f64)> = BTreeMap::new();
                let ran: Vec<&Span> = spans
                    .iter()
                    .filter(|s| s.trace_id == sample.trace && component(s) == Some(name))
                    .collect();
                instances.push(ran.len() as f64);
                for instance in ran {
                    for (call, ns) in host_calls(spans, instance) {
                        let entry = counts.entry(call).or_default();
                        entry.0 += 1.0;
                        entry.1 += ns as f64 / 1e3;
                    }
                }
                let lines = logs[name]
                    .iter()
                    .filter(|l| l["request_id"] == sample.request_id.as_str())
                    .count();
                counts.insert("log line (stderr)".to_owned(), (lines as f64, 0.0));
                for (call, (count, us)) in counts {
                    let entry = per_call.entry(call).or_default();
                    entry.0.push(count);
                    entry.1.push(us);
                }
            }
            if Sorted::new(instances).at(0.5) == 0.0 {
                continue;
            }
            for (call, (counts, us)) in per_call {
                // A call some samples lack counts 0 there.
                let mut counts = counts;
                let mut us = us;
                counts.resize(taken.len(), 0.0);
                us.resize(taken.len(), 0.0);
                let count = Sorted::new(counts).at(0.5);
                if count == 0.0 {
                    continue;
                }
                println!(
                    "| {kind} | {name} | {call} | {count} | {:.0} |",
                    Sorted::new(us).at(0.5)
                );
            }
        }
    }
}
