//! When a stored credential is due for renewal: the one rule the refresher's pass and the
//! schedule's per-credential timer share.
//!
//! Patchbay is the refresher of record. Claude Code and Codex, holding the same pair through a
//! bridge, refresh by themselves once little time is left (Claude Code under 300 s, Codex under
//! 30 s: `/work/shared/reference/runtime-credential-stores.md`, "It refreshes by itself" and the
//! Codex section). Two clients presenting one rotating refresh token is the race that burns a
//! token family, so Patchbay renews **before any bridged runtime's window opens**, whatever the
//! token's lifetime.
//!
//! From the lifetime `L = expires_at - updated_at` (the pair's time in the vault):
//!
//! ```text
//! floor = min(RUNTIME_LEAD, 3/4·L)            // ahead of every runtime's window, when L allows
//! lead  = max(min(L/2, horizon), floor)        // half-life, at most the horizon (1 h)
//! due   = expires_at - lead                    // or expired
//! ```
//!
//! - A 1-hour token is due at 30 min, a 2-hour one at 1 h, a 24-hour one 1 h before expiry, a
//!   10-minute one at 4 min (6 min left), a 2-minute one at 30 s (its whole life is inside
//!   Claude Code's 300 s window, so no rule can beat that runtime: it is renewed at a quarter of
//!   its life, and each renewal yields a new 2-minute pair due 30 s later: it never stops being
//!   renewed, and never sooner than the schedule's minimum gap).
//! - `min_interval` (4 h), the throttle for servers that watch how often a rotating token is
//!   spent, applies only to long-lived tokens (`L >= horizon + min_interval`); a short token is
//!   never held by it. It is written out below, though the lead implies it (a long-lived token's
//!   lead is at most the horizon, so `due >= updated_at + min_interval` already), so that a
//!   change to the lead cannot quietly renew long-lived tokens more often; it never moves `due`
//!   past the runtime floor.
//! - No expiry, or no refresh token: never due. `L <= 0` (stored already expired, or a clock
//!   set backwards between the two stamps): due at `expires_at`, that is once expired.

use chrono::{DateTime, Duration, Utc};
use patchbay_vault::CredentialRow;

/// Claude Code refreshes a token by itself when under this remains (measured on 2.1.332).
pub const CLAUDE_CODE_WINDOW: Duration = Duration::seconds(300);
/// Codex refreshes 30 s before `expires_at` (measured on 0.171.0).
pub const CODEX_WINDOW: Duration = Duration::seconds(30);
/// Room between our renewal and the widest runtime window: a pass that is late by a tick (30 s),
/// a slow token endpoint, a retry.
pub const RUNTIME_WINDOW_MARGIN: Duration = Duration::seconds(60);
/// How long before expiry Patchbay renews at the latest, when the lifetime allows: the widest
/// bridged runtime's window plus the margin (360 s).
pub const RUNTIME_LEAD: Duration = Duration::seconds(
    max_secs(CLAUDE_CODE_WINDOW.num_seconds(), CODEX_WINDOW.num_seconds())
        + RUNTIME_WINDOW_MARGIN.num_seconds(),
);

