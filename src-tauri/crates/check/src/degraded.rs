//! The degraded rule: a connector whose checks fail three times in a row, with backing off
//! between (30 s, then 60 s), is marked degraded with its error; only a later successful check
//! clears it. A failure that comes sooner than the backoff is recorded but not counted, so three
//! quick clicks on Test do not write a server off. A terminal failure (a rejected credential, a
//! command that does not exist) is degraded at once: it does not become right in 30 seconds.
//!
//! Pure: "now" is passed in, from an injectable [`Clock`].

use crate::CheckError;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// Where "now" comes from; injected so the backoff and the rule are testable.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(Utc::now)
}

/// Why and since when a connector is degraded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Degraded {
    #[serde(serialize_with = "crate::health::rfc3339")]
    pub since: DateTime<Utc>,
    /// The failure that tipped it, one line, secrets scrubbed.
    pub error: String,
    /// Its [`CheckError::kind`].
    pub kind: String,
}

/// A connector's run of failures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Streak {
    /// Failures counted in a row.
    pub failures: u32,
    /// A failure before this time is not counted (the backoff); also when a scheduled check
    /// should come next.
    pub next_strike_at: Option<DateTime<Utc>>,
    pub degraded: Option<Degraded>,
}

/// What a check did to the streak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    /// Passed, nothing was amiss.
    Healthy,
    /// Passed after failures (or while degraded): the streak is cleared.
    Recovered,
    /// Failed, and counted as one more strike.
    Counted,
    /// Failed within the backoff: recorded, not counted.
    InBackoff,
    /// Failed because the server wants authorizing: recorded, not counted. The server answered;
    /// the fix is Authorize (which the status and the check's action say), not "the server is
    /// gone", so it never makes a connector degraded.
    NotCounted,
    /// Failed, and that made it degraded.
    Degraded,
    /// Failed again while degraded.
    StillDegraded,
}

/// The rule's numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DegradedRule {
    /// Counted failures that make a connector degraded.
    pub strikes: u32,
    /// The wait after the n-th counted failure before the next one counts; the last entry is
    /// also how often a degraded connector is re-checked by a scheduled check.
    pub backoff: Vec<Duration>,
}

impl Default for DegradedRule {
    /// The seed's ladder: three, backing off 30 s / 60 s / 120 s.
    fn default() -> Self {
        DegradedRule {
            strikes: 3,
            backoff: vec![
                Duration::from_secs(30),
                Duration::from_secs(60),
                Duration::from_secs(120),
            ],
        }
    }
}

impl DegradedRule {
    fn backoff_after(&self, failures: u32) -> Duration {
        let i = (failures.max(1) - 1) as usize;
        self.backoff
            .get(i)
            .or(self.backoff.last())
            .copied()
            .unwrap_or(Duration::ZERO)
    }

