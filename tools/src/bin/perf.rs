//! Meridian against the floor (docs/testing.md, "Benchmarks"): every figure a ratio to
//! the least a Spin app of the same shape costs, measured in the same run.
//!
//! Run through `scripts/bench.sh` (it builds the components and installs
//! `wrk`); by hand: `cargo run -p meridian-tools --release --bin perf --
//! [--seconds S] [--rounds R] [--per-budget N] [--write] [--uncached]`
//! (`--uncached`: also Meridian with its resolution cache off, same rounds).
//!
//! - **P1**: `wrk` (keep-alive, 1 and 8 connections) against Meridian's
//!   `GET /v1/{t}/residents?limit=20` and keyed `POST /v1/{t}/invoices`, and
//!   against the floor app (`bench/floor.toml`): a no-op chain of three
//!   components and the same chain doing the SQLite work (one indexed read,
//!   then a page of 20 rows or one insert), and for the keyed write a floor
//!   with its hops and statements (`floor, same work`: the claim, the
//!   resident check, one transaction, the event; its rows on a write-ahead
//!   database, as billing's are), which the write's ratio is taken
//!   against. Rounds alternate the order.
//! - **P2**: time-to-504 behind a hung community, per budget.
//! - **P3**: overload — more connections than the machine serves within a
//!   tight budget; statements started after their deadline (the services'
//!   `statement_late` lines) and answers later than the budget.
//! - **P5**: each `.wasm` against the spin-sdk hello-world (`bench/hello`).
//!
//! Writes `target/bench/perf.json`; with `--write`, also `docs/benchmarks.md`'s
//! floor section and `docs/benchmarks.svg` (the latency CDFs and the 504 times).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use meridian_e2e::api::{add_resident, call_with, create_tenant, TenantClient};
use meridian_e2e::{load, repo_root, spin_binary, SpinApp, SpinOptions};
use serde_json::{json, Value};

/// How the run is sized.
struct Args {
    /// Seconds per `wrk` measurement.
    seconds: u64,
    /// Alternating rounds per scenario.
    rounds: usize,
    /// Requests per budget behind the hung downstream.
    per_budget: usize,
    /// Budgets for the time-to-504, ms.
    budgets: Vec<u64>,
    /// Write docs/benchmarks.md and docs/benchmarks.svg.
    write: bool,
    /// Run one part alone (`p1`: the reads and writes against the floor,
    /// `p1-read` the reads only;
    /// `p2`: time-to-504; `p3`: overload), printing its figures and writing
    /// nothing: for profiling one change.
    only: Option<String>,
    /// Also measure Meridian with `resolution_cache = "off"` (a second app
    /// beside it, in the same alternating rounds): the cache's effect,
    /// same run.
    uncached: bool,
    /// Measure the read on PostgreSQL against the floor on the same server
    /// (`MERIDIAN_DB=postgres`; scripts/bench.sh --postgres) and nothing else.
    postgres: bool,
}

impl Args {
    fn parse() -> Result<Self> {
        let mut args = Self {
            seconds: 10,
            rounds: 3,
            per_budget: 50,
            budgets: vec![100, 400, 1_000, 3_000],
            write: false,
            only: None,
            uncached: false,
            postgres: false,
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut value = |name: &str| -> Result<u64> {
                it.next()
                    .with_context(|| format!("{name} needs a value"))?
                    .parse()
                    .with_context(|| format!("{name} takes a whole number"))
            };
            match arg.as_str() {
                "--seconds" => args.seconds = value("--seconds")?.max(1),
                "--rounds" => args.rounds = usize::try_from(value("--rounds")?.max(1))?,
                "--per-budget" => args.per_budget = usize::try_from(value("--per-budget")?.max(1))?,
                "--budgets" => {
                    let list = it.next().context("--budgets needs a value, e.g. 100,400")?;
                    args.budgets = list
                        .split(',')
                        .map(|b| b.parse().with_context(|| format!("bad budget {b:?}")))
                        .collect::<Result<_>>()?;
                }
                "--write" => args.write = true,
                "--uncached" => args.uncached = true,
                "--postgres" => args.postgres = true,
                "--only" => {
                    let part = it.next().context("--only needs p1, p2 or p3")?;
                    ensure!(
                        ["p1", "p1-read", "p2", "p3"].contains(&part.as_str()),
                        "--only takes p1, p1-read, p2 or p3"
                    );
                    args.only = Some(part);
                }
                other => {
                    bail!("unknown argument {other:?} (see the header of tools/src/bin/perf.rs)")
                }
            }
        }
        Ok(args)
    }
}

/// One `wrk` run, as `bench/wrk/report.lua` prints it.
#[derive(Debug, Clone)]
struct Run {
    requests: u64,
    seconds: f64,
    /// Answers that were not 2xx/3xx, and socket errors.
    failures: u64,
    statuses: BTreeMap<String, u64>,
    max_ms: f64,
    /// (percentile, ms).
    cdf: Vec<(f64, f64)>,
}

