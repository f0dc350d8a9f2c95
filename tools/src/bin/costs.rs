//! What one answer costs the host in CPU: a served read against the ways
//! Meridian refuses, beside the floor app's one-instance and three-instance
//! answers (docs/known-limits.md, "A refusal costs an instance"). It is
//! why the throttle inside the gateway cannot hold goodput far past the
//! peak: every refusal still costs at least an instance.
//!
//! Run: `cargo run -p meridian-tools --release --bin costs --
//! [--pinned-variables] [SECONDS] [ROUNDS]` (default 5 s, 1 round) after
//! building the release
//! components. Each kind runs as a closed loop for SECONDS; its cost is the
//! CPU time the app's processes used (`/proc`, every thread, threads that
//! ended included) over the answers they gave. With more than one round
//! the kinds run in turn ROUNDS times, so each of Meridian's figures is
//! alternated with the floor's, and each figure and each target's ratio is
//! given as its median and its range over the rounds. The load generator's
//! own CPU is not counted; on a 2-core machine it still competes with the
//! app for the cores, so the figures are comparable within a run, not
//! across machines.
//!
//! `--pinned-variables` runs Meridian with its variables pinned in a static
//! provider of its runtime configuration (docs/configuration.md): what
//! reading them costs where a platform lets them be pinned.
//!
//! The targets (issue 59): a served read at most 1.25 × the floor's same
//! reads through three instances (a token resolved in one, a page read in
//! another), and the gateway's bare answer at most 1.5 × the floor's one
//! instance.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use meridian_e2e::api::TenantClient;
use meridian_e2e::load::{self, Target};
use meridian_e2e::{SpinApp, SpinOptions};
use meridian_tools::{Positionals, Sorted};
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
    let (args, flags) = Positionals::from_env_with_flags(&["pinned-variables"])?;
    let pinned = !flags.is_empty();
    let run = Duration::from_secs(args.get(0, "SECONDS", 5)?);
    let rounds: usize = args.get(1, "ROUNDS", 1)?;
    ensure!(rounds >= 1, "ROUNDS >= 1");
    let floor = SpinApp::start_floor();
    // A tenant's rate is one request a minute, but for the `open`
    // tenant's (its override): the `limited` tenant's requests are refused
    // after the batch read. The throttle off: it would refuse some
    // of each kind, and what is measured must be one kind at a time.
    let options = SpinOptions::default()
        .sound_secrets()
        .variable("tenant_rate_limit", "1/60s")
        .variable("tenant_concurrency_limit", "10000")
        .variable("admission", "off");
    let app = SpinApp::start_with(match pinned {
        true => options.pin_variables(),
        false => options,
    });
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
            name: ONE_INSTANCE,
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
            name: SAME_READS,
            on: &floor,
            target: Target::get(
                floor.url(),
                "/sqlite/residents",
                &[("authorization", "Bearer floor-token")],
            ),
            connections: 8,
            status: 200,
        },
        Kind {
            name: BARE,
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
            name: SERVED,
            on: &app,
            target: read(&open, 3_000),
            connections: 8,
            status: 200,
        },
    ];
    println!(
        "CPU of the app's processes per answer, closed loop of {run:?} each, {rounds} round(s){}:",
        if pinned {
            ", Meridian's variables pinned"
        } else {
            ""
        }
    );
    let mut cpu: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..rounds {
        for kind in &kinds {
            let (per_answer, n) = measure(kind, run)?;
            cpu.entry(kind.name)
                .or_default()
                .push(per_answer.as_secs_f64() * 1e6);
            *answers.entry(kind.name).or_default() += n;
        }
    }
    let rounds_of = |name: &str| cpu.get(name).cloned().unwrap_or_default();
    let figures = |name: &str| Sorted::new(rounds_of(name));
    let served = figures(SERVED).at(0.5);
    for kind in &kinds {
        let name = kind.name;
        let figures = figures(name);
        println!(
            "  {name:<60} {:>6.0} µs ({:.0}–{:.0})  ({:.2} of a served read; {} answers)",
            figures.at(0.5),
            figures.at(0.0),
            figures.at(1.0),
            figures.at(0.5) / served,
            answers.get(name).copied().unwrap_or(0)
        );
    }
    // Each round's ratio, so the spread is the rounds' own.
    let ratio = |of: &str, to: &str| -> Sorted {
        Sorted::new(rounds_of(of).iter().zip(&rounds_of(to)).map(|(a, b)| a / b))
    };
    println!("targets (each round's ratio: median, range):");
    for (what, of, to, at_most) in [
        (
            "a served read ÷ the floor's same reads",
            SERVED,
            SAME_READS,
            1.25,
        ),
        (
            "the gateway's bare answer ÷ the floor's one instance",
            BARE,
            ONE_INSTANCE,
            1.5,
        ),
    ] {
        let r = ratio(of, to);
        println!(
            "  {what:<56} {:.2} × ({:.2}–{:.2}; target ≤ {at_most}: {})",
            r.at(0.5),
            r.at(0.0),
            r.at(1.0),
            if r.at(0.5) <= at_most {
                "met"
            } else {
                "not met"
            }
        );
    }
    Ok(())
}

/// The kinds the targets compare.
const ONE_INSTANCE: &str = "floor: one instance, nothing read";
const SAME_READS: &str = "floor: three instances, the same reads (token, page)";
const BARE: &str = "Meridian: /healthz (the gateway, nothing read)";
const SERVED: &str = "Meridian: a served read (gateway, community; resolution remembered)";
