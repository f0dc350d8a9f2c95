//! What matching a request's path costs: the gateway's route tables
//! matched as they are (`routes::lookup` over the const tables: the
//! gateway's `OWN` and the services' tables it forwards by: nothing is
//! built), against a router crate that must first
//! be built from the same templates — routefinder (spin-sdk's router, in
//! the lockfile already) and matchit (axum's). A Spin component instance
//! serves one request and is then dropped, so a router would be built for
//! every request: each round here builds it and routes one request, as an
//! instance would. docs/architecture.md says which was kept and why.
//!
//! Run: `cargo run -p meridian-tools --release --bin routes_bench [ROUNDS]`
//! (default 200,000; native code on the host, so the figures compare the
//! three ways, not what a Wasm instance spends).

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use gateway::routes::{forwarded, route, Route, Service, OWN};
use meridian_endpoints as endpoints;
use meridian_platform::http::prelude::Method;
use meridian_platform::http::routes::{lookup, segments, Endpoint, RouteMatch};
use meridian_tools::Positionals;

/// A path of `template` with its placeholders filled in.
fn instance(template: &str) -> String {
    template
        .replace("{tenant}", "acme")
        .replace("{id}", "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01")
}

/// Every template of both tables once, in table order.
fn templates() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = OWN.iter().map(|e| e.path).collect();
    all.extend(forwarded().into_iter().map(|(_, _, path)| path));
    let mut seen = std::collections::HashSet::new();
    all.retain(|t| seen.insert(*t));
    all
}

/// The row of `table` for `method` once a router found the template.
fn row<'t, Op>(
    table: &'t [Endpoint<Op>],
    template: &str,
    method: &Method,
) -> Option<&'t Endpoint<Op>> {
    table
        .iter()
        .find(|e| e.path == template && e.method == *method)
}

/// Whether `method` on `template` is a forwarded row (the rows listed
/// once, so that the routers' rounds time the routers).
fn forwarded_row(template: &str, method: &Method) -> bool {
    static ROWS: OnceLock<Vec<(Service, &'static Method, &'static str)>> = OnceLock::new();
    ROWS.get_or_init(forwarded)
        .iter()
        .any(|(_, m, t)| *t == template && *m == method)
}

/// Whether `table` has a forwarded row for the path.
fn found<Op>(table: &[Endpoint<Op>], method: &Method, segments: &[&str]) -> bool {
    matches!(lookup(table, method, segments), RouteMatch::Found(row) if endpoints::is_forwarded(row.path))
}

/// The hand-written matcher over the const tables: what the gateway runs.
fn by_table(method: &Method, path: &str) -> bool {
    let segments = segments(path);
    matches!(lookup(OWN, method, &segments), RouteMatch::Found(_))
        || found(endpoints::identity::ENDPOINTS, method, &segments)
        || found(endpoints::community::ENDPOINTS, method, &segments)
        || found(endpoints::billing::ENDPOINTS, method, &segments)
}

/// routefinder, built from the templates (`{x}` written `:x`), then asked.
fn by_routefinder(templates: &[&'static str], method: &Method, path: &str) -> bool {
    let mut router = routefinder::Router::new();
    for (i, t) in templates.iter().enumerate() {
        let spelled = t.replace('{', ":").replace('}', "");
        if router.add(spelled.as_str(), i).is_err() {
            return false;
        }
    }
    router.best_match(path).is_some_and(|m| {
        let template = templates.get(*m).copied().unwrap_or_default();
        row(OWN, template, method).is_some() || forwarded_row(template, method)
    })
}

/// matchit, built from the templates (its syntax is the tables'), then asked.
fn by_matchit(templates: &[&'static str], method: &Method, path: &str) -> bool {
    let mut router = matchit::Router::new();
    for t in templates {
        if router.insert(*t, *t).is_err() {
            return false;
        }
    }
    router
        .at(path)
        .is_ok_and(|m| row(OWN, m.value, method).is_some() || forwarded_row(m.value, method))
}

/// Time per request of `each` over `requests`, `rounds` requests in all.
fn time(
    rounds: usize,
    requests: &[(Method, String)],
    each: impl Fn(&Method, &str) -> bool,
) -> Duration {
    let started = Instant::now();
    for (method, path) in requests.iter().cycle().take(rounds) {
        black_box(each(black_box(method), black_box(path)));
    }
    started.elapsed() / u32::try_from(rounds).unwrap_or(u32::MAX)
}

fn main() -> Result<()> {
    let rounds: usize = Positionals::from_env()?.get(0, "ROUNDS", 200_000)?;
    let templates = templates();
    // One request per row of both tables, and one that is no route.
    let mut requests: Vec<(Method, String)> = OWN
        .iter()
        .map(|e| (e.method.clone(), instance(e.path)))
        .chain(
            forwarded()
                .into_iter()
                .map(|(_, method, path)| (method.clone(), instance(path))),
        )
        .collect();
    requests.push((Method::GET, "/v1/acme/nowhere/at/all".to_owned()));
    // All three agree on every request before any is timed.
    for (method, path) in &requests {
        let expected = by_table(method, path);
        ensure!(
            by_routefinder(&templates, method, path) == expected,
            "routefinder differs on {method} {path}"
        );
        ensure!(
            by_matchit(&templates, method, path) == expected,
            "matchit differs on {method} {path}"
        );
        let routed = !matches!(
            route(method, path),
            Route::NotFound | Route::MethodNotAllowed { .. }
        );
        ensure!(routed == expected, "route() differs on {method} {path}");
    }
    let whole = time(rounds, &requests, |m, p| {
        !matches!(route(m, p), Route::NotFound)
    });
    let table = time(rounds, &requests, by_table);
    let finder = time(rounds, &requests, |m, p| by_routefinder(&templates, m, p));
    let matchit = time(rounds, &requests, |m, p| by_matchit(&templates, m, p));
    // What the routers would cost if an instance outlived its request
    // (it does not on Spin): built once, asked per request.
    let mut finder_built = routefinder::Router::new();
    for (i, t) in templates.iter().enumerate() {
        let spelled = t.replace('{', ":").replace('}', "");
        finder_built
            .add(spelled.as_str(), i)
            .map_err(anyhow::Error::msg)?;
    }
    let mut matchit_built = matchit::Router::new();
    for t in &templates {
        matchit_built.insert(*t, *t)?;
    }
    let finder_asked = time(rounds, &requests, |_, p| {
        finder_built.best_match(p).is_some()
    });
    let matchit_asked = time(rounds, &requests, |_, p| matchit_built.at(p).is_ok());
    println!(
        "{} templates, {} requests, {rounds} rounds (native, this machine)",
        templates.len(),
        requests.len()
    );
    println!(
        "  the tables matched as they are (lookup): {:>8} ns a request",
        table.as_nanos()
    );
    println!(
        "  the gateway's whole routing step (route): {:>7} ns a request",
        whole.as_nanos()
    );
    println!(
        "  routefinder, built and asked:             {:>7} ns a request",
        finder.as_nanos()
    );
    println!(
        "  matchit, built and asked:                 {:>7} ns a request",
        matchit.as_nanos()
    );
    println!(
        "  built once (not possible on Spin), asked: routefinder {} ns, matchit {} ns",
        finder_asked.as_nanos(),
        matchit_asked.as_nanos()
    );
    Ok(())
}