    fn later(now: DateTime<Utc>, wait: Duration) -> DateTime<Utc> {
        now + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX)
    }

    /// A check passed: the only thing that clears degraded.
    pub fn after_success(&self, streak: &Streak) -> (Streak, Transition) {
        let transition = if streak.failures > 0 || streak.degraded.is_some() {
            Transition::Recovered
        } else {
            Transition::Healthy
        };
        (Streak::default(), transition)
    }

    /// A check failed with `error` at `now`; `message` is what the board shows (scrubbed).
    pub fn after_failure(
        &self,
        streak: &Streak,
        error: &CheckError,
        message: &str,
        now: DateTime<Utc>,
    ) -> (Streak, Transition) {
        if matches!(error, CheckError::NeedsAuthorization { .. }) {
            return (streak.clone(), Transition::NotCounted);
        }
        let recheck = Self::later(now, self.backoff.last().copied().unwrap_or_default());
        if let Some(degraded) = &streak.degraded {
            // Still down: keep since when, show the latest error.
            let next = Streak {
                failures: streak.failures.saturating_add(1),
                next_strike_at: Some(recheck),
                degraded: Some(Degraded {
                    since: degraded.since,
                    error: message.to_owned(),
                    kind: error.kind().id().to_owned(),
                }),
            };
            return (next, Transition::StillDegraded);
        }
        let degrade = |failures: u32| {
            (
                Streak {
                    failures,
                    next_strike_at: Some(recheck),
                    degraded: Some(Degraded {
                        since: now,
                        error: message.to_owned(),
                        kind: error.kind().id().to_owned(),
                    }),
                },
                Transition::Degraded,
            )
        };
        if !error.is_retryable() {
            return degrade(streak.failures.saturating_add(1).max(self.strikes));
        }
        if streak.next_strike_at.is_some_and(|at| now < at) {
            return (streak.clone(), Transition::InBackoff);
        }
        let failures = streak.failures.saturating_add(1);
        if failures >= self.strikes {
            return degrade(failures);
        }
        let next = Streak {
            failures,
            next_strike_at: Some(Self::later(now, self.backoff_after(failures))),
            degraded: None,
        };
        (next, Transition::Counted)
    }

    /// Whether a scheduled (periodic) check of this connector is due: its backoff has passed
    /// and, when it is healthy, `interval` has passed since `last_check`.
    pub fn due(
        &self,
        streak: &Streak,
        last_check: Option<DateTime<Utc>>,
        interval: Duration,
        now: DateTime<Utc>,
    ) -> bool {
        if let Some(at) = streak.next_strike_at {
            return now >= at;
        }
        match last_check {
            None => true,
            Some(last) => now >= Self::later(last, interval),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TransportKind;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// A clock the test moves by hand.
    struct ManualClock(Arc<AtomicI64>);

    impl ManualClock {
        fn new() -> (ManualClock, Clock) {
            let ms = Arc::new(AtomicI64::new(1_700_000_000_000));
            let read = ms.clone();
            let clock: Clock = Arc::new(move || {
                DateTime::from_timestamp_millis(read.load(Ordering::SeqCst)).unwrap()
            });
            (ManualClock(ms), clock)
        }
        fn advance(&self, secs: i64) {
            self.0.fetch_add(secs * 1000, Ordering::SeqCst);
        }
    }

    fn refused() -> CheckError {
        CheckError::Unreachable {
            transport: TransportKind::StreamableHttp,
            message: "Connection refused".into(),
        }
    }

    #[test]
    fn three_spaced_failures_degrade_and_only_a_success_clears() {
        let rule = DegradedRule::default();
        let (time, clock) = ManualClock::new();
        let mut streak = Streak::default();

        let (s, t) = rule.after_failure(&streak, &refused(), "refused", clock());
        assert_eq!((t, s.failures), (Transition::Counted, 1));
        streak = s;

        // Ten seconds later: inside the 30 s backoff, recorded but not counted.
        time.advance(10);
        let (s, t) = rule.after_failure(&streak, &refused(), "refused", clock());
        assert_eq!((t, s.failures), (Transition::InBackoff, 1));
        assert!(!rule.due(&s, None, Duration::from_secs(900), clock()));
        streak = s;

        time.advance(20);
        assert!(rule.due(&streak, None, Duration::from_secs(900), clock()));
        let (s, t) = rule.after_failure(&streak, &refused(), "refused", clock());
        assert_eq!((t, s.failures), (Transition::Counted, 2));
        streak = s;

        // The second backoff is 60 s.
        time.advance(59);
        let (s, t) = rule.after_failure(&streak, &refused(), "refused", clock());
        assert_eq!(t, Transition::InBackoff);
        streak = s;
        time.advance(1);
        let (s, t) = rule.after_failure(&streak, &refused(), "refused again", clock());
        assert_eq!(t, Transition::Degraded);
        let degraded = s.degraded.clone().expect("degraded");
        assert_eq!(degraded.error, "refused again");
        assert_eq!(degraded.kind, "unreachable");
        assert_eq!(degraded.since, clock());
        streak = s;

        // Failing on does not clear it, nor move its start.
        time.advance(120);
        let (s, t) = rule.after_failure(&streak, &refused(), "still refused", clock());
        assert_eq!(t, Transition::StillDegraded);
        assert_eq!(s.degraded.as_ref().unwrap().since, degraded.since);
        assert_eq!(s.degraded.as_ref().unwrap().error, "still refused");
        streak = s;

        let (s, t) = rule.after_success(&streak);
        assert_eq!(t, Transition::Recovered);
        assert_eq!(s, Streak::default());
        assert_eq!(rule.after_success(&s).1, Transition::Healthy);
    }

    #[test]
    fn a_terminal_failure_degrades_at_once() {
        let rule = DegradedRule::default();
        let (_, clock) = ManualClock::new();
        let rejected = CheckError::CredentialRejected {
            headers: vec!["X-API-Key".into()],
            variables: vec!["KEY".into()],
            message: "401".into(),
        };
        let (s, t) = rule.after_failure(&Streak::default(), &rejected, "401", clock());
        assert_eq!(t, Transition::Degraded);
        assert_eq!(s.degraded.unwrap().kind, "credential_rejected");
    }

    #[test]
    fn a_server_that_wants_authorizing_is_never_degraded() {
        let rule = DegradedRule::default();
        let (time, clock) = ManualClock::new();
        let wants_auth = CheckError::NeedsAuthorization {
            message: "401".into(),
        };
        let mut streak = Streak::default();
        for _ in 0..5 {
            let (s, t) = rule.after_failure(&streak, &wants_auth, "401", clock());
            assert_eq!(t, Transition::NotCounted);
            streak = s;
            time.advance(300);
        }
        assert_eq!(streak, Streak::default());
    }

    #[test]
    fn a_success_between_failures_restarts_the_count() {
        let rule = DegradedRule::default();
        let (time, clock) = ManualClock::new();
        let (s, _) = rule.after_failure(&Streak::default(), &refused(), "x", clock());
        time.advance(30);
        let (s, _) = rule.after_failure(&s, &refused(), "x", clock());
        assert_eq!(s.failures, 2);
        let (s, t) = rule.after_success(&s);
        assert_eq!(t, Transition::Recovered);
        let (s, t) = rule.after_failure(&s, &refused(), "x", clock());
        assert_eq!((t, s.failures), (Transition::Counted, 1));
    }

    #[test]
    fn a_healthy_connector_is_due_after_the_interval() {
        let rule = DegradedRule::default();
        let (time, clock) = ManualClock::new();
        let last = clock();
        let every = Duration::from_secs(600);
        assert!(rule.due(&Streak::default(), None, every, clock()));
        assert!(!rule.due(&Streak::default(), Some(last), every, clock()));
        time.advance(600);
        assert!(rule.due(&Streak::default(), Some(last), every, clock()));
    }
}
