//! Trying a handshake again after a passing failure (seed 004's per-entry `retry`): which
//! failures qualify ([`CheckError::warrants_retry`]), how long to wait before each retry
//! (`base * 2^(n-1)`, varied by up to `jitter` of itself either way), and where the waiting and
//! the randomness come from ([`Pacing`]), injected so tests never sleep for real.

use crate::CheckError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How a check retries: seed 004's `max=3, base=500ms, jitter=0.3` by default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first try (the catalog caps it at 3).
    pub max_retries: u32,
    /// The wait before the first retry; it doubles for each retry after.
    pub base: Duration,
    /// The fraction each wait varies by either way: 0.3 draws it from 70 % to 130 %.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        patchbay_catalog::RetryPolicy::default().into()
    }
}

impl From<patchbay_catalog::RetryPolicy> for RetryPolicy {
    fn from(p: patchbay_catalog::RetryPolicy) -> Self {
        RetryPolicy {
            max_retries: p.max,
            base: Duration::from_millis(p.base_ms.into()),
            jitter: p.jitter,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first), given `unit` drawn uniformly
    /// from `[0, 1)`: 0 gives the shortest wait, 0.5 the nominal one.
    pub fn delay(&self, retry: u32, unit: f64) -> Duration {
        let doublings = retry.saturating_sub(1).min(16);
        let nominal = self.base.saturating_mul(1 << doublings);
        // NaN never comes from the catalog, but a wait must never panic.
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let unit = if unit.is_finite() {
            unit.clamp(0.0, 1.0)
        } else {
            0.5
        };
        let factor = 1.0 + jitter * (2.0 * unit - 1.0);
        // Rounded to the nanosecond (`as` saturates), so 70 % of 500 ms is 350 ms exactly.
        Duration::from_nanos((nominal.as_nanos() as f64 * factor).round() as u64)
    }

    /// The shortest and the longest wait before retry number `retry`.
    pub fn delay_bounds(&self, retry: u32) -> (Duration, Duration) {
        (self.delay(retry, 0.0), self.delay(retry, 1.0))
    }
}

/// Waits a while: `tokio::time::sleep` for real, anything at all in tests.
pub type Sleeper = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A number drawn uniformly from `[0, 1)`, for the jitter.
pub type UnitRandom = Arc<dyn Fn() -> f64 + Send + Sync>;

/// Where the waits between retries and their jitter come from.
#[derive(Clone)]
pub struct Pacing {
    pub sleep: Sleeper,
    pub random: UnitRandom,
}

impl Default for Pacing {
    /// Real time and a random jitter.
    fn default() -> Self {
        Pacing {
            sleep: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
            random: Arc::new(random_unit),
        }
    }
}

impl std::fmt::Debug for Pacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pacing")
    }
}

/// A uniform draw from `[0, 1)` without a random-number crate: std's `RandomState` is seeded
/// from the OS once per thread and moves on with every instance, so each hasher differs.
/// Jitter only spreads retries out; it needs no cryptographic quality.
pub fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl CheckError {
    /// Whether trying again in a moment, within the same check, may help: the passing failures
    /// of [`CheckError::is_retryable`] (refused, reset, timed out, 5xx / 408 / 429, a stdio
    /// server that exited) but not a broken MCP conversation, which a second later is as broken.
    /// Never a 401, a 403, a rejected handshake, a missing command or missing configuration.
    pub fn warrants_retry(&self) -> bool {
        self.is_retryable() && !matches!(self, CheckError::Protocol { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stage, TransportKind};

    #[test]
    fn waits_double_from_the_base_within_the_jitter() {
        let p = RetryPolicy::default();
        assert_eq!(p.max_retries, 3);
        assert_eq!(p.delay(1, 0.5), Duration::from_millis(500));
        assert_eq!(p.delay(2, 0.5), Duration::from_millis(1000));
        assert_eq!(p.delay(3, 0.5), Duration::from_millis(2000));
        assert_eq!(
            p.delay_bounds(1),
            (Duration::from_millis(350), Duration::from_millis(650))
        );
        assert_eq!(
            p.delay_bounds(3),
            (Duration::from_millis(1400), Duration::from_millis(2600))
        );
        let flat = RetryPolicy { jitter: 0.0, ..p };
        assert_eq!(flat.delay(2, 0.0), flat.delay(2, 0.99));
    }

    #[test]
    fn the_random_draw_stays_in_the_unit_interval_and_varies() {
        let draws: Vec<f64> = (0..200).map(|_| random_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)), "{draws:?}");
        let distinct: std::collections::BTreeSet<u64> =
            draws.iter().map(|u| (u * 1e9) as u64).collect();
        assert!(distinct.len() > 150, "{} distinct of 200", distinct.len());
        // Both halves show up: the jitter goes both ways.
        assert!(draws.iter().any(|u| *u < 0.5) && draws.iter().any(|u| *u >= 0.5));
    }

    #[test]
    fn only_passing_failures_are_retried() {
        let t = TransportKind::StreamableHttp;
        let retried = [
            CheckError::Unreachable {
                transport: t,
                message: "Connection refused".into(),
            },
            CheckError::TimedOut {
                transport: t,
                stage: Stage::Initialize,
                after: Duration::from_millis(300),
            },
            CheckError::ServerError {
                transport: t,
                status: 503,
                message: "Service Unavailable".into(),
            },
            CheckError::ServerError {
                transport: t,
                status: 429,
                message: "Too Many Requests".into(),
            },
        ];
        for e in &retried {
            assert!(e.warrants_retry(), "{e}");
        }
        let not_retried = [
            CheckError::NeedsAuthorization {
                message: "401".into(),
            },
            CheckError::ServerError {
                transport: t,
                status: 403,
                message: "Forbidden".into(),
            },
            CheckError::Rejected {
                transport: t,
                status: Some(405),
                message: "Method Not Allowed".into(),
            },
            CheckError::Protocol {
                transport: t,
                message: "invalid JSON-RPC".into(),
            },
            CheckError::MissingConfiguration {
                variables: vec!["TOKEN".into()],
            },
        ];
        for e in &not_retried {
            assert!(!e.warrants_retry(), "{e}");
        }
    }
}
