//! Patchbay's application core: where data lives (`paths`), the facade every surface calls
//! (`Patchbay`: status, offered, secrets, unclaimed credentials), live watching of the catalogs and
//! the vault (`watch`), the tray badge image (`badge`), the OAuth flow's driver (`authorize`) and `patchbay://` links
//! (`deeplink`), the refresher of record (`refresh`) and its schedule (`schedule`), and which
//! notifications to show (`notify`). The tray app and the CLI are thin
//! layers over this crate; it knows nothing of Tauri.

pub mod authorize;
pub mod autostart;
pub mod badge;
pub mod bridges;
pub mod check;
pub mod client_config;
mod connector_keys;
pub mod custom;
pub mod deeplink;
pub mod due;
pub mod error;
pub mod expansion;
pub mod import;
pub mod notify;
pub mod patchbay;
pub mod paths;
pub mod refresh;
pub mod schedule;
pub mod setup;
pub mod tray_model;
pub mod user_catalog;
pub mod watch;

pub use authorize::{
    Authorizer, AuthorizerOptions, Completion, NeededClient, StartOptions, Started, StepUpBudget,
    MAX_STEP_UPS,
};
pub use bridges::Bridges;
pub use check::{Checker, CheckerOptions, ConnectorCheck, HealthBoard};
pub use error::{CoreError, ErrorKind, IpcError};
pub use notify::{NeedsHumanTracker, Notice};
pub use patchbay::Patchbay;
pub use paths::Paths;
pub use refresh::{PassReport, RefreshOutcome, RefreshPolicy, Refresher, RetryPolicy};
pub use schedule::Settings;
