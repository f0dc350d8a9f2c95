//! The entry gate of every internal service (`identity`, `community`,
//! `billing`): token, deadline, budget — before any tenant-scoped work.

use meridian_platform::budget::admission::{Admitted, InternalGate};
use meridian_platform::budget::propagation::DEFAULT_SKEW_THRESHOLD;
use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::log::journal::{self, Event};
use meridian_platform::wire::headers::REQUEST_ID;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Clock, SystemClock};

use crate::vars;

/// Admits `request`, whose id is `request_id`, to the service `hop`, or
/// answers it with the refusal. Clock skew with the caller is logged.
pub fn admit(
    request: &ServiceRequest,
    request_id: &RequestId,
    hop: &'static str,
) -> Result<Admitted, ServiceResponse> {
    let token = vars::internal_token();
    let gate = InternalGate {
        expected_token: &token,
        hop,
        skew_threshold: DEFAULT_SKEW_THRESHOLD,
    };
    let header = |name: &str| {
        if name == REQUEST_ID {
            Some(request_id.as_str())
        } else {
            request.header(name)
        }
    };
    match gate.admit(header, SystemClock.now()) {
        Ok(admitted) => {
            if let Some(skew_ms) = admitted.skew_ms {
                journal::event(Event::ClockSkew { skew_ms });
            }
            Ok(admitted)
        }
        Err(problem) => {
            let mut response = ServiceResponse::problem_for(request_id.as_str(), problem);
            response.set_header(REQUEST_ID, request_id.as_str());
            Err(response)
        }
    }
}
