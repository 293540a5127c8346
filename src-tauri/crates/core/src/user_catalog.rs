//! Edits to a catalog file Patchbay writes: the user catalog, or the `--catalog` file when one is
//! used alone. One entry at a time; the file keeps its form (AIR's flat map or the `mcpServers`
//! wrapper), its BOM, its key order and every key Patchbay does not know; the result is parsed and
//! the entry checked before anything is written; the write is atomic (temp file beside it,
//! fsync, rename, fsync the directory). A missing file is created flat.
//!
//! Who edits: the connection check's write-back (a transport that answered), `enable` /
//! `disable` (the `enabled` member), and "Manage with Patchbay" (a client's server copied in).

use std::path::Path;

use chrono::Utc;
use patchbay_catalog::{CatalogError, CatalogForm, CatalogItem, ServerEntry, BUILT_IN_PATH};
use serde_json::{Map, Value};

use crate::CoreError;

/// Sets members of `name`'s entry in `file`. When the file has no such entry, `seed` gives the
/// one to start from (the entry's source copied whole, since a user entry replaces the default
/// one by name). `edit` changes the entry's JSON object; `check` sees the entry as it would be
/// read back and refuses the write with a message. Returns the entry as written.
pub fn edit_entry(
    file: &Path,
    name: &str,
    seed: impl FnOnce() -> Result<Value, CoreError>,
    edit: impl FnOnce(&mut Map<String, Value>),
    check: impl FnOnce(&ServerEntry) -> Result<(), String>,
) -> Result<ServerEntry, CoreError> {
    let write_error = |message: String| CoreError::CatalogWrite {
        path: file.to_path_buf(),
        message,
    };
    let (mut doc, form, bom) = match patchbay_catalog::read_catalog_file(file) {
        Ok(text) => {
            let (doc, form) = patchbay_catalog::parse_document(&text, file)
                .map_err(|e| write_error(format!("{e}; nothing was written")))?;
            (doc, form, text.starts_with(patchbay_catalog::UTF8_BOM))
        }
        Err(CatalogError::Missing { .. }) => (Value::Object(Map::new()), CatalogForm::Flat, false),
        Err(e) => return Err(write_error(format!("{e}; nothing was written"))),
    };
    let servers = patchbay_catalog::server_map_mut(&mut doc, form)
        .ok_or_else(|| write_error("it has no server map".into()))?;
    if !servers.contains_key(name) {
        servers.insert(name.to_owned(), seed()?);
    }
    let member = servers
        .get_mut(name)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| write_error(format!("its entry \"{name}\" is not an object")))?;
    edit(member);

    let text = format!(
        "{}{}\n",
        if bom { "\u{feff}" } else { "" },
        serde_json::to_string_pretty(&doc).map_err(|e| write_error(e.to_string()))?
    );
    // Only a file that still parses, with the entry valid and as intended, is written.
    let written = match patchbay_catalog::parse(&text, file)
        .map_err(|e| write_error(format!("the result would not be a valid catalog: {e}")))?
        .into_iter()
        .find(|i| i.name().as_str() == name)
    {
        Some(CatalogItem::Server(e)) => e,
        Some(CatalogItem::Invalid(i)) => {
            return Err(write_error(format!(
                "the entry would be invalid: {}",
                i.error
            )))
        }
        None => return Err(write_error("the entry did not come out as written".into())),
    };
    check(&written).map_err(write_error)?;
    atomic_write(file, text.as_bytes()).map_err(|e| write_error(e.to_string()))?;
    Ok(written)
}

/// The raw JSON of `entry` in the file it came from (or the built-in catalog), in either form.
pub fn source_entry(entry: &ServerEntry) -> Result<Value, CoreError> {
    let name = entry.name.as_str();
    let source_error = |message: String| CoreError::CatalogWrite {
        path: entry.source.clone(),
        message,
    };
    let text = if entry.source == Path::new(BUILT_IN_PATH) {
        patchbay_catalog::DEFAULT_CATALOG.to_owned()
    } else {
        patchbay_catalog::read_catalog_file(&entry.source)
            .map_err(|e| source_error(format!("cannot read the entry to copy: {e}")))?
    };
    let (doc, form) = patchbay_catalog::parse_document(&text, &entry.source)
        .map_err(|e| source_error(e.to_string()))?;
    let found = patchbay_catalog::servers(&doc, form)
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, v)| v.clone());
    found.ok_or_else(|| source_error(format!("it no longer has the entry \"{name}\"")))
}

/// Temp file beside `path`, fsync, rename over it, fsync the directory: a reader sees the old
/// file or the new one, never half of one. Keeps the old file's permissions.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::paths::create_private_dir(dir)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mcp.json".into());
    let temp = dir.join(format!(
        ".{file_name}.patchbay-{}-{}.tmp",
        std::process::id(),
        Utc::now().timestamp_nanos_opt().unwrap_or_default()
    ));
    let result = (|| {
        // A new catalog may hold a header's secret: the owner's only. An old one keeps its mode.
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut f = options.open(&temp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&temp, path)?;
        #[cfg(unix)]
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
