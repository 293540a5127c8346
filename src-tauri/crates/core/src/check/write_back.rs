//! Writing back the transport that answered: when the configured HTTP transport was rejected
//! and the other one answered, the check offers ([`WriteBackOffer`]) to set the entry's `type` in
//! the user catalog (or the `--catalog` file), and an OAuth credential follows the new key.

use super::resolve::kind_of;
use super::Checker;
use crate::CoreError;
use patchbay_catalog::{ServerEntry, Transport};
use patchbay_check::TransportKind;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What the window offers when the other HTTP transport answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WriteBackOffer {
    /// The transport to write (`sse` or `streamable-http`).
    pub transport: TransportKind,
    /// The file it would be written to.
    pub file: String,
}

/// A transport written back to a catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WrittenBack {
    pub connector: String,
    pub transport: TransportKind,
    pub file: PathBuf,
    /// The stored OAuth credential, re-filed under the key the new transport computes (the
    /// transport is part of the key), as `[from, to]`.
    pub credential_moved: Option<(String, String)>,
}

impl Checker {
    /// [`Checker::write_back`] with the transport as the window spells it (`streamable-http`,
    /// `sse`).
    pub fn write_back_named(&self, name: &str, transport: &str) -> Result<WrittenBack, CoreError> {
        match TransportKind::parse(transport) {
            Some(kind @ (TransportKind::StreamableHttp | TransportKind::Sse)) => {
                self.write_back(name, kind)
            }
            _ => Err(CoreError::InvalidInput(format!(
                "\"{transport}\" is not an HTTP transport; expected streamable-http or sse"
            ))),
        }
    }

    /// The catalog file a write-back goes to: the `--catalog` file when one is used alone,
    /// else the user catalog.
    pub fn write_back_file(&self) -> PathBuf {
        let paths = &self.patchbay.paths;
        paths
            .catalog_override
            .clone()
            .unwrap_or_else(|| paths.user_catalog())
    }

    /// Write `transport` as `name`'s type to the user catalog (the `--catalog` file when one is
    /// used alone), keeping every other key as it is. An entry that lives in the shipped catalog
    /// is copied over whole first, since a user entry replaces the default one. An OAuth
    /// credential is re-filed under the key the new transport computes.
    pub fn write_back(
        &self,
        name: &str,
        transport: TransportKind,
    ) -> Result<WrittenBack, CoreError> {
        let catalog = self.patchbay.catalog();
        let entry =
            CoreError::server_entry(&catalog, name, "writing to it", "in the catalog")?.clone();
        if !entry.transport.is_remote() || transport == TransportKind::Stdio {
            return Err(CoreError::Refused {
                connector: name.to_owned(),
                why: format!(
                    "only a remote connector's HTTP transport can be written back; {name} is {}",
                    entry.transport.display_name()
                ),
            });
        }
        let file = self.write_back_file();
        write_type(&file, &entry, transport)?;

        let credential_moved = if entry.is_oauth_capable() {
            self.move_credential(&entry, transport)?
        } else {
            None
        };
        Ok(WrittenBack {
            connector: name.to_owned(),
            transport,
            file,
            credential_moved,
        })
    }

    fn move_credential(
        &self,
        entry: &ServerEntry,
        transport: TransportKind,
    ) -> Result<Option<(String, String)>, CoreError> {
        let resolve = |n: &str| self.patchbay.resolve_variable(n);
        let mut moved = entry.clone();
        moved.transport = match entry.transport.clone() {
            Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
                match transport {
                    TransportKind::Sse => Transport::Sse { url, headers },
                    _ => Transport::StreamableHttp { url, headers },
                }
            }
            stdio => stdio,
        };
        let (Ok(Some(from)), Ok(Some(to))) = (
            entry.credential_key(&resolve),
            moved.credential_key(&resolve),
        ) else {
            return Ok(None);
        };
        if from == to {
            return Ok(None);
        }
        let vault = self.patchbay.vault();
        let Some(row) = vault
            .credential_rows()?
            .into_iter()
            .find(|r| r.credential_key == from)
        else {
            return Ok(None);
        };
        if vault.credential_tokens(&to)?.is_some() {
            return Ok(None);
        }
        let Some(tokens) = vault.credential_tokens(&from)? else {
            return Ok(None);
        };
        let mut row = row;
        row.credential_key = to.clone();
        vault.put_credential(&row, &tokens)?;
        Ok(Some((from.0, to.0)))
    }
}

