//! A catalog file as a JSON document: reading it safely, parsing it strictly, and finding its
//! server map in either form.
//!
//! The canonical form is AIR's flat map, `{ "$schema": "...", "<name>": { entry }, ... }`. The
//! `{ "mcpServers": { ... } }` wrapper that Claude Code and Cursor write is read too; a file that
//! has the wrapper *and* server entries beside it is refused, since either reading would silently
//! drop half of it. Anything that writes a catalog keeps the form the file already has.
//!
//! Strict means: a leading UTF-8 BOM is skipped, and a key given twice in one object (which
//! `serde_json` would resolve by keeping the last) is an error naming both places.

use crate::CatalogError;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The key of the wrapper form.
pub const WRAPPER_KEY: &str = "mcpServers";
/// The one top-level key of the flat form that is not a server name.
pub const SCHEMA_KEY: &str = "$schema";
/// The byte-order mark some Windows editors put at the start of a UTF-8 file.
pub const UTF8_BOM: char = '\u{feff}';

/// Where a catalog file keeps its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogForm {
    /// AIR's `mcp.json`: server names at the top level beside `$schema`.
    Flat,
    /// `{"mcpServers": {...}}`, as Claude Code and Cursor write; other top-level keys are kept.
    Wrapped,
}

/// Read a catalog file's text. Anything but a regular file (a FIFO, socket, device or directory)
/// is refused before it is opened, since reading a FIFO would block until a writer appears.
pub fn read_catalog_file(path: &Path) -> Result<String, CatalogError> {
    let read_error = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CatalogError::Missing {
                path: path.to_path_buf(),
            }
        } else {
            CatalogError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        }
    };
    let not_a_file = |meta: &std::fs::Metadata| CatalogError::NotAFile {
        path: path.to_path_buf(),
        kind: file_kind(meta).to_string(),
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if !meta.is_file() {
        return Err(not_a_file(&meta));
    }
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    // The path may have been replaced between the two calls; the handle is what is read.
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        return Err(not_a_file(&meta));
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(read_error)?;
    Ok(text)
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_char_device() {
            return "a character device";
        }
    }
    "not a regular file"
}

/// Parse a catalog file's text into a document: BOM skipped, duplicate keys refused, then the
/// form found and the top level checked. `path` is only used in errors.
pub fn parse_document(text: &str, path: &Path) -> Result<(Value, CatalogForm), CatalogError> {
    let text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
    let doc: Value = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
    let form = form_of(&doc, path)?;
    let server_map = match form {
        CatalogForm::Flat => "",
        CatalogForm::Wrapped => "/mcpServers",
    };
    find_duplicate_key(text, server_map, path)?;
    Ok((doc, form))
}

/// The form of a parsed document, after checking its top level: an object, `$schema` a string,
/// the wrapper (when present) an object, and no server entries on both levels.
pub fn form_of(doc: &Value, path: &Path) -> Result<CatalogForm, CatalogError> {
    let shape = |pointer: &str, message: &str| CatalogError::Shape {
        path: path.to_path_buf(),
        pointer: pointer.to_string(),
        message: message.to_string(),
    };
    let top = doc
        .as_object()
        .ok_or_else(|| shape("/", "must be an object"))?;
    if top.get(SCHEMA_KEY).is_some_and(|s| !s.is_string()) {
        return Err(shape("/$schema", "must be a string"));
    }
    let Some(wrapped) = top.get(WRAPPER_KEY) else {
        return Ok(CatalogForm::Flat);
    };
    let servers = wrapped
        .as_object()
        .ok_or_else(|| shape("/mcpServers", "must be an object"))?;
    if servers.get("type").is_some_and(Value::is_string) {
        return Err(shape(
            "/mcpServers",
            "holds the server map of the wrapper form, so it cannot be a server's name",
        ));
    }
    // Claude Code's own files carry many other top-level keys; only ones that look like server
    // entries make the file ambiguous.
    let beside: Vec<String> = top
        .iter()
        .filter(|(name, value)| name.as_str() != WRAPPER_KEY && looks_like_server(value))
        .map(|(name, _)| crate::text::escape_controls(name))
        .collect();
    if !beside.is_empty() {
        return Err(CatalogError::BothForms {
            path: path.to_path_buf(),
            names: beside,
        });
    }
    Ok(CatalogForm::Wrapped)
}

fn looks_like_server(value: &Value) -> bool {
    value.as_object().is_some_and(|o| {
        ["type", "command", "url"]
            .iter()
            .any(|k| o.contains_key(*k))
    })
}

