//! The check as a whole: the configured transport first; when a reachable server rejects that
//! handshake (405, 400, 404, ...), the other HTTP transport (streamable HTTP ⇄ legacy SSE). When
//! the other one works the outcome says so, for the caller to offer writing it back to the user
//! catalog. A server that cannot be reached (refused, timeout, EOF) gets no fallback, nor does a
//! 401 or a stdio server.
//!
//! The target's own settings (a catalog entry's `timeout_ms` and `retry`) apply here: the request
//! timeout replaces the caller's per-stage limits, and each transport tried is tried again after a
//! passing failure ([`CheckError::warrants_retry`]), waiting as [`crate::RetryPolicy`] says.

use crate::handshake::{handshake, Handshake, Timeouts};
use crate::retry::Pacing;
use crate::{CheckError, CheckErrorKind, CheckTarget, TransportKind};
use serde::Serialize;
use std::time::{Duration, Instant};

/// An error as `--json` and the window show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ErrorSummary {
    /// [`CheckError::kind`]: `unreachable`, `timed_out`, `rejected`, `needs_authorization`, ...
    pub kind: CheckErrorKind,
    pub message: String,
    pub retryable: bool,
    pub http_status: Option<u16>,
}

impl From<&CheckError> for ErrorSummary {
    fn from(e: &CheckError) -> Self {
        ErrorSummary {
            kind: e.kind(),
            message: e.to_string(),
            retryable: e.is_retryable(),
            http_status: e.http_status(),
        }
    }
}

/// One try over one transport.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Attempt {
    pub transport: TransportKind,
    pub ok: bool,
    pub elapsed_ms: u64,
    pub error: Option<ErrorSummary>,
    /// 0 for a transport's first try, n for its n-th retry (the entry's `retry`).
    pub retry: u32,
    /// The backoff waited before this try (0 for a first try).
    pub waited_ms: u64,
}

/// What one check found.
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    pub connector: String,
    /// The transport the catalog names.
    pub configured: TransportKind,
    pub result: Result<Handshake, CheckError>,
    /// Set when the configured transport was rejected and this one answered: worth writing
    /// back to the user catalog.
    pub fell_back_to: Option<TransportKind>,
    /// Every try, in order: each transport's first try and its retries.
    pub attempts: Vec<Attempt>,
    /// Retries made in all (the error drawer's "Retries").
    pub retries: u32,
    /// All attempts together, goodbyes included.
    pub elapsed: Duration,
}

impl CheckOutcome {
    pub fn ok(&self) -> bool {
        self.result.is_ok()
    }

    /// The transport that answered, or the last one tried.
    pub fn transport(&self) -> TransportKind {
        match &self.result {
            Ok(h) => h.transport,
            Err(_) => self
                .attempts
                .last()
                .map(|a| a.transport)
                .unwrap_or(self.configured),
        }
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// One transport: a try, then a retry after each passing failure while the policy allows.
async fn attempt(
    target: &CheckTarget,
    endpoint: &crate::Endpoint,
    timeouts: &Timeouts,
    pacing: &Pacing,
    attempts: &mut Vec<Attempt>,
) -> Result<Handshake, CheckError> {
    let max_retries = target.retry.map_or(0, |p| p.max_retries);
    let mut retry = 0;
    let mut waited = Duration::ZERO;
    loop {
        let started = Instant::now();
        let result = handshake(target, endpoint, timeouts).await;
        attempts.push(Attempt {
            transport: endpoint.kind(),
            ok: result.is_ok(),
            elapsed_ms: millis(started.elapsed()),
            error: result.as_ref().err().map(ErrorSummary::from),
            retry,
            waited_ms: millis(waited),
        });
        match (&result, target.retry) {
            (Err(e), Some(policy)) if retry < max_retries && e.warrants_retry() => {
                retry += 1;
                waited = policy.delay(retry, (pacing.random)());
                tracing::debug!(
                    connector = target.connector,
                    retry,
                    wait_ms = millis(waited),
                    "retrying after a passing failure: {e}"
                );
                (pacing.sleep)(waited).await;
            }
            _ => return result,
        }
    }
}

/// Check `target` for real, falling back between the HTTP transports when the rule allows, with
/// real waits between retries.
pub async fn check(target: &CheckTarget, timeouts: &Timeouts) -> CheckOutcome {
    check_paced(target, timeouts, &Pacing::default()).await
}

/// [`check`], with the waits between retries and their jitter taken from `pacing`.
pub async fn check_paced(
    target: &CheckTarget,
    timeouts: &Timeouts,
    pacing: &Pacing,
) -> CheckOutcome {
    let started = Instant::now();
    let timeouts = match target.request_timeout {
        Some(limit) => timeouts.limited_to(limit),
        None => *timeouts,
    };
    let timeouts = &timeouts;
    let configured = target.endpoint.kind();
    let mut attempts = Vec::new();
    let first = attempt(target, &target.endpoint, timeouts, pacing, &mut attempts).await;
    let (result, fell_back_to) = match first {
        Err(e) if e.warrants_fallback() => match target.endpoint.other_http() {
            Some(other) => {
                let kind = other.kind();
                match attempt(target, &other, timeouts, pacing, &mut attempts).await {
                    Ok(h) => (Ok(h), Some(kind)),
                    // Rejected both ways: the configured transport's answer is the one to show.
                    Err(second) if second.warrants_fallback() => (Err(e), None),
                    // The other transport got further (a 401 over SSE): that is the news.
                    Err(second) => (Err(second), None),
                }
            }
            None => (Err(e), None),
        },
        other => (other, None),
    };
    CheckOutcome {
        connector: target.connector.clone(),
        configured,
        result,
        fell_back_to,
        retries: attempts.iter().filter(|a| a.retry > 0).count() as u32,
        attempts,
        elapsed: started.elapsed(),
    }
}
