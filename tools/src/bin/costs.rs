//! What one answer costs the host in CPU: a served read against the ways
//! Meridian refuses, beside the floor app's one-instance and three-instance
//! answers (docs/known-limits.md, "A refusal costs an instance"). It is
//! why the throttle inside the gateway cannot hold goodput far past the
//! peak: every refusal still costs at least an instance.
//!
//! Run: `cargo run -p meridian-tools --release --bin costs -- [SECONDS]`
//! (default 5) after building the release components. Each kind runs as a
//! closed loop for SECONDS; its cost is the CPU time the app's processes
//! used (`/proc`, every thread, threads that ended included) over the
//! answers they gave. The load generator's own CPU is not counted; on a
//! 2-core machine it still competes with the app for the cores, so the
//! figures are comparable within a run, not across machines.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use meridian_e2e::api::TenantClient;
use meridian_e2e::load::{self, Target};
use meridian_e2e::{SpinApp, SpinOptions};
use meridian_tools::Positionals;
use serde_json::json;

/// One kind of answer and how it is asked for.
struct Kind<'a> {
    name: &'static str,
    /// The app that answers it.
    on: &'a SpinApp,
    target: Target,
    /// Connections: more where an answer is held (a refusal waits out
    /// what is left of its budget), so the loop still gets enough answers.
    connections: usize,
    /// The status every answer must have, or the kind measured something
    /// else.
    status: u16,
}

/// The CPU per answer of `kind`, and how many answers that was over (at
/// least 95 % of them of the kind's status: a held refusal's budget may
/// run out first).
fn measure(kind: &Kind<'_>, run: Duration) -> Result<(Duration, usize)> {
    let app = kind.on;
    let before = app.cpu_time().context("the app's CPU time (/proc)")?;
    let samples = load::closed_loop(&kind.target, kind.connections, run, |_| ());
    let after = app.cpu_time().context("the app's CPU time (/proc)")?;
    let mut statuses = BTreeMap::<u16, usize>::new();
    for s in &samples {
        *statuses.entry(s.status).or_default() += 1;
    }
    let answers = samples.len();
    ensure!(
        statuses.get(&kind.status).copied().unwrap_or(0) * 100 >= answers * 95,
        "{}: answered {statuses:?}, not mostly {}",
        kind.name,
        kind.status
    );
    Ok(((after - before) / u32::try_from(answers)?, answers))
}

fn main() -> Result<()> {
    let run = Duration::from_secs(Positionals::from_env()?.get(0, "SECONDS", 5)?);
    let floor = SpinApp::start_floor();
    // A tenant's rate is one request a minute, but for the `open`
    // tenant's (its override): the `limited` tenant's requests are refused
    // after the batch read. The throttle off: it would refuse some
    // of each kind, and what is measured must be one kind at a time.
    let app = SpinApp::start_with(
        SpinOptions::default()
            .sound_secrets()
            .variable("tenant_rate_limit", "1/60s")
            .variable("tenant_concurrency_limit", "10000")
            .variable("admission", "off"),
    );
    let open = app.tenant("open");
    open.resident("Ada");
    let limited = app.tenant("limited");
    let admin = format!("Bearer {}", app.admin_token());
    let set = app.client().send(
        "PUT",
        "/ops/tenants/open/limits",
        &[
            ("authorization", &admin),
            ("content-type", "application/json"),
        ],
        Some(&json!({"quota": 1_000_000, "window_s": 1}).to_string()),
    );
    ensure!(
        set.status == 200,
        "the open tenant's override: {}",
        set.body
    );
    let read = |tenant: &TenantClient, budget_ms| {
        Target::as_caller(
            app.url(),
            &tenant.path("/residents?limit=20"),
            &tenant.token,
            budget_ms,
        )
    };
    // The limited tenant's quota spent.
    limited.get("/residents").send();
    let kinds = [
        Kind {
            name: "floor: one instance, nothing read",
            on: &floor,
            target: Target::get(floor.url(), "/healthz", &[]),
            connections: 8,
            status: 200,
        },
        Kind {
            name: "floor: three instances, nothing read",
            on: &floor,
            target: Target::get(floor.url(), "/noop", &[]),
            connections: 8,
            status: 200,
        },
        Kind {
            name: "Meridian: /healthz (the gateway, nothing read)",
            on: &app,
            target: Target::get(app.url(), "/healthz", &[]),
            connections: 8,
            status: 200,
        },
        Kind {
            name: "Meridian: refused on arrival (504, too little budget)",
            on: &app,
            target: read(&open, 1),
            connections: 8,
            status: 504,
        },
        Kind {
            name: "Meridian: refused after the batch read (429, held)",
            on: &app,
            target: read(&limited, 50),
            connections: 64,
            status: 429,
        },
        // Last: the served read every figure is a share of.
        Kind {
            name: "Meridian: a served read (three instances)",
            on: &app,
            target: read(&open, 3_000),
            connections: 8,
            status: 200,
        },
    ];
    println!("CPU of the app's processes per answer, closed loop of {run:?} each:");
    let mut rows = Vec::new();
    for kind in &kinds {
        let (cpu, answers) = measure(kind, run)?;
        rows.push((kind.name, cpu, answers));
    }
    let served = rows.last().context("the served read")?.1;
    for (name, cpu, answers) in rows {
        println!(
            "  {name:<56} {:>6.0} µs  ({:.2} of a served read; {answers} answers)",
            cpu.as_secs_f64() * 1e6,
            cpu.as_secs_f64() / served.as_secs_f64()
        );
    }
    Ok(())
}
