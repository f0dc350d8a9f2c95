//! The spin-sdk hello-world component (`spin new -t http-rust`), the
//! reference each Meridian `.wasm` is sized against (docs/testing.md, "Benchmarks").
// Wasm only: its export names are not valid symbols for a host cdylib.
#![cfg(target_arch = "wasm32")]

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_component;

#[http_component]
fn handle_hello(_req: Request) -> anyhow::Result<impl IntoResponse> {
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body("Hello World!")
        .build())
}
