//! Healing: re-applying the entries Patchbay is responsible for after a runtime dropped them.
//!
//! A runtime rewrites its store by an unlocked read-modify-write (Claude Code: read, change,
//! `.credentials.json.tmp.<8 hex>`, rename). When it read the file before one of our replaces and
//! renames after it, our entry is gone (or back to an older value) the instant it renames. No
//! writer of ours can prevent that; what Patchbay owns is the outcome. So after every change to a
//! watched store, [`heal`] compares the store with the entries we are responsible for (the
//! caller's `desired` set: the credentials we wrote and still hold, retired ones excluded) and
//! re-writes those that are missing or stale.
//!
//! Rules:
//! - missing → re-written;
//! - present with the very value we want → untouched (no write, so no change event: this is what
//!   ends the loop our own write starts, as the watcher sees our rename too);
//! - present and strictly newer than ours (a later access-token expiry, the rule of
//!   [`crate::reconcile::is_strictly_newer`]) → never overwritten: the runtime rotated it, and the
//!   reconciler adopts it (the watcher reconciles before it heals, so it is normally already ours);
//! - present and older or different otherwise → re-written (our value is the head);
//! - not in `desired` → never touched, so a retired credential is never re-added.
//!
//! The store's own `write` still refuses to clobber an entry that became fresher in between.

use crate::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use std::collections::HashMap;

/// What one healing pass did.
#[derive(Debug, Default)]
pub struct HealReport {
    /// Entries of `desired` looked at.
    pub checked: usize,
    /// Present with the value we want: nothing written.
    pub unchanged: usize,
    /// Missing from the store, and written again.
    pub restored_missing: Vec<CredentialKey>,
    /// Present with an older (or otherwise different, not newer) value, and written again.
    pub restored_stale: Vec<CredentialKey>,
    /// The runtime holds a strictly newer pair (or one that turned fresher as we wrote): left for
    /// the reconciler to adopt.
    pub left_newer: Vec<CredentialKey>,
    /// Writes that failed; the other entries were still healed.
    pub failed: Vec<(CredentialKey, RuntimeError)>,
}

impl HealReport {
    /// Entries written by this pass.
    pub fn rewritten(&self) -> usize {
        self.restored_missing.len() + self.restored_stale.len()
    }

    /// Nothing written and nothing failed: the store already held what we want (a pass
    /// triggered by our own write ends here).
    pub fn is_noop(&self) -> bool {
        self.rewritten() == 0 && self.failed.is_empty()
    }
}

/// Re-writes every entry of `desired` that `store` lost or holds an older value of (see the
/// module docs). `Err` only when the store cannot be read; a failing write is in the report.
pub fn heal(
    store: &dyn RuntimeStore,
    desired: &[RuntimeCredential],
    now: DateTime<Utc>,
) -> Result<HealReport, RuntimeError> {
    let mut report = HealReport::default();
    if desired.is_empty() {
        return Ok(report);
    }
    let present: HashMap<CredentialKey, RuntimeCredential> = store
        .read_all()?
        .into_iter()
        .map(|c| (c.key.clone(), c))
        .collect();
    for want in desired {
        report.checked += 1;
        let missing = match present.get(&want.key) {
            None => true,
            Some(have) if same_value(have, want) => {
                report.unchanged += 1;
                continue;
            }
            Some(have)
                if runtime_is_newer(have, want)
                    || crate::reconcile::is_foreign_live(have, want, now) =>
            {
                report.left_newer.push(want.key.clone());
                continue;
            }
            Some(_) => false,
        };
        match store.write(want, now) {
            Ok(WriteOutcome::Written) if missing => report.restored_missing.push(want.key.clone()),
            Ok(WriteOutcome::Written) => report.restored_stale.push(want.key.clone()),
            Ok(WriteOutcome::KeptFresher) => report.left_newer.push(want.key.clone()),
            Err(e) => report.failed.push((want.key.clone(), e)),
        }
    }
    if !report.is_noop() {
        tracing::info!(
            runtime = store.runtime().display_name(),
            missing = report.restored_missing.len(),
            stale = report.restored_stale.len(),
            failed = report.failed.len(),
            "re-applied entries the runtime dropped"
        );
    }
    Ok(report)
}

/// The adoption rule on two runtime-shaped pairs: `have` carries a later access-token expiry than
/// `want` (or one where `want` has none).
fn runtime_is_newer(have: &RuntimeCredential, want: &RuntimeCredential) -> bool {
    crate::reconcile::expiry_is_later(have.expires_at, want.expires_at)
}

