// One line per scenario result under DIR (the framework's -o dir): SCENARIO|FAILING|WARNED, where
// FAILING is the FAILURE checks' ids (with a count when repeated) and WARNED the WARNING checks'.
// The scenario is the result dir's path under DIR, without the runner's timestamp and the
// server runner's "server-" prefix.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = process.argv[2];
const found = [];
const walk = (dir) => {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // no results: the caller says so
  }
  for (const e of entries) {
    if (e.isDirectory()) walk(join(dir, e.name));
    else if (e.name === 'checks.json') found.push(dir);
  }
};
walk(root);
for (const dir of found.sort()) {
  const checks = JSON.parse(readFileSync(join(dir, 'checks.json'), 'utf8'));
  const ids = (status, counted) => {
    const n = {};
    for (const c of checks) if (c.status === status) n[c.id] = (n[c.id] || 0) + 1;
    return Object.keys(n)
      .sort()
      .map((k) => (counted && n[k] > 1 ? `${k}(${n[k]})` : k))
      .join(' ');
  };
  const scenario = relative(root, dir)
    .replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '')
    .replace(/^server-/, '');
  console.log(`${scenario}|${ids('FAILURE', true)}|${ids('WARNING', false)}`);
}
