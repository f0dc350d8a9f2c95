//! The benchmark's floor: the least a Spin app of Meridian's shape can cost,
//! measured in the same run so that Meridian's figures are ratios to it
//! (docs/testing.md, "Benchmarks", `bench/floor.toml`).
//!
//! One `.wasm` serves three components, chosen by the path each is called
//! on: `front` (public, Meridian's gateway) calls `mid` (identity) and then
//! `back` (community or billing) over service chaining, as a public read or
//! write does. Two shapes:
//!
//! - **no-op** (`GET /noop`): the chain alone, no storage;
//! - **SQLite** (`GET /sqlite/residents`, `POST /sqlite/invoices`): `mid`
//!   resolves the bearer token with one indexed read, `back` reads a page of
//!   up to 20 residents as JSON, or inserts one invoice — the SQLite work a
//!   full read or write cannot do without.
//! - **same-work write** (`POST /samework/invoices`, with an
//!   `Idempotency-Key`): the hops and statements of Meridian's keyed
//!   invoice. `mid` resolves; `back` (billing) claims the key in one
//!   statement of its own (an upsert; a key already there is read), asks
//!   `side` (community) whether the resident exists (one indexed read),
//!   writes the invoice, its outbox row and the key's stored answer in one
//!   transaction, delivers the event to `side` (one insert), marks it
//!   delivered, and answers 201. A replayed key answers the stored
//!   response. Its key, invoice and outbox rows are on `ledger`, a database
//!   in write-ahead mode as billing's is (migration 0004); the reads stay on
//!   rollback-journal files, as identity's and community's do. So the write
//!   ratio measures
//!   Meridian's overhead (budget, retries, validation, logs), not its
//!   features.
//! - **PostgreSQL** (`GET /pg/residents` and a keyed `POST /pg/invoices`,
//!   after `POST /pg/setup`): the SQLite read's hops and statements through
//!   Spin's `pg4`, `mid` and `back` (and `side`, the write's community)
//!   each on the database its `pg_address` variable names (`pg.rs`).
//!
//! Nothing else: no budget, no validation beyond what the SQL needs, no
//! logs. `POST /setup` creates and fills the tables.
// Wasm only: its export names are not valid symbols for a host cdylib.
#![cfg(target_arch = "wasm32")]

mod pg;

use spin_sdk::http::{send, Method, Request, Response};
use spin_sdk::http_component;
use spin_sdk::sqlite::{Connection, Value};

/// The tenant and token `POST /setup` creates.
const TENANT: &str = "floor-tenant";
const TOKEN: &str = "floor-token";
/// Residents `POST /setup` writes: more than a page.
const RESIDENTS: i64 = 50;

