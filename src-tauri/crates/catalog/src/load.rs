//! Reading catalog files, validating them against the schema, and merging default and user.
//!
//! Each file is read (regular files only) and parsed strictly into a document in either form (see
//! [`crate::document`]; a failure there is a [`CatalogError`]), then every entry is validated on
//! its own against the entry sub-schema and Patchbay's extra rules (well-formed `${...}`, no
//! credentials in URLs, no control characters in names), so one bad entry never hides the good
//! ones. Display text (title, description) is made terminal-safe here. The connection settings
//! (`enabled`, `timeout_ms`, `retry`) are bounded by the schema; an out-of-range value names the
//! field and the whole range.

use crate::entry::normalize_unavailable;
use crate::entry::{RETRY_BASE_MS_RANGE, RETRY_JITTER_RANGE, RETRY_MAX_LIMIT, TIMEOUT_MS_RANGE};
use crate::text::{display_text, escape_controls};
use crate::{
    CatalogError, EntryError, OAuthConfig, RetryPolicy, ServerEntry, ServerName, Transport,
};
use indexmap::IndexMap;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How the embedded default is named in reports and errors.
pub const BUILT_IN_PATH: &str = "<built-in>";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// The catalog Patchbay ships.
    Default,
    /// The user's catalog in the config directory, merged over the default.
    User,
    /// A file named with `--catalog`, used alone.
    Explicit,
}

/// Where one layer of the catalog comes from. Later layers win on the same server name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogSource {
    /// A file on disk. `required: false` means a missing file is simply an empty layer.
    File {
        path: PathBuf,
        kind: SourceKind,
        required: bool,
    },
    /// The copy compiled into the binary ([`crate::DEFAULT_CATALOG`]).
    Embedded,
}

/// How one layer loaded.
#[derive(Debug, Clone)]
pub struct SourceReport {
    /// The file, or `<built-in>` for the embedded default.
    pub path: PathBuf,
    pub kind: SourceKind,
    /// False when the file was absent (and not required).
    pub present: bool,
    pub entries: usize,
    pub error: Option<CatalogError>,
}

#[derive(Debug, Clone)]
pub struct InvalidEntry {
    pub name: ServerName,
    pub source: PathBuf,
    pub error: EntryError,
}

// Unboxed on purpose: the variants are the public contract and a catalog holds a few dozen items.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum CatalogItem {
    Server(ServerEntry),
    /// Shown as Probe failed with the error as its reason; never hides the good entries.
    Invalid(InvalidEntry),
}

impl CatalogItem {
    pub fn name(&self) -> &ServerName {
        match self {
            CatalogItem::Server(s) => &s.name,
            CatalogItem::Invalid(i) => &i.name,
        }
    }
}

/// The merged catalog, sorted by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub items: Vec<CatalogItem>,
    pub sources: Vec<SourceReport>,
}

impl Catalog {
    pub fn servers(&self) -> impl Iterator<Item = &ServerEntry> {
        self.items.iter().filter_map(|i| match i {
            CatalogItem::Server(s) => Some(s),
            CatalogItem::Invalid(_) => None,
        })
    }

    pub fn get(&self, name: &str) -> Option<&CatalogItem> {
        self.items.iter().find(|i| i.name().as_str() == name)
    }