/// The servers of a document whose form [`form_of`] found, in file order.
pub fn servers(doc: &Value, form: CatalogForm) -> impl Iterator<Item = (&String, &Value)> {
    let map = match form {
        CatalogForm::Flat => doc.as_object(),
        CatalogForm::Wrapped => doc.get(WRAPPER_KEY).and_then(Value::as_object),
    };
    map.into_iter()
        .flat_map(Map::iter)
        .filter(move |(name, _)| form == CatalogForm::Wrapped || name.as_str() != SCHEMA_KEY)
}

/// The object server entries are inserted into: the top level (flat) or the wrapper's map.
/// In the flat form it also holds `$schema`, which is never a server name.
pub fn server_map_mut(doc: &mut Value, form: CatalogForm) -> Option<&mut Map<String, Value>> {
    match form {
        CatalogForm::Flat => doc.as_object_mut(),
        CatalogForm::Wrapped => doc.get_mut(WRAPPER_KEY).and_then(Value::as_object_mut),
    }
}

pub(crate) fn json_error(path: &Path, e: &serde_json::Error) -> CatalogError {
    // serde_json appends " at line L column C"; the error carries those as fields instead.
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    CatalogError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// One open container while scanning.
enum Frame {
    Object {
        pointer: String,
        /// Each key seen so far and the byte offset of its opening quote.
        keys: HashMap<String, usize>,
        expect_key: bool,
        current: String,
    },
    Array {
        pointer: String,
        index: usize,
    },
}

/// Scan text that is already known to be valid JSON for a key given twice in one object.
/// `server_map` is the pointer of the object whose keys are server names, for the message.
fn find_duplicate_key(text: &str, server_map: &str, path: &Path) -> Result<(), CatalogError> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i);
                if let Some(Frame::Object {
                    pointer,
                    keys,
                    expect_key: expect_key @ true,
                    current,
                }) = stack.last_mut()
                {
                    // Valid JSON, so the raw string decodes; `\u0061` and `a` are the same key.
                    let key: String = serde_json::from_str(&text[i..end]).unwrap_or_default();
                    if let Some(&first) = keys.get(&key) {
                        let (first_line, first_column) = line_column(text, first);
                        let (line, column) = line_column(text, i);
                        return Err(CatalogError::Duplicate {
                            path: path.to_path_buf(),
                            key: crate::text::escape_controls(&key),
                            within: crate::text::escape_controls(pointer),
                            server_name: pointer == server_map,
                            first_line,
                            first_column,
                            line,
                            column,
                        });
                    }
                    keys.insert(key.clone(), i);
                    *current = key;
                    *expect_key = false;
                }
                i = end;
                continue;
            }
            b'{' | b'[' => {
                let pointer = match stack.last() {
                    None => String::new(),
                    Some(Frame::Object {
                        pointer, current, ..
                    }) => format!("{pointer}/{}", crate::load::escape_pointer(current)),
                    Some(Frame::Array { pointer, index }) => format!("{pointer}/{index}"),
                };
                stack.push(if bytes[i] == b'{' {
                    Frame::Object {
                        pointer,
                        keys: HashMap::new(),
                        expect_key: true,
                        current: String::new(),
                    }
                } else {
                    Frame::Array { pointer, index: 0 }
                });
            }
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The byte offset just past the closing quote of the string whose opening quote is at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(text: &str) -> Option<CatalogError> {
        find_duplicate_key(text, "", Path::new("f.json")).err()
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth_with_both_places() {
        match dup("{\"a\": 1,\n \"b\": {\"x\": [1, {\"k\": 1, \"k\": 2}]},\n \"a\": 3}") {
            Some(CatalogError::Duplicate {
                key,
                within,
                first_line,
                first_column,
                line,
                column,
                ..
            }) => {
                assert_eq!((key.as_str(), within.as_str()), ("k", "/b/x/1"));
                assert_eq!((first_line, first_column), (2, 18));
                assert_eq!((line, column), (2, 26));
            }
            other => panic!("{other:?}"),
        }
        match dup("{\"a\": 1,\n \"\\u0061\": 2}") {
            Some(CatalogError::Duplicate {
                key,
                server_name,
                first_line,
                line,
                column,
                ..
            }) => {
                assert_eq!(key, "a");
                assert!(server_name);
                assert_eq!((first_line, line, column), (1, 2, 2));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn equal_keys_in_different_objects_and_strings_that_look_like_keys_are_fine() {
        for text in [
            r#"{"a": {"k": 1}, "b": {"k": 1}}"#,
            r#"{"a": ["a", "a"], "b": "a"}"#,
            r#"{"a": "x\"a\": 1, \"a", "b": {}}"#,
            r#"[{"k": 1}, {"k": 2}]"#,
            r#"{"a": [], "é": {"é": {}}, "c": [{}, []]}"#,
        ] {
            assert!(dup(text).is_none(), "{text}");
        }
    }
}
