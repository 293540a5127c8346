// Writes the mock backend's issue-11 fixtures from the shipped catalog (../catalog/mcp.json):
//   src/fixtures/first-run.json  a fresh install: no connector in use, the whole catalog as the gallery
//   src/fixtures/found.json      connectors found in clients (found_in, origin "client"), tokens
//                                adopted from Claude Code / Codex / mcp-remote, one enabled row,
//                                and the rest of the catalog as the gallery (PayPal hidden).
// Usage: node scripts/gallery-fixtures.mjs (run again when the catalog changes).
//
// `needs` approximates the core's rule for the mock: a `${VAR}` without a default in the url,
// headers, env or args is a key to set; otherwise a remote server signs in (OAuth) and a local
// one needs nothing.

import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = new URL("../../", import.meta.url);
const catalog = JSON.parse(readFileSync(new URL("catalog/mcp.json", root), "utf8"));
const out = (name) => fileURLToPath(new URL(`ui/src/fixtures/${name}.json`, root));

const GENERATED_AT = "2026-11-30T09:00:00Z";
const DEFAULT_CATALOG = "/usr/share/patchbay/mcp.json";
const USER_CATALOG = "/home/me/.config/patchbay/mcp.json";

function galleryEntry(name, e) {
  const blob = JSON.stringify([e.url ?? null, e.headers ?? {}, e.env ?? {}, e.args ?? []]);
  const variables = [...new Set([...blob.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]))];
  const remote = e.type !== "stdio";
  const needs = variables.length > 0 ? "secret" : remote && e.oauth !== false ? "oauth" : "nothing";
  return {
    name,
    title: e.title ?? name,
    description: e.description ?? null,
    transport: e.type === "http" ? "streamable-http" : e.type,
    url: e.url ?? null,
    needs,
    variables,
    disabled: e.enabled === false,
  };
}

const entries = Object.entries(catalog).filter(([k]) => k !== "$schema");
const byTitle = (a, b) => a.title.localeCompare(b.title, "en", { sensitivity: "base" });
const gallery = (skip = [], hidden = []) =>
  entries
    .filter(([name]) => !skip.includes(name))
    .map(([name, e]) => ({ ...galleryEntry(name, e), ...(hidden.includes(name) ? { disabled: true } : {}) }))
    .sort(byTitle);

const report = (fields) => ({
  version: 1,
  generated_at: GENERATED_AT,
  need_attention: 0,
  worst: null,
  degraded: 0,
  secret_store: { reachable: true, message: null, key_unusable: false },
  catalog: {
    sources: [
      { path: DEFAULT_CATALOG, kind: "default", present: true, entries: entries.length, error: null },
      { path: USER_CATALOG, kind: "user", present: false, entries: 0, error: null },
    ],
  },
  connectors: [],
  unclaimed: [],
  runtimes: [
    { runtime: "claude_code", found: false, config_path: "/home/me/.claude.json" },
    { runtime: "codex", found: false, config_path: "/home/me/.codex/config.toml" },
  ],
  gallery: gallery(),
  ...fields,
});

const write = (name, value) => {
  writeFileSync(out(name), JSON.stringify(value, null, 2) + "\n");
  console.log(`wrote ui/src/fixtures/${name}.json`);
};

write("first-run", report({}));

const base = {
  description: null,
  missing_variables: [],
  variables: [],
  unavailable_reason: null,
  one_shot: false,
  one_shot_note: null,
  bridges: [],
  can_add_to: [],
  refresh_history: [],
  degraded: null,
};
const ready = { state: "ready", label: "Ready", severity: 0, needs_attention: false, blocks_start: false, action: null };
const credential = (key, issuer, extra = {}) => ({
  key,
  expires_at: "2026-11-30T10:00:00Z",
  has_refresh_token: true,
  issuer,
  updated_at: "2026-11-29T16:20:00Z",
  last_rotated_by: null,
  last_rotated_at: null,
  ...extra,
});
const found = (client, display_name, file, server_name) => ({ client, display_name, file, server_name });