    /// The entry's name a person typing `typed` means: itself when an entry has it, else the one
    /// name that differs from it only in case (`Notion` for `notion`); `None` when no entry, or
    /// more than one, does.
    pub fn name_as_typed(&self, typed: &str) -> Option<&str> {
        if let Some(item) = self.get(typed) {
            return Some(item.name().as_str());
        }
        let wanted = typed.to_lowercase();
        let mut same = self
            .items
            .iter()
            .map(|i| i.name().as_str())
            .filter(|n| n.to_lowercase() == wanted);
        match (same.next(), same.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// For a name no entry has: the entry's name it most likely meant (the same but for case,
    /// else at most two edits away, a swap of neighbours counting one), for "did you mean".
    pub fn did_you_mean(&self, name: &str) -> Option<&str> {
        let wanted = name.to_lowercase();
        let names = self.items.iter().map(|i| i.name().as_str());
        if let Some(same) = names.clone().find(|n| n.to_lowercase() == wanted) {
            return Some(same);
        }
        let most = if wanted.chars().count() >= 5 { 2 } else { 1 };
        names
            .map(|n| (edit_distance(&n.to_lowercase(), &wanted), n))
            .filter(|(d, _)| *d <= most)
            .min_by_key(|(d, _)| *d)
            .map(|(_, n)| n)
    }

    /// File-level errors across all layers.
    pub fn errors(&self) -> impl Iterator<Item = &CatalogError> {
        self.sources.iter().filter_map(|s| s.error.as_ref())
    }
}

/// Edits between `a` and `b` (insertions, deletions, substitutions, swaps of neighbours).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Load and merge the layers in order. Never fails as a whole: a bad file is reported in its
/// [`SourceReport`], a bad entry becomes a [`CatalogItem::Invalid`].
pub fn load(sources: &[CatalogSource]) -> Catalog {
    // A BTreeMap keyed by name gives "later layer wins" and the sorted output in one structure.
    let mut merged: BTreeMap<String, CatalogItem> = BTreeMap::new();
    let mut reports = Vec::with_capacity(sources.len());
    for source in sources {
        let (report, items) = load_layer(source);
        for item in items {
            // The whole entry is replaced, invalid or not: a broken user override must show as
            // broken rather than silently fall back to the default it was meant to change.
            merged.insert(item.name().0.clone(), item);
        }
        reports.push(report);
    }
    Catalog {
        items: merged.into_values().collect(),
        sources: reports,
    }
}

fn load_layer(source: &CatalogSource) -> (SourceReport, Vec<CatalogItem>) {
    let (path, kind, text) = match source {
        CatalogSource::Embedded => (
            PathBuf::from(BUILT_IN_PATH),
            SourceKind::Default,
            Ok(crate::DEFAULT_CATALOG.to_string()),
        ),
        CatalogSource::File {
            path,
            kind,
            required,
        } => {
            let text = match crate::document::read_catalog_file(path) {
                Err(CatalogError::Missing { .. }) if !required => {
                    let report = SourceReport {
                        path: path.clone(),
                        kind: *kind,
                        present: false,
                        entries: 0,
                        error: None,
                    };
                    return (report, Vec::new());
                }
                other => other,
            };
            (path.clone(), *kind, text)
        }
    };
    let parsed = text.and_then(|text| parse(&text, &path));
    let (items, error) = match parsed {
        Ok(items) => (items, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let report = SourceReport {
        path,
        kind,
        present: true,
        entries: items.len(),
        error,
    };
    (report, items)
}

/// Parse and validate one catalog file's text, in either form; `path` is only used in errors and
/// as each entry's source. Entries come back in file order.
pub fn parse(text: &str, path: &Path) -> Result<Vec<CatalogItem>, CatalogError> {
    let (doc, form) = crate::document::parse_document(text, path)?;
    Ok(crate::document::servers(&doc, form)
        .map(|(name, value)| match parse_entry(path, name, value) {
            Ok(entry) => CatalogItem::Server(entry),
            Err(error) => CatalogItem::Invalid(InvalidEntry {
                // The same escaped text the error shows; a name with control characters is
                // invalid anyway, so no valid name can collide with it.
                name: ServerName(error.entry.clone()),
                source: path.to_path_buf(),
                error,
            }),
        })
        .collect())
}

struct Validators {
    /// `#/$defs/ServerConfiguration`, for one entry at a time.
    entry: Validator,
    /// `#/$defs/ServerName`, for server names.
    name: Validator,
}

fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        // The schema is compiled in and covered by tests, so failing here is a build defect.
        let schema: Value = serde_json::from_str(crate::SCHEMA).expect("SCHEMA is JSON");
        let build = |s: &Value| {
            jsonschema::options()
                .with_draft(Draft::Draft7)
                // Values may hold ${VAR}; URL checks are ours (see `check_url`).
                .should_validate_formats(false)
                .build(s)
                .expect("SCHEMA compiles")
        };
        let def = |name: &str| {
            serde_json::json!({
                "$defs": schema["$defs"],
                "allOf": [{ "$ref": format!("#/$defs/{name}") }]
            })
        };
        Validators {
            entry: build(&def("ServerConfiguration")),
            name: build(&def("ServerName")),
        }
    })
}

fn parse_entry(path: &Path, name: &str, value: &Value) -> Result<ServerEntry, EntryError> {
    // Names, pointers and messages may carry the file's text: escaped, so printing is safe.
    let fail = |field: &str, message: String| EntryError {
        file: path.to_path_buf(),
        entry: escape_controls(name),
        field: escape_controls(field),
        message: escape_controls(&message),
    };
    if !validators().name.is_valid(&Value::String(name.to_string())) {
        let rule = "the server name may use only letters, digits, `-`, `_`, `[`, `]` and `$`";
        let message = if name.chars().any(crate::text::is_unsafe_char) {
            format!("the server name contains control characters (shown escaped); {rule}")
        } else {
            rule.to_string()
        };
        return Err(fail("/", message));
    }

    // Parse-then-validate: the schema first, then the rules a schema cannot express.
    let mut problems: Vec<(String, String)> = validators()
        .entry
        .iter_errors(value)
        .map(|err| describe(&err, value))
        .collect();
    // The type decides what else is required, so a problem with it is the one to report.
    problems.sort_by_key(|(field, _)| field != "/type");
    if let Some((field, message)) = problems.into_iter().next() {
        return Err(fail(&field, message));
    }

    let entry = build_entry(path, name, value);
    check_entry(&entry, value).map_err(|(field, message)| fail(&field, message))?;
    Ok(entry)
}

/// Turn a schema-valid entry into a [`ServerEntry`]; the schema has settled every type here.
fn build_entry(path: &Path, name: &str, value: &Value) -> ServerEntry {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let strings = |v: &Value, key: &str| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let string_map = |key: &str| -> IndexMap<String, String> {
        value
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };

    let url = text(value, "url").unwrap_or_default();
    let transport = match value.get("type").and_then(Value::as_str) {
        Some("stdio") => Transport::Stdio {
            command: text(value, "command").unwrap_or_default(),
            args: strings(value, "args"),
            env: string_map("env"),
        },
        Some("sse") => Transport::Sse {
            url,
            headers: string_map("headers"),
        },
        _ => Transport::StreamableHttp {
            url,
            headers: string_map("headers"),
        },
    };

    let oauth = value.get("oauth").map(|o| OAuthConfig {
        client_id: text(o, "clientId"),
        client_secret: text(o, "clientSecret"),
        redirect_uri: text(o, "redirectUri").or_else(|| text(o, "redirect_uri")),
        scopes: if o.get("scopes").is_some() {
            strings(o, "scopes")
        } else {
            text(o, "scope")
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default()
        },
        resource: text(o, "resource"),
        manual: o.get("manual").and_then(Value::as_bool).unwrap_or(false),
        auth_server_metadata_url: text(o, "authServerMetadataUrl"),
    });

    ServerEntry {
        name: ServerName(name.to_string()),
        title: text(value, "title").map(|t| display_text(&t)),
        description: text(value, "description").map(|d| display_text(&d)),
        transport,
        oauth,
        unavailable: value.get("unavailable").and_then(normalize_unavailable),
        enabled: value.get("enabled").and_then(Value::as_bool),
        timeout_ms: value.get("timeout_ms").and_then(whole_number),
        retry: value.get("retry").map(|r| {
            let default = RetryPolicy::default();
            RetryPolicy {
                max: r.get("max").and_then(whole_number).unwrap_or(default.max),
                base_ms: r
                    .get("base_ms")
                    .and_then(whole_number)
                    .unwrap_or(default.base_ms),
                jitter: r
                    .get("jitter")
                    .and_then(Value::as_f64)
                    .unwrap_or(default.jitter),
            }
        }),
        source: path.to_path_buf(),
    }
}

/// A schema-valid integer as `u32`: JSON Schema counts `5000.0` as an integer too, which
/// serde_json keeps as a float. The schema's bounds keep these far below `u32::MAX`.
fn whole_number(v: &Value) -> Option<u32> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
            .map(|f| f as u64)
    })?;
    u32::try_from(n).ok()
}

