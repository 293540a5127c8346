// src/generated/ipc.ts is generated from the Rust types (tests/tests/ui_types.rs checks it is
// current). This test walks a real `patchbay status --json` report against those types with the
// TypeScript checker, so a serde attribute the generator does not see still shows: every key the CLI sends must be a
// property of the type at that place (recursively, through arrays, nullables and unions), and
// every property the types call required must be in the report wherever its object appears.
// It checks the committed tests/fixtures/cli-status.json (scripts/cli-status-fixture.mjs wrote it
// from the real CLI) and, when the CLI is built (target/debug/patchbay or PATCHBAY_BIN), a live
// run in a throwaway home with servers in several clients (tests/cli-status.mjs).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { cliClients, cliStatus, patchbayBinFor } from "./cli-status.mjs";

const TYPES = fileURLToPath(new URL("../src/generated/ipc.ts", import.meta.url));
const program = ts.createProgram([TYPES], { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022 });
const checker = program.getTypeChecker();

function declared(name) {
  const file = program.getSourceFile(TYPES);
  const decl = file.statements.find((s) => (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name.text === name);
  assert.ok(decl, `src/generated/ipc.ts declares ${name}`);
  return checker.getTypeAtLocation(decl.name);
}

/** The object-like members of `type` (a union's, null and primitives left out). */
function objectParts(type) {
  const parts = type.isUnion() ? type.types : [type];
  return parts.filter((t) => (t.flags & ts.TypeFlags.Object) !== 0);
}

function elementType(type) {
  for (const t of objectParts(type)) {
    if (checker.isArrayType(t) || checker.isTupleType(t)) return checker.getTypeArguments(t)[0];
  }
  return null;
}

function typeName(type) {
  return checker.typeToString(type);
}

/** Walks `value` against `type`; pushes what does not fit into `problems`. */
function walk(value, type, path, problems) {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    const el = elementType(type);
    if (!el) {
      problems.push(`${path}: an array in the report, ${typeName(type)} in the types`);
      return;
    }
    value.forEach((v, i) => walk(v, el, `${path}[${i}]`, problems));
    return;
  }
  const candidates = objectParts(type).filter((t) => !checker.isArrayType(t));
  if (candidates.length === 0) {
    problems.push(`${path}: an object in the report, ${typeName(type)} in the types`);
    return;
  }
  // A union of object types: the member that knows the most of this object's keys.
  const keys = Object.keys(value);
  const score = (t) => keys.filter((k) => t.getProperty(k) || t.getStringIndexType()).length;
  const target = candidates.reduce((a, b) => (score(b) > score(a) ? b : a));
  const index = target.getStringIndexType();
  for (const [key, v] of Object.entries(value)) {
    const prop = target.getProperty(key);
    if (!prop && !index) {
      problems.push(`${path}.${key}: sent by the CLI, missing from ${typeName(target)} in src/generated/ipc.ts`);
      continue;
    }
    walk(v, prop ? checker.getTypeOfSymbol(prop) : index, `${path}.${key}`, problems);
  }
  for (const prop of target.getProperties()) {
    const optional = (prop.flags & ts.SymbolFlags.Optional) !== 0;
    if (!optional && !(prop.name in value)) {
      problems.push(`${path}.${prop.name}: required in ${typeName(target)}, absent from the CLI's report`);
    }
  }
}

function check(report) {
  const problems = [];
  walk(report, declared("StatusReport"), "report", problems);
  return problems;
}

test("the walker itself: an unknown key and a missing required one are both caught", () => {
  const report = JSON.parse(readFileSync(new URL("./fixtures/cli-status.json", import.meta.url), "utf8"));
  report.connectors[0].brand_new_field = 1;
  delete report.gallery[0].needs;
  report.secret_store.also_new = true;
  const problems = check(report);
  assert.ok(problems.some((p) => p.startsWith("report.connectors[0].brand_new_field: sent by the CLI, missing from ConnectorStatus")), problems.join("\n"));
  assert.ok(problems.some((p) => p.startsWith("report.gallery[0].needs: required in GalleryEntry")), problems.join("\n"));
  assert.ok(problems.some((p) => p.startsWith("report.secret_store.also_new")), problems.join("\n"));
});

test("the committed CLI report fits src/generated/ipc.ts, and covers issue 11's fields", () => {
  const report = JSON.parse(readFileSync(new URL("./fixtures/cli-status.json", import.meta.url), "utf8"));
  assert.deepEqual(check(report), []);
  // what the fixture has to hold for the walk to mean something
  assert.ok(report.gallery.length > 0 && report.gallery.some((g) => g.disabled), "a gallery with a hidden entry");
  assert.ok(report.connectors.some((c) => c.origin === "client"), "a client-only connector");
  assert.ok(report.connectors.some((c) => c.found_in.length > 1), "one found in several client files");
  assert.ok(report.connectors.some((c) => c.in_use_because.includes("enabled")), "one enabled with patchbay enable");
});

test("a live `patchbay status --json` fits src/generated/ipc.ts", (t) => {
  const bin = patchbayBinFor(t);
  if (!bin) return;
  const report = cliStatus(bin);
  assert.deepEqual(
    check(report),
    [],
    `${bin} status --json does not fit src/generated/ipc.ts (type the new fields; or, if the binary is older than the source, rebuild it: cargo build -p patchbay-cli)`,
  );
});

// Issue 12: the lists the window shares with the CLI (switch_candidates, gateway_clients' entries).
function checkClients(out) {
  const problems = [];
  walk(out.switch_candidates, checker.createArrayType(declared("SwitchCandidate")), "switch_candidates", problems);
  walk(out.gateway_clients, checker.createArrayType(declared("GatewayClient")), "gateway_clients", problems);
  return problems;
}

test("the committed `switch --list --json` and `gateway client list --json` fit src/generated/ipc.ts", () => {
  const out = JSON.parse(readFileSync(new URL("./fixtures/cli-clients.json", import.meta.url), "utf8"));
  assert.ok(out.switch_candidates.length > 0 && out.gateway_clients.some((g) => g.only), "a candidate and a limited client");
  assert.deepEqual(checkClients(out), []);
  // the walker catches a field the types lack here too
  out.gateway_clients[0].secret_sha256 = "00";
  assert.ok(checkClients(out).some((p) => p.startsWith("gateway_clients[0].secret_sha256")));
});

test("a live `switch --list --json` and `gateway client list --json` fit src/generated/ipc.ts", (t) => {
  const bin = patchbayBinFor(t);
  if (!bin) return;
  assert.deepEqual(checkClients(cliClients(bin)), []);
});
