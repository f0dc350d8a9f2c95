//! Resource ids: UUID v7, so that ids sort in creation order and serve as
//! the stable key for cursor pagination.

use uuid::Uuid;

/// A new id for a row.
pub fn new_id() -> String {
    Uuid::now_v7().hyphenated().to_string()
}

/// The canonical form of a path id, or `None` if it is not a UUID (which
/// callers answer as "not found": no row can have that id).
pub fn parse_id(raw: &str) -> Option<String> {
    // Only the hyphenated form (36 characters): `Uuid::parse_str` would
    // also take the simple, braced and URN forms, which the contract does
    // not name.
    if raw.len() != 36 {
        return None;
    }
    Uuid::parse_str(raw)
        .ok()
        .map(|u| u.hyphenated().to_string())
}

/// Declares a typed row id: a UUID in canonical form that only its own
/// kind of row takes, so that a repository's parameters (a resident's id, a
/// complaint's) cannot be passed for one another. Serialized as the bare
/// string; a statement parameter as its text.
#[macro_export]
macro_rules! row_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, ::serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new one, for a row about to be written.
            pub fn fresh() -> Self {
                Self($crate::ids::new_id())
            }

            /// A path's id in canonical form, or `None` if it is not a UUID
            /// (no row has it: callers answer "not found").
            pub fn parse(raw: &str) -> Option<Self> {
                $crate::ids::parse_id(raw).map(Self)
            }

            /// One read back from its own column.
            pub fn stored(raw: &str) -> Self {
                Self(raw.to_owned())
            }

            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&$name> for $crate::store::db::Value {
            fn from(id: &$name) -> Self {
                id.as_str().into()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_v7_and_increase() {
        let a = new_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id();
        assert!(a < b);
        assert_eq!(Uuid::parse_str(&a).unwrap().get_version_num(), 7);
    }

    #[test]
    fn path_ids_are_canonicalised_or_refused() {
        assert_eq!(
            parse_id("0B6F1E3C-7C1E-4A55-9D3C-2F0C3B1F6A01").as_deref(),
            Some("0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01")
        );
        for other in [
            "42",
            "0b6f1e3c7c1e4a559d3c2f0c3b1f6a01",
            "{0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01}",
            "urn:uuid:0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01",
            " 0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01",
        ] {
            assert_eq!(parse_id(other), None, "{other}");
        }
    }
}
