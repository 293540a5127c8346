"""FastMCP (PyPI `fastmcp`, pinned in scripts/setup.sh) as shipped: an MCP server guarded by its
in-memory OAuth provider (`InMemoryOAuthProvider`: auto-approving /authorize, dynamic client
registration, PKCE, rotating refresh tokens, revocation), authorization server and MCP endpoint on
one origin. Started by tests/tests/conformance.rs as `python fastmcp_server.py PORT`; serves
http://127.0.0.1:PORT/mcp and prints "READY <url>" once it accepts connections. Loopback only.

`python fastmcp_server.py PORT CLIENT_ID CLIENT_SECRET METHOD REDIRECT_URI` also knows one
confidential client, as if an administrator had registered it, authenticating only by METHOD
(`client_secret_basic` or `client_secret_post`): FastMCP's token endpoint enforces the registered
method, so a client sending its secret the other way is refused with 401 invalid_client.
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
if len(sys.argv) > 2:
    from mcp.shared.auth import OAuthClientInformationFull

    client_id, client_secret, method, redirect_uri = sys.argv[2:6]
    provider.clients[client_id] = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method=method,
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
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
