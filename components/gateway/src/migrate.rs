//! `POST /ops/migrate`: each service brings its schema up to date — the
//! operator's step after a deploy (docs/deploy.md, "Migrations on a new
//! database"), never a probe's or a stranger's.

use meridian_platform::http::prelude::*;
use meridian_platform::http::upstream::Calls;
use meridian_platform::service::MIGRATE_PATH;
use meridian_platform::{ErrorCode, Problem};

use crate::exchange::Exchange;
use crate::outcome::Refusal;
use crate::ready::unanswered;

impl<E: Calls> Exchange<'_, E> {
    /// Asks each service, all at once, to apply the migrations its ledger
    /// lacks: 200 with the versions each applied (none when it was
    /// current), else 503 naming the services that did not answer so. At
    /// once: a service a network away from its database spends a round
    /// trip a statement, and one after another the three did not fit a
    /// default budget 10 ms away; where they share one database, each
    /// waits for the other's schema lock within the budget. Safe to repeat:
    /// a service applies only what its ledger lacks.
    pub async fn migrate(&mut self) -> Result<Response, Refusal> {
        let calls = self.on_every_service(Method::POST, MIGRATE_PATH).await;
        let mut failing = Vec::new();
        let mut services = serde_json::Map::new();
        for (service, call) in calls {
            let applied = match &call.response {
                Ok(r) if r.status() == StatusCode::OK => serde_json::from_slice(r.body())
                    .ok()
                    .and_then(|body: serde_json::Value| body.get("applied").cloned())
                    .ok_or_else(|| "no migration report".to_owned()),
                Ok(r) => Err(format!("status {}", r.status().as_u16())),
                Err(e) => Err(unanswered("asking a service to migrate", service, e).to_owned()),
            };
            let answer = match applied {
                Ok(applied) => serde_json::json!({ "applied": applied }),
                Err(status) => {
                    failing.push(format!("{} ({status})", service.name()));
                    serde_json::json!({ "status": status })
                }
            };
            services.insert(service.name().into(), answer);
        }
        if failing.is_empty() {
            return Ok(message::json(
                StatusCode::OK,
                &serde_json::json!({"status": "current", "services": services}),
            ));
        }
        Err(Problem::new(
            ErrorCode::UpstreamUnavailable,
            format!(
                "not migrated: {} (their logs say why; this is safe to repeat)",
                failing.join(", ")
            ),
        )
        .with_status(StatusCode::SERVICE_UNAVAILABLE)
        .into())
    }
}
