//! Patchbay's vault: every secret sealed under one master key that lives in the OS keychain, and
//! the non-secret metadata (credential rows, variable names) in SQLite.
//!
//! Why a master key rather than one keychain item per secret: status must not pay a keychain round
//! trip per connector (about 12 ms each on Secret Service, a prompt per item on macOS), and Windows
//! caps an item near 2.5 KB, which a JWT pair can exceed. One keychain read per process unlocks
//! everything; the database holds only ciphertext (XChaCha20-Poly1305) and metadata.

mod auth_method;
mod db;
pub mod error;
mod import;
mod oauth;
pub mod private;
mod renewal;
mod seal;
pub mod secret;
pub mod session_bus;
pub mod store;
mod vault;
mod wanted;

pub use auth_method::ClientAuthMethod;
pub use error::VaultError;
pub use import::{CredentialSource, Imported};
pub use oauth::{PendingFlow, PendingFlowInfo, Registration};
pub use renewal::{Grant, RefreshAttempt, DETAIL_MAX, HISTORY_LEN};
pub use secret::Secret;
pub use store::{KeyringStore, MemoryStore, SecretStore, StoreError};
pub use vault::{CredentialRow, TokenSet, VariableInfo, Vault, KEYCHAIN_SERVICE};
