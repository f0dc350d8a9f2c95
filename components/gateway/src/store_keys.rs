//! `GET /ops/keys`: what the shared store holds, for the platform admin —
//! the keys in all, and per tenant the two families its members' tokens
//! can grow (remembered resolutions, rate marks), each bounded by the
//! tenant's bins (docs/security.md, "Keys the gateway writes"). A listing
//! of the whole store: an operator's look (Fermyon Cloud allows 1,024
//! keys), never on a request's path.

use std::collections::BTreeMap;

use meridian_platform::counts::Counters;
use meridian_platform::http::prelude::*;
use meridian_platform::http::upstream::Calls;
use meridian_platform::limits::rate::refused_tenant;
use meridian_platform::secrets::TOKEN_BINS;
use meridian_platform::tenancy::cache::entry_tenant;
use meridian_platform::{ErrorCode, Problem};

use crate::exchange::Exchange;
use crate::outcome::Refusal;

impl<E: Calls> Exchange<'_, E> {
    /// The platform admin's count of the shared store's keys.
    pub fn store_keys(&mut self, request: &Request) -> Result<Response, Refusal> {
        self.require_admin(request)?;
        let keys = self.upstream.counters.stored_keys().map_err(|cause| {
            Problem::new(
                ErrorCode::UpstreamUnavailable,
                format!("the shared store could not list its keys: {cause}"),
            )
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
        })?;
        Ok(message::json(StatusCode::OK, &report(&keys)))
    }
}

/// The report of `keys`: how many, and per tenant its remembered
/// resolutions and rate marks, with the bound of each.
pub fn report(keys: &[String]) -> serde_json::Value {
    let mut tenants: BTreeMap<&str, [usize; 2]> = BTreeMap::new();
    for key in keys {
        if let Some(slug) = entry_tenant(key) {
            tenants.entry(slug).or_default()[0] += 1;
        } else if let Some(slug) = refused_tenant(key) {
            tenants.entry(slug).or_default()[1] += 1;
        }
    }
    let tenants: serde_json::Map<String, serde_json::Value> = tenants
        .into_iter()
        .map(|(slug, [resolutions, marks])| {
            (
                slug.to_owned(),
                serde_json::json!({"resolutions": resolutions, "rate_marks": marks}),
            )
        })
        .collect();
    serde_json::json!({
        "keys": keys.len(),
        "tenant_bound": {"resolutions": TOKEN_BINS, "rate_marks": TOKEN_BINS},
        "tenants": tenants,
    })
}

#[cfg(test)]
mod tests {
    use super::report;
    use meridian_platform::limits::rate::refused_key;
    use meridian_platform::secrets::token_hash;
    use meridian_platform::tenancy::cache::{generation_key, hashed_entry_key};
    use meridian_platform::tenancy::TenantSlug;

    #[test]
    fn each_tenants_resolutions_and_marks_are_counted_by_their_own_key_names() {
        let acme = TenantSlug::parse("acme").unwrap();
        let other = TenantSlug::parse("other-co").unwrap();
        let keys: Vec<String> = vec![
            hashed_entry_key(&acme, &token_hash("a")),
            hashed_entry_key(&acme, &token_hash("b")),
            refused_key("acme", &token_hash("a")),
            hashed_entry_key(&other, &token_hash("c")),
            generation_key(&acme),
            "meridian/rate/acme/policy".into(),
            "meridian/rate/acme/10/123".into(),
        ];
        assert_eq!(
            report(&keys),
            serde_json::json!({
                "keys": 7,
                "tenant_bound": {"resolutions": 64, "rate_marks": 64},
                "tenants": {
                    "acme": {"resolutions": 2, "rate_marks": 1},
                    "other-co": {"resolutions": 1, "rate_marks": 0},
                },
            })
        );
    }
}