/// The message for a number out of its bounds, naming the whole range and the unit.
fn range_message(at: &str, value: &Value) -> Option<String> {
    let (lo, hi) = match at {
        "/timeout_ms" => {
            let (lo, hi) = (TIMEOUT_MS_RANGE.start(), TIMEOUT_MS_RANGE.end());
            return Some(format!(
                "must be from {lo} to {hi} milliseconds (10 minutes), not {value}"
            ));
        }
        "/retry/max" => {
            return Some(format!(
            "must be from 0 to {RETRY_MAX_LIMIT}: at most {RETRY_MAX_LIMIT} retries, not {value}"
        ))
        }
        "/retry/base_ms" => (RETRY_BASE_MS_RANGE.start(), RETRY_BASE_MS_RANGE.end()),
        "/retry/jitter" => {
            let (lo, hi) = (RETRY_JITTER_RANGE.start(), RETRY_JITTER_RANGE.end());
            return Some(format!(
                "must be from {lo} to {hi} (a fraction of each wait), not {value}"
            ));
        }
        _ => return None,
    };
    Some(format!(
        "must be from {lo} to {hi} milliseconds, not {value}"
    ))
}

/// Rules beyond the schema. Returns the field (a pointer within the entry) and the message.
fn check_entry(entry: &ServerEntry, value: &Value) -> Result<(), (String, String)> {
    // Placeholders first: a malformed one would otherwise surface as a confusing URL error.
    for (field, text) in expanded_fields(entry, value) {
        crate::placeholder::check(text).map_err(|e| (field, e.to_string()))?;
    }
    if let Some(url) = entry.transport.url() {
        check_url(url).map_err(|m| ("/url".to_string(), m))?;
    }
    if let Some(headers) = entry.transport.headers() {
        for name in headers.keys() {
            let field = format!("/headers/{}", escape_pointer(name));
            if name.is_empty() {
                return Err((field, "header name must not be empty".into()));
            }
            // RFC 9110 field names are tokens: no whitespace, controls or `:`.
            if name
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == ':')
            {
                return Err((field, format!("\"{name}\" is not a valid header name")));
            }
        }
    }
    if let Some(oauth) = value.get("oauth") {
        for key in ["redirectUri", "redirect_uri", "authServerMetadataUrl"] {
            if let Some(url) = oauth.get(key).and_then(Value::as_str) {
                check_url(url).map_err(|m| (format!("/oauth/{key}"), m))?;
            }
        }
    }
    Ok(())
}

