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

    /// The header value: each hop, the gateway's total, and for a request
    /// that had a budget, the budget granted and what was left of it at
    /// the answer, e.g. `identity;dur=3, community;dur=12, gateway;dur=16,
    /// budget;dur=3000, left;dur=2984`.
    pub fn header_value(&self, total: Duration, budget: Option<(Duration, Duration)>) -> String {
        let budget = budget.map(|(granted, left)| [("budget", granted), ("left", left)]);
        self.0
            .iter()
            .copied()
            .chain(std::iter::once(("gateway", total)))
            .chain(budget.into_iter().flatten())
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
            t.header_value(Duration::from_millis(16), None),
            "identity;dur=3, community;dur=12, gateway;dur=16"
        );
        let budget = Some((Duration::from_millis(3_000), Duration::from_millis(2_984)));
        assert_eq!(
            t.header_value(Duration::from_millis(16), budget),
            "identity;dur=3, community;dur=12, gateway;dur=16, budget;dur=3000, left;dur=2984"
        );
    }
}
