//! The failure memory under steady concurrent load on a real `spin up`,
//! each scenario with the memory on and off in the same run: a community
//! stand-in behind the gateway fails a share of calls with 503, and
//! clients read `GET /v1/{t}/residents` (gateway → identity → community)
//! as fast as the app answers.
//!
//! `cargo run -p meridian-tools --release --bin memory_bench [SECONDS] [CLIENTS]`
//! (defaults 20 s per scenario, 8 clients; about 3 minutes in all). Prints
//! a Markdown table and writes `target/bench/memory.json`.
//! `memory_bench SECONDS CLIENTS healthy [ROUNDS]` runs only the all-healthy
//! scenario, ROUNDS times (4) with off and on alternating, and prints the
//! memory's mean cost; `… recovery [ROUNDS]` only the recovery, printing
//! each run's JSON.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::ensure;
use meridian_e2e::api::TenantClient;
use meridian_e2e::{SpinApp, SpinOptions, StandIn, StandInReply};
use meridian_tools::{Positionals, Sorted};
use serde_json::json;

/// A community stand-in failing `percent` of calls (spread evenly), or all
/// of them while `down` is set.
struct Downstream {
    stand_in: StandIn,
    down: Arc<AtomicBool>,
}

impl Downstream {
    fn start(percent: u64) -> Self {
        let down = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let stand_in = {
            let down = down.clone();
            StandIn::start(move |_| {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                if down.load(Ordering::SeqCst) || (n * percent) % 100 + percent > 99 && percent > 0
                {
                    StandInReply::Json(503, "{}".into())
                } else {
                    StandInReply::Json(200, r#"{"items":[],"next_cursor":null}"#.into())
                }
            })
        };
        Self { stand_in, down }
    }
}

/// One answer: when it started (from the run's start), how long it took,
/// its status.
type Answer = (Duration, Duration, u16);

fn load(acme: &TenantClient, clients: usize, seconds: u64) -> (Vec<Answer>, Duration) {
    let answers = Mutex::new(Vec::new());
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| {
                let mut mine = Vec::new();
                while Instant::now() < until {
                    let at = started.elapsed();
                    let r = acme.get("/residents?limit=20").send();
                    mine.push((at, r.elapsed, r.status));
                }
                answers.lock().unwrap().extend(mine);
            });
        }
    });
    let wall = started.elapsed();
    (answers.into_inner().unwrap(), wall)
}

/// The median of `times`, ms (NaN for none).
fn median(times: Vec<Duration>) -> f64 {
    Sorted::new(times.iter().map(|t| t.as_secs_f64() * 1_000.0)).at(0.5)
}

struct Run {
    app: SpinApp,
    acme: TenantClient,
    downstream: Downstream,
}

fn start(percent: u64, memory: bool) -> Run {
    let downstream = Downstream::start(percent);
    let app = SpinApp::start_with(
        SpinOptions::default()
            .variable("community_url", downstream.stand_in.url())
            .variable("failure_memory", on_off_str(memory))
            // One tenant at full speed: its limits would be the measure
            // (the concurrency limiter counts, at a limit no run reaches).
            .variable("tenant_rate_limit", "off")
            .variable("tenant_concurrency_limit", "10000"),
    );
    let acme = app.tenant("bench");
    Run {
        app,
        acme,
        downstream,
    }
}

fn steady(percent: u64, memory: bool, clients: usize, seconds: u64) -> serde_json::Value {
    let run = start(percent, memory);
    let before = run.downstream.stand_in.count("/v1");
    let (answers, wall) = load(&run.acme, clients, seconds);
    let calls = run.downstream.stand_in.count("/v1") - before;
    let requests = answers.len();
    let ok = answers.iter().filter(|a| a.2 == 200).count();
    // Once the memory has had a second to learn.
    let settled: Vec<Duration> = answers
        .iter()
        .filter(|a| a.0 >= Duration::from_secs(1))
        .map(|a| a.1)
        .collect();
    drop(run.app);
    json!({
        "failing_percent": percent, "memory": memory, "requests": requests,
        "downstream_calls": calls,
        "attempts_per_request": calls as f64 / requests as f64,
        "ok": ok, "p50_ms": median(answers.iter().map(|a| a.1).collect()),
        "p50_after_1s_ms": median(settled),
        "req_per_s": requests as f64 / wall.as_secs_f64(),
    })
}

