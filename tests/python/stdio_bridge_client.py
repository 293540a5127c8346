"""The MCP Python SDK 2.3.0's `stdio_client` launching a stdio server as the SDK launches every
one: with only HOME, LOGNAME, PATH, SHELL, TERM and USER of its own environment (plus the
entry's `env`). For tests/tests/connect.rs: `patchbay connect NAME` judged by a real client.

    stdio_bridge_client.py SPEC_JSON

SPEC_JSON: {"command": ..., "args": [...], "env": {...} or null, "tool": NAME or null,
"arguments": {...}}. Prints one JSON object: {"ok": true, "tools": [...], "called": "text"} or
{"ok": false, "error": "what the client was told"}.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main(spec: dict) -> dict:
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec.get("env"))
    result = {"ok": True}
    async with Client(params) as client:
        result["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        if spec.get("tool"):
            called = await client.call_tool(spec["tool"], spec.get("arguments") or {})
            result["called"] = " ".join(getattr(c, "text", "") for c in called.content)
            result["is_error"] = bool(called.is_error)
    return result


def innermost(e: BaseException) -> str:
    causes, seen = [], e
    while seen is not None and len(causes) < 8:
        causes.append(f"{type(seen).__name__}: {seen}")
        if isinstance(seen, BaseExceptionGroup) and seen.exceptions:
            seen = seen.exceptions[0]
        else:
            seen = seen.__cause__ or seen.__context__
    return " <- ".join(causes)


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(asyncio.wait_for(main(json.loads(sys.argv[1])), 90))))
    except BaseException as e:  # noqa: BLE001 - one line for the test, whatever went wrong
        print(json.dumps({"ok": False, "error": innermost(e)}))
        sys.exit(1)
