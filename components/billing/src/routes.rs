//! The `billing` route table.

use meridian_platform::db::{Database, Store};
use meridian_platform::message::{ServiceRequest, ServiceResponse};
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};

/// Routes an admitted request.
pub fn dispatch<D: Database, C: Clock>(
    ctx: &RequestContext,
    _store: &Store<D, C>,
    request: &ServiceRequest,
) -> ServiceResponse {
    let problem = Problem::new(
        ErrorCode::NotFound,
        format!("no route for {}", request.path),
    );
    ServiceResponse::problem(ctx, problem)
}
