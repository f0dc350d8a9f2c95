//! P2: time-to-504 behind a hung community, per budget.

use std::collections::BTreeMap;

use anyhow::Result;
use meridian_e2e::api::{call_with, create_tenant};
use meridian_e2e::{load, SpinApp, SpinOptions};
use meridian_tools::Sorted;

use crate::Args;

/// Concurrent clients of the time-to-504 (env `CLIENTS_504` while
/// profiling): enough to bound the 3 s budget's run, few enough that the
/// figure is the deadline's precision, not a queue's.
pub(crate) const CLIENTS_504: usize = 2;

/// Time-to-504 behind a hung community, per budget.
pub(crate) struct Expiry {
    pub(crate) budget_ms: u64,
    /// Client-side times, ms.
    pub(crate) times: Sorted,
    /// Answers other than 504 `deadline_exceeded`.
    pub(crate) other: Vec<String>,
}

impl Expiry {
    /// The time at percentile `p` (0–100), ms.
    pub(crate) fn at(&self, p: f64) -> f64 {
        self.times.at(p / 100.0)
    }
}

pub(crate) fn time_to_504(args: &Args) -> Result<Vec<Expiry>> {
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
        let times = Sorted::new(results.iter().map(|r| r.1));
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
