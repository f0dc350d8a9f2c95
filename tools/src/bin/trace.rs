//! Captures a real trace of a 504 for the README's operator section:
//! starts `spin up` with community replaced by a component that never
//! answers, exports its spans to a local OTLP receiver, sends one read with
//! a 400 ms budget and prints the trace as a tree, the answer's headers and
//! every component's log lines for the request.
//!
//! `cargo run -p meridian-tools --bin trace` (after building the components
//! and the `hang` test component for wasm32-wasip2, as the test command does).
//!
//! `trace --ok` is the profiler of the healthy path instead: the real app, a
//! warmed-up `GET /v1/{t}/residents?limit=20` (20 residents), and the same
//! tree — every host call (SQL, variables, key-value, outbound) timed by
//! Spin itself.

use std::time::Duration;

use anyhow::{ensure, Context};
use meridian_e2e::otlp::{render_tree, OtlpReceiver};
use meridian_e2e::{SpinApp, SpinOptions};

const TRACE: &str = "5b8efff798038103d269b633813fc60c";

fn main() -> anyhow::Result<()> {
    let mut healthy = false;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            lexopt::Arg::Long("ok") => healthy = true,
            _ => return Err(arg.unexpected().into()),
        }
    }
    let receiver = OtlpReceiver::start();
    let mut options = SpinOptions::default()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_BSP_SCHEDULE_DELAY", "200");
    if !healthy {
        options = options.replace_component("community", "hang");
    }
    let app = SpinApp::start_with(options);
    let acme = app.tenant("acme");
    if healthy {
        for i in 0..20 {
            acme.resident(&format!("Resident {i}"));
        }
        for _ in 0..50 {
            acme.get("/residents?limit=20").send();
        }
    }
    let reply = acme
        .get("/residents?limit=20")
        .header("x-request-id", "why-504")
        .header("x-meridian-timeout-ms", "400")
        .header("traceparent", &format!("00-{TRACE}-eee19b7ec3c1b174-01"))
        .send();
    let expected = if healthy { 200 } else { 504 };
    ensure!(
        reply.status == expected,
        "expected a {expected}, got {}",
        reply.status
    );

    let spans = receiver.wait_for(Duration::from_secs(15), |spans| {
        spans
            .iter()
            .any(|s| s.trace_id == TRACE && s.name == "GET /...")
    });
    println!("== answer: {} after {:?}", reply.status, reply.elapsed);
    for name in ["x-request-id", "x-meridian-attempts", "server-timing"] {
        println!("{name}: {}", reply.header(name).unwrap_or("-"));
    }
    println!("{}", reply.body);
    println!("\n== trace {TRACE} (start, duration, span)");
    print!("{}", render_tree(&spans, TRACE));
    println!("\n== log lines of request why-504");
    for component in ["gateway", "identity", "community"] {
        for line in app.log_lines(component) {
            if line["request_id"] == "why-504" {
                println!("{}", serde_json::to_string(&line).context("a log line")?);
            }
        }
    }
    Ok(())
}