impl Run {
    fn parse(line: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(line).context("wrk's report line")?;
        let n = |k: &str| {
            v[k].as_u64()
                .with_context(|| format!("wrk report without {k}"))
        };
        let cdf = v["percentiles_us"]
            .as_array()
            .context("wrk report without percentiles")?
            .iter()
            .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()? / 1_000.0)))
            .collect();
        let statuses = v["statuses"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            requests: n("requests")?,
            seconds: n("duration_us")? as f64 / 1e6,
            failures: n("non_2xx_3xx")?
                + n("connect_errors")?
                + n("read_errors")?
                + n("write_errors")?
                + n("timeouts")?,
            statuses,
            max_ms: n("max_us")? as f64 / 1_000.0,
            cdf,
        })
    }

    /// The latency at percentile `p`, ms.
    fn at(&self, p: f64) -> f64 {
        self.cdf
            .iter()
            .find(|(q, _)| *q >= p - 1e-9)
            .or(self.cdf.last())
            .map_or(f64::NAN, |(_, ms)| *ms)
    }

    fn rps(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    /// Several rounds as one: requests and time summed, each percentile the
    /// mean of the rounds'.
    fn pooled(runs: &[Run]) -> Run {
        let first = &runs[0];
        let mut statuses = BTreeMap::new();
        for run in runs {
            for (k, n) in &run.statuses {
                *statuses.entry(k.clone()).or_insert(0) += n;
            }
        }
        Run {
            requests: runs.iter().map(|r| r.requests).sum(),
            seconds: runs.iter().map(|r| r.seconds).sum(),
            failures: runs.iter().map(|r| r.failures).sum(),
            statuses,
            max_ms: runs.iter().map(|r| r.max_ms).fold(0.0, f64::max),
            cdf: first
                .cdf
                .iter()
                .enumerate()
                .map(|(i, (p, _))| {
                    let sum: f64 = runs
                        .iter()
                        .map(|r| r.cdf.get(i).map_or(f64::NAN, |c| c.1))
                        .sum();
                    (*p, sum / runs.len() as f64)
                })
                .collect(),
        }
    }
}

/// What `wrk` is pointed at.
#[derive(Clone)]
struct Target {
    name: &'static str,
    url: String,
    method: &'static str,
    headers: Vec<(String, String)>,
    body: Option<String>,
    /// Whether every request gets its own Idempotency-Key (prefixed with
    /// the run's tag).
    keyed: bool,
}

fn wrk(target: &Target, connections: u32, seconds: u64, tag: &str) -> Result<Run> {
    let script = repo_root().join("bench/wrk/report.lua");
    let mut command = Command::new(std::env::var("WRK_BIN").unwrap_or_else(|_| "wrk".into()));
    command
        .args(["-t1", "--timeout", "10s"])
        .arg(format!("-c{connections}"))
        .arg(format!("-d{seconds}s"))
        .arg("-s")
        .arg(&script);
    for (name, value) in &target.headers {
        command.arg("-H").arg(format!("{name}: {value}"));
    }
    command.arg(&target.url).arg("--").arg(target.method);
    if let Some(body) = &target.body {
        command.arg(body);
        if target.keyed {
            command.arg(tag);
        }
    }
    let out = command
        .output()
        .context("run wrk (scripts/bench.sh installs it; or set WRK_BIN)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "wrk failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("no report from wrk: {text}"))?;
    Run::parse(line)
}

/// One scenario at one connection count: each target's pooled rounds.
struct Measured {
    scenario: &'static str,
    connections: u32,
    runs: Vec<(&'static str, Run)>,
}

impl Measured {
    /// The floor this scenario's Meridian is compared with: the SQLite
    /// floor for reads, the same-work floor for the keyed write.
    fn floor(&self) -> &Run {
        match self.scenario.starts_with("POST") {
            true => self.run(SAME_WORK),
            false => self.run(FLOOR),
        }
    }

    /// An error naming the first target that had a failed answer.
    fn no_failures(&self) -> Result<()> {
        for (name, run) in &self.runs {
            ensure!(
                run.failures == 0,
                "{} c={} {name}: {} failed answers ({:?})",
                self.scenario,
                self.connections,
                run.failures,
                run.statuses
            );
        }
        Ok(())
    }

    fn run(&self, name: &str) -> &Run {
        &self
            .runs
            .iter()
            .find(|(n, _)| *n == name)
            .expect("measured target")
            .1
    }
}

/// Runs `targets` at `connections` for `rounds` rounds, alternating their
/// order, after a warm-up of each.
fn measure(
    scenario: &'static str,
    targets: &[Target],
    connections: u32,
    args: &Args,
) -> Result<Measured> {
    for target in targets {
        wrk(
            target,
            connections,
            1,
            &format!("warm-{scenario}-{connections}"),
        )?;
    }
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); targets.len()];
    for round in 0..args.rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let tag = format!("r{round}-c{connections}-{}", uuid::Uuid::new_v4().simple());
            let run = wrk(&targets[i], connections, args.seconds, &tag)?;
            eprintln!(
                "  {scenario} c={connections} round {round} {}: {} req, p50 {:.2} ms, p99 {:.2} ms, {:.0} req/s, {} failed",
                targets[i].name,
                run.requests,
                run.at(50.0),
                run.at(99.0),
                run.rps(),
                run.failures
            );
            runs[i].push(run);
        }
    }
    Ok(Measured {
        scenario,
        connections,
        runs: targets
            .iter()
            .zip(runs)
            .map(|(t, r)| (t.name, Run::pooled(&r)))
            .collect(),
    })
}

