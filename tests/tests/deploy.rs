//! The deploy files, accepted by a real `spin up`: the libSQL runtime
//! configuration SpinKube loads (its databases are placeholders, so the
//! services answer that their storage is unavailable — cleanly, as a
//! problem, after the pragma libSQL refuses was skipped without a word).

use meridian_e2e::{SpinApp, SpinOptions};

#[test]
fn spin_up_accepts_the_libsql_runtime_configuration_and_degrades_cleanly() {
    // The failure memory, tenant limits, the throttle and the resolution cache
    // are off: their store there is a Redis at a cluster address, and Spin's
    // Redis client spends ~30 s failing to reach it before the store errors
    // (a call to the store cannot be bounded by the guest;
    // docs/failure-memory.md).
    let app = SpinApp::start_with(
        SpinOptions::default()
            .runtime_config("deploy/runtime-config/libsql.toml")
            .variable("failure_memory", "off")
            .variable("tenant_rate_limit", "off")
            .variable("tenant_concurrency_limit", "off")
            .variable("admission", "off")
            .variable("resolution_cache", "off"),
    );
    let logs = app.logs();
    for label in ["identity", "community", "billing"] {
        assert!(
            logs.contains(&format!("[sqlite_database.{label}: libsql]")),
            "{label} is not on libSQL:\n{logs}"
        );
    }
    // The placeholder hosts do not resolve: each service says its storage
    // is unavailable, and the gateway is not ready.
    let ready = app.client().get("/readyz");
    ready.assert_problem(503, "upstream_unavailable");
    let acme = app.client().send(
        "GET",
        "/v1/acme/residents",
        &[("authorization", "Bearer mrd_not_a_real_token")],
        None,
    );
    // A storage server that cannot be reached is a fault of the storage,
    // retryable, not an internal error: identity's 503, passed on.
    acme.assert_problem(503, "storage_unavailable");
    // libSQL refuses `PRAGMA busy_timeout`; that is expected, not a failure:
    // the only failures logged are the unreachable database's.
    for service in ["identity", "community", "billing"] {
        let failures: Vec<_> = app
            .log_lines(service)
            .into_iter()
            .filter(|l| l["event"] == "failure")
            .filter(|l| {
                let cause = l["cause"].as_str().unwrap_or_default();
                cause.to_ascii_lowercase().contains("pragma") || !cause.contains("Hrana")
            })
            .collect();
        assert!(failures.is_empty(), "{service}: {failures:?}");
    }
}
