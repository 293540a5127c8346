//! When the refresher runs: a pass at start-up, then every interval (30 minutes unless
//! `settings.json` says otherwise), at once on resume from sleep, and at the earliest moment a
//! stored credential becomes due ([`RenewalTimer`], from [`crate::due`]: a 1-hour token must be
//! renewed between two periodic passes, before a runtime's own refresh window opens); and the
//! opt-in periodic connection check (`checkIntervalMinutes`).
//!
//! The timer never spins: a pass is never sooner than [`MIN_WAKE_GAP`] after the last one, and a
//! credential still due after a pass (its refresh failed, was skipped, or its lock was busy) is
//! held back from the timer for [`RETRY_FIRST`], doubling on every pass that leaves it due, up to
//! the interval (the periodic pass still tries it every interval, as before).
//!
//! Resume is detected without any OS hook: the monotonic clock stops while the machine sleeps
//! and the wall clock does not, so a tick that finds the wall clock ahead of the monotonic one
//! by more than [`RESUME_GAP`] means the machine was asleep. Works the same on every platform.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_vault::CredentialRow;
use serde_json::Value;

use crate::due::RenewalRule;
use crate::refresh::{PassReport, Refresher};
use crate::{CoreError, Patchbay};

/// How often the schedule wakes to look at the clocks.
pub const TICK: Duration = Duration::from_secs(30);
/// A wall-clock lead over the monotonic clock beyond this is a sleep, not drift or NTP.
pub const RESUME_GAP: Duration = Duration::from_secs(90);
/// The default interval between passes.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30 * 60);
/// The timer never starts a pass sooner than this after the previous one.
pub const MIN_WAKE_GAP: Duration = Duration::from_secs(30);
/// A credential still due after a pass waits this long before the timer tries it again
/// (doubled on each further pass that leaves it due, capped at the interval).
pub const RETRY_FIRST: Duration = Duration::from_secs(2 * 60);

const SETTINGS_FILE: &str = "settings.json";
const INTERVAL_KEY: &str = "refreshIntervalMinutes";
const CHECK_INTERVAL_KEY: &str = "checkIntervalMinutes";
const INTERVAL_RANGE: std::ops::RangeInclusive<u64> = 5..=1440;

/// The user's settings (`<config dir>/settings.json`); unknown keys are ignored, never dropped
/// (Patchbay does not write this file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub refresh_interval: Duration,
    /// The opt-in periodic connection check (`checkIntervalMinutes`); off when absent.
    pub check_interval: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            refresh_interval: DEFAULT_INTERVAL,
            check_interval: None,
        }
    }
}

impl Settings {
    pub fn file(config_dir: &Path) -> PathBuf {
        config_dir.join(SETTINGS_FILE)
    }

    /// Reads the settings; a missing file is the defaults. A bad value is an error naming the
    /// file, the key and what is wrong.
    pub fn load(config_dir: &Path) -> Result<Settings, CoreError> {
        let path = Settings::file(config_dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(CoreError::io("read", &path, e)),
        };
        let doc: Value = serde_json::from_str(&text).map_err(|e| CoreError::NotJson {
            path: path.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let Some(object) = doc.as_object() else {
            return Err(CoreError::BadFile {
                path: path.clone(),
                message: "expected a JSON object".into(),
            });
        };
        let minutes = |key: &str| -> Result<Option<Duration>, CoreError> {
            let Some(v) = object.get(key) else {
                return Ok(None);
            };
            let minutes = v
                .as_u64()
                .filter(|m| INTERVAL_RANGE.contains(m))
                .ok_or_else(|| CoreError::BadFile {
                    path: path.clone(),
                    message: format!(
                        "{key}: expected whole minutes from {} to {}, found {v}",
                        INTERVAL_RANGE.start(),
                        INTERVAL_RANGE.end()
                    ),
                })?;
            Ok(Some(Duration::from_secs(minutes * 60)))
        };
        Ok(Settings {
            refresh_interval: minutes(INTERVAL_KEY)?.unwrap_or(DEFAULT_INTERVAL),
            check_interval: minutes(CHECK_INTERVAL_KEY)?,
        })
    }
}

/// Tells a sleep from the passage of time by comparing the two clocks between observations.
#[derive(Debug, Clone)]
pub struct WakeDetector {
    wall: DateTime<Utc>,
    mono: Instant,
}

impl WakeDetector {
    pub fn new(wall: DateTime<Utc>, mono: Instant) -> WakeDetector {
        WakeDetector { wall, mono }
    }

    /// True when the wall clock moved more than [`RESUME_GAP`] further than the monotonic one
    /// since the last observation: the machine slept in between.
    pub fn observe(&mut self, wall: DateTime<Utc>, mono: Instant) -> bool {
        let wall_elapsed = (wall - self.wall).to_std().unwrap_or_default();
        let mono_elapsed = mono.saturating_duration_since(self.mono);
        self.wall = wall;
        self.mono = mono;
        wall_elapsed.saturating_sub(mono_elapsed) > RESUME_GAP
    }
}

/// Why a pass ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PassReason {
    Startup,
    Interval,
    Resume,
    /// A credential's renewal time came ([`RenewalTimer`]).
    Due,
}

/// When the schedule wakes next, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake {
    pub at: DateTime<Utc>,
    pub reason: PassReason,
}

