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
