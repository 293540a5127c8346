//! The facade every surface calls: the tray, the Connectors window and the CLI. It gathers the
//! local signals once per call and hands them to the one status computation.

use crate::{CoreError, Paths};
use chrono::{DateTime, Utc};
use patchbay_catalog::{load, Catalog, CredentialKey};
use patchbay_status::{compute, LocalSignals, Offered, StatusReport, StoreHealth, VaultVariables};
use patchbay_vault::{KeyringStore, Secret, SecretStore, VariableInfo, Vault, VaultError};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Where "now" comes from; injected so expiry is testable.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub struct Patchbay {
    pub paths: Paths,
    vault: Arc<Vault>,
    clock: Clock,
}

impl Patchbay {
    /// Open the data directory with the real OS keychain.
    pub fn open(paths: Paths) -> Result<Patchbay, CoreError> {
        let store = Arc::new(KeyringStore::new(crate::paths::KEYCHAIN_SERVICE));
        Patchbay::with_store(paths, store)
    }

    /// Open with another secret store (an in-memory one in tests).
    pub fn with_store(paths: Paths, store: Arc<dyn SecretStore>) -> Result<Patchbay, CoreError> {
        let vault = Arc::new(Vault::open(
            &paths.database(),
            store,
            &paths.keychain_account,
        )?);
        Ok(Patchbay {
            paths,
            vault,
            clock: Arc::new(Utc::now),
        })
    }

    pub fn with_clock(mut self, clock: Clock) -> Patchbay {
        self.clock = clock;
        self
    }

    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    /// The vault, shared (the runtime-store watcher holds it on its own thread).
    pub fn shared_vault(&self) -> Arc<Vault> {
        self.vault.clone()
    }

    /// "Now", from the injected clock.
    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// A `${VAR}`'s value: the vault first, then the process environment. `None` when neither
    /// has it (or the vault's keychain did not answer and the environment has none).
    pub fn resolve_variable(&self, name: &str) -> Option<String> {
        match self.vault.variable(name) {
            Ok(Some(secret)) => Some(secret.expose().to_owned()),
            Ok(None) | Err(_) => std::env::var(name).ok(),
        }
    }

    pub fn catalog(&self) -> Catalog {
        load(&self.paths.catalog_sources())
    }

    /// The status of every connector, from local signals only. Never fails as a whole.
    pub fn status(&self) -> StatusReport {
        compute(&self.catalog(), &self.signals())
    }

    /// What an agent can start now, and the Unavailable roster.
    pub fn offered(&self) -> Offered {
        Offered::from_report(&self.status())
    }

    /// Read the local signals: metadata from SQLite, one keychain read at most (the vault caches
    /// its key), and the process environment.
    pub fn signals(&self) -> LocalSignals {
        let mut store = match self.vault.check_store() {
            Ok(()) => StoreHealth::Reachable,
            Err(e) => StoreHealth::Unreachable {
                message: e.to_string(),
            },
        };
        let credentials = match self.vault.credential_rows() {
            Ok(rows) => rows,
            Err(e) => {
                store = unreadable(e);
                Vec::new()
            }
        };
        let mut variables = VaultVariables::default();
        match self.vault.variable_names() {
            Ok(infos) => {
                variables.names = infos.into_iter().map(|i| i.name).collect::<BTreeSet<_>>()
            }
            Err(e) => store = unreadable(e),
        }
        if store == StoreHealth::Reachable && !variables.names.is_empty() {
            match self.vault.variables() {
                Ok(values) => {
                    variables.values = values
                        .into_iter()
                        .map(|(info, secret)| (info.name, secret))
                        .collect()
                }
                Err(e) => store = unreadable(e),
            }
        }
        LocalSignals {
            credentials,
            store,
            variables,
            env: std::env::vars().collect(),
            now: (self.clock)(),
        }
    }

    pub fn set_secret(&self, name: &str, value: &Secret) -> Result<(), CoreError> {
        self.vault.set_variable(name, value, (self.clock)())?;
        Ok(())
    }

    pub fn secret_names(&self) -> Result<Vec<VariableInfo>, CoreError> {
        Ok(self.vault.variable_names()?)
    }

    pub fn delete_secret(&self, name: &str) -> Result<bool, CoreError> {
        Ok(self.vault.delete_variable(name)?)
    }

    /// Discard every sealed secret, for a vault whose key was lost. Returns how many.
    pub fn reset_vault(&self) -> Result<usize, CoreError> {
        Ok(self.vault.discard_sealed_secrets()?)
    }

    /// Delete a credential that no catalog entry claims. Refuses a key the catalog still computes,
    /// so a slip of the finger cannot log a working connector out.
    pub fn delete_unclaimed(&self, key: &CredentialKey) -> Result<bool, CoreError> {
        let report = self.status();
        if !report
            .unclaimed
            .iter()
            .any(|u| u.credential_key == key.as_str())
        {
            let claimed_by = report.connectors.iter().find(|c| {
                c.credential
                    .as_ref()
                    .is_some_and(|cr| cr.key == key.as_str())
            });
            return Err(CoreError::Invalid(match claimed_by {
                Some(c) => format!(
                    "credential {key} belongs to the connector \"{}\"; it is not unclaimed",
                    c.name
                ),
                None => format!("no unclaimed credential has the key {key}"),
            }));
        }
        Ok(self.vault.delete_credential(key)?)
    }
}

fn unreadable(e: VaultError) -> StoreHealth {
    StoreHealth::Unreachable {
        message: e.to_string(),
    }
}
