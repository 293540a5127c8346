//! The text of the Windows login item (`run_key`), apart from the registry so that every OS
//! compiles and tests it.

use super::BACKGROUND_FLAG;

/// The `Run` value: the program quoted, then [`BACKGROUND_FLAG`]. Windows paths cannot hold
/// `"`, so quoting is exact.
pub fn command_line(program: &str) -> String {
    format!("\"{program}\" {BACKGROUND_FLAG}")
}

/// Whether a StartupApproved value switches the item off: Task Manager and Settings write an
/// odd first byte (3) for off, an even one (2, 6) for on.
pub fn approved_is_off(value: &[u8]) -> bool {
    value.first().is_some_and(|b| b & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_quoted_and_started_quietly() {
        assert_eq!(
            command_line(r"C:\Users\Ann Lee\AppData\Local\Patchbay\patchbay-app.exe"),
            r#""C:\Users\Ann Lee\AppData\Local\Patchbay\patchbay-app.exe" --background"#
        );
    }

    #[test]
    fn an_odd_first_byte_is_switched_off() {
        assert!(approved_is_off(&[3, 0, 0, 0, 0x10, 0x2f]));
        assert!(!approved_is_off(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
        assert!(!approved_is_off(&[6, 0]));
        assert!(!approved_is_off(&[]));
    }
}
