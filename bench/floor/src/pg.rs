//! The floor on PostgreSQL (`GET /pg/residents`): the SQLite read's hops
//! and statements through Spin's `pg4`, each of `mid` and `back` on the
//! database its `pg_address` variable names — what Meridian's read on
//! PostgreSQL cannot do without (scripts/bench.sh --postgres). And its
//! keyed write (`POST /pg/invoices`, scripts/distance.sh): `back` claims
//! the key in one statement, asks `side` whether the resident exists (one
//! read), then writes the invoice, its outbox row and the key's answer in
//! one statement, and answers; the event's delivery is left out (Meridian
//! makes it after its answer).

use spin_sdk::http::{Request, Response};
use spin_sdk::pg4::{Connection, DbValue, ParameterValue};

use crate::{all_or_500, json, param, status, tenant_of, RESIDENTS, TENANT, TOKEN};

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
        "CREATE TABLE IF NOT EXISTS idempotency (tenant_id TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL, response TEXT, PRIMARY KEY (tenant_id, key))".to_owned(),
        "CREATE TABLE IF NOT EXISTS invoices (id BIGSERIAL PRIMARY KEY, tenant_id TEXT NOT NULL, amount_cents BIGINT NOT NULL, body TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL)".to_owned(),
        "CREATE TABLE IF NOT EXISTS outbox (event_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL, delivered BOOLEAN NOT NULL)".to_owned(),
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

/// Whether the resident exists in the tenant: one read (of one row
/// always: Spin's 4.x host never returns a query that matches none).
pub fn resident(req: &Request) -> Response {
    let Some(db) = open() else {
        return status(500);
    };
    let found = db.query(
        "SELECT count(*) FROM residents WHERE tenant_id = $1 AND id = $2",
        &[
            ParameterValue::Str(tenant_of(req)),
            ParameterValue::Str(param(req, "id")),
        ],
    );
    match found.map(|r| r.rows.first().and_then(|r| r.first()).cloned()) {
        Ok(Some(DbValue::Int64(n))) if n > 0 => status(200),
        Ok(_) => status(404),
        Err(_) => status(500),
    }
}

/// The keyed invoice: the claim, the resident's check at `side`, and one
/// statement that writes the invoice, its outbox row and the key's answer.
/// A key already there answers what was stored.
pub async fn invoice(req: &Request) -> Response {
    let (tenant, key) = (tenant_of(req), param(req, "key"));
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(req.body()) else {
        return status(400);
    };
    let resident = fields
        .get("resident_id")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    let amount = fields
        .get("amount_cents")
        .and_then(|v| v.as_i64())
        .unwrap_or_default();
    let Some(db) = open() else {
        return status(500);
    };
    let text = |s: &str| ParameterValue::Str(s.to_owned());
    let claim = db.query(
        "WITH c AS (INSERT INTO idempotency (tenant_id, key, state) VALUES ($1, $2, 'claimed') \
         ON CONFLICT (tenant_id, key) DO NOTHING RETURNING state) \
         SELECT (SELECT count(*) FROM c) AS claimed, \
         (SELECT response FROM idempotency WHERE tenant_id = $1 AND key = $2) AS stored",
        &[text(&tenant), text(&key)],
    );
    let Ok(claim) = claim else {
        return status(500);
    };
    match claim.rows.first().map(Vec::as_slice) {
        Some([DbValue::Int64(1), _]) => {}
        Some([_, DbValue::Str(stored)]) => return json(201, stored.clone()),
        _ => return status(409),
    }
    let check = format!("http://side.spin.internal/side/pg/resident?tenant={tenant}&id={resident}");
    if crate::call(spin_sdk::http::Method::Get, &check, None, Vec::new())
        .await
        .status()
        != &200
    {
        return status(422);
    }
    let written = db.query(
        "WITH i AS (INSERT INTO invoices (tenant_id, amount_cents, body, created_at) \
         VALUES ($1, $2, $3, now()) RETURNING id), \
         o AS (INSERT INTO outbox (event_id, tenant_id, body, delivered) \
         SELECT $4, $1, $3, false FROM i), \
         k AS (UPDATE idempotency SET state = 'completed', \
         response = (SELECT json_build_object('id', id, 'amount_cents', $2::bigint)::text FROM i) \
         WHERE tenant_id = $1 AND key = $5) \
         SELECT json_build_object('id', id, 'amount_cents', $2::bigint)::text AS answer FROM i",
        &[
            text(&tenant),
            ParameterValue::Int64(amount),
            text(&String::from_utf8_lossy(req.body())),
            text(&format!("{key}-event")),
            text(&key),
        ],
    );
    match written.map(|r| r.rows.first().and_then(|r| r.first()).cloned()) {
        Ok(Some(DbValue::Str(answer))) => json(201, answer),
        _ => status(500),
    }
}
