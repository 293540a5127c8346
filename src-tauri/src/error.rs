//! Errors at the IPC edge: what the Connectors window receives from a failed command,
//! `{ "kind": "...", "message": "..." }`, never a secret value. The type is patchbay-core's
//! [`IpcError`] (its TypeScript in ui/src/generated/ is generated from it); a core error and the
//! gateway's Add/Switch errors convert into it with their kind.

pub use patchbay_core::IpcError;

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_core::CoreError;
    use patchbay_gateway::client_entries::EntryError;

    #[test]
    fn serializes_as_kind_and_message() {
        let e = IpcError::from(CoreError::NotAuthorizable("x cannot be authorized".into()));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({ "kind": "not_authorizable", "message": "x cannot be authorized" })
        );
        let conflict = IpcError::from(EntryError::Conflict("Cursor has notion".into()));
        assert_eq!(
            serde_json::to_value(&conflict).unwrap(),
            serde_json::json!({ "kind": "conflict", "message": "Cursor has notion" })
        );
    }
}