/// Concurrent clients of the time-to-504 (env `CLIENTS_504` while
/// profiling): enough to bound the 3 s budget's run, few enough that the
/// figure is the deadline's precision, not a queue's.
const CLIENTS_504: usize = 2;

/// Time-to-504 behind a hung community, per budget.
struct Expiry {
    budget_ms: u64,
    /// Client-side times, ms, sorted.
    times: Vec<f64>,
    /// Answers other than 504 `deadline_exceeded`.
    other: Vec<String>,
}

impl Expiry {
    fn at(&self, p: f64) -> f64 {
        let i = ((self.times.len() as f64 - 1.0) * p / 100.0).round() as usize;
        self.times[i]
    }
}

fn time_to_504(args: &Args) -> Result<Vec<Expiry>> {
    // The throttle off: it would soon answer most of these at once with 503
    // (the route's requests all run out of budget), and this measures the
    // deadline. (The failure memory no longer counts time-outs.)
    let app = SpinApp::start_with(
        SpinOptions::default()
            .replace_component("community", "hang")
            .variable("failure_memory", "off")
            .variable("admission", "off")
            .variable("tenant_rate_limit", "off"),
    );
    let client = app.client();
    let tenant = create_tenant(&client, "hung");
    let mut out = Vec::new();
    for &budget in &args.budgets {
        let clients = args.per_budget.min(
            std::env::var("CLIENTS_504")
                .ok()
                .and_then(|c| c.parse().ok())
                .unwrap_or(CLIENTS_504),
        );
        let results = load::on_threads(clients, args.per_budget, || {
            let r = call_with(
                &client,
                &tenant.token,
                "GET",
                &tenant.path("/residents"),
                &[("x-meridian-timeout-ms", &budget.to_string())],
                None,
            );
            let code = r.json()["code"].as_str().unwrap_or_default().to_owned();
            (r.status, r.elapsed.as_secs_f64() * 1_000.0, code)
        });
        let mut times: Vec<f64> = results.iter().map(|r| r.1).collect();
        times.sort_by(f64::total_cmp);
        let other = results
            .iter()
            .filter(|(status, _, code)| *status != 504 || code != "deadline_exceeded")
            .map(|(status, _, code)| format!("{status} {code}"))
            .collect();
        let e = Expiry {
            budget_ms: budget,
            times,
            other,
        };
        eprintln!(
            "  time-to-504 budget {budget} ms: {} requests, p50 {:.1}, p99 {:.1}, max {:.1} ms",
            e.times.len(),
            e.at(50.0),
            e.at(99.0),
            e.at(100.0)
        );
        out.push(e);
    }
    // What the gateway says it left of each budget when it answered: the
    // rest of the client's time is Spin's, before the gateway's clock
    // starts and after its answer.
    let mut left: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for line in app.log_lines("gateway") {
        if line["status"] == 504 {
            if let (Some(b), Some(l)) = (line["budget_ms"].as_u64(), line["left_ms"].as_u64()) {
                left.entry(b).or_default().push(l);
            }
        }
    }
    for (budget, mut l) in left {
        l.sort_unstable();
        eprintln!(
            "  gateway's own view, budget {budget} ms: left at the answer p50 {} ms, min {} ms",
            l[l.len() / 2],
            l[0]
        );
    }
    Ok(out)
}

/// Overload: the result of `wrk` and the late statements the services logged.
struct Overload {
    budget_ms: u64,
    connections: u32,
    run: Run,
    late_statements: usize,
    statements_logged: u64,
    /// The gateway's own view: the most of the budget it used, ms (its
    /// clock starts when its instance runs, after any queue in Spin).
    gateway_max_ms: u64,
    /// Answers the gateway wrote with nothing left of the budget.
    gateway_late: usize,
}

impl Overload {
    /// The share of answers (%) later than the budget + 10 ms, from the
    /// client's latency distribution.
    fn late_share(&self) -> f64 {
        let limit = (self.budget_ms + 10) as f64;
        self.run
            .cdf
            .iter()
            .find(|(_, ms)| *ms > limit)
            .map_or(0.0, |(p, _)| 100.0 - p)
    }
}

