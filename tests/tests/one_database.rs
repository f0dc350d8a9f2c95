//! One SQLite database for the whole app, as a platform that allows one
//! gives it (Fermyon Cloud's plans): every service opens the one label,
//! each keeps its tables and its migration ledger its own by name, and the
//! API works across all three. The whole suite runs in this layout with
//! `scripts/one-database.sh`; this test holds it in every run.

use meridian_e2e::{SpinApp, SpinOptions};
use serde_json::json;

#[test]
fn one_database_serves_every_service_each_with_its_own_tables() {
    let app = SpinApp::start_with(SpinOptions::default().one_database());
    let acme = app.tenant("acme");
    let resident = acme.resident("Ada");
    let invoice = acme
        .post("/invoices")
        .key("one-db-1")
        .json(&json!({"resident_id": resident, "amount_cents": 1250, "currency": "EUR", "description": "dues", "due_date": "2026-12-31"}));
    assert_eq!(invoice.status, 201, "{}", invoice.body);
    let again = acme
        .post("/invoices")
        .key("one-db-1")
        .json(&json!({"resident_id": resident, "amount_cents": 1250, "currency": "EUR", "description": "dues", "due_date": "2026-12-31"}));
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(acme.list("/invoices").len(), 1);
    assert_eq!(acme.list("/residents").len(), 1);
    assert_eq!(acme.list("/members").len(), 1);

    let file = app.database("identity");
    let state = file.parent().expect("the state directory");
    for own in ["identity.db", "community.db", "billing.db"] {
        assert!(!state.join(own).exists(), "{own} was made");
    }
    let db = rusqlite::Connection::open(&file).expect("the one database");
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for service in ["identity", "community", "billing"] {
        for own in ["schema_migrations", "idempotency_records", "row_sequence"] {
            let name = format!("{service}_{own}");
            assert!(tables.contains(&name), "{name} not in {tables:?}");
        }
    }
    for table in [
        "tenants",
        "memberships",
        "residents",
        "invoices",
        "outbox_events",
    ] {
        assert!(
            tables.contains(&table.to_owned()),
            "{table} not in {tables:?}"
        );
    }
    let replayable: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM billing_idempotency_records",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(replayable, 1);
}
