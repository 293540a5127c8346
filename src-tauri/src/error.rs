//! Errors at the IPC edge: what the Connectors window receives from a failed command,
//! `{ "kind": "...", "message": "..." }`, never a secret value. The kinds are patchbay-core's
//! (`CoreError::kind`).

use patchbay_core::CoreError;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpcError {
    /// A stable machine-readable kind: `no_home`, `secret_store`, `invalid`, `not_authorizable`,
    /// `invalid_input`, `oauth`, `timed_out`, `watch`.
    pub kind: &'static str,
    /// An English sentence for the user.
    pub message: String,
}

impl From<CoreError> for IpcError {
    fn from(error: CoreError) -> IpcError {
        IpcError {
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

impl From<patchbay_gateway::client_entries::EntryError> for IpcError {
    fn from(error: patchbay_gateway::client_entries::EntryError) -> IpcError {
        use patchbay_gateway::client_entries::EntryError;
        let kind = match &error {
            EntryError::Core(core) => core.kind(),
            EntryError::Conflict(_) => "conflict",
            EntryError::Clients(_) | EntryError::LabelsTaken(_) => "gateway_clients",
            EntryError::Via(_) => "invalid_input",
        };
        IpcError {
            kind,
            message: error.to_string(),
        }
    }
}

impl std::fmt::Display for IpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_kind_and_message() {
        let e = IpcError::from(CoreError::NotAuthorizable("x cannot be authorized".into()));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({ "kind": "not_authorizable", "message": "x cannot be authorized" })
        );
    }
}