/// A credential the last passes left due: when the timer may try it again.
#[derive(Debug, Clone, Copy)]
struct Held {
    passes: u32,
    until: DateTime<Utc>,
}

/// The schedule's clockwork on the wall clock: the periodic pass, and a per-credential timer
/// from each credential's due time ([`RenewalRule::next_due`], the pass's own rule). Pure: the caller reads the
/// vault and the clock, so a test can drive a simulated day through the same computation.
#[derive(Debug, Clone)]
pub struct RenewalTimer {
    interval: chrono::Duration,
    rule: RenewalRule,
    last_pass: DateTime<Utc>,
    held: HashMap<CredentialKey, Held>,
}

impl RenewalTimer {
    /// `rule`: the refresher's ([`crate::RefreshPolicy::renewal`]); `last_pass`: when the last
    /// pass ran (the start-up pass).
    pub fn new(interval: Duration, rule: RenewalRule, last_pass: DateTime<Utc>) -> RenewalTimer {
        RenewalTimer {
            interval: chrono_of(interval),
            rule,
            last_pass,
            held: HashMap::new(),
        }
    }

    /// A pass ended at `now`; `rows` is the vault after it. A credential it left due is held
    /// back, longer on every pass that leaves it so; one no longer due is forgotten.
    pub fn passed(&mut self, now: DateTime<Utc>, rows: &[CredentialRow]) {
        self.last_pass = now;
        let mut held = HashMap::new();
        for row in rows.iter().filter(|r| self.rule.is_due(r, now)) {
            let passes = self
                .held
                .get(&row.credential_key)
                .map_or(1, |h| h.passes.saturating_add(1));
            let backoff = (chrono_of(RETRY_FIRST) * 2i32.saturating_pow((passes - 1).min(16)))
                .min(self.interval);
            held.insert(
                row.credential_key.clone(),
                Held {
                    passes,
                    until: now + backoff,
                },
            );
        }
        self.held = held;
    }

    /// Holds `key` back until at least `until` (its token endpoint's `Retry-After`).
    pub fn hold_until(&mut self, key: &CredentialKey, until: DateTime<Utc>) {
        self.held
            .entry(key.clone())
            .and_modify(|h| h.until = h.until.max(until))
            .or_insert(Held { passes: 1, until });
    }