fn overload(app: &SpinApp, residents: &Target, args: &Args) -> Result<Overload> {
    let budget_ms = 100;
    let connections = 64;
    let mut target = residents.clone();
    target
        .headers
        .push(("x-meridian-timeout-ms".into(), budget_ms.to_string()));
    let run = wrk(&target, connections, args.seconds, "overload")?;
    let lines: Vec<Value> = ["identity", "community"]
        .iter()
        .flat_map(|c| app.log_lines(c))
        .collect();
    let late: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "statement_late")
        .collect();
    let late_statements = late.len();
    let mut kinds: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for l in &late {
        let kind = format!(
            "{} {}",
            l["service"].as_str().unwrap_or("?"),
            l["statement"].as_str().unwrap_or("?")
        );
        let entry = kinds.entry(kind).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(l["late_ms"].as_u64().unwrap_or(0));
    }
    if !kinds.is_empty() {
        eprintln!("  late statements (count, max ms late): {kinds:?}");
    }
    let statements_logged = lines.iter().filter_map(|l| l["statements"].as_u64()).sum();
    let gateway: Vec<(u64, u64)> = app
        .log_lines("gateway")
        .iter()
        .filter(|l| l["budget_ms"] == budget_ms)
        .filter_map(|l| Some((l["budget_ms"].as_u64()?, l["left_ms"].as_u64()?)))
        .collect();
    let gateway_max_ms = gateway.iter().map(|(b, l)| b - l).max().unwrap_or(0);
    let gateway_late = gateway.iter().filter(|(_, l)| *l == 0).count();
    eprintln!(
        "  overload, the gateway's own view: {} answers, at most {gateway_max_ms} ms of the budget used, {gateway_late} with nothing left",
        gateway.len()
    );
    eprintln!(
        "  overload c={connections} budget {budget_ms} ms: {} req, statuses {:?}, max {:.1} ms, {late_statements} late of {statements_logged} statements",
        run.requests, run.statuses, run.max_ms
    );
    Ok(Overload {
        budget_ms,
        connections,
        run,
        late_statements,
        statements_logged,
        gateway_max_ms,
        gateway_late,
    })
}

/// Each component's `.wasm` and its ratio to the hello-world's.
fn sizes() -> Result<Vec<(&'static str, u64, f64)>> {
    let dir = repo_root().join("target/wasm32-wasip2/release");
    let size = |name: &str| -> Result<u64> {
        let path = dir.join(format!("{name}.wasm"));
        Ok(std::fs::metadata(&path)
            .with_context(|| format!("{} (build the components first)", path.display()))?
            .len())
    };
    let hello = size("hello")?;
    ["hello", "gateway", "identity", "community", "billing"]
        .into_iter()
        .map(|c| {
            let s = size(c)?;
            Ok((c, s, s as f64 / hello as f64))
        })
        .collect()
}

fn command_output(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn spin_version() -> String {
    spin_binary().map_or_else(
        || "spin: not found".into(),
        |s| command_output(s, &["--version"]),
    )
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}")
}

