//! `--postgres`: the read on PostgreSQL against the floor on the same
//! server.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use meridian_e2e::{SpinApp, SpinOptions};

use crate::picture::picture;
use crate::report::{command_output, machine, publish, spin_version, PG_BEGIN, PG_END};
use crate::wrk::{measure, Target};
use crate::{bench_app, Args};

/// `GET /v1/{t}/residents?limit=20` with every service on PostgreSQL,
/// against the floor's same read through `pg4` on the same server, at 1
/// and 8 connections in alternating rounds: its own section of
/// docs/benchmarks.md and docs/benchmarks-postgres.svg with `--write`.
pub(crate) fn postgres(args: &Args) -> Result<()> {
    let server = meridian_e2e::postgres::server().context(
        "--postgres needs MERIDIAN_DB=postgres and MERIDIAN_POSTGRES (scripts/bench.sh --postgres)",
    )?;
    let floor = SpinApp::start_floor_on(&meridian_e2e::postgres::PgDatabases::create(&server));
    let (app, tenant, _) = bench_app(
        SpinOptions::default()
            .variable("tenant_rate_limit", "off")
            .variable("tenant_concurrency_limit", "10000"),
    )?;
    let target = |name, url: String, token: &str| Target {
        name,
        url,
        method: "GET",
        headers: vec![("authorization".to_owned(), format!("Bearer {token}"))],
        body: None,
        keyed: false,
    };
    let reads = [
        target(
            PG_FLOOR,
            format!("{}/pg/residents", floor.url()),
            "floor-token",
        ),
        target(
            "Meridian",
            format!("{}{}", app.url(), tenant.path("/residents?limit=20")),
            &tenant.token,
        ),
    ];
    let mut measured = Vec::new();
    for connections in [1, 8] {
        measured.push(measure(
            "GET /v1/{t}/residents?limit=20 on PostgreSQL",
            &reads,
            connections,
            args,
        )?);
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "- **Command:** `scripts/bench.sh --postgres` (`perf --postgres --seconds {} --rounds {} --write`)\n\
         - **When, where:** {}; {}; {}; PostgreSQL 15 on loopback; `wrk` 4.1, one thread, keep-alive.\n\
         - The floor runs the same read through `pg4` on the same server: `mid` resolves the token (one indexed read), `back` reads a page of 20 residents (bench/floor/src/pg.rs). Meridian's services are each on a database of their own; its counts stay in the key-value store.\n\
         - Targets: p50 ≤ 1.3× the floor's, throughput ≥ 0.75×.\n",
        args.seconds,
        args.rounds,
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine(),
        spin_version(),
    );
    let _ = writeln!(
        md,
        "| connections | target | req/s | p50 ms | p99 ms | p50 ÷ floor | req/s ÷ floor |\n|---|---|---|---|---|---|---|"
    );
    for m in &measured {
        let floor = m.run(PG_FLOOR);
        m.no_failures()?;
        for (name, run) in &m.runs {
            let _ = writeln!(
                md,
                "| {} | {name} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} |",
                m.connections,
                run.rps(),
                run.at(50.0),
                run.at(99.0),
                run.at(50.0) / floor.at(50.0),
                run.rps() / floor.rps()
            );
        }
    }
    md.push_str("\n![Latency on PostgreSQL](benchmarks-postgres.svg)\n");
    println!("{md}");
    if args.write {
        publish(
            (PG_BEGIN, PG_END),
            "On PostgreSQL, against its floor",
            &md,
            "benchmarks-postgres.svg",
            &picture(&measured, &[]),
        )?;
    }
    Ok(())
}

/// The PostgreSQL read's floor.
pub(crate) const PG_FLOOR: &str = "floor, PostgreSQL";
