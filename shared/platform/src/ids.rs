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
