//! The `identity` route table.

use meridian_platform::admission::Admitted;
use meridian_platform::{ErrorCode, Problem};
use meridian_spin::respond;
use spin_sdk::http::{Request, Response};

/// Routes an admitted request.
pub async fn dispatch(admitted: Admitted, request: Request) -> Response {
    let problem = Problem::new(
        ErrorCode::NotFound,
        format!("no route for {}", request.path()),
    );
    respond::problem(admitted.ctx.request_id().as_str(), problem)
}
