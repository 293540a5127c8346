//! A connector's keys as the Connectors window sets them: the `${VAR}`s its catalog entry uses,
//! stored in (or cleared from) the same vault `patchbay secret set` writes. The window names the
//! connector and one of its variables, never another name: a page cannot write an arbitrary
//! secret, and a value is never read back.

use crate::{CoreError, Patchbay};
use patchbay_vault::Secret;

impl Patchbay {
    /// Stores `value` as `variable`, which `connector`'s entry must use. An empty value is
    /// refused (clear it instead); surrounding whitespace is trimmed, as a paste brings it.
    pub fn set_connector_key(
        &self,
        connector: &str,
        variable: &str,
        value: &Secret,
    ) -> Result<(), CoreError> {
        self.key_of(connector, variable)?;
        let trimmed = value.expose().trim();
        if trimmed.is_empty() {
            return Err(CoreError::InvalidInput(format!(
                "{variable} is empty: enter its value, or clear it"
            )));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(CoreError::InvalidInput(format!(
                "{variable} is one line: its value holds a line break or a control character"
            )));
        }
        let value = if trimmed.len() == value.expose().len() {
            value.clone()
        } else {
            Secret::new(trimmed)
        };
        self.set_secret(variable, &value)
    }

    /// Removes `variable` (one `connector`'s entry uses) from the vault. `false`: none was stored.
    pub fn clear_connector_key(&self, connector: &str, variable: &str) -> Result<bool, CoreError> {
        self.key_of(connector, variable)?;
        self.delete_secret(variable)
    }

    /// Checks that `connector` is a catalog entry using `${variable}`.
    fn key_of(&self, connector: &str, variable: &str) -> Result<(), CoreError> {
        let catalog = self.catalog();
        let entry =
            CoreError::server_entry(&catalog, connector, "setting its keys", "in the catalog")?;
        if entry.variable_uses().iter().any(|u| u.name == variable) {
            Ok(())
        } else {
            Err(CoreError::InvalidInput(format!(
                "{connector} uses no variable named {variable}"
            )))
        }
    }
}
