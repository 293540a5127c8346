//! Patchbay's application core: where data lives (`paths`), the facade every surface calls
//! (`Patchbay`: status, offered, secrets, unclaimed credentials), live watching of the catalogs and
//! the vault (`watch`), and the tray badge image (`badge`). The tray app and the CLI are thin
//! layers over this crate; it knows nothing of Tauri.

pub mod badge;
pub mod error;
pub mod patchbay;
pub mod paths;
pub mod tray_model;
pub mod watch;

pub use error::CoreError;
pub use patchbay::Patchbay;
pub use paths::Paths;