/// Set `type` of `entry` in the catalog file `file`, keeping every other key and its order, the
/// file's form (AIR's flat map or the `mcpServers` wrapper) and a leading BOM; a new file is
/// written flat. Copies the entry from its own source first when `file` lacks it. A file that
/// cannot be read as a catalog (not JSON, a duplicate key, both forms at once, a FIFO) is left
/// alone. Validated, then written by temp file + fsync + rename.
fn write_type(file: &Path, entry: &ServerEntry, transport: TransportKind) -> Result<(), CoreError> {
    crate::user_catalog::edit_entry(
        file,
        entry.name.as_str(),
        || crate::user_catalog::source_entry(entry),
        |member| {
            member.insert("type".into(), Value::String(transport.as_str().to_owned()));
        },
        |written| {
            if kind_of(&written.transport) == transport {
                Ok(())
            } else {
                Err("the entry did not come out as written".into())
            }
        },
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use std::time::Duration;

    fn entry(source: &Path, transport: Transport) -> ServerEntry {
        ServerEntry {
            name: patchbay_catalog::ServerName("svc".into()),
            title: None,
            description: None,
            transport,
            oauth: None,
            unavailable: None,
            enabled: None,
            timeout_ms: None,
            retry: None,
            source: source.to_path_buf(),
        }
    }

    #[test]
    fn write_back_keeps_a_flat_file_flat_with_its_unknown_keys_and_bom() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            "\u{feff}{\"$schema\":\"./mcp.schema.json\",\"svc\":{\"title\":\"S\",\"type\":\"http\",\"url\":\"http://127.0.0.1:9/mcp\",\"x-note\":\"mine\"},\"other\":{\"type\":\"stdio\",\"command\":\"node\"}}",
        )
        .unwrap();
        let e = entry(
            &file,
            Transport::StreamableHttp {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: IndexMap::new(),
            },
        );
        write_type(&file, &e, TransportKind::Sse).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with('\u{feff}'), "the BOM is kept");
        let doc: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
        assert!(doc.get("mcpServers").is_none(), "still flat: {text}");
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["$schema", "svc", "other"]);
        assert_eq!(doc["$schema"], "./mcp.schema.json");
        assert_eq!(doc["svc"]["type"], "sse");
        assert_eq!(doc["svc"]["x-note"], "mine");
        assert_eq!(doc["other"]["command"], "node");
    }

    #[test]
    fn write_back_keeps_unknown_keys_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{"$schema":"x","custom":{"keep":1},"mcpServers":{"svc":{"title":"S","type":"http","url":"http://127.0.0.1:9/mcp","x-note":"mine"},"other":{"type":"stdio","command":"node"}}}"#,
        )
        .unwrap();
        let e = entry(
            &file,
            Transport::StreamableHttp {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: IndexMap::new(),
            },
        );
        write_type(&file, &e, TransportKind::Sse).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["custom"]["keep"], 1);
        assert_eq!(doc["mcpServers"]["svc"]["type"], "sse");
        assert_eq!(doc["mcpServers"]["svc"]["x-note"], "mine");
        assert_eq!(doc["mcpServers"]["other"]["command"], "node");
        let keys: Vec<&String> = doc["mcpServers"]["svc"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["title", "type", "url", "x-note"]);
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn write_back_copies_an_entry_from_its_source_into_a_new_user_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = dir.path().join("shipped.json");
        std::fs::write(
            &shipped,
            r#"{"mcpServers":{"svc":{"type":"sse","url":"http://127.0.0.1:9/sse","title":"Svc"}}}"#,
        )
        .unwrap();
        let user = dir.path().join("config").join("mcp.json");
        let e = entry(
            &shipped,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        write_type(&user, &e, TransportKind::StreamableHttp).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
        // A new user catalog is written in the canonical flat form.
        assert_eq!(doc["svc"]["type"], "streamable-http");
        assert_eq!(doc["svc"]["title"], "Svc");
        assert_eq!(doc.as_object().unwrap().len(), 1);
        // The shipped file is untouched.
        assert!(std::fs::read_to_string(&shipped)
            .unwrap()
            .contains("\"sse\""));
    }

    #[test]
    fn write_back_refuses_a_file_that_is_not_json() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(&file, "{ not json").unwrap();
        let e = entry(
            &file,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        let err = write_type(&file, &e, TransportKind::StreamableHttp).unwrap_err();
        assert_eq!(err.kind(), "catalog_write");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }

    #[test]
    fn write_back_copies_a_built_in_entry_from_the_flat_shipped_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("mcp.json");
        let mut e = entry(
            Path::new(patchbay_catalog::BUILT_IN_PATH),
            Transport::StreamableHttp {
                url: "https://mcp.notion.com/mcp".into(),
                headers: IndexMap::new(),
            },
        );
        e.name = patchbay_catalog::ServerName("notion".into());
        write_type(&user, &e, TransportKind::Sse).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
        assert_eq!(doc["notion"]["type"], "sse");
        assert_eq!(doc["notion"]["title"], "Notion");
        assert_eq!(doc["notion"]["url"], "https://mcp.notion.com/mcp");
    }

    #[test]
    fn write_back_refuses_duplicates_and_mixed_forms_and_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        let e = entry(
            &file,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        for (text, says) in [
            (
                r#"{"svc":{"type":"sse","url":"http://127.0.0.1:9/sse"},"svc":{"type":"stdio","command":"x"}}"#,
                "appears twice",
            ),
            (
                r#"{"mcpServers":{"svc":{"type":"sse","url":"http://127.0.0.1:9/sse"}},"b":{"type":"stdio","command":"x"}}"#,
                "has both the `mcpServers` wrapper",
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let err = write_type(&file, &e, TransportKind::StreamableHttp).unwrap_err();
            assert_eq!(err.kind(), "catalog_write");
            assert!(err.to_string().contains(says), "{err}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        }
    }

    #[cfg(unix)]
    #[test]
    fn write_back_refuses_a_fifo_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("mcp.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = entry(
            &fifo,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(write_type(&path, &e, TransportKind::StreamableHttp));
        });
        let err = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("write-back to a FIFO did not return within 10 s")
            .unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }
}
