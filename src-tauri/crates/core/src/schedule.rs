//! When the refresher runs: a pass at start-up, then every interval (30 minutes unless
//! `settings.json` says otherwise), and at once on resume from sleep; and the opt-in periodic
//! connection check (`checkIntervalMinutes`).
//!
//! Resume is detected without any OS hook: the monotonic clock stops while the machine sleeps
//! and the wall clock does not, so a tick that finds the wall clock ahead of the monotonic one
//! by more than [`RESUME_GAP`] means the machine was asleep. Works the same on every platform.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::refresh::{PassReport, Refresher};
use crate::CoreError;

/// How often the schedule wakes to look at the clocks.
pub const TICK: Duration = Duration::from_secs(30);
/// A wall-clock lead over the monotonic clock beyond this is a sleep, not drift or NTP.
pub const RESUME_GAP: Duration = Duration::from_secs(90);
/// The default interval between passes.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30 * 60);

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
            Err(e) => {
                return Err(CoreError::Invalid(format!(
                    "{}: cannot read: {e}",
                    path.display()
                )))
            }
        };
        let doc: Value = serde_json::from_str(&text).map_err(|e| {
            CoreError::Invalid(format!(
                "{}:{}:{}: not JSON: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        let Some(object) = doc.as_object() else {
            return Err(CoreError::Invalid(format!(
                "{}: expected a JSON object",
                path.display()
            )));
        };
        let minutes = |key: &str| -> Result<Option<Duration>, CoreError> {
            let Some(v) = object.get(key) else {
                return Ok(None);
            };
            let minutes = v
                .as_u64()
                .filter(|m| INTERVAL_RANGE.contains(m))
                .ok_or_else(|| {
                    CoreError::Invalid(format!(
                        "{}: {key}: expected whole minutes from {} to {}, found {v}",
                        path.display(),
                        INTERVAL_RANGE.start(),
                        INTERVAL_RANGE.end()
                    ))
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
}

/// The schedule, forever: spawn it on the app's tokio runtime and abort it to stop. `on_pass`
/// sees each pass's report (the app refreshes its status and notifications from it).
pub async fn run(
    refresher: Refresher,
    interval: Duration,
    on_pass: impl Fn(PassReason, &PassReport) + Send + Sync + 'static,
) {
    {
        let mut reason = PassReason::Startup;
        let mut wake = WakeDetector::new(Utc::now(), Instant::now());
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
            let last_pass = Instant::now();
            reason = loop {
                tokio::time::sleep(TICK.min(interval)).await;
                if wake.observe(Utc::now(), Instant::now()) {
                    break PassReason::Resume;
                }
                if last_pass.elapsed() >= interval {
                    break PassReason::Interval;
                }
            };
        }
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
