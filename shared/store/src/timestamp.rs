//! An instant as the API shows it and the databases keep it.

use meridian_deadline::time::UnixMillis;

/// An instant as the API shows it and the databases keep it: RFC 3339, UTC,
/// milliseconds (`2026-11-29T15:01:38.123Z`). Written only from a
/// [`UnixMillis`], so every one sorts as text in time order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Timestamp(String);

impl Timestamp {
    /// The timestamp of `instant`.
    pub fn at(instant: UnixMillis) -> Self {
        Self(instant.to_rfc3339())
    }

    /// A timestamp read back from storage: `None` unless it has exactly the
    /// shape [`Timestamp::at`] writes.
    pub fn stored(raw: &str) -> Option<Self> {
        const SHAPE: &[u8; 24] = b"dddd-dd-ddTdd:dd:dd.dddZ";
        let fits = raw.len() == SHAPE.len()
            && raw.bytes().zip(SHAPE).all(|(b, s)| match s {
                b'd' => b.is_ascii_digit(),
                _ => b == *s,
            });
        fits.then(|| Self(raw.to_owned()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_once_and_read_back_only_in_that_shape() {
        let t = Timestamp::at(UnixMillis::from_millis(1_764_428_498_123));
        assert_eq!(t.as_str(), "2025-11-29T15:01:38.123Z");
        assert_eq!(Timestamp::stored(t.as_str()), Some(t.clone()));
        for bad in [
            "",
            "2025-11-29T15:01:38Z",
            "2025-11-29 15:01:38.123Z",
            "2025-11-29T15:01:38.123+00:00",
        ] {
            assert_eq!(Timestamp::stored(bad), None, "{bad}");
        }
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2025-11-29T15:01:38.123Z\""
        );
    }
}
