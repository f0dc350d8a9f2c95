//! Latency benchmark against a real `spin up`: sequential requests over one
//! keep-alive connection per route, recorded as percentiles in
//! `target/bench/latency.json`. Run: `cargo run -p meridian-tools --release --bin bench [requests]`.

use std::time::Instant;

use meridian_e2e::{SpinApp, SpinOptions};
use meridian_tools::{Positionals, Sorted};
use serde_json::json;

fn main() {
    let n: usize = Positionals::from_env()
        .and_then(|args| args.get(0, "REQUESTS", 300))
        .unwrap_or_else(|e| panic!("{e:#}"));
    // One tenant as fast as it goes: its rate limit would be the measure.
    let app = SpinApp::start_with(SpinOptions::default().variable("tenant_rate_limit", "off"));
    let client = app.client();
    let acme = app.tenant("bench");
    let resident = acme.resident("Bench Resident");
    let invoice = json!({"resident_id": resident, "amount_cents": 100, "currency": "EUR", "description": "bench", "due_date": "2026-12-31"});

    type Probe<'a> = (&'static str, &'static str, Box<dyn Fn() -> u16 + 'a>);
    let probes: Vec<Probe<'_>> = vec![
        (
            "GET /healthz",
            "gateway only",
            Box::new(|| client.get("/healthz").status),
        ),
        (
            "GET /v1/{t}",
            "gateway -> identity (resolve) -> identity",
            Box::new(|| acme.get("").send().status),
        ),
        (
            "GET /v1/{t}/residents",
            "gateway -> identity -> community",
            Box::new(|| acme.get("/residents?limit=20").send().status),
        ),
        (
            "POST /v1/{t}/invoices",
            "gateway -> identity -> billing -> community (check + inline event)",
            Box::new(|| acme.post("/invoices").json(&invoice).status),
        ),
    ];

    let mut results = Vec::new();
    for (name, path, probe) in &probes {
        for _ in 0..10 {
            probe();
        }
        let mut times = Vec::with_capacity(n);
        let started = Instant::now();
        for _ in 0..n {
            let t = Instant::now();
            let status = probe();
            assert!(status < 300, "{name} answered {status}");
            times.push(t.elapsed());
        }
        let wall = started.elapsed();
        let times = Sorted::new(times.iter().map(|t| t.as_secs_f64() * 1_000.0));
        let row = json!({
            "route": name, "path": path, "requests": n,
            "p50_ms": times.at(0.50), "p90_ms": times.at(0.90),
            "p99_ms": times.at(0.99), "max_ms": times.at(1.0),
            "req_per_s": n as f64 / wall.as_secs_f64(),
        });
        println!("{row}");
        results.push(row);
    }
    let out = meridian_e2e::repo_root().join("target/bench");
    std::fs::create_dir_all(&out).expect("bench dir");
    let report = json!({"spin": meridian_e2e::spin_binary().map(|p| p.display().to_string()), "results": results});
    std::fs::write(
        out.join("latency.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .expect("write report");
    println!("wrote {}", out.join("latency.json").display());
}
