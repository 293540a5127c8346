//! The one status computation for every connector, used by the tray, the Connectors window and
//! the CLI alike. It reads local signals only (the catalog, the vault's metadata, whether the
//! keychain answers, the process environment) and never contacts an MCP server, so it stays fast
//! and deterministic, and a Ready badge never claims that a remote host answered.
//!
//! `state` owns the states and the one severity table; `probe` decides one connector's state;
//! `report` assembles the sorted report (docs/status-json.md); `offered` is what an agent is offered.

pub mod offered;
pub mod probe;
pub mod report;
pub mod state;
pub mod usage;

pub use offered::{Offered, OfferedServer, RosterLine};
pub use probe::{LocalSignals, StoreHealth, VaultVariables, NEEDS_MORE_ACCESS};
pub use report::{
    compute, BridgeSummary, CatalogSourceStatus, ConnectorStatus, CredentialSummary,
    DegradedStatus, MissingVariable, RefreshAttemptOutcome, RefreshEntry, RuntimeSummary,
    SecretStoreStatus, StatusReport, UnclaimedCredential, UnknownRefreshOutcome, VariableSource,
    VariableStatus, REPORT_VERSION,
};
pub use state::{Action, ConnectorState, ATTENTION_THRESHOLD, SEVERITY};
pub use usage::{FoundIn, GalleryEntry, InUseReason, Needs, Origin, Usage};
