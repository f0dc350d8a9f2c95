//! The floor on PostgreSQL (`GET /pg/residents`): the SQLite read's hops
//! and statements through Spin's `pg4`, each of `mid` and `back` on the
//! database its `pg_address` variable names — what Meridian's read on
//! PostgreSQL cannot do without (scripts/bench.sh --postgres).

use spin_sdk::http::{Request, Response};
use spin_sdk::pg4::{Connection, DbValue, ParameterValue};

use crate::{all_or_500, json, status, tenant_of, RESIDENTS, TENANT, TOKEN};

fn open() -> Option<Connection> {
    let address = spin_sdk::variables::get("pg_address").ok()?;
    Connection::open(&address).ok()
}

/// Runs `statements` on this component's database: 200, or 500 at the
/// first that fails.
fn run(statements: &[String]) -> Response {
    match open() {
        Some(db) => all_or_500(statements, |s| db.execute(s, &[]).map(drop)),
        None => status(500),
    }
}

/// `mid`'s token table, as the SQLite floor's.
pub fn mid_setup() -> Response {
    run(&[
        "CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, tenant_id TEXT NOT NULL)".into(),
        format!("INSERT INTO tokens VALUES ('{TOKEN}', '{TENANT}') ON CONFLICT DO NOTHING"),
    ])
}

/// `back`'s residents, as the SQLite floor's.
pub fn back_setup() -> Response {
    let mut statements = vec![
        "CREATE TABLE IF NOT EXISTS residents (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, unit TEXT NOT NULL, email TEXT, created_at TEXT NOT NULL)".to_owned(),
        "CREATE INDEX IF NOT EXISTS residents_by_tenant ON residents (tenant_id, id)".to_owned(),
    ];
    for n in 0..RESIDENTS {
        statements.push(format!(
            "INSERT INTO residents VALUES ('resident-{n:04}', '{TENANT}', 'Resident {n}', 'Unit {n}', 'r{n}@example.com', '2026-12-01T00:00:00Z') ON CONFLICT DO NOTHING"
        ));
    }
    run(&statements)
}

/// The token's tenant: one indexed read.
pub fn resolve(req: &Request) -> Response {
    let token = req
        .header("x-token")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let Some(db) = open() else {
        return status(500);
    };
    let found = db.query(
        "SELECT tenant_id FROM tokens WHERE hash = $1",
        &[ParameterValue::Str(token.to_owned())],
    );
    match found {
        Ok(rows) => match rows.rows.first().and_then(|r| r.first()) {
            Some(DbValue::Str(tenant)) => Response::new(200, tenant.clone()),
            _ => status(401),
        },
        Err(_) => status(500),
    }
}

/// The residents page, as the SQLite floor's.
pub fn residents(req: &Request) -> Response {
    let Some(db) = open() else {
        return status(500);
    };
    let page = db.query(
        "SELECT id, name, unit, email, created_at FROM residents WHERE tenant_id = $1 ORDER BY id LIMIT 20",
        &[ParameterValue::Str(tenant_of(req))],
    );
    let Ok(page) = page else {
        return status(500);
    };
    let text = |v: &DbValue| match v {
        DbValue::Str(s) => serde_json::Value::String(s.clone()),
        _ => serde_json::Value::Null,
    };
    let items: Vec<serde_json::Value> = page
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.first().map(text),
                "name": r.get(1).map(text),
                "unit": r.get(2).map(text),
                "email": r.get(3).map(text),
                "created_at": r.get(4).map(text),
            })
        })
        .collect();
    json(200, serde_json::json!({ "items": items }).to_string())
}