#[http_component]
async fn handle(req: Request) -> Response {
    let path = req.path().to_owned();
    match (req.method(), path.as_str()) {
        (Method::Get, "/healthz") => status(200),
        // front
        (Method::Post, "/setup") => {
            set_up(&[
                "http://mid.spin.internal/mid/setup",
                "http://back.spin.internal/back/setup",
                "http://side.spin.internal/side/setup",
            ])
            .await
        }
        (Method::Get, "/noop") => {
            call(Method::Get, "http://mid.spin.internal/mid/noop", None, Vec::new()).await;
            call(Method::Get, "http://back.spin.internal/back/noop", None, Vec::new()).await
        }
        (Method::Post, "/pg/setup") => {
            set_up(&[
                "http://mid.spin.internal/mid/pg/setup",
                "http://back.spin.internal/back/pg/setup",
            ])
            .await
        }
        (Method::Get, "/pg/residents") => {
            let tenant = match pg_tenant(&req).await {
                Ok(tenant) => tenant,
                Err(refused) => return refused,
            };
            let url = format!("http://back.spin.internal/back/pg/residents?tenant={tenant}");
            call(Method::Get, &url, None, Vec::new()).await
        }
        (Method::Post, "/pg/invoices") => {
            let tenant = match pg_tenant(&req).await {
                Ok(tenant) => tenant,
                Err(refused) => return refused,
            };
            let key = req
                .header("idempotency-key")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            let url = format!("http://back.spin.internal/back/pg/invoices?tenant={tenant}&key={key}");
            call(Method::Post, &url, None, req.body().to_vec()).await
        }
        (Method::Post, "/back/pg/invoices") => pg::invoice(&req).await,
        (Method::Get, "/side/pg/resident") => pg::resident(&req),
        (Method::Post, "/mid/pg/setup") => pg::mid_setup(),
        (Method::Get, "/mid/pg/resolve") => pg::resolve(&req),
        (Method::Post, "/back/pg/setup") => pg::back_setup(),
        (Method::Get, "/back/pg/residents") => pg::residents(&req),
        (Method::Get, "/sqlite/residents")
        | (Method::Post, "/sqlite/invoices")
        | (Method::Post, "/samework/invoices") => {
            let token = bearer(&req);
            let resolved = call(Method::Get, "http://mid.spin.internal/mid/resolve", Some(&token), Vec::new()).await;
            if resolved.status() != &200 {
                return resolved;
            }
            let tenant = String::from_utf8_lossy(resolved.body()).into_owned();
            if req.method() == &Method::Get {
                let url = format!("http://back.spin.internal/back/residents?tenant={tenant}");
                call(Method::Get, &url, None, Vec::new()).await
            } else if path == "/sqlite/invoices" {
                let url = format!("http://back.spin.internal/back/invoices?tenant={tenant}");
                call(Method::Post, &url, None, req.body().to_vec()).await
            } else {
                let key = req
                    .header("idempotency-key")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                let url = format!("http://back.spin.internal/back/samework?tenant={tenant}&key={key}");
                call(Method::Post, &url, None, req.body().to_vec()).await
            }
        }
        // mid
        (Method::Get, "/mid/noop") => status(200),
        (Method::Post, "/mid/setup") => sql(
            "mid",
            &[
                "CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, tenant_id TEXT NOT NULL)",
                &format!("INSERT OR REPLACE INTO tokens VALUES ('{TOKEN}', '{TENANT}')"),
            ],
        ),
        (Method::Get, "/mid/resolve") => {
            let token = req.header("x-token").and_then(|v| v.as_str()).unwrap_or_default();
            let found = Connection::open("mid").and_then(|db| {
                db.execute(
                    "SELECT tenant_id FROM tokens WHERE hash = ?",
                    &[Value::Text(token.to_owned())],
                )
            });
            match found {
                Ok(rows) => match rows.rows().next().and_then(|r| r.get::<&str>("tenant_id")) {
                    Some(tenant) => Response::new(200, tenant.to_owned()),
                    None => status(401),
                },
                Err(_) => status(500),
            }
        }
        // back
        (Method::Get, "/back/noop") => json(200, r#"{"items":[]}"#.to_owned()),
        (Method::Post, "/back/setup") => back_setup(),
        (Method::Get, "/back/residents") => residents(&tenant_of(&req)),
        (Method::Post, "/back/invoices") => invoice(&tenant_of(&req), req.body()),
        (Method::Post, "/back/samework") => same_work_invoice(&req).await,
        // side
        (Method::Post, "/side/setup") => side_setup(),
        (Method::Get, "/side/resident") => {
            let found = Connection::open("side").and_then(|db| {
                db.execute(
                    "SELECT id FROM residents WHERE tenant_id = ? AND id = ?",
                    &[Value::Text(tenant_of(&req)), Value::Text(param(&req, "id"))],
                )
            });
            match found {
                Ok(rows) if rows.rows().next().is_some() => status(200),
                Ok(_) => status(404),
                Err(_) => status(500),
            }
        }
        (Method::Post, "/side/notifications") => {
            let inserted = Connection::open("side").and_then(|db| {
                db.execute(
                    "INSERT OR IGNORE INTO notifications (event_id, tenant_id, body) VALUES (?, ?, ?)",
                    &[
                        Value::Text(param(&req, "event")),
                        Value::Text(tenant_of(&req)),
                        Value::Text(String::from_utf8_lossy(req.body()).into_owned()),
                    ],
                )
            });
            status(if inserted.is_ok() { 204 } else { 500 })
        }
        _ => status(404),
    }
}

/// The residents page: the read behind `GET /v1/{t}/residents?limit=20`.
fn residents(tenant: &str) -> Response {
    let page = Connection::open("back").and_then(|db| {
        db.execute(
            "SELECT id, name, unit, email, created_at FROM residents WHERE tenant_id = ? ORDER BY id LIMIT 20",
            &[Value::Text(tenant.to_owned())],
        )
    });
    let Ok(page) = page else {
        return status(500);
    };
    let items: Vec<serde_json::Value> = page
        .rows()
        .map(|r| {
            serde_json::json!({
                "id": r.get::<&str>("id"),
                "name": r.get::<&str>("name"),
                "unit": r.get::<&str>("unit"),
                "email": r.get::<&str>("email"),
                "created_at": r.get::<&str>("created_at"),
            })
        })
        .collect();
    json(200, serde_json::json!({ "items": items }).to_string())
}

/// One invoice inserted: the write behind `POST /v1/{t}/invoices`.
fn invoice(tenant: &str, body: &[u8]) -> Response {
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(body) else {
        return status(400);
    };
    let amount = fields
        .get("amount_cents")
        .and_then(|v| v.as_i64())
        .unwrap_or_default();
    let inserted = Connection::open("back").and_then(|db| {
        db.execute(
            "INSERT INTO invoices (tenant_id, amount_cents, body, created_at)
             VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) RETURNING id",
            &[
                Value::Text(tenant.to_owned()),
                Value::Integer(amount),
                Value::Text(String::from_utf8_lossy(body).into_owned()),
            ],
        )
    });
    match inserted {
        Ok(rows) => {
            let id = rows.rows().next().and_then(|r| r.get::<i64>("id"));
            json(
                201,
                serde_json::json!({ "id": id, "amount_cents": amount }).to_string(),
            )
        }
        Err(_) => status(500),
    }
}

