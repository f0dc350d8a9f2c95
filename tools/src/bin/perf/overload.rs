//! P3: overload — more connections than the machine serves within a
//! tight budget.

use std::collections::BTreeMap;

use anyhow::Result;
use meridian_e2e::SpinApp;
use serde_json::Value;

use crate::wrk::{wrk, Run, Target};
use crate::Args;

/// Overload: the result of `wrk` and the late statements the services logged.
pub(crate) struct Overload {
    pub(crate) budget_ms: u64,
    pub(crate) connections: u32,
    pub(crate) run: Run,
    pub(crate) late_statements: usize,
    pub(crate) statements_logged: u64,
    /// The gateway's own view: the most of the budget it used, ms (its
    /// clock starts when its instance runs, after any queue in Spin).
    pub(crate) gateway_max_ms: u64,
    /// Answers the gateway wrote with nothing left of the budget.
    pub(crate) gateway_late: usize,
}

impl Overload {
    /// The share of answers (%) later than the budget + 10 ms, from the
    /// client's latency distribution.
    pub(crate) fn late_share(&self) -> f64 {
        let limit = (self.budget_ms + 10) as f64;
        self.run
            .cdf
            .iter()
            .find(|(_, ms)| *ms > limit)
            .map_or(0.0, |(p, _)| 100.0 - p)
    }
}

pub(crate) fn overload(app: &SpinApp, residents: &Target, args: &Args) -> Result<Overload> {
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