const connectors = [
  {
    ...base,
    name: "linear",
    title: "Linear",
    description: catalog.linear.description,
    transport: "streamable-http",
    url: catalog.linear.url,
    state: "needs_authorization",
    label: "Needs authorization",
    severity: 60,
    needs_attention: true,
    blocks_start: true,
    detail: "Authorize Patchbay with Linear: click Authorize, or run `patchbay authorize linear`.",
    action: "authorize",
    credential: null,
    source: USER_CATALOG,
    in_use_because: ["enabled", "user_catalog"],
    found_in: [],
    origin: "catalog",
    credential_source: null,
  },
  {
    ...base,
    ...ready,
    name: "notion",
    title: "Notion",
    description: catalog.notion.description,
    transport: "streamable-http",
    url: catalog.notion.url,
    detail: "Authorized; renews automatically.",
    credential: credential("notion|5d1e07a9c3b2f481", "https://api.notion.com"),
    source: DEFAULT_CATALOG,
    in_use_because: ["client", "credential"],
    found_in: [
      found("cursor", "Cursor", "/home/me/.cursor/mcp.json", "notion"),
      found("claude_code", "Claude Code", "/home/me/.claude.json", "Notion"),
      found("cursor", "Cursor", "/home/me/src/app/.cursor/mcp.json", "notion"),
    ],
    origin: "catalog",
    credential_source: "claude_code",
  },
  {
    ...base,
    ...ready,
    name: "sentry",
    title: "Sentry",
    description: catalog.sentry.description,
    transport: "streamable-http",
    url: catalog.sentry.url,
    detail: "Authorized; renews automatically.",
    credential: credential("sentry|0a7f3e55d19c2b64", "https://sentry.io"),
    source: DEFAULT_CATALOG,
    in_use_because: ["client", "credential"],
    found_in: [found("codex", "Codex", "/home/me/.codex/config.toml", "sentry")],
    origin: "catalog",
    credential_source: "codex",
  },
  {
    ...base,
    ...ready,
    name: "team-tracker",
    title: "team-tracker",
    transport: "streamable-http",
    url: "https://tracker.internal.example/mcp",
    detail: "Authorized; renews automatically.",
    credential: credential("team-tracker|7c2d9e10f4ab3356", "https://auth.internal.example"),
    // A client-only connector's source is the client file it was named and typed from.
    source: "/home/me/.config/Claude/claude_desktop_config.json",
    in_use_because: ["client", "credential"],
    found_in: [
      found("claude_desktop", "Claude Desktop", "/home/me/.config/Claude/claude_desktop_config.json", "team-tracker"),
      found("windsurf", "Windsurf", "/home/me/.codeium/windsurf/mcp_config.json", "tracker"),
    ],
    origin: "client",
    credential_source: "mcp_remote",
  },
  {
    ...base,
    name: "local-db",
    title: "local-db",
    transport: "stdio",
    url: null,
    state: "no_credential_required",
    label: "No credential required",
    severity: 0,
    needs_attention: false,
    blocks_start: false,
    detail: "Runs locally and needs no credential.",
    action: null,
    credential: null,
    source: "/home/me/.config/Code/User/mcp.json",
    in_use_because: ["client"],
    found_in: [
      found("vs_code", "VS Code", "/home/me/.config/Code/User/mcp.json", "local-db"),
      found("gemini_cli", "Gemini CLI", "/home/me/.gemini/settings.json", "localDb"),
    ],
    origin: "client",
    credential_source: null,
  },
];

write(
  "found",
  report({
    need_attention: 1,
    worst: "needs_authorization",
    catalog: {
      sources: [
        { path: DEFAULT_CATALOG, kind: "default", present: true, entries: entries.length, error: null },
        { path: USER_CATALOG, kind: "user", present: true, entries: 1, error: null },
      ],
    },
    connectors,
    runtimes: [
      { runtime: "claude_code", found: true, config_path: "/home/me/.claude.json" },
      { runtime: "codex", found: true, config_path: "/home/me/.codex/config.toml" },
    ],
    gallery: gallery(
      connectors.map((c) => c.name),
      ["paypal"],
    ),
  }),
);
