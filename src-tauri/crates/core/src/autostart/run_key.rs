//! The Windows login item: the value `Patchbay` under the user's
//! `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`, holding `"<program>" --background`
//! with the program quoted (a space in the path, as in `C:\Users\Ann Lee\...`, otherwise makes
//! Windows try `C:\Users\Ann` first).
//!
//! Task Manager's Startup tab and Settings' Startup apps switch an item off without removing it,
//! in `...\Explorer\StartupApproved\Run` (first byte odd: off). That reads as off here, and
//! turning Patchbay on marks it approved again, so the switch means what it says.

use super::{AutostartError, LoginItemState, ENTRY_NAME};
use std::ffi::OsString;
use std::path::Path;
use windows_registry::{Type, CURRENT_USER};

const RUN: &str = r"Software\Microsoft\Windows\CurrentVersion\Run";
const APPROVED: &str = r"Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run";
/// What Task Manager writes for an item switched on.
const APPROVED_ON: [u8; 12] = [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
/// HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND): no such key or value.
const NOT_FOUND: u32 = 0x8007_0002;

/// The `Run` value.
#[derive(Debug, Clone)]
pub struct RunKey {
    name: &'static str,
}

impl RunKey {
    /// The value; the registry needs nothing from the environment.
    pub fn from_env(_env: impl Fn(&str) -> Option<OsString>) -> Result<Self, AutostartError> {
        Ok(RunKey { name: ENTRY_NAME })
    }

    /// Where the value is, for messages.
    pub fn location(&self) -> String {
        format!(r"HKEY_CURRENT_USER\{RUN}\{}", self.name)
    }

    /// On when the value exists and StartupApproved does not switch it off.
    pub fn state(&self) -> Result<LoginItemState, AutostartError> {
        let command = match CURRENT_USER.options().read().open(RUN) {
            Ok(key) => found(key.get_value(self.name)).map_err(|e| self.error("read", RUN, e))?,
            Err(e) if is_not_found(&e) => None,
            Err(e) => return Err(self.error("read", RUN, e)),
        };
        if command.is_none() {
            return Ok(LoginItemState::Absent);
        }
        let approved = match CURRENT_USER.options().read().open(APPROVED) {
            Ok(key) => {
                found(key.get_value(self.name)).map_err(|e| self.error("read", APPROVED, e))?
            }
            Err(e) if is_not_found(&e) => None,
            Err(e) => return Err(self.error("read", APPROVED, e)),
        };
        Ok(match approved {
            Some(bytes) if super::run_command::approved_is_off(&bytes) => LoginItemState::TurnedOff,
            _ => LoginItemState::On,
        })
    }

    /// [`Self::state`] is on.
    pub fn is_enabled(&self) -> Result<bool, AutostartError> {
        Ok(self.state()? == LoginItemState::On)
    }

    /// Sets the value to start `program` with [`super::BACKGROUND_FLAG`], and approves it where
    /// Task Manager had switched it off.
    pub fn enable(&self, program: &Path) -> Result<(), AutostartError> {
        let command = super::run_command::command_line(super::program_text(program)?);
        CURRENT_USER
            .create(RUN)
            .and_then(|key| key.set_string(self.name, &command))
            .map_err(|e| self.error("write", RUN, e))?;
        if self.state()? == LoginItemState::TurnedOff {
            CURRENT_USER
                .options()
                .write()
                .open(APPROVED)
                .and_then(|key| key.set_bytes(self.name, Type::Bytes, &APPROVED_ON))
                .map_err(|e| self.error("write", APPROVED, e))?;
        }
        Ok(())
    }

    /// Removes the value, and its StartupApproved mark; one already gone is fine.
    pub fn disable(&self) -> Result<(), AutostartError> {
        for key in [RUN, APPROVED] {
            match CURRENT_USER
                .options()
                .write()
                .open(key)
                .and_then(|k| k.remove_value(self.name))
            {
                Err(e) if !is_not_found(&e) => return Err(self.error("remove", key, e)),
                _ => {}
            }
        }
        Ok(())
    }

    fn error(
        &self,
        action: &'static str,
        key: &str,
        error: windows_result::Error,
    ) -> AutostartError {
        AutostartError::Registry {
            action,
            key: format!(r"HKEY_CURRENT_USER\{key}\{}", self.name),
            reason: error.message(),
        }
    }
}

/// The value, `None` when there is none.
fn found(
    value: windows_registry::Result<windows_registry::Value>,
) -> windows_registry::Result<Option<Vec<u8>>> {
    match value {
        Ok(value) => Ok(Some(value.to_vec())),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

fn is_not_found(error: &windows_result::Error) -> bool {
    error.code().0 as u32 == NOT_FOUND
}