fn recovery(memory: bool, clients: usize, seconds: u64) -> serde_json::Value {
    let run = start(0, memory);
    run.downstream.down.store(true, Ordering::SeqCst);
    let down_for = seconds.div_ceil(2);
    let healer = {
        let down = run.downstream.down.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(down_for));
            down.store(false, Ordering::SeqCst);
        })
    };
    let (answers, _) = load(&run.acme, clients, seconds);
    healer.join().unwrap();
    let healed = Duration::from_secs(down_for);
    let after: Vec<&Answer> = answers.iter().filter(|a| a.0 >= healed).collect();
    let first_ok = after.iter().filter(|a| a.2 == 200).map(|a| a.0 + a.1).min();
    let last_failure = after.iter().filter(|a| a.2 != 200).map(|a| a.0 + a.1).max();
    let since = |t: Option<Duration>| t.map(|t| t.saturating_sub(healed).as_secs_f64() * 1_000.0);
    let mut failed_after: std::collections::BTreeMap<String, usize> = Default::default();
    for a in after.iter().filter(|a| a.2 != 200) {
        *failed_after.entry(a.2.to_string()).or_default() += 1;
    }
    // What a request that ran out of budget spent it on, from the logs.
    for line in run.app.log_lines("gateway") {
        if line["status"] == 504 {
            eprintln!("504: {line}");
        }
    }
    drop(run.app);
    json!({
        "scenario": "recovery", "memory": memory, "down_s": down_for,
        "first_success_after_heal_ms": since(first_ok),
        "last_failure_after_heal_ms": since(last_failure).unwrap_or(0.0),
        "requests_after_heal": after.len(),
        "failures_after_heal_by_status": failed_after,
    })
}

/// The all-healthy scenario alone, `rounds` times, off and on alternating
/// which goes first (so neither always runs on a machine the other warmed):
/// the cost of the memory on the success path, with its spread.
fn healthy_rounds(rounds: usize, clients: usize, seconds: u64) -> anyhow::Result<()> {
    let mut totals = [(0.0, 0.0); 2];
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for memory in order {
            let row = steady(0, memory, clients, seconds);
            eprintln!("{row}");
            let slot = &mut totals[usize::from(memory)];
            slot.0 += row["p50_ms"].as_f64().unwrap_or(f64::NAN);
            slot.1 += row["req_per_s"].as_f64().unwrap_or(f64::NAN);
        }
    }
    let [(off_p50, off_rps), (on_p50, on_rps)] = totals;
    println!(
        "all healthy, {rounds} rounds of {seconds} s at {clients} clients: p50 {:+.1} %, throughput {:+.1} % with the memory on",
        (on_p50 / off_p50 - 1.0) * 100.0,
        (on_rps / off_rps - 1.0) * 100.0
    );
    Ok(())
}

/// How the failure memory's switch is spelled, in the variable and the tables.
fn on_off_str(memory: bool) -> &'static str {
    if memory {
        "on"
    } else {
        "off"
    }
}

/// A result row's failure-memory switch.
fn on_off(row: &serde_json::Value) -> &'static str {
    on_off_str(row["memory"].as_bool().unwrap_or(false))
}

fn main() -> anyhow::Result<()> {
    let args = Positionals::from_env()?;
    let seconds: u64 = args.get(0, "SECONDS", 20)?;
    let clients: usize = args.get(1, "CLIENTS", 8)?;
    ensure!(seconds >= 2 && clients >= 1, "SECONDS >= 2, CLIENTS >= 1");
    if let Some(scenario) = args.raw(2) {
        let rounds: usize = args.get(3, "ROUNDS", 4)?;
        return match scenario {
            "healthy" => healthy_rounds(rounds, clients, seconds),
            "recovery" => {
                for _ in 0..rounds {
                    for memory in [false, true] {
                        println!("{}", recovery(memory, clients, seconds));
                    }
                }
                Ok(())
            }
            other => anyhow::bail!("SCENARIO is healthy or recovery, not {other:?}"),
        };
    }
    let mut steady_rows = Vec::new();
    for percent in [30, 100, 0] {
        for memory in [false, true] {
            let row = steady(percent, memory, clients, seconds);
            eprintln!("{row}");
            steady_rows.push(row);
        }
    }
    let mut recovery_rows = Vec::new();
    for memory in [false, true] {
        let row = recovery(memory, clients, seconds);
        eprintln!("{row}");
        recovery_rows.push(row);
    }
    println!("| downstream failing | memory | requests | attempts / request | p50 | p50 after 1 s | req/s |");
    println!("|---|---|---|---|---|---|---|");
    for r in &steady_rows {
        println!(
            "| {} % | {} | {} | {:.3} | {:.2} ms | {:.2} ms | {:.0} |",
            r["failing_percent"],
            on_off(r),
            r["requests"],
            r["attempts_per_request"].as_f64().unwrap_or(f64::NAN),
            r["p50_ms"].as_f64().unwrap_or(f64::NAN),
            r["p50_after_1s_ms"].as_f64().unwrap_or(f64::NAN),
            r["req_per_s"].as_f64().unwrap_or(f64::NAN),
        );
    }
    println!();
    println!("| recovery | memory | first success after heal | last failure after heal |");
    println!("|---|---|---|---|");
    for r in &recovery_rows {
        println!(
            "| down {} s, then healed | {} | {} | {:.0} ms |",
            r["down_s"],
            on_off(r),
            r["first_success_after_heal_ms"]
                .as_f64()
                .map_or("none".to_owned(), |ms| format!("{ms:.0} ms")),
            r["last_failure_after_heal_ms"].as_f64().unwrap_or(f64::NAN),
        );
    }
    let out = meridian_e2e::repo_root().join("target/bench");
    std::fs::create_dir_all(&out)?;
    let report = json!({"seconds": seconds, "clients": clients, "steady": steady_rows, "recovery": recovery_rows});
    std::fs::write(
        out.join("memory.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    eprintln!("wrote {}", out.join("memory.json").display());
    Ok(())
}
