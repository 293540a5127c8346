//! Patchbay's application core: where data lives (`paths`), the facade every surface calls
//! (`Patchbay`: status, offered, secrets, unclaimed credentials), live watching of the catalogs and
//! the vault (`watch`), the tray badge image (`badge`), the OAuth flow's driver (`authorize`) and `patchbay://` links
//! (`deeplink`). The tray app and the CLI are thin
//! layers over this crate; it knows nothing of Tauri.

pub mod authorize;
pub mod badge;
pub mod bridges;
pub mod deeplink;
pub mod error;
pub mod patchbay;
pub mod paths;
pub mod tray_model;
pub mod watch;

pub use authorize::{Authorizer, AuthorizerOptions, Completion, StartOptions, Started};
pub use bridges::Bridges;
pub use error::CoreError;
pub use patchbay::Patchbay;
pub use paths::Paths;
