//! The entry gate of every internal service (`identity`, `community`,
//! `billing`): token, deadline, budget — before any tenant-scoped work.

use meridian_platform::admission::{Admitted, InternalGate};
use meridian_platform::propagation::DEFAULT_SKEW_THRESHOLD;
use meridian_platform::{Clock, SystemClock};
use spin_sdk::http::{Request, Response};

use crate::{respond, vars};

/// Admits `request` to the service `hop`, or answers it with the refusal.
/// Clock skew with the caller is logged.
pub fn admit(request: &Request, hop: &'static str) -> Result<Admitted, Response> {
    let token = vars::internal_token();
    let gate = InternalGate {
        expected_token: &token,
        hop,
        skew_threshold: DEFAULT_SKEW_THRESHOLD,
    };
    let now = SystemClock.now();
    match gate.admit(|name| respond::header(request, name), now) {
        Ok(admitted) => {
            if let Some(skew) = admitted.skew_ms {
                eprintln!(
                    "{hop}: clock skew of {skew} ms with the caller (request {})",
                    admitted.ctx.request_id()
                );
            }
            Ok(admitted)
        }
        Err(problem) => {
            let request_id = meridian_platform::request_id::RequestId::from_header_or_new(
                respond::header(request, meridian_platform::headers::REQUEST_ID),
            );
            Err(respond::problem(request_id.as_str(), problem))
        }
    }
}
