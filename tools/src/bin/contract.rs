//! Schemathesis against a real `spin up`: starts the app on loopback,
//! seeds a tenant, and runs `st run` on the contract the gateway serves,
//! with `tests/contract/schemathesis.toml`. Extra arguments go to `st run`.
//! Run through `scripts/contract.sh`, which installs Schemathesis.
//!
//! `SCHEMATHESIS` names the `st` executable (default: `st` on PATH). Every
//! request of the run is recorded in `target/contract/run.har` and counted
//! here. The exit status is 0 only when Schemathesis found nothing, no
//! component trapped and no log carried a secret.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::Context;
use meridian_e2e::api::{add_resident, create_tenant};
use meridian_e2e::{repo_root, SpinApp, SpinOptions, ADMIN_TOKEN};

fn main() -> anyhow::Result<ExitCode> {
    let st = std::env::var_os("SCHEMATHESIS").map_or_else(|| PathBuf::from("st"), PathBuf::from);
    // `st` runs in another directory: a relative path must not change meaning.
    let st = if st.is_relative() && st.components().count() > 1 {
        std::env::current_dir()?.join(st)
    } else {
        st
    };
    // Passed on to Schemathesis as they are.
    let extra: Vec<std::ffi::OsString> = lexopt::Parser::from_env().raw_args()?.collect();
    let root = repo_root();
    let config = root.join("tests/contract");
    let out = root.join("target/contract");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let har = out.join("run.har");
    let _ = std::fs::remove_file(&har);

    // Tenant rate limits off: Schemathesis sets the contract tenant's own
    // override through the admin route (1 request a second, say), and then
    // every held 429 would cost a second. The 429 itself is checked by the
    // e2e suite (tests/tests/overload.rs) and the gateway's host tests.
    let app = SpinApp::start_with(SpinOptions::default().variable("tenant_rate_limit", "off"));
    let tenant = create_tenant(&app.client(), "contract");
    let resident = add_resident(&app.client(), &tenant, "Rosa Resident");
    let dictionary = out.join("residents.dict");
    std::fs::write(&dictionary, format!("\"{resident}\"\n"))
        .with_context(|| format!("writing {}", dictionary.display()))?;
    // A cursor is the position sealed for its tenant: no pattern can make
    // one, so every list of the run pages from a real one of the tenant's
    // (a second resident makes a first page of one end with a cursor).
    add_resident(&app.client(), &tenant, "Sam Second");
    let first = tenant.get("/residents?limit=1").send();
    let cursor = first.json()["next_cursor"]
        .as_str()
        .map(str::to_owned)
        .context("a first page of one of two residents has a next cursor")?;
    // Run from target/contract, where Schemathesis keeps its cache of
    // failures for `st replay`.
    let status = Command::new(&st)
        .current_dir(&out)
        .arg("--config-file")
        .arg(config.join("schemathesis.toml"))
        .arg("run")
        .arg(format!("{}/openapi.json", app.url()))
        .arg("--report")
        .arg("har")
        .arg("--report-har-path")
        .arg(&har)
        .args(&extra)
        .env("MERIDIAN_URL", app.url())
        .env("MERIDIAN_TENANT", &tenant.slug)
        .env("MERIDIAN_TOKEN", &tenant.token)
        .env("MERIDIAN_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("MERIDIAN_OWN_MEMBERSHIP", &tenant.membership_id)
        .env("MERIDIAN_OWN_TOKEN", &tenant.token_id)
        .env("MERIDIAN_RESIDENT", &resident)
        .env("MERIDIAN_CURSOR", &cursor)
        .env("MERIDIAN_HOOKS", config.join("hooks.py"))
        .status()
        .with_context(|| format!("running {}", st.display()))?;

    let statuses = count_statuses(&har)?;
    let total: usize = statuses.values().sum();
    let by_status: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}: {n}")).collect();
    println!("contract: {total} requests sent ({})", by_status.join(", "));
    // Stopping the app checks its logs (a component trap, a leaked
    // secret) and panics, failing the run, if either happened.
    drop(app);
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Requests in a HAR file, by response status.
fn count_statuses(har: &std::path::Path) -> anyhow::Result<BTreeMap<u64, usize>> {
    let text = std::fs::read_to_string(har)
        .with_context(|| format!("reading Schemathesis's report {}", har.display()))?;
    let report: serde_json::Value =
        serde_json::from_str(&text).context("parsing the HAR report")?;
    let entries = report["log"]["entries"]
        .as_array()
        .context("the HAR report has no entries")?;
    let mut statuses = BTreeMap::new();
    for entry in entries {
        let status = entry["response"]["status"].as_u64().unwrap_or(0);
        *statuses.entry(status).or_default() += 1;
    }
    Ok(statuses)
}
