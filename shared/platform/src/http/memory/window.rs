//! The windows both the retry budget and the breaker read: first
//! attempts, retries and failures per caller → downstream, counted in
//! windows of `window` by window number, weighed over the sliding last
//! `window`; and the counting of first attempts (sampled while healthy).

use crate::time::UnixMillis;

use super::{Counters, FailureMemory};
use crate::counts::opened_window;

/// What the window says about one caller → downstream pair.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recent {
    /// First attempts (estimated over the sliding window).
    pub calls: f64,
    /// Retries.
    pub retries: f64,
    /// Failed attempts, first or not.
    pub failures: f64,
}

impl Recent {
    pub(super) fn plus(&self, other: &Recent) -> Recent {
        Recent {
            calls: self.calls + other.calls,
            retries: self.retries + other.retries,
            failures: self.failures + other.failures,
        }
    }
}

/// The counts each window keeps, under `{prefix}/{window number}/{kind}`.
pub(super) const KINDS: [&str; 3] = ["calls", "retries", "failures"];

impl<K: Counters> FailureMemory<'_, K> {
    /// The window's length in ms, at least 1.
    pub(super) fn window_ms(&self) -> u64 {
        u64::try_from(self.config.window.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    pub(super) fn epoch(&self, now: UnixMillis) -> u64 {
        now.as_millis() / self.window_ms()
    }

    pub(super) fn key(&self, epoch: u64, kind: &str) -> String {
        format!("{}/{epoch}/{kind}", self.prefix)
    }

    /// After a write that opened window `epoch` (the first of any kind
    /// there): the pair keeps its last two windows ([`opened_window`]).
    pub(super) fn opened(&self, epoch: u64) {
        opened_window(self.counters, &self.prefix, epoch, |e| {
            KINDS.iter().map(|k| self.key(e, k)).collect()
        });
    }

    pub(super) fn ms(now: UnixMillis) -> i64 {
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
    }

    /// The window's counts at `now`, in one read; empty when off or when
    /// the store cannot be read.
    pub fn recent(&self, now: UnixMillis) -> Recent {
        self.counts(now)
            .map(|(current, previous)| current.plus(&previous))
            .unwrap_or_default()
    }

    /// The current window's counts and the previous one's, weighed by how
    /// much of it still lies within the last `window` (one read).
    pub(super) fn counts(&self, now: UnixMillis) -> Option<(Recent, Recent)> {
        if !self.config.enabled {
            return None;
        }
        let epoch = self.epoch(now);
        let mut keys: Vec<String> = Vec::with_capacity(6);
        for e in [epoch, epoch.saturating_sub(1)] {
            keys.extend(KINDS.iter().map(|k| self.key(e, k)));
        }
        let v = self.counters.read(&keys).ok()?;
        let [calls, retries, failures, calls_before, retries_before, failures_before] = v[..]
        else {
            return None;
        };
        let into = (now.as_millis() % self.window_ms()) as f64 / self.window_ms() as f64;
        let weigh = |(calls, retries, failures): (i64, i64, i64), weight: f64| Recent {
            calls: calls as f64 * weight,
            retries: retries as f64 * weight,
            failures: failures as f64 * weight,
        };
        Some((
            weigh((calls, retries, failures), 1.0),
            weigh((calls_before, retries_before, failures_before), 1.0 - into),
        ))
    }

    /// Counts a call's first attempt, starting at `now`. While all is
    /// healthy, it is written only when `roll` (a random number) picks it,
    /// one in `sample`, and then counts `sample`; after a recent failure (as
    /// [`Self::permit`] read), every one is. (A retry is counted when
    /// [`Self::may_retry`] grants it.) The first write to a new window
    /// forgets the windows before the previous one, so the store holds at
    /// most two windows per pair.
    pub fn first_attempt(&self, now: UnixMillis, roll: u64) {
        if !self.config.enabled {
            return;
        }
        let sample = if self.exact.get() {
            1
        } else {
            u64::from(self.config.sample.max(1))
        };
        if roll % sample != 0 {
            return;
        }
        let epoch = self.epoch(now);
        let delta = i64::try_from(sample).unwrap_or(1);
        if self.counters.add(&self.key(epoch, "calls"), delta) == Ok(delta) {
            self.opened(epoch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn after_a_failure_every_first_attempt_is_counted_for_a_window() {
        let m = FailureMemory::new(
            LocalCounters::leaked(),
            MemoryConfig::default(),
            "gateway",
            "community",
        );
        // Healthy: rolls that are not multiples of 64 write nothing.
        for i in 1..10 {
            m.permit(at(i));
            m.first_attempt(at(i), i);
        }
        assert_eq!(m.recent(at(10)).calls, 0.0);
        let permitted = m.permit(at(10));
        m.first_attempt(at(10), 10);
        m.outcome(permitted, at(10), Outcome::Failed);
        // From now on, exact.
        for i in 11..21 {
            m.permit(at(i));
            m.first_attempt(at(i), i);
        }
        assert_eq!(m.recent(at(30)).calls, 10.0);
        // A window later, sampled again.
        m.permit(at(10_011));
        m.first_attempt(at(10_011), 1);
        assert_eq!(m.recent(at(10_011)).calls, 10.0 * (1.0 - 0.0011));
    }

    #[test]
    fn the_window_slides_and_old_windows_are_forgotten() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for _ in 0..10 {
            m.first_attempt(at(0), 0);
        }
        // Half-way through the next window, half of the old one counts.
        assert_eq!(m.recent(at(15_000)).calls, 5.0);
        // Two windows on, nothing of it remains, and the first write there
        // forgot it.
        m.first_attempt(at(25_000), 0);
        assert_eq!(m.recent(at(25_000)).calls, 1.0);
        let mut stored = counters.keys();
        stored.sort();
        assert_eq!(
            stored,
            [
                m.key(m.epoch(at(25_000)), "calls"),
                "meridian/gateway/community/last".into()
            ],
            "only the current window's key is kept, and the marker naming it"
        );
    }

    /// However far apart a pair's calls come, each opens a window and
    /// forgets what is older than its previous one: the store keeps at
    /// most two windows of each count, not one more per call.
    #[test]
    fn calls_far_apart_leave_at_most_two_windows_in_the_store() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..50 {
            // 35 s apart: three and a half windows between calls.
            let ms = i * 35_000;
            let permitted = m.permit(at(ms));
            m.first_attempt(at(ms), 0);
            assert!(m.may_retry(at(ms)));
            m.outcome(permitted, at(ms), Outcome::Failed);
        }
        let stored = counters.keys();
        let windows: std::collections::BTreeSet<&str> = stored
            .iter()
            .filter_map(|k| k.split('/').nth(3))
            .filter(|e| e.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        assert!(windows.len() <= 2, "{stored:?}");
        // And what is kept still counts: the last call, its retry and its failure.
        let recent = m.recent(at(49 * 35_000));
        assert_eq!(
            (recent.calls, recent.retries, recent.failures),
            (1.0, 1.0, 1.0)
        );
    }

    #[test]
    fn a_sampled_first_attempt_counts_for_the_ones_not_written() {
        let m = FailureMemory::new(
            LocalCounters::leaked(),
            MemoryConfig::default(),
            "gateway",
            "community",
        );
        // Rolls 0..640: one in 64 is written, as 64.
        for roll in 0..640 {
            m.first_attempt(at(0), roll);
        }
        assert_eq!(m.recent(at(0)).calls, 640.0);
        assert!(m.may_retry(at(0)));
        assert_eq!(m.recent(at(0)).retries, 1.0, "retries are never sampled");
    }

    /// The healthy path: one read per call, and no write but the sampled
    /// count of first attempts (and, once per window, the marker naming
    /// the window it opened).
    #[test]
    fn the_healthy_path_writes_only_the_sampled_count() {
        let counters = LocalCounters::default();
        let m = FailureMemory::new(&counters, MemoryConfig::default(), "gateway", "community");
        for i in 0..100 {
            let permitted = m.permit(at(i));
            m.first_attempt(at(i), i);
            m.outcome(permitted, at(i), Outcome::Succeeded);
        }
        assert_eq!(counters.len(), 2, "the count and the marker");
        assert_eq!(m.recent(at(100)).calls, 128.0, "2 samples of 64");
    }
}