/// Every field whose value has `${...}` expanded somewhere, as (pointer within the entry, text).
/// The oauth members come from the raw value since [`OAuthConfig`] merges two spellings.
fn expanded_fields<'a>(entry: &'a ServerEntry, value: &'a Value) -> Vec<(String, &'a str)> {
    let mut fields: Vec<(String, &str)> = Vec::new();
    match &entry.transport {
        Transport::Stdio { command, args, env } => {
            fields.push(("/command".into(), command));
            for (i, arg) in args.iter().enumerate() {
                fields.push((format!("/args/{i}"), arg));
            }
            for (name, text) in env {
                fields.push((format!("/env/{}", escape_pointer(name)), text));
            }
        }
        Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
            fields.push(("/url".into(), url));
            for (name, text) in headers {
                fields.push((format!("/headers/{}", escape_pointer(name)), text));
            }
        }
    }
    if let Some(oauth) = value.get("oauth") {
        for key in [
            "clientId",
            "clientSecret",
            "redirectUri",
            "redirect_uri",
            "authServerMetadataUrl",
            "resource",
        ] {
            if let Some(text) = oauth.get(key).and_then(Value::as_str) {
                fields.push((format!("/oauth/{key}"), text));
            }
        }
    }
    fields
}

/// A plain URL check that tolerates placeholders: `http(s)://` and something after it, or a
/// leading `${VAR}` that will supply the scheme; no whitespace outside placeholders.
fn check_url(url: &str) -> Result<(), String> {
    let found = crate::placeholders(url);
    let mut literal = String::with_capacity(url.len());
    let mut copied = 0;
    for p in &found {
        literal.push_str(&url[copied..p.span.start]);
        copied = p.span.end;
    }
    literal.push_str(&url[copied..]);
    if literal.chars().any(char::is_whitespace) {
        return Err("must not contain whitespace".into());
    }
    if has_userinfo(url) {
        // The password is never repeated: the message names the rule, not the value.
        return Err(
            "must not carry credentials (user:password@): credentials in the URL are not \
             allowed; send them in a header with a ${VAR}, e.g. \
             \"Authorization\": \"Bearer ${TOKEN}\""
                .into(),
        );
    }
    if found.first().is_some_and(|p| p.span.start == 0) {
        return Ok(());
    }
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() => Ok(()),
        Some(_) => Err("must name a host after the scheme".into()),
        None => Err(format!("must be an http:// or https:// URL, not \"{url}\"")),
    }
}

