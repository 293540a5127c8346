//! Each client's config file format, read into [`ClientServer`]s. Every reader names its source.
//! Values are kept as written (placeholders unexpanded, in the client's own syntax); [`super::air`]
//! translates them.

use super::{jsonc, Client, ClientScope, ClientServer, ClientTransport, ConfigFile};
use crate::RuntimeError;
use indexmap::IndexMap;
use patchbay_vault::Secret;
use serde_json::{Map, Value};
use std::path::Path;

/// Read one file; a missing file is `Ok(empty)`.
pub fn read_file(file: &ConfigFile) -> Result<Vec<ClientServer>, RuntimeError> {
    match crate::atomic::read_text_bounded(&file.path)? {
        Some(text) => parse(file, &text),
        None => Ok(Vec::new()),
    }
}

/// Parse one file's text (`file.path` names it in errors and in the servers).
pub fn parse(file: &ConfigFile, text: &str) -> Result<Vec<ClientServer>, RuntimeError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match file.client {
        Client::Codex => parse_codex(file, text),
        client => {
            // Claude Code and Claude Desktop read their files with JSON.parse: strict. VS Code's
            // mcp.json is JSONC (its docs; the editor's own parser); Gemini CLI strips comments
            // (`strip-json-comments` in its settings loader). Cursor and Windsurf are VS Code forks
            // whose leniency is not documented: reading a file they would refuse costs nothing.
            let lenient = !matches!(client, Client::ClaudeCode | Client::ClaudeDesktop);
            // Strict first (most files have no comment), then blanked when lenient and the text
            // could be an object at all: a file of junk is refused without a pass over it.
            let root: Value = match serde_json::from_str(text) {
                Ok(root) => root,
                Err(_) if text.trim().is_empty() => {
                    return Ok(Vec::new()); // an empty file (editors create one) configures nothing
                }
                Err(e) if !lenient => {
                    return Err(malformed(&file.path, format!("not valid JSON: {e}")))
                }
                Err(e) => match jsonc::first_significant_byte(text) {
                    None => return Ok(Vec::new()), // comments only
                    Some(b'{') => {
                        let cleaned = jsonc::blank_comments_and_trailing_commas(text);
                        serde_json::from_str(&cleaned)
                            .map_err(|e| malformed(&file.path, format!("not valid JSON: {e}")))?
                    }
                    Some(_) => return Err(malformed(&file.path, format!("not valid JSON: {e}"))),
                },
            };
            let Value::Object(root) = root else {
                return Err(malformed(
                    &file.path,
                    format!(
                        "expected a JSON object at the top, found {}",
                        crate::atomic::json_kind(&root)
                    ),
                ));
            };
            parse_json(file, &root)
        }
    }
}

fn parse_json(
    file: &ConfigFile,
    root: &Map<String, Value>,
) -> Result<Vec<ClientServer>, RuntimeError> {
    let reader = Reader { file };
    match (file.client, &file.scope) {
        // Claude Code, ~/.claude.json: user scope = top-level `mcpServers`; local scope =
        // `projects.<dir>.mcpServers` (code.claude.com/docs/en/mcp "MCP installation scopes";
        // shared/reference/mcp-clients.md). Entries: `type` `stdio` (or absent) with
        // `command`/`args`/`env`; `http` or `sse` with `url`/`headers`; other types (`sdk`, the
        // IDE ones) are internal and skipped.
        (Client::ClaudeCode, ClientScope::User) => {
            let mut servers = reader.section(root, "mcpServers", ClientScope::User)?;
            if let Some(projects) = root.get("projects") {
                for (dir, project) in reader.object("projects", projects)? {
                    let at = format!("projects[{dir:?}]");
                    let project = reader.object(&at, project)?;
                    servers.extend(reader.section_at(
                        project,
                        "mcpServers",
                        &format!("{at}.mcpServers"),
                        ClientScope::Local(dir.into()),
                    )?);
                }
            }
            Ok(servers)
        }
        // VS Code: `servers` (not `mcpServers`), plus `inputs` whose `${input:id}` placeholders
        // are left unresolved (code.visualstudio.com/docs/copilot/reference/mcp-configuration).
        (Client::VsCode, scope) => reader.section(root, "servers", scope.clone()),
        // Claude Code `.mcp.json`, Claude Desktop `claude_desktop_config.json`, Cursor `mcp.json`,
        // Windsurf `mcp_config.json`, Gemini CLI `settings.json`: all under `mcpServers`.
        (_, scope) => reader.section(root, "mcpServers", scope.clone()),
    }
}

