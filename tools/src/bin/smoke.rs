//! A smoke run against a Meridian that something else started — the
//! SpinKube runtime (containerd-shim-spin under containerd,
//! `scripts/shim.sh`), a cluster, a remote `spin up` — where the
//! end-to-end suite, which starts its own `spin up`, cannot reach.
//!
//! ```text
//! smoke [--url URL] [--admin-token TOKEN]    the app as deployed
//! smoke --hung [--url URL] ...               an app whose billing_url hangs
//! smoke --hang-on 127.0.0.1:PORT             a billing that never answers
//! ```
//!
//! The URL and token default to `MERIDIAN_URL` and `MERIDIAN_ADMIN_TOKEN`
//! (else the suite's own admin token).
//! The app as deployed: a tenant, a resident, a keyed invoice and its
//! replay (one invoice), a read that finds it, and a 422. `--hung`: a
//! tenant, then a read of invoices with an 800 ms budget that must be a
//! 504 `deadline_exceeded` from the gateway within the budget + 10 ms.
//! Each check prints one line; the exit status says whether all held.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use meridian_e2e::api::{create_tenant_as, TenantClient};
use meridian_e2e::Client;
use serde_json::json;

/// The budget the hung read is sent with.
const HUNG_BUDGET: Duration = Duration::from_millis(800);
/// As in the end-to-end suite: scheduling on a loaded 2-core machine.
const TOLERANCE: Duration = Duration::from_millis(10);

fn main() -> Result<()> {
    let mut url = std::env::var("MERIDIAN_URL").ok();
    let mut admin = std::env::var("MERIDIAN_ADMIN_TOKEN").ok();
    let mut hung = false;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        use lexopt::prelude::*;
        match arg {
            Long("url") => url = Some(parser.value()?.parse()?),
            Long("admin-token") => admin = Some(parser.value()?.parse()?),
            Long("hung") => hung = true,
            Long("hang-on") => return hang_on(&parser.value()?.parse::<String>()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    let url = url.context("the app's URL: --url or MERIDIAN_URL")?;
    let admin = admin.unwrap_or_else(|| meridian_e2e::ADMIN_TOKEN.to_owned());
    let client = Client::new(&url);
    // Readiness reaches every service; with billing hung it cannot be.
    let probe = if hung { "/healthz" } else { "/readyz" };
    let answer = client.get(probe);
    check(
        &format!("{probe} answers 200"),
        answer.status == 200,
        &answer.body,
    )?;
    let slug = format!("smoke-{}", uuid::Uuid::new_v4().simple());
    let tenant = create_tenant_as(&client, &admin, slug.get(..20).unwrap_or(&slug));
    println!("ok   tenant {} created", tenant.slug);
    if hung {
        hung_read(&tenant)
    } else {
        workflow(&tenant)
    }
}

/// Prints the check's line; an error when it failed.
fn check(what: &str, held: bool, detail: &str) -> Result<()> {
    println!("{} {what}", if held { "ok  " } else { "FAIL" });
    ensure!(held, "{what}: {detail}");
    Ok(())
}

/// A resident, a keyed invoice sent twice, a read, a 422.
fn workflow(tenant: &TenantClient) -> Result<()> {
    let resident = tenant.resident("Ada Lovelace");
    println!("ok   resident {resident} added");
    let invoice = json!({"resident_id": resident, "amount_cents": 4_200, "currency": "EUR",
        "due_date": "2027-01-31", "description": "Q1 service charge"});
    let first = tenant.post("/invoices").key("smoke-q1").json(&invoice);
    check(
        "keyed invoice created (201)",
        first.status == 201,
        &first.body,
    )?;
    let replay = tenant.post("/invoices").key("smoke-q1").json(&invoice);
    check(
        "the same key replays the same invoice",
        replay.status == 201
            && replay.header("idempotent-replayed").is_some()
            && replay.json()["id"] == first.json()["id"],
        &replay.body,
    )?;
    let listed = tenant.get("/invoices").send();
    let items = listed.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    check(
        "the read finds exactly one invoice",
        listed.status == 200 && items.len() == 1 && items[0]["id"] == first.json()["id"],
        &listed.body,
    )?;
    let bad = tenant
        .post("/residents")
        .json(&json!({"name": "", "unit": "4B"}));
    check(
        "an invalid resident is a 422 problem",
        bad.status == 422 && bad.header("content-type") == Some("application/problem+json"),
        &bad.body,
    )
}

/// A read of invoices behind a billing that never answers.
fn hung_read(tenant: &TenantClient) -> Result<()> {
    let started = Instant::now();
    let r = tenant
        .get("/invoices")
        .header(
            "x-meridian-timeout-ms",
            &HUNG_BUDGET.as_millis().to_string(),
        )
        .send();
    let took = started.elapsed();
    let body = r.json();
    check(
        "a hung billing is a 504 deadline_exceeded from the gateway",
        r.status == 504 && body["code"] == "deadline_exceeded" && body["hop"] == "gateway",
        &r.body,
    )?;
    check(
        &format!("answered within the budget + 10 ms ({took:?} of {HUNG_BUDGET:?})"),
        took <= HUNG_BUDGET + TOLERANCE,
        &r.body,
    )
}

/// Accepts connections on `addr` and reads them, never answering, until
/// killed.
fn hang_on(addr: &str) -> Result<()> {
    let listener = TcpListener::bind(addr).with_context(|| format!("binding {addr}"))?;
    println!("hanging on {addr}");
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        std::thread::spawn(move || {
            let mut sink = [0u8; 4096];
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        });
    }
    Ok(())
}