/// The same-work keyed invoice at `back`: claim, resident check at `side`,
/// one transaction for the invoice, its outbox row and the stored answer,
/// the event delivered to `side` and marked delivered.
async fn same_work_invoice(req: &Request) -> Response {
    let (tenant, key) = (tenant_of(req), param(req, "key"));
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(req.body()) else {
        return status(400);
    };
    let text = |name: &str| {
        fields
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let (resident, amount) = (
        text("resident_id"),
        fields
            .get("amount_cents")
            .and_then(|v| v.as_i64())
            .unwrap_or_default(),
    );
    let Ok(db) = Connection::open("ledger") else {
        return status(500);
    };
    // The claim, one statement as Meridian's: a key already there is read
    // to answer what was stored.
    let claimed = (|| {
        let taken = db.execute(
            "INSERT INTO idempotency (tenant_id, key, state) VALUES (?, ?, 'claimed')
             ON CONFLICT (tenant_id, key) DO NOTHING RETURNING state",
            &[Value::Text(tenant.clone()), Value::Text(key.clone())],
        )?;
        if taken.rows().next().is_some() {
            return Ok(None);
        }
        let found = db.execute(
            "SELECT response FROM idempotency WHERE tenant_id = ? AND key = ?",
            &[Value::Text(tenant.clone()), Value::Text(key.clone())],
        )?;
        let stored = found
            .rows()
            .next()
            .and_then(|row| row.get::<&str>("response").map(str::to_owned))
            .unwrap_or_default();
        Ok::<_, spin_sdk::sqlite::Error>(Some(stored))
    })();
    match claimed {
        Ok(Some(stored)) => return json(201, stored),
        Ok(None) => {}
        Err(_) => return status(500),
    }
    let check = format!("http://side.spin.internal/side/resident?tenant={tenant}&id={resident}");
    if call(Method::Get, &check, None, Vec::new()).await.status() != &200 {
        return status(422);
    }
    let event = format!("{key}-event");
    let written = (|| {
        db.execute("BEGIN IMMEDIATE", &[])?;
        let rows = db.execute(
            "INSERT INTO invoices (tenant_id, amount_cents, body, created_at)
             VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) RETURNING id",
            &[
                Value::Text(tenant.clone()),
                Value::Integer(amount),
                Value::Text(String::from_utf8_lossy(req.body()).into_owned()),
            ],
        )?;
        let id = rows.rows().next().and_then(|r| r.get::<i64>("id"));
        let answer = serde_json::json!({ "id": id, "amount_cents": amount }).to_string();
        db.execute(
            "INSERT INTO outbox (event_id, tenant_id, body, delivered) VALUES (?, ?, ?, 0)",
            &[
                Value::Text(event.clone()),
                Value::Text(tenant.clone()),
                Value::Text(answer.clone()),
            ],
        )?;
        db.execute(
            "UPDATE idempotency SET state = 'completed', response = ? WHERE tenant_id = ? AND key = ?",
            &[Value::Text(answer.clone()), Value::Text(tenant.clone()), Value::Text(key.clone())],
        )?;
        db.execute("COMMIT", &[])?;
        Ok::<_, spin_sdk::sqlite::Error>(answer)
    })();
    let Ok(answer) = written else {
        return status(500);
    };
    let deliver =
        format!("http://side.spin.internal/side/notifications?tenant={tenant}&event={event}");
    if call(Method::Post, &deliver, None, answer.clone().into_bytes())
        .await
        .status()
        == &204
    {
        let _ = db.execute(
            "UPDATE outbox SET delivered = 1 WHERE event_id = ?",
            &[Value::Text(event)],
        );
    }
    json(201, answer)
}