struct Reader<'a> {
    file: &'a ConfigFile,
}

impl Reader<'_> {
    fn path(&self) -> &Path {
        &self.file.path
    }

    fn object<'v>(
        &self,
        at: &str,
        value: &'v Value,
    ) -> Result<&'v Map<String, Value>, RuntimeError> {
        value.as_object().ok_or_else(|| {
            malformed(
                self.path(),
                format!(
                    "{at}: expected an object, found {}",
                    crate::atomic::json_kind(value)
                ),
            )
        })
    }

    fn section(
        &self,
        root: &Map<String, Value>,
        key: &str,
        scope: ClientScope,
    ) -> Result<Vec<ClientServer>, RuntimeError> {
        self.section_at(root, key, key, scope)
    }

    fn section_at(
        &self,
        parent: &Map<String, Value>,
        key: &str,
        at: &str,
        scope: ClientScope,
    ) -> Result<Vec<ClientServer>, RuntimeError> {
        let Some(section) = parent.get(key) else {
            return Ok(Vec::new());
        };
        if section.is_null() {
            return Ok(Vec::new());
        }
        let mut servers = Vec::new();
        for (name, config) in self.object(at, section)? {
            let where_ = format!("{at}[{name:?}]");
            let config = self.object(&where_, config)?;
            if let Some(transport) = self.transport(&where_, config)? {
                servers.push(ClientServer {
                    client: self.file.client,
                    scope: scope.clone(),
                    file: self.file.path.clone(),
                    name: name.clone(),
                    transport,
                    enabled: config.get("disabled").and_then(Value::as_bool) != Some(true),
                });
            }
        }
        Ok(servers)
    }

    /// One entry's transport; `None` for an entry kind that is not an MCP server we can use.
    fn transport(
        &self,
        at: &str,
        config: &Map<String, Value>,
    ) -> Result<Option<ClientTransport>, RuntimeError> {
        let kind = self.opt_string(at, config, "type")?;
        let client = self.file.client;
        // A kind we do not know (Claude Code's internal `sdk`, `sse-ide`, `ws-ide`, `ws`; a newer
        // client's) is skipped rather than refused: refusing would hide the file's other servers.
        const KNOWN: [&str; 5] = ["stdio", "http", "sse", "streamable-http", "streamableHttp"];
        if let Some(other) = kind.as_deref().filter(|k| !KNOWN.contains(k)) {
            tracing::debug!(
                "{}: {at}: skipping an entry of type {other:?}",
                self.path().display()
            );
            return Ok(None);
        }
        // Remote URL field and default transport per client:
        // - Gemini CLI (google-gemini/gemini-cli docs/tools/mcp-server.md; packages/core
        //   config.ts MCPServerConfig, mcp-client.ts createUrlTransport): `httpUrl` = streamable
        //   HTTP; `url` = SSE, or per `type` (`sse`/`http`) in newer versions (which try HTTP
        //   first for an untyped `url`; we keep the documented SSE).
        // - Windsurf (docs.windsurf.com/windsurf/cascade/mcp): `serverUrl` (or `url`), streamable
        //   HTTP unless typed `sse`.
        // - Cursor (cursor.com/docs/mcp): `url`, `type` optional, streamable HTTP unless `sse`.
        // - VS Code: `type` `http` or `sse` with `url`.
        // - Claude Code / Claude Desktop: `type` `http` or `sse` with `url`.
        let (url_key, url) = match client {
            Client::GeminiCli => match self.opt_string(at, config, "httpUrl")? {
                Some(url) => {
                    return Ok(Some(ClientTransport::StreamableHttp {
                        url,
                        headers: self.string_map(at, config, "headers")?,
                    }))
                }
                None => ("url", self.opt_string(at, config, "url")?),
            },
            Client::Windsurf => match self.opt_string(at, config, "serverUrl")? {
                Some(url) => ("serverUrl", Some(url)),
                None => ("url", self.opt_string(at, config, "url")?),
            },
            _ => ("url", self.opt_string(at, config, "url")?),
        };
        let command = self.opt_string(at, config, "command")?;
        let remote_kind = |default_sse: bool| match kind.as_deref() {
            Some("sse") => true,
            Some("http" | "streamable-http" | "streamableHttp") => false,
            _ => default_sse,
        };
        match (command, url) {
            (Some(command), _) if matches!(kind.as_deref(), None | Some("stdio")) => {
                Ok(Some(ClientTransport::Stdio {
                    command,
                    args: self.string_list(at, config, "args")?,
                    env: self.string_map(at, config, "env")?,
                }))
            }
            (_, Some(url)) => {
                let sse = remote_kind(client == Client::GeminiCli);
                let headers = self.string_map(at, config, "headers")?;
                Ok(Some(if sse {
                    ClientTransport::Sse { url, headers }
                } else {
                    ClientTransport::StreamableHttp { url, headers }
                }))
            }
            (_, None) => Err(malformed(
                self.path(),
                match kind.as_deref() {
                    Some(kind) if kind != "stdio" => {
                        format!("{at}: a {kind} server needs a string \"{url_key}\"")
                    }
                    _ => format!("{at}: needs a \"command\" or a \"{url_key}\""),
                },
            )),
        }
    }

    fn opt_string(
        &self,
        at: &str,
        config: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<String>, RuntimeError> {
        match config.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(malformed(
                self.path(),
                format!(
                    "{at}.{key}: expected a string, found {}",
                    crate::atomic::json_kind(other)
                ),
            )),
        }
    }

    fn string_list(
        &self,
        at: &str,
        config: &Map<String, Value>,
        key: &str,
    ) -> Result<Vec<String>, RuntimeError> {
        match config.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(malformed(
                        self.path(),
                        format!(
                            "{at}.{key}[{i}]: expected a string, found {}",
                            crate::atomic::json_kind(other)
                        ),
                    )),
                })
                .collect(),
            Some(other) => Err(malformed(
                self.path(),
                format!(
                    "{at}.{key}: expected an array of strings, found {}",
                    crate::atomic::json_kind(other)
                ),
            )),
        }
    }

    /// A map of strings; numbers and booleans are taken as their text (clients pass them to the
    /// process as strings), `null` values are skipped (VS Code: unset the variable).
    fn string_map(
        &self,
        at: &str,
        config: &Map<String, Value>,
        key: &str,
    ) -> Result<IndexMap<String, Secret>, RuntimeError> {
        let mut map = IndexMap::new();
        match config.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(object)) => {
                for (name, value) in object {
                    let value = match value {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Null => continue,
                        other => {
                            return Err(malformed(
                                self.path(),
                                format!(
                                    "{at}.{key}[{name:?}]: expected a string, found {}",
                                    crate::atomic::json_kind(other)
                                ),
                            ))
                        }
                    };
                    map.insert(name.clone(), Secret::new(value));
                }
            }
            Some(other) => {
                return Err(malformed(
                    self.path(),
                    format!(
                        "{at}.{key}: expected an object, found {}",
                        crate::atomic::json_kind(other)
                    ),
                ))
            }
        }
        Ok(map)
    }
}