const fn max_secs(a: i64, b: i64) -> i64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The renewal rule's parameters (the refresh policy's `horizon` and `min_interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenewalRule {
    /// The longest lead (one hour).
    pub horizon: Duration,
    /// The throttle for long-lived tokens (four hours).
    pub min_interval: Duration,
}

impl Default for RenewalRule {
    fn default() -> Self {
        RenewalRule {
            horizon: Duration::hours(1),
            min_interval: Duration::hours(4),
        }
    }
}

impl RenewalRule {
    /// How long before expiry a pair stored with `lifetime` is renewed (zero for `L <= 0`).
    pub fn lead(&self, lifetime: Duration) -> Duration {
        if lifetime <= Duration::zero() {
            return Duration::zero();
        }
        let floor = RUNTIME_LEAD.min(lifetime * 3 / 4);
        (lifetime / 2).min(self.horizon).max(floor)
    }

    /// When the credential becomes due (it stays due until renewed); `None`: never (no expiry,
    /// or no refresh token to renew it with).
    pub fn next_due(&self, row: &CredentialRow) -> Option<DateTime<Utc>> {
        let expires_at = row.expires_at?;
        if !row.has_refresh_token {
            return None;
        }
        let lifetime = expires_at - row.updated_at;
        if lifetime <= Duration::zero() {
            return Some(expires_at);
        }
        let lead = self.lead(lifetime);
        let mut due = expires_at - lead;
        if lifetime >= self.horizon + self.min_interval {
            let latest = expires_at - RUNTIME_LEAD.min(lifetime * 3 / 4);
            due = due.max((row.updated_at + self.min_interval).min(latest));
        }
        Some(due.min(expires_at))
    }

    /// Due at `now`: renewable and its due time has come (expired included).
    pub fn is_due(&self, row: &CredentialRow, now: DateTime<Utc>) -> bool {
        self.next_due(row).is_some_and(|due| now >= due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_catalog::CredentialKey;

    fn stored(lifetime: Duration, at: DateTime<Utc>, refresh: bool) -> CredentialRow {
        CredentialRow {
            credential_key: CredentialKey("n|1".into()),
            server_name: "n".into(),
            server_url: None,
            expires_at: Some(at + lifetime),
            has_refresh_token: refresh,
            one_shot: !refresh,
            issuer: None,
            client_id: None,
            scope: None,
            updated_at: at,
            rotated_by: None,
            rotated_at: None,
        }
    }

    #[test]
    fn the_runtime_lead_clears_claude_codes_window_with_the_margin() {
        assert_eq!(RUNTIME_LEAD, Duration::seconds(360));
        assert!(RUNTIME_LEAD > CLAUDE_CODE_WINDOW && RUNTIME_LEAD > CODEX_WINDOW);
    }

    #[test]
    fn due_times_by_lifetime() {
        let rule = RenewalRule::default();
        let t0 = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let m = Duration::minutes;
        let s = Duration::seconds;
        // (lifetime, due after storing)
        let table = [
            (m(60), m(30)),
            (Duration::hours(2), m(60)),
            (Duration::hours(3), m(120)),
            (Duration::hours(24), Duration::hours(23)),
            (Duration::days(30), Duration::days(30) - m(60)),
            (m(10), m(4)),
            (m(2), s(30)),
            (s(8), s(2)),
        ];
        for (lifetime, after) in table {
            let row = stored(lifetime, t0, true);
            let due = rule.next_due(&row).unwrap();
            assert_eq!(due, t0 + after, "lifetime {lifetime}");
            assert!(!rule.is_due(&row, due - Duration::milliseconds(1)));
            assert!(rule.is_due(&row, due));
            let left = row.expires_at.unwrap() - due;
            // Renewed before any runtime's own window opens, whenever the lifetime allows it.
            if lifetime > RUNTIME_LEAD {
                assert!(left >= RUNTIME_LEAD, "lifetime {lifetime}: {left} left");
            }
            // Long-lived: never renewed within the throttle of being stored.
            if lifetime >= rule.horizon + rule.min_interval {
                assert!(due - t0 >= rule.min_interval, "lifetime {lifetime}");
            }
        }
    }

    #[test]
    fn the_old_rules_intent_where_still_right() {
        let rule = RenewalRule::default();
        let now = Utc::now();
        let ago = |d: Duration, lifetime: Duration| stored(lifetime, now - d, true);
        // Stored 5 h ago for 5.5 h (expires in 30 min): due.
        assert!(rule.is_due(&ago(Duration::hours(5), Duration::minutes(330)), now));
        // Expires in 2 h, stored 10 h ago: not yet.
        assert!(!rule.is_due(&ago(Duration::hours(10), Duration::hours(12)), now));
        // Expired: due at once, however recently it was stored.
        assert!(rule.is_due(&ago(Duration::minutes(10), Duration::minutes(9)), now));
        // A 1-hour token stored 30 min ago: due (the old throttle held it until it expired).
        assert!(rule.is_due(&ago(Duration::minutes(30), Duration::hours(1)), now));
        // No refresh token: never.
        let mut one_shot = ago(Duration::hours(10), Duration::hours(1));
        one_shot.has_refresh_token = false;
        assert_eq!(rule.next_due(&one_shot), None);
        assert!(!rule.is_due(&one_shot, now));
        // No expiry: never.
        let mut forever = ago(Duration::hours(10), Duration::hours(1));
        forever.expires_at = None;
        assert_eq!(rule.next_due(&forever), None);
    }

    #[test]
    fn a_pair_stored_expired_or_across_a_clock_step_is_due_once_expired() {
        let rule = RenewalRule::default();
        let t0 = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        for lifetime in [Duration::zero(), Duration::minutes(-5)] {
            let row = stored(lifetime, t0, true);
            assert_eq!(rule.next_due(&row), row.expires_at, "lifetime {lifetime}");
            assert!(rule.is_due(&row, t0));
        }
    }
}