/// Whether the stored entry already says what writing `want` would make it say. Expiries compare
/// in milliseconds (the stores' resolution: a sub-millisecond difference would rewrite forever);
/// the members we write only when known count only when we know them.
fn same_value(have: &RuntimeCredential, want: &RuntimeCredential) -> bool {
    let ms = |t: Option<DateTime<Utc>>| t.map(|t| t.timestamp_millis());
    let known = |have: &Option<String>, want: &Option<String>| want.is_none() || have == want;
    have.server_name == want.server_name
        && have.server_url == want.server_url
        && have.access_token.expose() == want.access_token.expose()
        && have.refresh_token.as_ref().map(|s| s.expose())
            == want.refresh_token.as_ref().map(|s| s.expose())
        && ms(have.expires_at) == ms(want.expires_at)
        && known(&have.scope, &want.scope)
        && known(&have.client_id, &want.client_id)
        && known(&have.issuer, &want.issuer)
        && (want.client_secret.is_none()
            || have.client_secret.as_ref().map(|s| s.expose())
                == want.client_secret.as_ref().map(|s| s.expose()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claude::ClaudeFileStore;
    use chrono::TimeZone;
    use patchbay_vault::Secret;
    use serde_json::{json, Value};
    use std::fs;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
    }

    fn cred(name: &str, access: &str, expires: i64) -> RuntimeCredential {
        RuntimeCredential {
            key: CredentialKey(format!("{name}|528e1818a7ba21cf")),
            server_name: name.into(),
            server_url: "http://localhost:3100/mcp".into(),
            access_token: Secret::new(access),
            refresh_token: Some(Secret::new(format!("rt-{access}"))),
            // Sub-millisecond precision the file cannot hold: must still count as the same.
            expires_at: Some(t(expires) + chrono::Duration::nanoseconds(123_456)),
            scope: Some("read".into()),
            client_id: Some("client-1".into()),
            client_secret: None,
            issuer: None,
        }
    }

    struct Fx {
        _dir: tempfile::TempDir,
        store: ClaudeFileStore,
    }

    fn fx() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".credentials.json");
        fs::write(
            &path,
            serde_json::to_vec(&json!({"claudeAiOauth": {"accessToken": "user"}})).unwrap(),
        )
        .unwrap();
        Fx {
            store: ClaudeFileStore::at(path),
            _dir: dir,
        }
    }

    impl Fx {
        fn file(&self) -> Value {
            serde_json::from_slice(&fs::read(self.store.credentials_path()).unwrap()).unwrap()
        }

        #[cfg(unix)]
        fn inode_and_bytes(&self) -> (u64, Vec<u8>) {
            use std::os::unix::fs::MetadataExt;
            let p = self.store.credentials_path();
            (fs::metadata(p).unwrap().ino(), fs::read(p).unwrap())
        }

        fn access(&self, c: &RuntimeCredential) -> Option<String> {
            self.store
                .read(&c.key)
                .unwrap()
                .map(|c| c.access_token.expose().to_owned())
        }
    }

    #[test]
    fn a_missing_entry_is_rewritten() {
        let f = fx();
        let a = cred("a", "at-a", 3_600);
        let b = cred("b", "at-b", 3_600);
        f.store.write(&a, t(0)).unwrap();
        // b was dropped by the runtime's read-modify-write (never seen on disk).
        let report = heal(&f.store, &[a.clone(), b.clone()], t(10)).unwrap();
        assert_eq!(report.checked, 2);
        assert_eq!(report.unchanged, 1);
        assert_eq!(report.restored_missing, vec![b.key.clone()]);
        assert!(report.restored_stale.is_empty() && report.failed.is_empty());
        assert_eq!(f.access(&b).as_deref(), Some("at-b"));
        assert_eq!(f.file()["claudeAiOauth"]["accessToken"], "user");
    }

    #[test]
    fn a_stale_entry_is_rewritten() {
        let f = fx();
        // The runtime renamed back a version holding our previous pair.
        f.store.write(&cred("a", "at-1", 3_000), t(0)).unwrap();
        let want = cred("a", "at-2", 3_600);
        let report = heal(&f.store, std::slice::from_ref(&want), t(10)).unwrap();
        assert_eq!(report.restored_stale, vec![want.key.clone()]);
        assert_eq!(f.access(&want).as_deref(), Some("at-2"));
    }

    #[cfg(unix)]
    #[test]
    fn an_identical_entry_is_left_untouched_so_no_event_follows() {
        let f = fx();
        let a = cred("a", "at-a", 3_600);
        f.store.write(&a, t(0)).unwrap();
        let before = f.inode_and_bytes();
        let report = heal(&f.store, std::slice::from_ref(&a), t(10)).unwrap();
        assert!(report.is_noop(), "{report:?}");
        assert_eq!(report.unchanged, 1);
        // Not replaced: same inode (a rename would have given a new one), same bytes.
        assert_eq!(f.inode_and_bytes(), before);
    }

    #[test]
    fn a_fresher_runtime_entry_is_not_overwritten() {
        let f = fx();
        // Claude Code refreshed: a later expiry than ours, whether or not it is still valid.
        let theirs = cred("a", "at-theirs", 7_200);
        f.store.write(&theirs, t(0)).unwrap();
        let ours = cred("a", "at-ours", 3_600);
        for now in [t(10), t(9_000)] {
            let report = heal(&f.store, std::slice::from_ref(&ours), now).unwrap();
            assert_eq!(report.left_newer, vec![ours.key.clone()], "{report:?}");
            assert!(report.is_noop());
            assert_eq!(f.access(&ours).as_deref(), Some("at-theirs"));
        }
    }

    #[test]
    fn a_retired_entry_is_not_readded() {
        let f = fx();
        let live = cred("live", "at-l", 3_600);
        let retired = cred("dead", "at-d", 3_600);
        f.store.write(&live, t(0)).unwrap();
        f.store.write(&retired, t(0)).unwrap();
        // Retiring removes it from the store and from the desired set.
        assert!(f.store.remove(&retired.key).unwrap());
        let report = heal(&f.store, std::slice::from_ref(&live), t(10)).unwrap();
        assert!(report.is_noop(), "{report:?}");
        assert_eq!(f.access(&retired), None);
        assert!(f.file()["mcpOAuth"].get(retired.key.as_str()).is_none());
    }

    #[test]
    fn nothing_desired_reads_nothing() {
        let f = fx();
        fs::write(f.store.credentials_path(), b"not json").unwrap();
        assert!(heal(&f.store, &[], t(0)).unwrap().is_noop());
        assert!(heal(&f.store, &[cred("a", "x", 1)], t(0)).is_err());
    }
}