/// Codex `config.toml` (`~/.codex/config.toml`, or `.codex/config.toml` in a trusted project):
/// `[mcp_servers.NAME]` with `command`, `args`, `env`, `env_vars` (names passed through from
/// Codex's environment), or `url` (streamable HTTP only) with `http_headers` (literal values),
/// `env_http_headers` (header → env var name) and `bearer_token_env_var`; `enabled = false` turns
/// one off (openai/codex codex-rs/config/src/mcp_types.rs `McpServerTransportConfig`;
/// shared/reference/mcp-clients.md). Codex has no `${VAR}` syntax: the env-var indirections are
/// kept as AIR placeholders (`env_vars = ["X"]` → env `X = "${X}"`, `bearer_token_env_var = "T"` →
/// `Authorization: Bearer ${T}`), which mean the same thing.
fn parse_codex(file: &ConfigFile, text: &str) -> Result<Vec<ClientServer>, RuntimeError> {
    let path = &file.path;
    let table = crate::toml_text::parse_table(text).map_err(|e| malformed(path, e))?;
    let Some(section) = table.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(section) = section.as_table() else {
        return Err(malformed(
            path,
            format!(
                "mcp_servers: expected a table, found a {}",
                section.type_str()
            ),
        ));
    };
    let mut servers = Vec::new();
    for (name, config) in section {
        let at = format!("[mcp_servers.{name}]");
        let Some(config) = config.as_table() else {
            return Err(malformed(path, format!("{at} is not a table")));
        };
        let string = |key: &str| -> Result<Option<String>, RuntimeError> {
            match config.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(malformed(
                    path,
                    format!(
                        "{at} {key}: expected a string, found a {}",
                        other.type_str()
                    ),
                )),
            }
        };
        let strings = |key: &str| -> Result<Vec<String>, RuntimeError> {
            match config.get(key) {
                None => Ok(Vec::new()),
                Some(toml::Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.as_str().map(str::to_string).ok_or_else(|| {
                            malformed(
                                path,
                                format!(
                                    "{at} {key}[{i}]: expected a string, found a {}",
                                    v.type_str()
                                ),
                            )
                        })
                    })
                    .collect(),
                Some(other) => Err(malformed(
                    path,
                    format!(
                        "{at} {key}: expected an array, found a {}",
                        other.type_str()
                    ),
                )),
            }
        };
        let map = |key: &str| -> Result<IndexMap<String, String>, RuntimeError> {
            let mut out = IndexMap::new();
            match config.get(key) {
                None => {}
                Some(toml::Value::Table(t)) => {
                    for (k, v) in t {
                        let Some(v) = v.as_str() else {
                            return Err(malformed(
                                path,
                                format!(
                                    "{at} {key}.{k}: expected a string, found a {}",
                                    v.type_str()
                                ),
                            ));
                        };
                        out.insert(k.clone(), v.to_string());
                    }
                }
                Some(other) => {
                    return Err(malformed(
                        path,
                        format!("{at} {key}: expected a table, found a {}", other.type_str()),
                    ))
                }
            }
            Ok(out)
        };
        let transport = match (string("command")?, string("url")?) {
            (Some(command), _) => {
                let mut env: IndexMap<String, Secret> = map("env")?
                    .into_iter()
                    .map(|(k, v)| (k, Secret::new(v)))
                    .collect();
                for var in strings("env_vars")? {
                    env.entry(var.clone())
                        .or_insert_with(|| Secret::new(format!("${{{var}}}")));
                }
                ClientTransport::Stdio {
                    command,
                    args: strings("args")?,
                    env,
                }
            }
            (None, Some(url)) => {
                let mut headers: IndexMap<String, Secret> = map("http_headers")?
                    .into_iter()
                    .map(|(k, v)| (k, Secret::new(v)))
                    .collect();
                for (header, var) in map("env_http_headers")? {
                    headers.insert(header, Secret::new(format!("${{{var}}}")));
                }
                if let Some(var) = string("bearer_token_env_var")? {
                    headers.insert(
                        "Authorization".into(),
                        Secret::new(format!("Bearer ${{{var}}}")),
                    );
                }
                ClientTransport::StreamableHttp { url, headers }
            }
            (None, None) => {
                return Err(malformed(
                    path,
                    format!("{at}: needs a \"command\" or a \"url\""),
                ))
            }
        };
        let enabled = match config.get("enabled") {
            None => true,
            Some(toml::Value::Boolean(b)) => *b,
            Some(other) => {
                return Err(malformed(
                    path,
                    format!(
                        "{at} enabled: expected a boolean, found a {}",
                        other.type_str()
                    ),
                ))
            }
        };
        servers.push(ClientServer {
            client: file.client,
            scope: file.scope.clone(),
            file: file.path.clone(),
            name: name.clone(),
            transport,
            enabled,
        });
    }
    Ok(servers)
}

fn malformed(path: &Path, message: String) -> RuntimeError {
    RuntimeError::Malformed {
        path: path.to_path_buf(),
        message,
    }
}