fn main() -> Result<()> {
    let args = Args::parse()?;
    if args.only.as_deref() == Some("p2") {
        time_to_504(&args)?;
        return Ok(());
    }
    if args.postgres {
        return postgres(&args);
    }
    let sizes = sizes()?;
    let floor = SpinApp::start_floor();
    // One tenant at full speed: its limits would be the measure. The
    // concurrency limiter still counts (a limit no run reaches: P3 has 64
    // connections), so what it costs a request is measured.
    let unlimited = SpinOptions::default()
        .variable("tenant_rate_limit", "off")
        .variable("tenant_concurrency_limit", "10000");
    let (app, tenant, resident) = bench_app(unlimited.clone())?;
    // The same app and rows with every request asking identity.
    let uncached = args
        .uncached
        .then(|| bench_app(unlimited.variable("resolution_cache", "off")))
        .transpose()?;

    let auth = |token: &str| vec![("authorization".to_owned(), format!("Bearer {token}"))];
    let floor_auth = auth("floor-token");
    let get = |name, url: String, headers: Vec<(String, String)>| Target {
        name,
        url,
        method: "GET",
        headers,
        body: None,
        keyed: false,
    };
    let invoice_of = |resident: &str| {
        json!({"resident_id": resident, "amount_cents": 1250, "currency": "EUR",
            "description": "bench", "due_date": "2026-12-31"})
        .to_string()
    };
    let post = |name, url: String, token: Option<&str>, body: String| Target {
        name,
        url,
        method: "POST",
        headers: [
            token.map_or_else(|| floor_auth.clone(), auth),
            vec![("content-type".into(), "application/json".into())],
        ]
        .concat(),
        body: Some(body),
        keyed: token.is_some(),
    };
    let residents = get(
        "Meridian",
        format!("{}{}", app.url(), tenant.path("/residents?limit=20")),
        auth(&tenant.token),
    );
    let mut reads = vec![
        get("floor, no-op", format!("{}/noop", floor.url()), Vec::new()),
        get(
            "floor, SQLite",
            format!("{}/sqlite/residents", floor.url()),
            floor_auth.clone(),
        ),
        residents.clone(),
    ];
    let mut writes = vec![
        post(
            "floor, SQLite",
            format!("{}/sqlite/invoices", floor.url()),
            None,
            invoice_of(&resident),
        ),
        Target {
            keyed: true,
            ..post(
                SAME_WORK,
                format!("{}/samework/invoices", floor.url()),
                None,
                invoice_of("resident-0001"),
            )
        },
        post(
            "Meridian",
            format!("{}{}", app.url(), tenant.path("/invoices")),
            Some(&tenant.token),
            invoice_of(&resident),
        ),
    ];
    if let Some((app, tenant, resident)) = &uncached {
        reads.push(get(
            UNCACHED,
            format!("{}{}", app.url(), tenant.path("/residents?limit=20")),
            auth(&tenant.token),
        ));
        writes.push(post(
            UNCACHED,
            format!("{}{}", app.url(), tenant.path("/invoices")),
            Some(&tenant.token),
            invoice_of(resident),
        ));
    }
    if args.only.as_deref() == Some("p3") {
        overload(&app, &residents, &args)?;
        return Ok(());
    }
    let mut measured = Vec::new();
    for connections in [1, 8] {
        measured.push(measure(
            "GET /v1/{t}/residents?limit=20",
            &reads,
            connections,
            &args,
        )?);
        if args.only.as_deref() != Some("p1-read") {
            measured.push(measure(
                "POST /v1/{t}/invoices (keyed)",
                &writes,
                connections,
                &args,
            )?);
        }
    }
    for m in &measured {
        let floor = m.floor();
        for (name, ours) in m.runs.iter().filter(|(n, _)| n.starts_with("Meridian")) {
            eprintln!(
                "{} c={}: {name} / floor p50 {:.2}, p99 {:.2}, throughput {:.2}",
                m.scenario,
                m.connections,
                ours.at(50.0) / floor.at(50.0),
                ours.at(99.0) / floor.at(99.0),
                ours.rps() / floor.rps()
            );
        }
        m.no_failures()?;
    }
    if args.only.as_deref().is_some_and(|p| p.starts_with("p1")) {
        return Ok(());
    }
    drop(uncached);
    let overload = overload(&app, &residents, &args)?;
    drop(app);
    drop(floor);
    let expiry = time_to_504(&args)?;

    let report = Report {
        args: &args,
        measured: &measured,
        expiry: &expiry,
        overload: &overload,
        sizes: &sizes,
    };
    let dir = repo_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("perf.json"),
        serde_json::to_string_pretty(&report.json())?,
    )?;
    let markdown = report.markdown();
    println!("{markdown}");
    if args.write {
        publish(
            (BEGIN, END),
            "Against the floor",
            &markdown,
            "benchmarks.svg",
            &report.svg(),
        )?;
    }
    eprintln!("wrote {}", dir.join("perf.json").display());
    // Defects, whatever the machine: work started after its deadline, or a
    // hung downstream answered with anything but the 504.
    ensure!(
        overload.late_statements == 0,
        "{} statements started after their request's deadline",
        overload.late_statements
    );
    for e in &expiry {
        ensure!(
            e.other.is_empty(),
            "budget {} ms behind a hung downstream answered {:?}",
            e.budget_ms,
            e.other
        );
    }
    Ok(())
}

/// `GET /v1/{t}/residents?limit=20` with every service on PostgreSQL,
/// against the floor's same read through `pg4` on the same server, at 1
/// and 8 connections in alternating rounds: its own section of
/// docs/benchmarks.md and docs/benchmarks-postgres.svg with `--write`.
fn postgres(args: &Args) -> Result<()> {
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
const PG_FLOOR: &str = "floor, PostgreSQL";

struct Report<'a> {
    args: &'a Args,
    measured: &'a [Measured],
    expiry: &'a [Expiry],
    overload: &'a Overload,
    sizes: &'a [(&'static str, u64, f64)],
}

/// Meridian started with `options`, with the benchmark's tenant and 25
/// residents (the last one's id returned).
fn bench_app(options: SpinOptions) -> Result<(SpinApp, TenantClient, String)> {
    let app = SpinApp::start_with(options);
    let client = app.client();
    let tenant = create_tenant(&client, "bench");
    let resident = (0..25)
        .map(|i| add_resident(&client, &tenant, &format!("Resident {i}")))
        .next_back()
        .context("residents")?;
    Ok((app, tenant, resident))
}

/// The floor each scenario's Meridian is compared with.
const FLOOR: &str = "floor, SQLite";

/// The keyed write's floor: the same hops and statements (bench/floor).
const SAME_WORK: &str = "floor, same work";

/// Meridian without the resolution cache (`--uncached`).
const UNCACHED: &str = "Meridian, resolution cache off";

