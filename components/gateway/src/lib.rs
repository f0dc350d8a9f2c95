//! Meridian's public gateway: creates the request budget, resolves the
//! tenant once, and forwards to the owning service. This file is only the
//! Spin entry point; the route table is [`routes`], the flow [`app`].
// `deny`, not `forbid`: the SDK's export macro needs its own `allow`.
#![deny(unsafe_code)]

pub mod app;
pub mod config;
pub mod edge;
pub mod proxy;
pub mod ready;
pub mod resolve;
pub mod routes;
pub mod timing;

// The SDK's export macro expands to `unsafe` glue; it is allowed here only.
// Wasm only: its export names are not valid symbols for a host cdylib.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod entry {
    use meridian_platform::upstream::Upstream;
    use meridian_platform::SystemClock;
    use meridian_spin::{convert, vars, PollSleeper, RandomJitter, SpinHttp};
    use spin_sdk::http::{Request, Response};
    use spin_sdk::http_component;

    use crate::app::Gateway;
    use crate::config::GatewayConfig;
    use crate::edge::EdgeResponse;

    #[http_component]
    async fn handle(request: Request) -> Response {
        let gateway = Gateway {
            config: GatewayConfig {
                budget: vars::budget_config(),
                identity_url: vars::service_url("identity_url", "http://identity.spin.internal"),
                community_url: vars::service_url("community_url", "http://community.spin.internal"),
                billing_url: vars::service_url("billing_url", "http://billing.spin.internal"),
            },
            upstream: Upstream {
                http: SpinHttp::new(vars::internal_token()),
                clock: SystemClock,
                sleeper: PollSleeper,
                jitter: RandomJitter,
            },
        };
        let request = convert::service_request(request);
        let EdgeResponse {
            status,
            headers,
            body,
        } = gateway.handle(request).await;
        convert::response(status, headers, body)
    }
}
