//! The request id: the client's when it is sane, else a new UUID.

use std::fmt;

use uuid::Uuid;

/// Longest client-supplied request id we echo.
pub const MAX_LEN: usize = 128;

/// An id safe to log and echo: 1–128 characters of `A-Z a-z 0-9 - _ . :`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// The client's id if it is sane, else a fresh UUID.
    pub fn from_header_or_new(header: Option<&str>) -> Self {
        header
            .and_then(Self::parse)
            .unwrap_or_else(Self::new_random)
    }

    /// Accepts a sane id.
    pub fn parse(raw: &str) -> Option<Self> {
        let sane = !raw.is_empty()
            && raw.len() <= MAX_LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
        sane.then(|| Self(raw.to_owned()))
    }

    /// A new random (v4) UUID.
    pub fn new_random() -> Self {
        Self(Uuid::new_v4().to_string())
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_sane_client_id_is_echoed() {
        assert_eq!(
            RequestId::from_header_or_new(Some("abc-123_x.y:z")).as_str(),
            "abc-123_x.y:z"
        );
    }

    #[test]
    fn an_insane_client_id_is_replaced_by_a_uuid() {
        for bad in [
            "",
            "has space",
            "new\nline",
            "é",
            &"a".repeat(129),
            "<script>",
        ] {
            let id = RequestId::from_header_or_new(Some(bad));
            assert_ne!(id.as_str(), bad);
            assert!(Uuid::parse_str(id.as_str()).is_ok());
        }
    }

    #[test]
    fn no_client_id_gets_a_fresh_uuid_each_time() {
        let a = RequestId::from_header_or_new(None);
        let b = RequestId::from_header_or_new(None);
        assert_ne!(a, b);
        assert_eq!(Uuid::parse_str(a.as_str()).unwrap().get_version_num(), 4);
    }

    proptest! {
        #[test]
        fn whatever_comes_in_what_goes_out_is_sane(raw in "\\PC{0,200}") {
            let id = RequestId::from_header_or_new(Some(&raw));
            prop_assert!(RequestId::parse(id.as_str()).is_some());
        }
    }
}