impl Report<'_> {
    fn json(&self) -> Value {
        json!({
            "machine": machine(),
            "spin": spin_version(),
            "seconds": self.args.seconds,
            "rounds": self.args.rounds,
            "throughput": self.measured.iter().map(|m| json!({
                "scenario": m.scenario,
                "connections": m.connections,
                "runs": m.runs.iter().map(|(name, r)| json!({
                    "target": name, "requests": r.requests, "req_per_s": r.rps(),
                    "p50_ms": r.at(50.0), "p99_ms": r.at(99.0), "max_ms": r.max_ms,
                    "statuses": r.statuses, "cdf_ms": r.cdf,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "time_to_504": self.expiry.iter().map(|e| json!({
                "budget_ms": e.budget_ms, "requests": e.times.len(), "p50_ms": e.at(50.0),
                "p99_ms": e.at(99.0), "min_ms": e.at(0.0), "max_ms": e.at(100.0),
                "other_answers": e.other, "times_ms": e.times,
            })).collect::<Vec<_>>(),
            "overload": {
                "budget_ms": self.overload.budget_ms, "connections": self.overload.connections,
                "requests": self.overload.run.requests, "statuses": self.overload.run.statuses,
                "p99_ms": self.overload.run.at(99.0), "max_ms": self.overload.run.max_ms,
                "late_statements": self.overload.late_statements,
                "statements": self.overload.statements_logged,
                "later_than_budget_plus_10ms_percent": self.overload.late_share(),
                "gateway_max_used_ms": self.overload.gateway_max_ms,
                "gateway_answers_with_nothing_left": self.overload.gateway_late,
            },
            "wasm_bytes": self.sizes.iter().map(|(c, s, r)| json!({"component": c, "bytes": s, "ratio": r})).collect::<Vec<_>>(),
        })
    }

    fn markdown(&self) -> String {
        let mut md = String::new();
        let spin = spin_version();
        let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        let _ = writeln!(
            md,
            "- **Command:** `scripts/bench.sh` (`perf --seconds {} --rounds {} --per-budget {} --write`)\n\
             - **When, where:** {date}; {}; {spin}; `wrk` 4.1, one thread, keep-alive.\n\
             - Each figure: {} alternating rounds of {} s per target; a percentile is the mean of the rounds'.\n",
            self.args.seconds,
            self.args.rounds,
            self.args.per_budget,
            machine(),
            self.args.rounds,
            self.args.seconds,
        );
        let _ = writeln!(md, "![Latency CDFs of Meridian and the floor, and the time-to-504 per budget](benchmarks.svg)\n");
        let _ = writeln!(md, "{}", self.targets());
        let _ = writeln!(md, "### P1: against the floor (target: p50 ≤ 1.3 ×, throughput ≥ 0.75 × the SQLite floor)\n");
        let _ = writeln!(md, "| scenario | conns | target | p50 | p99 | req/s | p50 × floor | p99 × floor | req/s × floor |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
        for m in self.measured {
            let floor = m.floor();
            for (name, r) in &m.runs {
                let ratio = |a: f64, b: f64| format!("{:.2}", a / b);
                let _ = writeln!(
                    md,
                    "| {} | {} | {name} | {:.2} ms | {:.2} ms | {:.0} | {} | {} | {} |",
                    m.scenario,
                    m.connections,
                    r.at(50.0),
                    r.at(99.0),
                    r.rps(),
                    ratio(r.at(50.0), floor.at(50.0)),
                    ratio(r.at(99.0), floor.at(99.0)),
                    ratio(r.rps(), floor.rps()),
                );
            }
        }
        let _ = writeln!(md, "\n### P2: time-to-504 behind a hung community (target: p99 within [budget − 10 ms, budget])\n");
        let _ = writeln!(
            md,
            "| budget | requests | min | p50 | p99 | max | other answers |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for e in self.expiry {
            let _ = writeln!(
                md,
                "| {} ms | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
                e.budget_ms,
                e.times.len(),
                e.at(0.0),
                e.at(50.0),
                e.at(99.0),
                e.at(100.0),
                e.other.len()
            );
        }
        let o = self.overload;
        let _ = writeln!(
            md,
            "\n### P3: overload (target: no statement after its deadline, no answer after budget + 10 ms)\n\n\
             {} connections, budget {} ms, {} s: {} requests, statuses {}; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms \
             at the client, {:.1} % of answers later than budget + 10 ms. The gateway's own clock: at most {} ms \
             of the budget used, {} answers with nothing left. Statements started after their request's \
             deadline: **{}** of {} run.\n",
            o.connections,
            o.budget_ms,
            self.args.seconds,
            o.run.requests,
            o.run
                .statuses
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            o.run.at(50.0),
            o.run.at(99.0),
            o.run.max_ms,
            o.late_share(),
            o.gateway_max_ms,
            o.gateway_late,
            o.late_statements,
            o.statements_logged,
        );
        let _ = writeln!(
            md,
            "### P5: `.wasm` sizes (target: ≤ 1.5 × the spin-sdk hello-world, same profile)\n"
        );
        let _ = writeln!(md, "| component | bytes | × hello-world |");
        let _ = writeln!(md, "|---|---|---|");
        for (c, s, r) in self.sizes {
            let _ = writeln!(md, "| {c} | {s} | {r:.2} |");
        }
        md
    }

    /// Each target, met or not, with its figures.
    fn targets(&self) -> String {
        let mark = |met: bool| if met { "**met**" } else { "**not met**" };
        let mut md = String::from("| target | status | this run |\n|---|---|---|\n");
        let reads: Vec<&Measured> = self
            .measured
            .iter()
            .filter(|m| m.scenario.starts_with("GET"))
            .collect();
        let ratio = |m: &Measured, f: &dyn Fn(&Run) -> f64| f(m.run("Meridian")) / f(m.run(FLOOR));
        let p50: Vec<f64> = reads.iter().map(|m| ratio(m, &|r| r.at(50.0))).collect();
        let rps: Vec<f64> = reads.iter().map(|m| ratio(m, &|r| r.rps())).collect();
        let list = |v: &[f64]| {
            reads
                .iter()
                .zip(v)
                .map(|(m, x)| format!("{x:.2} × ({} conn.)", m.connections))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            md,
            "| P1 `GET` p50 ≤ 1.3 × the SQLite floor | {} | {} |",
            mark(p50.iter().all(|x| *x <= 1.3)),
            list(&p50)
        );
        let _ = writeln!(
            md,
            "| P1 `GET` throughput ≥ 0.75 × | {} | {} |",
            mark(rps.iter().all(|x| *x >= 0.75)),
            list(&rps)
        );
        let writes: Vec<&Measured> = self
            .measured
            .iter()
            .filter(|m| m.scenario.starts_with("POST"))
            .collect();
        let write_ratio = |m: &Measured, p: f64| m.run("Meridian").at(p) / m.floor().at(p);
        let p50: Vec<String> = writes
            .iter()
            .map(|m| format!("{:.2} × ({} conn.)", write_ratio(m, 50.0), m.connections))
            .collect();
        let _ = writeln!(
            md,
            "| P1 keyed `POST` p50 ≤ 1.5 × the same-work floor | {} | {} |",
            mark(writes.iter().all(|m| write_ratio(m, 50.0) <= 1.5)),
            p50.join(", ")
        );
        let at8: Vec<&&Measured> = writes.iter().filter(|m| m.connections == 8).collect();
        let _ = writeln!(
            md,
            "| P1 keyed `POST` p99 at 8 connections ≤ 2 × the same-work floor's | {} | {} |",
            mark(at8.iter().all(|m| write_ratio(m, 99.0) <= 2.0)),
            at8.iter()
                .map(|m| format!("{:.2} ×", write_ratio(m, 99.0)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let p2 = self.expiry.iter().all(|e| {
            let b = e.budget_ms as f64;
            e.at(99.0) >= b - 10.0 && e.at(100.0) <= b && e.times.len() >= 50
        });
        let _ = writeln!(
            md,
            "| P2 time-to-504 p99 in [budget − 10 ms, budget], none after, ≥ 50 each | {} | p99 {} |",
            mark(p2),
            self.expiry
                .iter()
                .map(|e| format!("{:.1} ms of {} ({} req.)", e.at(99.0), e.budget_ms, e.times.len()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let o = self.overload;
        let _ = writeln!(
            md,
            "| P3 no statement after its request's deadline | {} | {} of {} |",
            mark(o.late_statements == 0),
            o.late_statements,
            o.statements_logged
        );
        let _ = writeln!(
            md,
            "| P3 no answer after budget + 10 ms | {} | {:.1} % later at the client (max {:.1} ms of {} ms) |",
            mark(o.run.max_ms <= (o.budget_ms + 10) as f64),
            o.late_share(),
            o.run.max_ms,
            o.budget_ms
        );
        let worst = self.sizes.iter().map(|(_, _, r)| *r).fold(0.0, f64::max);
        let _ = writeln!(
            md,
            "| P5 each `.wasm` ≤ 1.5 × the hello-world | {} | at most {worst:.2} × |",
            mark(worst <= 1.5)
        );
        md
    }

    /// Five panels: the latency CDFs (GET and POST, 1 and 8 connections)
    /// and the time-to-504 per budget.
    fn svg(&self) -> String {
        picture(self.measured, self.expiry)
    }
}

/// Each measurement's latency CDF, one panel each, and the time-to-504's
/// when there is one.
fn picture(measured: &[Measured], expiry: &[Expiry]) -> String {
    {
        const W: f64 = 420.0;
        const H: f64 = 260.0;
        const COLORS: [&str; 4] = ["#9e9e9e", "#1f77b4", "#d62728", "#2ca02c"];
        // The same target in the same color in every panel.
        let color_of = |name: &str, j: usize| match name {
            "floor, no-op" => COLORS[0],
            FLOOR | PG_FLOOR => COLORS[1],
            SAME_WORK => COLORS[3],
            "Meridian" => COLORS[2],
            _ => COLORS[j % COLORS.len()],
        };
        let mut panels: Vec<Panel> = measured
            .iter()
            .map(|m| {
                (
                    format!("{}, {} conn.", m.scenario, m.connections),
                    "latency, ms".to_owned(),
                    m.runs
                        .iter()
                        .map(|(n, r)| {
                            (
                                n.to_string(),
                                r.cdf.iter().map(|(p, ms)| (*ms, *p)).collect(),
                            )
                        })
                        .collect(),
                )
            })
            .collect();
        panels.extend((!expiry.is_empty()).then(|| {
            (
                "time-to-504 behind a hung downstream".to_owned(),
                "answer time − budget, ms (dashed: the target band)".to_owned(),
                expiry
                    .iter()
                    .map(|e| {
                        let n = e.times.len() as f64;
                        (
                            format!("{} ms", e.budget_ms),
                            e.times
                                .iter()
                                .enumerate()
                                .map(|(i, t)| {
                                    (t - e.budget_ms as f64, (i as f64 + 1.0) * 100.0 / n)
                                })
                                .collect(),
                        )
                    })
                    .collect(),
            )
        }));
        let cols = 2.0;
        let rows = (panels.len() as f64 / cols).ceil();
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            W * cols,
            H * rows
        );
        for (i, (title, xlabel, series)) in panels.iter().enumerate() {
            let (ox, oy) = ((i % 2) as f64 * W, (i / 2) as f64 * H);
            let (left, right, top, bottom) = (ox + 50.0, ox + W - 15.0, oy + 30.0, oy + H - 40.0);
            let xs = series.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.0));
            let (mut lo, mut hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
            let latency = i < measured.len();
            if latency {
                lo = 0.0;
                // The tail past p99 would flatten the rest.
                hi = series
                    .iter()
                    .filter_map(|(_, pts)| pts.iter().find(|p| p.1 >= 99.0).map(|p| p.0))
                    .fold(0.0, f64::max)
                    * 1.1;
            } else {
                // The target band: [budget - 10 ms, budget].
                lo = lo.min(-12.0);
                hi = hi.max(1.0);
            }
            if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
                hi = lo + 1.0;
            }
            let x = |v: f64| left + (v.clamp(lo, hi) - lo) / (hi - lo) * (right - left);
            let y = |p: f64| bottom - p / 100.0 * (bottom - top);
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>",
                left,
                oy + 18.0,
                xml(title)
            );
            let _ = writeln!(svg, "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>", right - left, bottom - top);
            for t in 0..=4 {
                let v = lo + (hi - lo) * f64::from(t) / 4.0;
                let _ = writeln!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{v:.1}</text>",
                    x(v),
                    bottom + 14.0
                );
                let p = f64::from(t) * 25.0;
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{p:.0}%</text>",
                    left - 4.0,
                    y(p) + 4.0
                );
                let _ = writeln!(svg, "<line x1=\"{left}\" x2=\"{right}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>", y(p), y(p));
            }
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                (left + right) / 2.0,
                bottom + 30.0,
                xml(xlabel)
            );
            if !latency {
                for edge in [-10.0, 0.0] {
                    let _ = writeln!(svg, "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top}\" y2=\"{bottom}\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>", x(edge));
                }
            }
            for (j, (name, pts)) in series.iter().enumerate() {
                let color = color_of(name, j);
                let path: Vec<String> = pts
                    .iter()
                    .map(|(v, p)| format!("{:.1},{:.1}", x(*v), y(*p)))
                    .collect();
                let _ = writeln!(svg, "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>", path.join(" "));
                let ly = top + 14.0 + j as f64 * 14.0;
                let _ = writeln!(svg, "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>", right - 110.0, right - 95.0);
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{}\">{}</text>",
                    right - 90.0,
                    ly + 4.0,
                    xml(name)
                );
            }
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// A picture's panel: title, x-axis label, and its named series of
/// (x, cumulative %) points.
type Panel = (String, String, Vec<(String, Vec<(f64, f64)>)>);

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

const BEGIN: &str = "<!-- perf:begin (written by scripts/bench.sh) -->";
const END: &str = "<!-- perf:end -->";

/// Replaces the floor section of `path` (between the markers) with
/// `section`; adds it after the title the first time.
/// Writes `markdown` as the section between `markers` of
/// docs/benchmarks.md, titled `title`, and its picture as `docs/<svg_file>`.
fn publish(
    markers: (&str, &str),
    title: &str,
    markdown: &str,
    svg_file: &str,
    svg: &str,
) -> Result<()> {
    let docs = repo_root().join("docs");
    write_section(&docs.join("benchmarks.md"), markers, title, markdown)?;
    std::fs::write(docs.join(svg_file), svg)?;
    eprintln!("wrote docs/benchmarks.md and docs/{svg_file}");
    Ok(())
}

/// The PostgreSQL section's markers (`--postgres`).
const PG_BEGIN: &str = "<!-- perf-postgres:begin (written by scripts/bench.sh --postgres) -->";
const PG_END: &str = "<!-- perf-postgres:end -->";

/// Replaces the block between `(begin, end)` in `path` with `title` and
/// `section`, or puts it before the first section when there is none.
fn write_section(
    path: &Path,
    (begin, end): (&str, &str),
    title: &str,
    section: &str,
) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let block = format!("{begin}\n## {title}\n\n{section}{end}");
    let updated = match (text.find(begin), text.find(end)) {
        (Some(b), Some(e)) if b < e => format!("{}{block}{}", &text[..b], &text[e + end.len()..]),
        _ => {
            let at = text.find("\n## ").map_or(text.len(), |i| i + 1);
            format!("{}{block}\n\n{}", &text[..at], &text[at..])
        }
    };
    std::fs::write(path, updated).with_context(|| format!("write {}", path.display()))
}
