//! The API contract: `openapi.yaml`, turned into JSON when the gateway is
//! built (see `build.rs`) and served as `GET /openapi.json`. One build
//! serves one document, so caches may keep it and revalidate by ETag.

use meridian_platform::http::prelude::*;

/// The document, compact JSON.
pub const DOCUMENT: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

/// A strong validator of the document's bytes, quoted.
pub const ETAG: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.etag"));

/// Public, and fresh for an hour; after that a cache revalidates.
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// The document, or `304 Not Modified` when `If-None-Match` names it.
pub fn response(if_none_match: Option<&str>) -> Response {
    let mut response = if if_none_match.is_some_and(names_current) {
        message::response(StatusCode::NOT_MODIFIED, http::HeaderMap::new(), Vec::new())
    } else {
        message::raw_json(StatusCode::OK, DOCUMENT.as_bytes().to_vec())
    };
    response.set_header("etag", ETAG);
    response.set_header("cache-control", CACHE_CONTROL);
    response
}

/// Whether an `If-None-Match` value matches the current document: `*`, or
/// a list holding its tag (weakly compared, as RFC 9110 asks for GET).
fn names_current(value: &str) -> bool {
    value
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == ETAG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_the_contract_as_json() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        assert!(doc["paths"]["/v1/{tenant}/invoices"]["post"].is_object());
    }

    #[test]
    fn served_with_validators_and_revalidated_by_etag() {
        let full = response(None);
        assert_eq!(full.status().as_u16(), 200);
        assert_eq!(full.body(), DOCUMENT.as_bytes());
        assert_eq!(full.header("etag"), Some(ETAG));
        assert_eq!(full.header("cache-control"), Some(CACHE_CONTROL));
        for current in [
            ETAG.to_owned(),
            format!("W/{ETAG}"),
            format!("\"x\", {ETAG}"),
            "*".into(),
        ] {
            let r = response(Some(&current));
            assert_eq!(r.status().as_u16(), 304, "{current}");
            assert!(r.body().is_empty());
            assert_eq!(r.header("etag"), Some(ETAG));
        }
        assert_eq!(response(Some("\"stale\"")).status(), 200);
    }
}