/// True when the authority (between `scheme://` and the first `/`, `?` or `#`) holds a `@`.
fn has_userinfo(url: &str) -> bool {
    let Some((_, after_scheme)) = url.split_once("://") else {
        // No scheme: `user:pass@host/...` still carries them.
        return url
            .split(['/', '?', '#'])
            .next()
            .is_some_and(|authority| authority.contains('@'));
    };
    after_scheme
        .split(['/', '?', '#'])
        .next()
        .is_some_and(|authority| authority.contains('@'))
}

pub(crate) fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A schema error as (JSON pointer within the validated value, plain-English message).
fn describe(err: &ValidationError<'_>, instance: &Value) -> (String, String) {
    let at = err.instance_path.as_str();
    let pointer = |suffix: &str| {
        if at.is_empty() && suffix.is_empty() {
            "/".to_string()
        } else {
            format!("{at}{suffix}")
        }
    };
    // The entry's declared type, for messages that depend on it.
    let declared = instance
        .get("type")
        .and_then(Value::as_str)
        .filter(|_| at.is_empty());
    match &err.kind {
        ValidationErrorKind::Required { property } => {
            let property = property.as_str().unwrap_or_default();
            let field = pointer(&format!("/{}", escape_pointer(property)));
            let message = match (property, declared) {
                ("type", _) if at.is_empty() => {
                    "is required: one of stdio, sse, streamable-http or http".to_string()
                }
                ("command" | "url", Some(t)) => format!("is required for type \"{t}\""),
                _ => "is required".to_string(),
            };
            (field, message)
        }
        ValidationErrorKind::Type { kind } if at == "/retry" => (
            pointer(""),
            format!(
                "{}, e.g. {{\"max\": 3, \"base_ms\": 500, \"jitter\": 0.3}}",
                type_message(kind)
            ),
        ),
        ValidationErrorKind::Type { kind } => (pointer(""), type_message(kind)),
        ValidationErrorKind::Minimum { limit } | ValidationErrorKind::Maximum { limit } => {
            let message = range_message(at, err.instance.as_ref()).unwrap_or_else(|| {
                let side = if matches!(err.kind, ValidationErrorKind::Minimum { .. }) {
                    "least"
                } else {
                    "most"
                };
                format!("must be at {side} {limit}")
            });
            (pointer(""), message)
        }
        ValidationErrorKind::AdditionalProperties { unexpected } if at == "/retry" => {
            let first = unexpected.first().map(String::as_str).unwrap_or_default();
            (
                pointer(&format!("/{}", escape_pointer(first))),
                "is not a member of `retry`, which takes `max`, `base_ms` and `jitter`".into(),
            )
        }
        ValidationErrorKind::Enum { options } => {
            let options: Vec<String> = options
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let expected = or_list(&options);
            let message = if at == "/type" {
                format!("unknown type {}: expected {expected}", err.instance)
            } else {
                format!("must be one of {expected}")
            };
            (pointer(""), message)
        }
        ValidationErrorKind::FalseSchema => {
            let message = match instance.get("type").and_then(Value::as_str) {
                Some(t) => format!("is not allowed for type \"{t}\""),
                None => "is not allowed".to_string(),
            };
            (pointer(""), message)
        }
        ValidationErrorKind::MinLength { limit: 1 } => (pointer(""), "must not be empty".into()),
        ValidationErrorKind::MinLength { limit } => {
            (pointer(""), format!("must be at least {limit} characters"))
        }
        ValidationErrorKind::MaxLength { limit } => {
            (pointer(""), format!("must be at most {limit} characters"))
        }
        ValidationErrorKind::Pattern { pattern } => {
            (pointer(""), format!("must match the pattern {pattern}"))
        }
        // Anything the catalog schema does not use falls back to the validator's own wording.
        _ => (pointer(""), err.to_string()),
    }
}

