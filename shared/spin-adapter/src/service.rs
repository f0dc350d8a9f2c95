//! The common shape of an internal service: the gate, `/health`, then the
//! service's own routes.

use std::future::Future;

use meridian_platform::admission::Admitted;
use meridian_platform::db::Store;
use meridian_platform::migrate::{migrate, Migration};
use meridian_platform::{ErrorCode, Problem, RequestContext, SystemClock};
use spin_sdk::http::{Method, Request, Response};

use crate::sqlite::SpinSqlite;
use crate::{internal, respond};

/// What an internal service is: its name and its database.
#[derive(Debug, Clone, Copy)]
pub struct ServiceSpec {
    /// Component name, reported as `hop`.
    pub hop: &'static str,
    /// SQLite label of the service's database.
    pub database: &'static str,
    /// The service's migrations, in order.
    pub migrations: &'static [Migration],
}

impl ServiceSpec {
    /// Opens the database and brings its schema up to date, under the
    /// request's budget.
    pub fn open_store(
        &self,
        ctx: &RequestContext,
    ) -> Result<Store<SpinSqlite, SystemClock>, Problem> {
        let internal = |what: &str, e: &dyn std::fmt::Display| {
            eprintln!("{}: {what}: {e}", self.hop);
            Problem::new(ErrorCode::Internal, "the service's storage is unavailable")
        };
        let db =
            SpinSqlite::open(self.database).map_err(|e| internal("opening the database", &e))?;
        let store = Store::new(db, SystemClock);
        match migrate(&store, ctx, self.migrations) {
            Ok(applied) => {
                if !applied.is_empty() {
                    eprintln!("{}: applied migrations {applied:?}", self.hop);
                }
                Ok(store)
            }
            Err(meridian_platform::migrate::MigrationError::Db(
                meridian_platform::db::DbError::Budget(spent),
            )) => Err(spent.to_problem()),
            Err(e) => Err(internal("migrating", &e)),
        }
    }
}

/// Serves one request: refuses it at the gate, answers `GET /health`
/// (which opens and migrates the database), or hands it to `routes`.
pub async fn serve<F, Fut>(request: Request, spec: &ServiceSpec, routes: F) -> Response
where
    F: FnOnce(Admitted, Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let admitted = match internal::admit(&request, spec.hop) {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    if request.path() == "/health" && matches!(request.method(), Method::Get | Method::Head) {
        let ctx = &admitted.ctx;
        return match spec.open_store(ctx) {
            Ok(_) => respond::json(
                ctx.request_id().as_str(),
                200,
                &serde_json::json!({"status": "ok", "service": spec.hop}),
            ),
            Err(problem) => respond::problem(ctx.request_id().as_str(), problem),
        };
    }
    routes(admitted, request).await
}
