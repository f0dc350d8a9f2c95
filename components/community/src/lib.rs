//! Meridian's `community` service, private behind the gateway. This file is only
//! the Spin entry point; requests pass the internal gate in
//! `meridian_spin::service` before the route table in [`routes`].
// `deny`, not `forbid`: the SDK's export macro needs its own `allow`.
#![deny(unsafe_code)]

pub mod migrations;
pub mod routes;

use meridian_spin::service::ServiceSpec;

/// The service's name, database and schema.
pub const SPEC: ServiceSpec = ServiceSpec {
    hop: "community",
    database: "community",
    migrations: migrations::ALL,
};

// The SDK's export macro expands to `unsafe` glue; it is allowed here only.
// Wasm only: its export names are not valid symbols for a host cdylib.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod entry {
    use meridian_spin::service;
    use spin_sdk::http::{Request, Response};
    use spin_sdk::http_component;

    #[http_component]
    async fn handle(request: Request) -> Response {
        service::serve(request, &crate::SPEC, |ctx, store, request| async move {
            crate::routes::dispatch(&ctx, &store, &request)
        })
        .await
    }
}
