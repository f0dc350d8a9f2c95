//! Meridian's public gateway: creates the request budget, resolves the
//! tenant once, and forwards to the owning service. This file is only the
//! Spin entry point; the route table is [`routes`], the flow [`app`].

pub mod app;
pub mod concurrency;
pub mod config;
pub mod contract;
pub mod edge;
pub mod exchange;
pub mod forward;
pub mod migrate;
pub mod outcome;
pub mod rate;
pub mod ready;
pub mod resolve;
pub mod routes;
pub mod store_keys;
pub mod tenant;
pub mod tenant_limits;
pub mod throttle;
pub mod timing;

// The SDK's export macro expands to `unsafe` glue; it is allowed here only.
// Wasm only: its export names are not valid symbols for a host cdylib.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod entry {
    use meridian_platform::{Clock, SystemClock};
    use meridian_spin::service::run_hop;
    use meridian_spin::{convert, vars, Spin};
    use spin_sdk::http::{IncomingRequest, ResponseOutparam};
    use spin_sdk::http_component;

    use crate::app::{EdgeHop, Gateway};
    use crate::config::GatewayConfig;

    #[http_component]
    async fn handle(incoming: IncomingRequest, out: ResponseOutparam) {
        // The budget runs from here: reading the configuration and a slow
        // upload spend it like slow work.
        let arrived = SystemClock.now();
        let head = convert::read_head(&incoming);
        let gateway = Gateway {
            config: GatewayConfig {
                budget: vars::budget_config(),
                identity_url: vars::service_url(
                    "identity",
                    "identity_url",
                    "http://identity.spin.internal",
                ),
                community_url: vars::service_url(
                    "community",
                    "community_url",
                    "http://community.spin.internal",
                ),
                billing_url: vars::service_url(
                    "billing",
                    "billing_url",
                    "http://billing.spin.internal",
                ),
                rates: vars::rate_settings(),
                concurrency: vars::concurrency_settings(),
                throttle: vars::throttle_config().sampled(vars::count_sample()),
                count_sample: vars::count_sample(),
                resolution_cache: vars::resolution_cache().signed_with(&vars::internal_token()),
                trust_request_start: vars::get("trust_request_start").as_deref() == Some("on"),
                // Judged where it is read, like every service's.
                admin_token: Some(vars::admin_token()).filter(|t| !t.is_empty()),
            },
            upstream: Spin::upstream(),
        };
        let hop = EdgeHop {
            gateway: &gateway,
            at: arrived,
        };
        run_hop(head, incoming, out, &hop).await;
    }
}
