//! Owner-only directories and files. What Patchbay creates holds server names, hashes, sealed
//! secrets and logs, none of it anyone else's business: the mode is set when the directory or
//! file is created (0700, 0600), whatever the umask, so nothing is ever open to others even
//! briefly. One copy, used by the vault, the health store, the gateway's clients file and the
//! core's paths.

use std::path::Path;

/// `dir` and its missing parents, the owner's only (0700 whatever the umask). An existing
/// directory is left as it is.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// `path` as a new empty file, the owner's only (0600), before something else opens it (SQLite
/// would create it with the umask's mode; its -wal and -shm then take this file's mode). An
/// existing file is left as it is.
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_and_files_are_the_owners_only_and_existing_ones_are_left() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("f");
        create_private_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::write(&file, "kept").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        create_private_file(&file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
        assert_eq!(
            mode(&file),
            0o640,
            "an existing file is not this function's to change"
        );
    }
}
