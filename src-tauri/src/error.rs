//! Errors at the IPC edge: what the Connectors window receives from a failed command,
//! `{ "kind": "...", "message": "..." }`, never a secret value.

use patchbay_core::CoreError;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpcError {
    /// A stable machine-readable kind: `no_home`, `secret_store`, `invalid`, `watch`,
    /// `not_available`, `internal`.
    pub kind: &'static str,
    /// An English sentence for the user.
    pub message: String,
}

impl IpcError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> IpcError {
        IpcError {
            kind,
            message: message.into(),
        }
    }
}

impl From<CoreError> for IpcError {
    fn from(error: CoreError) -> IpcError {
        let kind = match &error {
            CoreError::NoHome => "no_home",
            CoreError::Vault(_) => "secret_store",
            CoreError::Invalid(_) => "invalid",
            CoreError::Watch { .. } => "watch",
            #[allow(unreachable_patterns)]
            _ => "internal",
        };
        IpcError::new(kind, error.to_string())
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
        let e = IpcError::from(CoreError::Invalid("bad key".into()));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({ "kind": "invalid", "message": "bad key" })
        );
    }
}
