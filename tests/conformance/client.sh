#!/usr/bin/env bash
# The conformance framework's client command (`--command tests/conformance/client.sh`): it gets
# the server URL as its last argument and the scenario in MCP_CONFORMANCE_SCENARIO. Patchbay is
# the client: driver.ts (bundled by scripts/ci/conformance.sh) writes a throwaway catalog for
# the URL, runs `patchbay connect` and speaks MCP over its stdio, and `patchbay authorize` when
# Patchbay says the connector needs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATCHBAY_BIN=${PATCHBAY_BIN:-$repo/target/debug/patchbay}
# The "browser" follows the framework's auto-approving 302 to Patchbay's loopback receiver.
export BROWSER="$repo/tests/support/follow-browser.sh"
# The client id metadata document the framework's CIMD scenario expects (its servers never fetch
# it). Set the way a user sets theirs, so it is used as given.
export PATCHBAY_CLIENT_METADATA_URL=https://conformance-test.local/client-metadata.json
: "${PATCHBAY_CONFORMANCE_DRIVER:?the bundled driver, set by scripts/ci/conformance.sh}"
exec "${PATCHBAY_CONFORMANCE_NODE:-node}" "$PATCHBAY_CONFORMANCE_DRIVER" "$@"