fn type_message(kind: &TypeKind) -> String {
    let one = |t: &jsonschema::JsonType| {
        let name = t.to_string();
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {name}")
    };
    match kind {
        TypeKind::Single(t) => format!("must be {}", one(t)),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| one(&t)).collect();
            format!("must be {}", or_list(&names))
        }
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod did_you_mean_tests {
    use super::*;

    /// The catalog of one explicit file holding `json`.
    fn catalog_of(json: &str) -> Catalog {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.json");
        std::fs::write(&path, json).unwrap();
        load(&[CatalogSource::File {
            path,
            kind: SourceKind::Explicit,
            required: true,
        }])
    }

    #[test]
    fn names_a_near_miss_and_nothing_else() {
        let catalog = catalog_of(
            r#"{"mcpServers":{"notion":{"type":"http","url":"https://mcp.notion.com/mcp"},
                "linear":{"type":"http","url":"https://mcp.linear.app/mcp"},
                "gh":{"type":"http","url":"https://api.githubcopilot.com/mcp/"}}}"#,
        );
        assert_eq!(catalog.did_you_mean("notoin"), Some("notion"));
        assert_eq!(catalog.did_you_mean("Notion"), Some("notion"));
        assert_eq!(catalog.did_you_mean("linaer"), Some("linear"));
        assert_eq!(catalog.did_you_mean("gx"), Some("gh"));
        assert_eq!(catalog.did_you_mean("postgres"), None);
        assert_eq!(catalog.did_you_mean("xy"), None);
    }

    #[test]
    fn a_name_typed_in_another_case_is_the_one_entry_it_matches() {
        let catalog = catalog_of(
            r#"{"mcpServers":{"notion":{"type":"http","url":"https://mcp.notion.com/mcp"},
                "Sentry":{"type":"http","url":"https://mcp.sentry.dev/mcp"},
                "gh":{"type":"http","url":"https://api.githubcopilot.com/mcp/"},
                "GH":{"type":"http","url":"https://example.com/mcp"}}}"#,
        );
        assert_eq!(catalog.name_as_typed("notion"), Some("notion"));
        assert_eq!(catalog.name_as_typed("NOTION"), Some("notion"));
        assert_eq!(catalog.name_as_typed("sentry"), Some("Sentry"));
        // Exact names win; a case two entries share means neither.
        assert_eq!(catalog.name_as_typed("GH"), Some("GH"));
        assert_eq!(catalog.name_as_typed("Gh"), None);
        assert_eq!(catalog.name_as_typed("notoin"), None);
    }
}
