"""FastMCP (PyPI `fastmcp`, pinned in scripts/setup.sh) as shipped: an MCP server guarded by its
in-memory OAuth provider (`InMemoryOAuthProvider`: auto-approving /authorize, dynamic client
registration, PKCE, rotating refresh tokens, revocation), authorization server and MCP endpoint on
one origin. Started by tests/tests/conformance.rs as `python fastmcp_server.py PORT`; serves
http://127.0.0.1:PORT/mcp and prints "READY <url>" once it accepts connections. Loopback only.
"""

import sys

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions

port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"
provider = InMemoryOAuthProvider(
    base_url=base,
    client_registration_options=ClientRegistrationOptions(enabled=True),
    revocation_options=RevocationOptions(enabled=True),
)
server = FastMCP("conformance-fastmcp", auth=provider)


@server.tool
def echo(text: str) -> str:
    """Returns its argument."""
    return text


class Server(uvicorn.Server):
    async def startup(self, sockets=None):
        await super().startup(sockets)
        print(f"READY {base}/mcp", flush=True)


config = uvicorn.Config(
    server.http_app(path="/mcp"), host="127.0.0.1", port=port, log_level="warning"
)
Server(config).run()
