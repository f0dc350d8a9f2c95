//! What goes on the wire besides bodies: header names and hygiene, the
//! problem+json error shape and its codes (`code`), the request id, and
//! the signature that proves an internal call.

pub mod code;
pub mod headers;
pub mod problem;
pub mod request_id;
pub mod signature;

/// The path prefix under which a service answers where the platform has
/// no service chaining and every route is public (Fermyon Cloud):
/// `/_meridian/<service>/...`, stripped before the service routes.
pub const INTERNAL_PREFIX: &str = "/_meridian";

/// `path` as `hop` routes it: without the prefix `/_meridian/<hop>` that
/// its routes carry where the platform has no service chaining and the
/// services' routes are public (Fermyon Cloud); `None` when it has none.
pub fn unprefixed<'a>(path: &'a str, hop: &str) -> Option<&'a str> {
    let rest = path
        .strip_prefix(INTERNAL_PREFIX)?
        .strip_prefix('/')?
        .strip_prefix(hop)?;
    match rest {
        "" => Some("/"),
        rest if rest.starts_with('/') => Some(rest),
        _ => None,
    }
}

/// Serializes a closed set of values (a status, a role) as the wire name its
/// `as_str` gives, so that each name is written once, there.
#[macro_export]
macro_rules! serialize_as_str {
    ($type:ty) => {
        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_services_own_prefix_is_taken_off() {
        assert_eq!(
            unprefixed("/_meridian/identity/internal/resolve", "identity"),
            Some("/internal/resolve")
        );
        assert_eq!(unprefixed("/_meridian/identity", "identity"), Some("/"));
        assert_eq!(unprefixed("/_meridian/identity/", "identity"), Some("/"));
        assert_eq!(unprefixed("/_meridian/identityx/health", "identity"), None);
        assert_eq!(unprefixed("/_meridian/billing/health", "identity"), None);
        assert_eq!(unprefixed("/internal/resolve", "identity"), None);
        assert_eq!(unprefixed("/_meridianidentity/health", "identity"), None);
    }
}
