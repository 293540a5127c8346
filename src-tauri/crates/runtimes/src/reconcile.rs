//! The reconciler: adopting the pairs a runtime rotated, writing ours through to every runtime,
//! and retiring a dead credential from all of them.
//!
//! Why adoption matters: Claude Code refreshes MCP tokens by itself and writes the rotated pair
//! back to its own store. With a rotating authorization server the refresh token in our vault is
//! then dead, and presenting it (our refresh, or our write clobbering the runtime's entry) gets
//! `invalid_grant`. So before every write to a runtime (and before every refresh) the runtime's
//! entry is read, and a strictly newer pair is adopted into the vault, **even when its access
//! token has already expired**: the rotated refresh token is the live head of the chain.
//!
//! Keys: the runtime's own server name decides its key (`notion|…` in our catalog may be
//! `notion-work|…` in Claude Code's config), so every call names both, as a [`BridgeKey`].

use crate::heal::{self, HealReport};
use crate::{Runtime, RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_vault::{CredentialRow, TokenSet, Vault, VaultError};
use std::sync::{Mutex, MutexGuard};

/// The vault's key of a credential and the key one runtime files it under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BridgeKey {
    pub vault: CredentialKey,
    pub runtime: CredentialKey,
}

impl BridgeKey {
    /// The runtime names the server as the catalog does.
    pub fn same(key: CredentialKey) -> BridgeKey {
        BridgeKey {
            vault: key.clone(),
            runtime: key,
        }
    }
}

/// One runtime store and the key it files this credential under.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub store: &'a dyn RuntimeStore,
    pub runtime_key: &'a CredentialKey,
}

/// The id recorded as `rotated_by` (the serde name of [`Runtime`]).
pub fn runtime_id(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::ClaudeCode => "claude_code",
        Runtime::Codex => "codex",
    }
}

/// The adoption rule: is the runtime's pair strictly newer than the one we store?
///
/// - Both carry an access-token expiry: newer when the runtime's is **later**; equal is not
///   newer. Whether that expiry is already past does not matter (see the module docs).
/// - The runtime's entry has an expiry and ours has none: **newer**. A pair we stored without an
///   expiry cannot be ordered, and a runtime that refreshed it got (and recorded) an expiry
///   from the token response; deferring to the side that demonstrably refreshed keeps the live
///   refresh token. A server either sends `expires_in` or does not, so this mixed case arises
///   essentially only from such a refresh.
/// - The runtime's entry has no expiry: never newer (nothing shows it is).
///
/// Callers also treat a runtime entry holding the very access token we store as not newer
/// ([`Reconciler::reconcile`]): it is our own pair echoed back, which is what keeps a retired
/// credential's stale copy from being adopted.
pub fn is_strictly_newer(runtime: &RuntimeCredential, ours: &CredentialRow) -> bool {
    expiry_is_later(runtime.expires_at, ours.expires_at)
}

