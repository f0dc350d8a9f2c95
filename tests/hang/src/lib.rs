//! A private component that holds every request for ten seconds before
//! answering. The end-to-end suite puts it where `community` would be and
//! reaches it through `*.spin.internal`, where Spin runs the call in-process
//! and ignores wasi:http request options: only the caller's own budget timer
//! can end the wait.
// `deny`, not `forbid`: the SDK's export macro needs its own `allow`.
#![deny(unsafe_code)]

/// How long every request is held.
pub const HOLD: std::time::Duration = std::time::Duration::from_secs(10);

// Wasm only: its export names are not valid symbols for a host cdylib.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod entry {
    use spin_sdk::http::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};
    use spin_sdk::http_component;

    #[http_component]
    async fn handle(_request: IncomingRequest, out: ResponseOutparam) {
        meridian_spin::sleep(crate::HOLD).await;
        let response = OutgoingResponse::new(Fields::new());
        let _ = response.set_status_code(200);
        out.set(response);
    }
}