fn side_setup() -> Response {
    let mut statements = vec![
        "CREATE TABLE IF NOT EXISTS residents (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL)".to_owned(),
        "CREATE TABLE IF NOT EXISTS notifications (event_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL)".to_owned(),
    ];
    for n in 0..RESIDENTS {
        statements.push(format!(
            "INSERT OR REPLACE INTO residents VALUES ('resident-{n:04}', '{TENANT}')"
        ));
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    sql("side", &statements)
}

/// The invoices table: `back`'s for the one-insert write, `ledger`'s for
/// the same-work write.
const INVOICES: &str = "CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, amount_cents INTEGER NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL)";

fn back_setup() -> Response {
    let mut statements = vec![
        "CREATE TABLE IF NOT EXISTS residents (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, unit TEXT NOT NULL, email TEXT, created_at TEXT NOT NULL)".to_owned(),
        "CREATE INDEX IF NOT EXISTS residents_by_tenant ON residents (tenant_id, id)".to_owned(),
        INVOICES.to_owned(),
    ];
    for n in 0..RESIDENTS {
        statements.push(format!(
            "INSERT OR REPLACE INTO residents VALUES ('resident-{n:04}', '{TENANT}', 'Resident {n}', 'Unit {n}', 'r{n}@example.com', '2026-12-01T00:00:00Z')"
        ));
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    if *sql("back", &statements).status() != 200 {
        return status(500);
    }
    sql(
        "ledger",
        &[
            "PRAGMA journal_mode = WAL",
            INVOICES,
            "CREATE TABLE IF NOT EXISTS idempotency (tenant_id TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL, response TEXT, PRIMARY KEY (tenant_id, key))",
            "CREATE TABLE IF NOT EXISTS outbox (event_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL, delivered INTEGER NOT NULL)",
        ],
    )
}

/// Runs `statements` on the `label` database: 200, or 500 at the first
/// that fails.
fn sql(label: &str, statements: &[&str]) -> Response {
    match Connection::open(label) {
        Ok(db) => all_or_500(statements, |s| db.execute(s, &[]).map(drop)),
        Err(_) => status(500),
    }
}

/// Runs each of `statements` with `execute`: 200, or 500 at the first
/// that fails.
fn all_or_500<S: AsRef<str>, E>(
    statements: &[S],
    execute: impl Fn(&str) -> Result<(), E>,
) -> Response {
    match statements.iter().try_for_each(|s| execute(s.as_ref())) {
        Ok(()) => status(200),
        Err(_) => status(500),
    }
}

/// Sets up each component at `targets` in turn: 200, or the first answer
/// that is not.
async fn set_up(targets: &[&str]) -> Response {
    for target in targets {
        let answer = call(Method::Post, target, None, Vec::new()).await;
        if answer.status() != &200 {
            return answer;
        }
    }
    status(200)
}

/// The request's bearer token (empty when it has none).
fn bearer(req: &Request) -> String {
    req.header("authorization")
        .and_then(|v| v.as_str())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned()
}

/// The `tenant` query parameter `front` adds.
fn tenant_of(req: &Request) -> String {
    param(req, "tenant")
}

/// Query parameter `name` (the floor's own values need no decoding).
fn param(req: &Request, name: &str) -> String {
    req.query()
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_default()
        .to_owned()
}

/// The bearer's tenant as `mid` resolves it on PostgreSQL, or `mid`'s
/// refusal.
async fn pg_tenant(req: &Request) -> Result<String, Response> {
    let token = bearer(req);
    let resolved = call(
        Method::Get,
        "http://mid.spin.internal/mid/pg/resolve",
        Some(&token),
        Vec::new(),
    )
    .await;
    match resolved.status() {
        200 => Ok(String::from_utf8_lossy(resolved.body()).into_owned()),
        _ => Err(resolved),
    }
}

/// A call to another component over service chaining; a failure to reach
/// it is a 502.
async fn call(method: Method, url: &str, token: Option<&str>, body: Vec<u8>) -> Response {
    let mut request = Request::builder();
    request.method(method).uri(url);
    if let Some(token) = token {
        request.header("x-token", token);
    }
    let request = request.body(body).build();
    match send::<_, Response>(request).await {
        Ok(response) => response,
        Err(_) => status(502),
    }
}

fn status(code: u16) -> Response {
    Response::new(code, ())
}

fn json(code: u16, body: String) -> Response {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(body)
        .build()
}