/// The ordering behind [`is_strictly_newer`], on bare expiries (shared with [`crate::heal`]).
pub(crate) fn expiry_is_later(theirs: Option<DateTime<Utc>>, ours: Option<DateTime<Utc>>) -> bool {
    match (theirs, ours) {
        (Some(theirs), Some(ours)) => theirs > ours,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// What one reconciliation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciled {
    /// The runtime's pair was strictly newer and is now the vault's.
    Adopted(Adoption),
    /// The runtime holds the same pair as ours, or an older one.
    NotNewer,
    /// The runtime holds nothing under its key.
    NotInStore,
    /// The vault holds nothing under its key: there is nothing of ours to reconcile (a
    /// credential the runtime obtained by itself is not imported).
    NotInVault,
    /// The runtime's pair was issued to another OAuth client (its entry names another
    /// `clientId`, e.g. Claude Code's own `/mcp` login): left alone. Only that client can
    /// refresh it, and adopting it would replace our own live refresh token.
    OtherClient,
}

/// An adoption, for the caller to announce (the app pushes `status-changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adoption {
    pub runtime: Runtime,
    pub vault_key: CredentialKey,
    pub runtime_key: CredentialKey,
    pub expires_at: Option<DateTime<Utc>>,
    /// False when the runtime's entry had no refresh token and the stored one was kept.
    pub refresh_token_rotated: bool,
    pub at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Vault(#[from] VaultError),
    #[error("{runtime}: {source}", runtime = .runtime.display_name())]
    Runtime {
        runtime: Runtime,
        #[source]
        source: RuntimeError,
    },
}

impl ReconcileError {
    fn runtime(store: &dyn RuntimeStore) -> impl FnOnce(RuntimeError) -> ReconcileError {
        let runtime = store.runtime();
        move |source| ReconcileError::Runtime { runtime, source }
    }
}

/// What writing through did, per target, in the order given.
#[derive(Debug)]
pub struct WriteThrough {
    /// Adoptions made while reconciling first.
    pub adopted: Vec<Adoption>,
    pub outcomes: Vec<(Runtime, CredentialKey, Result<WriteOutcome, RuntimeError>)>,
}

/// What retiring did, per target.
#[derive(Debug)]
pub struct Retired {
    /// Whether the vault held the credential.
    pub in_vault: bool,
    /// Per target: whether its store held (and now no longer holds) an entry.
    pub removed: Vec<(Runtime, CredentialKey, Result<bool, RuntimeError>)>,
}

/// Serializes reconciliations in this process, so the watcher and a write-through never
/// interleave their read-compare-adopt steps. Share one per process (`Arc`).
#[derive(Debug, Default)]
pub struct Reconciler {
    serial: Mutex<()>,
}

impl Reconciler {
    pub fn new() -> Reconciler {
        Reconciler::default()
    }

    /// Adopts the runtime's pair into the vault when it is strictly newer than ours
    /// ([`is_strictly_newer`]) and is not the very pair we hold. A runtime entry without a
    /// refresh token keeps the stored one. Records who rotated and when.
    pub fn reconcile(
        &self,
        vault: &Vault,
        store: &dyn RuntimeStore,
        key: &BridgeKey,
        now: DateTime<Utc>,
    ) -> Result<Reconciled, ReconcileError> {
        let _serial = lock(&self.serial);
        reconcile_locked(vault, store, key, now)
    }

    /// Reconciles against every target (each strictly newer pair is adopted in turn, so the
    /// newest wins), then writes the vault's pair to each target's store (whose own `write`
    /// keeps a fresher entry), then clears that server's cached "needs auth" verdict wherever it
    /// was written. A failing target does not stop the others; its error is in the outcome.
    pub fn write_through(
        &self,
        vault: &Vault,
        vault_key: &CredentialKey,
        targets: &[Target<'_>],
        now: DateTime<Utc>,
    ) -> Result<WriteThrough, ReconcileError> {
        let _serial = lock(&self.serial);
        let mut adopted = Vec::new();
        for target in targets {
            let key = BridgeKey {
                vault: vault_key.clone(),
                runtime: target.runtime_key.clone(),
            };
            match reconcile_locked(vault, target.store, &key, now) {
                Ok(Reconciled::Adopted(a)) => adopted.push(a),
                Ok(_) => {}
                // A store we cannot read is one we must not write blindly either: its error is
                // reported as that target's outcome below.
                Err(ReconcileError::Runtime { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let Some(row) = vault
            .credential_rows()?
            .into_iter()
            .find(|r| &r.credential_key == vault_key)
        else {
            return Ok(WriteThrough {
                adopted,
                outcomes: Vec::new(),
            });
        };
        let Some(tokens) = vault.credential_tokens(vault_key)? else {
            return Ok(WriteThrough {
                adopted,
                outcomes: Vec::new(),
            });
        };
        let mut outcomes = Vec::with_capacity(targets.len());
        for target in targets {
            let mut credential = runtime_credential(&row, &tokens, target.runtime_key);
            credential.client_secret = grant_client_secret(vault, &row);
            if let Ok(Some(have)) = target.store.read(target.runtime_key) {
                if is_foreign_live(&have, &credential, now) {
                    outcomes.push((
                        target.store.runtime(),
                        target.runtime_key.clone(),
                        Ok(WriteOutcome::KeptFresher),
                    ));
                    continue;
                }
            }
            let outcome = target.store.write(&credential, now).and_then(|outcome| {
                if outcome == WriteOutcome::Written {
                    target.store.clear_needs_auth(&credential.server_name)?;
                }
                Ok(outcome)
            });
            outcomes.push((target.store.runtime(), target.runtime_key.clone(), outcome));
        }
        Ok(WriteThrough { adopted, outcomes })
    }

    /// [`crate::heal::heal`], serialized with the reconciliations and write-throughs of this
    /// process (so a pass never re-writes a pair a write-through is replacing).
    pub fn heal(
        &self,
        store: &dyn RuntimeStore,
        desired: &[RuntimeCredential],
        now: DateTime<Utc>,
    ) -> Result<HealReport, RuntimeError> {
        let _serial = lock(&self.serial);
        heal::heal(store, desired, now)
    }

    /// Retires a dead credential: the vault drops its refresh token and force-expires the
    /// access token, then every target's store loses its entry, so the runtime's copy (still
    /// carrying its original, later expiry) can never be adopted back as "newer".
    pub fn retire(
        &self,
        vault: &Vault,
        vault_key: &CredentialKey,
        targets: &[Target<'_>],
        now: DateTime<Utc>,
    ) -> Result<Retired, ReconcileError> {
        let _serial = lock(&self.serial);
        let in_vault = vault.retire_credential(vault_key, now)?;
        let removed = targets
            .iter()
            .map(|t| {
                (
                    t.store.runtime(),
                    t.runtime_key.clone(),
                    t.store.remove(t.runtime_key),
                )
            })
            .collect();
        Ok(Retired { in_vault, removed })
    }
}

fn reconcile_locked(
    vault: &Vault,
    store: &dyn RuntimeStore,
    key: &BridgeKey,
    now: DateTime<Utc>,
) -> Result<Reconciled, ReconcileError> {
    let Some(ours) = vault
        .credential_rows()?
        .into_iter()
        .find(|r| r.credential_key == key.vault)
    else {
        return Ok(Reconciled::NotInVault);
    };
    let Some(theirs) = store
        .read(&key.runtime)
        .map_err(ReconcileError::runtime(store))?
    else {
        return Ok(Reconciled::NotInStore);
    };
    if !is_strictly_newer(&theirs, &ours) && !rotated_within_rounding(vault, &theirs, &ours)? {
        return Ok(Reconciled::NotNewer);
    }
    if !same_client(&theirs, &ours) {
        return Ok(Reconciled::OtherClient);
    }
    let Some(our_tokens) = vault.credential_tokens(&key.vault)? else {
        return Ok(Reconciled::NotInVault);
    };
    if our_tokens.access_token == theirs.access_token {
        // Our own pair echoed back (a retired credential's stale copy included).
        return Ok(Reconciled::NotNewer);
    }
    let row = CredentialRow {
        credential_key: ours.credential_key.clone(),
        // Our name for the server, not the runtime's.
        server_name: ours.server_name.clone(),
        server_url: ours.server_url.clone(),
        expires_at: theirs.expires_at,
        has_refresh_token: false,
        one_shot: false,
        // The same client (checked above); the issuer as the runtime recorded it.
        issuer: theirs.issuer.clone().or(ours.issuer.clone()),
        client_id: ours.client_id.clone().or(theirs.client_id.clone()),
        scope: theirs.scope.clone().or(ours.scope.clone()),
        updated_at: now,
        rotated_by: None,
        rotated_at: None,
    };
    let refresh_token_rotated = theirs.refresh_token.is_some();
    vault.put_adopted_credential(
        &row,
        &TokenSet {
            access_token: theirs.access_token.clone(),
            refresh_token: theirs.refresh_token.clone(),
        },
        runtime_id(store.runtime()),
        now,
    )?;
    tracing::info!(
        runtime = store.runtime().display_name(),
        key = %key.vault,
        "adopted a pair the runtime rotated"
    );
    Ok(Reconciled::Adopted(Adoption {
        runtime: store.runtime(),
        vault_key: key.vault.clone(),
        runtime_key: key.runtime.clone(),
        expires_at: theirs.expires_at,
        refresh_token_rotated,
        at: now,
    }))
}

/// How far a runtime rounds the expiry it records: Codex 0.171.0 keeps whole seconds (measured),
/// so a pair it rotated right after ours can carry an expiry up to a second before ours.
pub const EXPIRY_ROUNDING: chrono::Duration = chrono::Duration::seconds(1);

/// A runtime's pair whose expiry is ours rounded down to the second (whole seconds, less than
/// [`EXPIRY_ROUNDING`] before ours, which has a fraction) and whose refresh token and access
/// token both differ from ours: the runtime rotated right after we stored ours, and only its
/// rounding makes it look older. Its refresh token is the live one (a rotating server spent
/// ours), so it is adopted. An older generation is a whole token lifetime earlier, never this
/// close; equal expiries stay "not newer".
fn rotated_within_rounding(
    vault: &Vault,
    theirs: &RuntimeCredential,
    ours: &CredentialRow,
) -> Result<bool, ReconcileError> {
    let (Some(their_expiry), Some(our_expiry)) = (theirs.expires_at, ours.expires_at) else {
        return Ok(false);
    };
    let behind = our_expiry - their_expiry;
    let whole_seconds = their_expiry.timestamp_subsec_millis() == 0;
    if !whole_seconds || behind <= chrono::Duration::zero() || behind >= EXPIRY_ROUNDING {
        return Ok(false);
    }
    let Some(their_refresh) = &theirs.refresh_token else {
        return Ok(false);
    };
    let Some(our_tokens) = vault.credential_tokens(&ours.credential_key)? else {
        return Ok(false);
    };
    Ok(our_tokens.refresh_token.as_ref() != Some(their_refresh)
        && our_tokens.access_token != theirs.access_token)
}

/// Whether a runtime's pair belongs to the client our credential was issued to. An entry that
/// names no client (or a row that records none) can not be told apart and counts as ours.
pub fn same_client(theirs: &RuntimeCredential, ours: &CredentialRow) -> bool {
    match (theirs.client_id.as_deref(), ours.client_id.as_deref()) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => true,
    }
}

/// Whether the runtime holds a live pair issued to another client than `want`'s (the runtime's
/// own login): never overwritten, since that would cost the runtime a credential only its own
/// client can renew. A lapsed entry without a refresh token is dead and may be replaced.
pub fn is_foreign_live(
    have: &RuntimeCredential,
    want: &RuntimeCredential,
    now: DateTime<Utc>,
) -> bool {
    let other = matches!(
        (have.client_id.as_deref(), want.client_id.as_deref()),
        (Some(theirs), Some(ours)) if theirs != ours
    );
    let live = have.refresh_token.is_some() || have.expires_at.is_some_and(|at| at > now);
    other && live
}

/// The client secret a runtime needs to refresh a confidential client's pair by itself: the
/// grant's, when the stored pair belongs to that client (a pair adopted from a runtime's own
/// client is not ours to complete).
pub fn grant_client_secret(vault: &Vault, row: &CredentialRow) -> Option<patchbay_vault::Secret> {
    let grant = vault.grant(&row.credential_key).ok().flatten()?;
    if row.client_id.as_deref() != Some(grant.client_id.as_str()) {
        return None;
    }
    grant.client_secret
}

/// Our stored pair as the runtime files it: under the runtime's key and server name.
pub fn runtime_credential(
    row: &CredentialRow,
    tokens: &TokenSet,
    runtime_key: &CredentialKey,
) -> RuntimeCredential {
    RuntimeCredential {
        key: runtime_key.clone(),
        server_name: runtime_key.server_name().to_owned(),
        server_url: row.server_url.clone().unwrap_or_default(),
        access_token: tokens.access_token.clone(),
        refresh_token: tokens.refresh_token.clone(),
        expires_at: row.expires_at,
        scope: row.scope.clone(),
        client_id: row.client_id.clone(),
        // Not on the row: see `grant_client_secret`.
        client_secret: None,
        issuer: row.issuer.clone(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryRuntimeStore;
    use chrono::TimeZone;
    use patchbay_vault::{MemoryStore, Secret};
    use std::sync::Arc;

    /// The injected clock: milliseconds since an arbitrary origin.
    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
    }

    const KEY: &str = "notion|3fad03f7abd02b9c";

    struct Fx {
        _dir: tempfile::TempDir,
        vault: Vault,
        claude: MemoryRuntimeStore,
        codex: MemoryRuntimeStore,
        r: Reconciler,
    }

    fn key() -> CredentialKey {
        CredentialKey(KEY.into())
    }

    fn fx() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let vault = Vault::open(
            &dir.path().join("v.db"),
            Arc::new(MemoryStore::new()),
            "acct",
        )
        .unwrap();
        Fx {
            _dir: dir,
            vault,
            claude: MemoryRuntimeStore::new(Runtime::ClaudeCode),
            codex: MemoryRuntimeStore::new(Runtime::Codex),
            r: Reconciler::new(),
        }
    }

    fn row(expires_at: Option<DateTime<Utc>>, updated_at: DateTime<Utc>) -> CredentialRow {
        CredentialRow {
            credential_key: key(),
            server_name: "notion".into(),
            server_url: Some("https://mcp.notion.com/v1/mcp".into()),
            expires_at,
            has_refresh_token: false,
            one_shot: false,
            issuer: Some("https://auth.example.com/".into()),
            client_id: Some("client-1".into()),
            scope: Some("read".into()),
            updated_at,
            rotated_by: None,
            rotated_at: None,
        }
    }

    fn store_ours(f: &Fx, access: &str, refresh: Option<&str>, expires_at: Option<i64>) {
        f.vault
            .put_credential(
                &row(expires_at.map(t), t(0)),
                &TokenSet {
                    access_token: Secret::new(access),
                    refresh_token: refresh.map(Secret::new),
                },
            )
            .unwrap();
    }

    fn theirs(
        runtime_key: &str,
        access: &str,
        refresh: Option<&str>,
        expires_at: Option<i64>,
    ) -> RuntimeCredential {
        let key = CredentialKey(runtime_key.into());
        RuntimeCredential {
            server_name: key.server_name().into(),
            key,
            server_url: "https://mcp.notion.com/v1/mcp".into(),
            access_token: Secret::new(access),
            refresh_token: refresh.map(Secret::new),
            expires_at: expires_at.map(t),
            scope: Some("read".into()),
            client_id: Some("client-1".into()),
            client_secret: None,
            issuer: Some("https://auth.example.com/".into()),
        }
    }

    fn vault_pair(f: &Fx) -> (String, Option<String>) {
        let tokens = f.vault.credential_tokens(&key()).unwrap().unwrap();
        (
            tokens.access_token.expose().to_owned(),
            tokens.refresh_token.map(|s| s.expose().to_owned()),
        )
    }

    fn vault_row(f: &Fx) -> CredentialRow {
        f.vault.credential_rows().unwrap().remove(0)
    }

    #[test]
    fn the_rule_compares_expiries_strictly() {
        let ours = row(Some(t(100)), t(0));
        assert!(is_strictly_newer(&theirs(KEY, "a", None, Some(101)), &ours));
        assert!(!is_strictly_newer(
            &theirs(KEY, "a", None, Some(100)),
            &ours
        ));
        assert!(!is_strictly_newer(&theirs(KEY, "a", None, Some(99)), &ours));
        assert!(!is_strictly_newer(&theirs(KEY, "a", None, None), &ours));
        let without = row(None, t(0));
        assert!(is_strictly_newer(
            &theirs(KEY, "a", None, Some(1)),
            &without
        ));
        assert!(!is_strictly_newer(&theirs(KEY, "a", None, None), &without));
    }

    #[test]
    fn adopts_a_newer_pair_even_when_its_access_token_has_expired() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        // Claude Code refreshed at t=3300 (rotating rt-1 away), then sat idle past its expiry.
        f.claude
            .put_raw(theirs(KEY, "at-2", Some("rt-2"), Some(6_900)));
        let now = t(10_000);
        let got =
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), now)
                .unwrap();
        let Reconciled::Adopted(adoption) = got else {
            panic!("{got:?}")
        };
        assert_eq!(adoption.runtime, Runtime::ClaudeCode);
        assert!(adoption.refresh_token_rotated);
        assert_eq!(vault_pair(&f), ("at-2".into(), Some("rt-2".into())));
        let r = vault_row(&f);
        assert_eq!(r.expires_at, Some(t(6_900)));
        assert_eq!(r.rotated_by.as_deref(), Some("claude_code"));
        assert_eq!(r.rotated_at, Some(now));
        assert_eq!(r.server_name, "notion", "our name is kept");
        assert!(r.has_refresh_token);
    }

    #[test]
    fn an_adopted_entry_without_a_refresh_token_keeps_ours() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        f.claude.put_raw(theirs(KEY, "at-2", None, Some(7_200)));
        let got =
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), t(10))
                .unwrap();
        assert!(
            matches!(&got, Reconciled::Adopted(a) if !a.refresh_token_rotated),
            "{got:?}"
        );
        assert_eq!(vault_pair(&f), ("at-2".into(), Some("rt-1".into())));
    }

    #[test]
    fn the_runtimes_own_name_decides_its_key() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        let runtime_key = CredentialKey("notion-work|3fad03f7abd02b9c".into());
        f.claude.put_raw(theirs(
            runtime_key.as_str(),
            "at-2",
            Some("rt-2"),
            Some(7_200),
        ));
        let bridge = BridgeKey {
            vault: key(),
            runtime: runtime_key,
        };
        assert!(matches!(
            f.r.reconcile(&f.vault, &f.claude, &bridge, t(10)).unwrap(),
            Reconciled::Adopted(_)
        ));
        assert_eq!(vault_row(&f).server_name, "notion");
        // Without the mapping nothing is found.
        assert_eq!(
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), t(10))
                .unwrap(),
            Reconciled::NotInStore
        );
    }

    #[test]
    fn ignores_an_older_or_equal_pair() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        for (access, exp) in [("at-0", 3_000), ("at-x", 3_600)] {
            f.claude
                .put_raw(theirs(KEY, access, Some("rt-x"), Some(exp)));
            assert_eq!(
                f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), t(10))
                    .unwrap(),
                Reconciled::NotNewer,
                "{access}"
            );
        }
        f.claude.put_raw(theirs(KEY, "at-n", Some("rt-n"), None));
        assert_eq!(
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), t(10))
                .unwrap(),
            Reconciled::NotNewer
        );
        assert_eq!(vault_pair(&f), ("at-1".into(), Some("rt-1".into())));
        assert_eq!(vault_row(&f).rotated_by, None);
    }

    #[test]
    fn nothing_to_reconcile_without_both_sides() {
        let f = fx();
        f.claude
            .put_raw(theirs(KEY, "at-2", Some("rt-2"), Some(7_200)));
        assert_eq!(
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), t(10))
                .unwrap(),
            Reconciled::NotInVault
        );
        assert!(f.vault.credential_rows().unwrap().is_empty());
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        assert_eq!(
            f.r.reconcile(&f.vault, &f.codex, &BridgeKey::same(key()), t(10))
                .unwrap(),
            Reconciled::NotInStore
        );
    }

    #[test]
    fn a_newer_pair_of_another_client_is_left_alone() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        let mut other = theirs(KEY, "at-claude", Some("rt-claude"), Some(7_200));
        other.client_id = Some("claude-code-client".into());
        f.claude.put_raw(other);
        assert_eq!(
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(key()), t(10))
                .unwrap(),
            Reconciled::OtherClient
        );
        // Our live refresh token and our client are untouched.
        assert_eq!(
            vault_pair(&f),
            ("at-1".to_string(), Some("rt-1".to_string()))
        );
        assert_eq!(vault_row(&f).client_id.as_deref(), Some("client-1"));
    }

    #[test]
    fn a_pair_rotated_within_the_runtimes_rounding_is_adopted() {
        let f = fx();
        // Ours expires at 3600.400 s; Codex rotated just after and recorded whole seconds.
        f.vault
            .put_credential(
                &row(Some(t(3_600) + chrono::Duration::milliseconds(400)), t(0)),
                &TokenSet {
                    access_token: Secret::new("at-1"),
                    refresh_token: Some(Secret::new("rt-1")),
                },
            )
            .unwrap();
        f.codex
            .put_raw(theirs(KEY, "at-2", Some("rt-2"), Some(3_600)));
        let got =
            f.r.reconcile(&f.vault, &f.codex, &BridgeKey::same(key()), t(10))
                .unwrap();
        assert!(matches!(got, Reconciled::Adopted(_)), "{got:?}");
        assert_eq!(
            vault_pair(&f),
            ("at-2".to_string(), Some("rt-2".to_string()))
        );
        // Our own pair echoed back with a rounded expiry is not "newer".
        let f = fx();
        f.vault
            .put_credential(
                &row(Some(t(3_600) + chrono::Duration::milliseconds(400)), t(0)),
                &TokenSet {
                    access_token: Secret::new("at-1"),
                    refresh_token: Some(Secret::new("rt-1")),
                },
            )
            .unwrap();
        f.codex
            .put_raw(theirs(KEY, "at-1", Some("rt-1"), Some(3_600)));
        assert_eq!(
            f.r.reconcile(&f.vault, &f.codex, &BridgeKey::same(key()), t(10))
                .unwrap(),
            Reconciled::NotNewer
        );
    }

    #[test]
    fn never_adopts_after_retiring() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        let k = key();
        let targets = [
            Target {
                store: &f.claude,
                runtime_key: &k,
            },
            Target {
                store: &f.codex,
                runtime_key: &k,
            },
        ];
        f.r.write_through(&f.vault, &k, &targets, t(10)).unwrap();
        assert_eq!((f.claude.len(), f.codex.len()), (1, 1));

        // The provider rejected the refresh token at t=100: retire it everywhere.
        let retired = f.r.retire(&f.vault, &k, &targets, t(100)).unwrap();
        assert!(retired.in_vault);
        assert!(retired.removed.iter().all(|(_, _, r)| *r.as_ref().unwrap()));
        assert!(f.claude.is_empty() && f.codex.is_empty());
        let r = vault_row(&f);
        assert!(!r.has_refresh_token && r.one_shot);
        assert_eq!(r.expires_at, Some(t(100)));
        for target in &targets {
            assert_eq!(
                f.r.reconcile(&f.vault, target.store, &BridgeKey::same(k.clone()), t(200))
                    .unwrap(),
                Reconciled::NotInStore
            );
        }

        // A stale copy of the dead pair reappears (a runtime that had it in memory wrote it
        // back): its expiry is later than the retired row's, but it is our own dead pair.
        f.claude
            .put_raw(theirs(KEY, "at-1", Some("rt-1"), Some(3_600)));
        assert_eq!(
            f.r.reconcile(&f.vault, &f.claude, &BridgeKey::same(k.clone()), t(200))
                .unwrap(),
            Reconciled::NotNewer
        );
        assert_eq!(vault_pair(&f), ("at-1".into(), None));
        assert!(vault_row(&f).one_shot);
    }

    #[test]
    fn write_through_reconciles_first_and_writes_the_adopted_pair_everywhere() {
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        // Claude Code rotated; its access token is expired by now, so a naive write of ours
        // would clobber the live refresh token.
        f.claude
            .put_raw(theirs(KEY, "at-2", Some("rt-2"), Some(6_900)));
        f.claude.mark_needs_auth("notion");
        f.codex.mark_needs_auth("notion");
        let k = key();
        let targets = [
            Target {
                store: &f.claude,
                runtime_key: &k,
            },
            Target {
                store: &f.codex,
                runtime_key: &k,
            },
        ];
        let done =
            f.r.write_through(&f.vault, &k, &targets, t(10_000))
                .unwrap();
        assert_eq!(done.adopted.len(), 1);
        assert_eq!(done.adopted[0].runtime, Runtime::ClaudeCode);
        assert_eq!(done.outcomes.len(), 2);
        for (_, _, outcome) in &done.outcomes {
            assert_eq!(*outcome.as_ref().unwrap(), WriteOutcome::Written);
        }
        for store in [&f.claude, &f.codex] {
            let entry = store.read(&k).unwrap().unwrap();
            assert_eq!(entry.access_token.expose(), "at-2");
            assert_eq!(entry.refresh_token.unwrap().expose(), "rt-2");
            assert_eq!(entry.expires_at, Some(t(6_900)));
            assert_eq!(entry.server_name, "notion");
            assert!(!store.needs_auth("notion"));
        }
        assert_eq!(vault_pair(&f), ("at-2".into(), Some("rt-2".into())));
    }

    #[test]
    fn write_through_keeps_a_fresher_entry_it_could_not_adopt() {
        // The store's own guard: an entry still valid and later than ours is never clobbered,
        // even when it is not adoptable (here: it is literally ours from a later write race).
        let f = fx();
        store_ours(&f, "at-1", Some("rt-1"), Some(3_600));
        f.claude
            .put_raw(theirs(KEY, "at-1", Some("rt-1"), Some(9_000)));
        let k = key();
        let done =
            f.r.write_through(
                &f.vault,
                &k,
                &[Target {
                    store: &f.claude,
                    runtime_key: &k,
                }],
                t(10),
            )
            .unwrap();
        assert!(done.adopted.is_empty());
        assert_eq!(
            *done.outcomes[0].2.as_ref().unwrap(),
            WriteOutcome::KeptFresher
        );
    }
}
