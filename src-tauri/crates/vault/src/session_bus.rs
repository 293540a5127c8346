//! Where the D-Bus session bus is when a process was started without its address. The OS
//! keychain on Linux (the Secret Service) is reached over the session bus, and libdbus finds it
//! through `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`. MCP clients launch stdio
//! servers with a stripped environment (Codex passes `HOME LANG PATH PWD SHELL TERM`; the MCP
//! SDKs' stdio clients less), so neither is set and the keychain does not answer, although the
//! user's bus is where systemd always puts it: `/run/user/UID/bus`. This module finds it the way
//! libdbus does, and then the standard path, for the binary to adopt at its start.

use std::ffi::OsStr;
use std::path::Path;

/// The variable libdbus reads the session bus's address from.
pub const ADDRESS_VARIABLE: &str = "DBUS_SESSION_BUS_ADDRESS";

/// Where systemd-logind puts each user's runtime directory (`/run/user/UID`).
pub const RUN_USER: &str = "/run/user";

/// The session bus's address when `address` (the variable's value) is unset or empty and a bus
/// socket sits at `$XDG_RUNTIME_DIR/bus` or `RUN_USER/UID/bus`; `None` when the address is
/// set (nothing to adopt) or no socket is there.
pub fn fallback_address(
    address: Option<&OsStr>,
    runtime_dir: Option<&OsStr>,
    run_user: &Path,
    uid: u32,
) -> Option<String> {
    if address.is_some_and(|a| !a.is_empty()) {
        return None;
    }
    let from_runtime_dir = runtime_dir
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join("bus"));
    let standard = run_user.join(uid.to_string()).join("bus");
    from_runtime_dir
        .into_iter()
        .chain([standard])
        .find(|path| is_socket(path))
        .and_then(|path| address_of(&path))
}

/// [`fallback_address`] for this process: its environment and its user.
#[cfg(target_os = "linux")]
pub fn fallback_for_this_process() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // The owner of /proc/self is this process's user: no libc call needed.
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    fallback_address(
        std::env::var_os(ADDRESS_VARIABLE).as_deref(),
        std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
        Path::new(RUN_USER),
        uid,
    )
}

#[cfg(unix)]
fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

#[cfg(not(unix))]
fn is_socket(_: &Path) -> bool {
    false
}

/// `unix:path=PATH`, with the bytes D-Bus addresses must escape escaped (`%XX`).
fn address_of(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let mut address = String::from("unix:path=");
    for byte in text.bytes() {
        let plain = byte.is_ascii_alphanumeric() || b"-_/.\\*".contains(&byte);
        if plain {
            address.push(char::from(byte));
        } else {
            address.push_str(&format!("%{byte:02x}"));
        }
    }
    Some(address)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn bus_at(dir: &Path) -> UnixListener {
        std::fs::create_dir_all(dir).unwrap();
        UnixListener::bind(dir.join("bus")).unwrap()
    }

    #[test]
    fn a_set_address_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let _bus = bus_at(&tmp.path().join("1000"));
        let found = fallback_address(Some(OsStr::new("unix:path=/x")), None, tmp.path(), 1000);
        assert_eq!(found, None);
    }

    #[test]
    fn without_any_variable_the_standard_path_of_this_user_is_used() {
        let tmp = tempfile::tempdir().unwrap();
        let _bus = bus_at(&tmp.path().join("1000"));
        let _other = bus_at(&tmp.path().join("1001"));
        let found = fallback_address(None, None, tmp.path(), 1000).unwrap();
        assert_eq!(
            found,
            address_of(&tmp.path().join("1000").join("bus")).unwrap()
        );
        assert!(found.ends_with("/1000/bus"), "{found}");
        // An empty address counts as none, as libdbus takes it.
        assert!(fallback_address(Some(OsStr::new("")), None, tmp.path(), 1000).is_some());
    }

    #[test]
    fn the_runtime_dir_comes_first_and_a_file_that_is_no_socket_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let run_user = tmp.path().join("run-user");
        let _standard = bus_at(&run_user.join("7"));
        let runtime = tmp.path().join("runtime");
        let _bus = bus_at(&runtime);
        let found = fallback_address(None, Some(runtime.as_os_str()), &run_user, 7).unwrap();
        assert!(found.contains("/runtime/bus"), "{found}");

        let not_a_socket = tmp.path().join("plain");
        std::fs::create_dir_all(&not_a_socket).unwrap();
        std::fs::write(not_a_socket.join("bus"), b"").unwrap();
        let found = fallback_address(None, Some(not_a_socket.as_os_str()), &run_user, 7).unwrap();
        assert!(found.ends_with("/7/bus"), "{found}");
        assert_eq!(
            fallback_address(None, Some(not_a_socket.as_os_str()), &run_user, 8),
            None
        );
    }

    #[test]
    fn bytes_an_address_cannot_hold_are_escaped() {
        let address = address_of(Path::new("/tmp/a b,c=d/bus")).unwrap();
        assert_eq!(address, "unix:path=/tmp/a%20b%2cc%3dd/bus");
    }
}