    /// The next wake at `now` over `rows` (the vault now): the periodic pass, or the earliest
    /// credential's due time (a held one not before its hold ends), whichever comes first; a
    /// due wake never sooner than [`MIN_WAKE_GAP`] after the last pass. May be in the past
    /// (run a pass now).
    pub fn next_wake(&mut self, now: DateTime<Utc>, rows: &[CredentialRow]) -> Wake {
        // The wall clock was set back past the last pass: count the interval from now.
        if now < self.last_pass {
            self.last_pass = now;
        }
        let periodic = self.last_pass + self.interval;
        let due = rows
            .iter()
            .filter_map(|row| {
                let due = self.rule.next_due(row)?;
                Some(match self.held.get(&row.credential_key) {
                    Some(h) => due.max(h.until),
                    None => due,
                })
            })
            .min()
            .map(|at| at.max(self.last_pass + chrono_of(MIN_WAKE_GAP)));
        match due {
            Some(at) if at < periodic => Wake {
                at,
                reason: PassReason::Due,
            },
            _ => Wake {
                at: periodic,
                reason: PassReason::Interval,
            },
        }
    }
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

/// The schedule, forever: spawn it on the app's tokio runtime and abort it to stop. `patchbay`
/// is the refresher's (its vault and clock arm the per-credential timer). `on_pass` sees each
/// pass's report (the app refreshes its status and notifications from it).
pub async fn run(
    refresher: Refresher,
    patchbay: Arc<Patchbay>,
    interval: Duration,
    on_pass: impl Fn(PassReason, &PassReport) + Send + Sync + 'static,
) {
    // Re-read on every tick: the vault changes under the schedule (authorize, adoption).
    let rows = || {
        patchbay.vault().credential_rows().unwrap_or_else(|e| {
            // Every tick: the pass says it loudly, once per pass.
            tracing::debug!("the renewal timer cannot read the vault: {e}");
            Vec::new()
        })
    };
    let mut reason = PassReason::Startup;
    let mut wake = WakeDetector::new(Utc::now(), Instant::now());
    let mut timer = RenewalTimer::new(interval, refresher.policy().renewal(), patchbay.now());
    loop {
        match refresher.pass().await {
            Ok(report) => {
                tracing::info!(
                    ?reason,
                    refreshed = report.refreshed,
                    adopted = report.adopted,
                    failed = report.failed,
                    "refresh pass"
                );
                on_pass(reason, &report);
            }
            Err(e) => tracing::warn!(?reason, "refresh pass failed: {e}"),
        }
        let after = rows();
        timer.passed(patchbay.now(), &after);
        for (key, until) in refresher.waiting_until(&after) {
            timer.hold_until(&key, until);
        }
        reason = loop {
            let now = patchbay.now();
            let next = timer.next_wake(now, &rows());
            let until = (next.at - now).to_std().unwrap_or_default();
            if until.is_zero() {
                break next.reason;
            }
            tokio::time::sleep(TICK.min(until)).await;
            if wake.observe(Utc::now(), Instant::now()) {
                break PassReason::Resume;
            }
        };
    }
}

/// The opt-in periodic connection check, forever: every minute, check the connectors whose turn
/// has come (`interval` since their last check, or their backoff passed when failing). `on_done`
/// sees the checks made (the app refreshes the window from it).
pub async fn run_checks(
    checker: crate::Checker,
    interval: Duration,
    on_done: impl Fn(&[crate::check::ConnectorCheck]) + Send + Sync + 'static,
) {
    loop {
        match checker.check_due(interval).await {
            Ok(checks) if !checks.is_empty() => on_done(&checks),
            Ok(_) => {}
            Err(e) => tracing::warn!("periodic connection check failed: {e}"),
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_jump_beyond_the_monotonic_one_is_a_resume() {
        let t0 = Utc::now();
        let m0 = Instant::now();
        let mut w = WakeDetector::new(t0, m0);
        // 30 s on both clocks: awake.
        assert!(!w.observe(
            t0 + chrono::Duration::seconds(30),
            m0 + Duration::from_secs(30)
        ));
        // 2 h on the wall, 30 s monotonic: the machine slept.
        assert!(w.observe(
            t0 + chrono::Duration::seconds(60) + chrono::Duration::hours(2),
            m0 + Duration::from_secs(60)
        ));
        // A small NTP step is not a sleep; a clock set backwards is not either.
        assert!(!w.observe(
            t0 + chrono::Duration::seconds(150) + chrono::Duration::hours(2),
            m0 + Duration::from_secs(90)
        ));
        assert!(!w.observe(t0, m0 + Duration::from_secs(120)));
    }

    fn token(key: &str, stored: DateTime<Utc>, lifetime: chrono::Duration) -> CredentialRow {
        CredentialRow {
            credential_key: CredentialKey(format!("{key}|1")),
            server_name: key.into(),
            server_url: None,
            expires_at: Some(stored + lifetime),
            has_refresh_token: true,
            one_shot: false,
            issuer: None,
            client_id: None,
            scope: None,
            updated_at: stored,
            rotated_by: None,
            rotated_at: None,
        }
    }

    #[test]
    fn the_timer_wakes_at_the_earliest_due_credential_between_periodic_passes() {
        let t0 = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let min = chrono::Duration::minutes;
        let mut timer = RenewalTimer::new(DEFAULT_INTERVAL, RenewalRule::default(), t0);
        // Nothing stored: the periodic pass.
        assert_eq!(
            timer.next_wake(t0, &[]),
            Wake {
                at: t0 + min(30),
                reason: PassReason::Interval
            }
        );
        // 1-hour tokens stored 10 and 20 minutes ago: due at half-life, the earlier first.
        let rows = [
            token("a", t0 - min(10), min(60)),
            token("b", t0 - min(20), min(60)),
        ];
        assert_eq!(
            timer.next_wake(t0, &rows),
            Wake {
                at: t0 + min(10),
                reason: PassReason::Due
            }
        );
        // A 24-hour token is left to the periodic pass.
        let long = [token("c", t0, chrono::Duration::hours(24))];
        assert_eq!(timer.next_wake(t0, &long).reason, PassReason::Interval);
    }

    #[test]
    fn a_credential_a_pass_could_not_renew_never_makes_the_timer_spin() {
        let t0 = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let min = chrono::Duration::minutes;
        let mut timer = RenewalTimer::new(DEFAULT_INTERVAL, RenewalRule::default(), t0);
        // Due since long ago (expired): the first wake is the minimum gap after the last pass.
        let stuck = [token("a", t0 - min(90), min(60))];
        assert_eq!(timer.next_wake(t0, &stuck).at, t0 + chrono_of(MIN_WAKE_GAP));
        // Each pass that leaves it due holds it back longer: 2, 4, 8, 16 min, then the interval.
        let mut now = t0;
        for expected in [2, 4, 8, 16, 30, 30] {
            timer.passed(now, &stuck);
            let wake = timer.next_wake(now, &stuck);
            assert_eq!(wake.at - now, min(expected), "after a pass at {now}");
            now = wake.at;
        }
        // Renewed: forgotten, and its next due time rules again.
        let renewed = [token("a", now, min(60))];
        timer.passed(now, &renewed);
        assert_eq!(timer.next_wake(now, &renewed).at, now + min(30));
        // A 2-minute token stays renewable without spinning: due 30 s after it is stored.
        let short = [token("s", now, min(2))];
        timer.passed(now, &short);
        let wake = timer.next_wake(now, &short);
        assert_eq!(wake.at - now, chrono::Duration::seconds(30));
        // The wall clock set back an hour: the periodic pass counts from the new now.
        let back = now - chrono::Duration::hours(1);
        assert_eq!(timer.next_wake(back, &[]).at, back + min(30));
    }

    #[test]
    fn a_retry_after_holds_a_credential_past_its_backoff() {
        let t0 = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let min = chrono::Duration::minutes;
        let mut timer = RenewalTimer::new(DEFAULT_INTERVAL, RenewalRule::default(), t0);
        let stuck = [token("a", t0 - min(90), min(60))];
        timer.passed(t0, &stuck);
        assert_eq!(
            timer.next_wake(t0, &stuck).at - t0,
            min(2),
            "the first backoff"
        );
        // The token endpoint asked for 10 minutes: no wake before.
        timer.hold_until(&stuck[0].credential_key, t0 + min(10));
        assert_eq!(timer.next_wake(t0, &stuck).at - t0, min(10));
        // A shorter ask never shortens a hold.
        timer.hold_until(&stuck[0].credential_key, t0 + min(1));
        assert_eq!(timer.next_wake(t0, &stuck).at - t0, min(10));
    }

    #[test]
    fn settings_default_and_validate_with_the_file_and_key_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Settings::load(dir.path()).unwrap(), Settings::default());
        std::fs::write(
            Settings::file(dir.path()),
            r#"{"refreshIntervalMinutes": 10, "checkIntervalMinutes": 15, "other": true}"#,
        )
        .unwrap();
        let loaded = Settings::load(dir.path()).unwrap();
        assert_eq!(loaded.refresh_interval, Duration::from_secs(600));
        assert_eq!(loaded.check_interval, Some(Duration::from_secs(900)));
        std::fs::write(
            Settings::file(dir.path()),
            r#"{"refreshIntervalMinutes": 1}"#,
        )
        .unwrap();
        let e = Settings::load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("settings.json")
                && e.contains("refreshIntervalMinutes")
                && e.contains("found 1"),
            "{e}"
        );
        std::fs::write(Settings::file(dir.path()), "{ nope").unwrap();
        let e = Settings::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("settings.json:1:"), "{e}");
    }
}
