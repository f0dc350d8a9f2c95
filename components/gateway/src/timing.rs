//! `Server-Timing`: where the request's time went, hop by hop.

use std::time::Duration;

/// Entries collected while handling one request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ServerTiming(Vec<(&'static str, Duration)>);

impl ServerTiming {
    /// Records `name` taking `took`.
    pub fn record(&mut self, name: &'static str, took: Duration) {
        self.0.push((name, took));
    }

    /// The header value, e.g. `identity;dur=3, community;dur=12, gateway;dur=16`.
    pub fn header_value(&self, total: Duration) -> String {
        self.0
            .iter()
            .chain(std::iter::once(&("gateway", total)))
            .map(|(name, took)| format!("{name};dur={}", took.as_millis()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_listed_in_order_with_the_gateway_total_last() {
        let mut t = ServerTiming::default();
        t.record("identity", Duration::from_millis(3));
        t.record("community", Duration::from_millis(12));
        assert_eq!(
            t.header_value(Duration::from_millis(16)),
            "identity;dur=3, community;dur=12, gateway;dur=16"
        );
    }
}
