"""An authorization server built from Authlib's own pieces (PyPI `authlib`, pinned in
scripts/setup.sh): its Flask `AuthorizationServer` with the authorization-code grant and PKCE
(RFC 7636, required), the refresh-token grant with rotation, dynamic client registration
(RFC 7591), revocation (RFC 7009) and introspection (RFC 7662). Only the storage (in memory) and
an auto-approving consent are ours; every request is parsed, checked and answered by Authlib.

In front of it, an MCP resource server made of FastMCP's `RemoteAuthProvider` and its RFC 7662
`IntrospectionTokenVerifier`: it advertises this issuer in its protected-resource metadata and
asks the introspection endpoint about every token, so a revoked token is refused at once.

Started by tests/tests/conformance.rs as `python authlib_server.py AS_PORT MCP_PORT`; prints
"READY <mcp url>" once both listen. Loopback only.
"""

import secrets
import sys
import threading
import time

import uvicorn
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from fastmcp import FastMCP
from fastmcp.server.auth import RemoteAuthProvider
from fastmcp.server.auth.providers.introspection import IntrospectionTokenVerifier
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

as_port, mcp_port = int(sys.argv[1]), int(sys.argv[2])
issuer = f"http://127.0.0.1:{as_port}"
mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
# The resource server's own client, for introspection.
RS_CLIENT, RS_SECRET = "mcp-resource-server", secrets.token_hex(16)


class Client:
    def __init__(self, client_id, secret, metadata):
        self.client_id, self.client_secret, self.metadata = client_id, secret, metadata

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return (self.metadata.get("redirect_uris") or [None])[0]

    def get_allowed_scope(self, scope):
        return scope or ""

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in self.metadata.get("redirect_uris", [])

    def check_client_secret(self, client_secret):
        return bool(self.client_secret) and secrets.compare_digest(self.client_secret, client_secret)

    def check_endpoint_auth_method(self, method, endpoint):
        if endpoint in ("revocation", "introspection") and self.client_id != RS_CLIENT:
            # RFC 7009 lets a public client revoke its own tokens.
            return method == self.metadata.get("token_endpoint_auth_method", "client_secret_basic")
        return method == self.metadata.get("token_endpoint_auth_method", "client_secret_basic")

    def check_response_type(self, response_type):
        return response_type in self.metadata.get("response_types", ["code"])

    def check_grant_type(self, grant_type):
        return grant_type in self.metadata.get("grant_types", ["authorization_code"])


class Code:
    def __init__(self, code, client_id, redirect_uri, scope, challenge, method):
        self.code, self.client_id, self.redirect_uri, self.scope = code, client_id, redirect_uri, scope
        self.code_challenge, self.code_challenge_method = challenge, method
        self.auth_time = int(time.time())

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_auth_time(self):
        return self.auth_time

    def get_nonce(self):
        return None


class Token:
    def __init__(self, client_id, data):
        self.client_id = client_id
        self.access_token = data["access_token"]
        self.refresh_token = data.get("refresh_token")
        self.scope = data.get("scope", "")
        self.expires_in = data.get("expires_in", 3600)
        self.issued_at = int(time.time())
        self.revoked = False

    def check_client(self, client):
        return client.get_client_id() == self.client_id

    def get_scope(self):
        return self.scope

    def get_expires_in(self):
        return self.expires_in

    def is_expired(self):
        return time.time() > self.issued_at + self.expires_in

    def is_revoked(self):
        return self.revoked

    def get_user(self):
        return USER

    def get_client(self):
        return clients.get(self.client_id)


USER = object()
clients = {RS_CLIENT: Client(RS_CLIENT, RS_SECRET, {"token_endpoint_auth_method": "client_secret_basic"})}
codes = {}
tokens_by_access = {}
tokens_by_refresh = {}
lock = threading.Lock()


def save_token(token, req):
    t = Token(req.client.get_client_id(), token)
    with lock:
        tokens_by_access[t.access_token] = t
        if t.refresh_token:
            tokens_by_refresh[t.refresh_token] = t


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def save_authorization_code(self, code, req):
        data = req.payload.data
        codes[code] = Code(code, req.client.get_client_id(), req.payload.redirect_uri,
                           req.payload.scope or "", data.get("code_challenge"),
                           data.get("code_challenge_method"))

    def query_authorization_code(self, code, client):
        item = codes.get(code)
        return item if item and item.client_id == client.get_client_id() else None

    def delete_authorization_code(self, authorization_code):
        codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code):
        return USER


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        t = tokens_by_refresh.get(refresh_token)
        return t if t and not t.revoked else None

    def authenticate_user(self, refresh_token):
        return USER

    def revoke_old_credential(self, refresh_token):
        refresh_token.revoked = True
        print("REFRESHED", flush=True)


class Registration(ClientRegistrationEndpoint):
    def authenticate_token(self, req):
        return True  # open registration, as MCP clients expect

    def get_server_metadata(self):
        return METADATA

    def save_client(self, client_info, client_metadata, req):
        client = Client(client_info["client_id"], client_info["client_secret"], client_metadata)
        clients[client.client_id] = client
        return client


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = AUTH_METHODS

    def query_token(self, token_string, token_type_hint):
        return tokens_by_access.get(token_string) or tokens_by_refresh.get(token_string)

    def revoke_token(self, token, req):
        token.revoked = True
        print(f"REVOKED {req.form.get('token_type_hint') or 'unknown'}", flush=True)


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic"]

    def query_token(self, token_string, token_type_hint):
        return tokens_by_access.get(token_string) or tokens_by_refresh.get(token_string)

    def check_permission(self, token, client, req):
        return client.get_client_id() == RS_CLIENT

    def introspect_token(self, token):
        return {"active": True, "client_id": token.client_id, "scope": token.scope,
                "token_type": "Bearer", "exp": token.issued_at + token.expires_in,
                "iat": token.issued_at, "iss": issuer, "sub": "user"}


METADATA = {
    "issuer": issuer,
    "authorization_endpoint": f"{issuer}/authorize",
    "token_endpoint": f"{issuer}/token",
    "registration_endpoint": f"{issuer}/register",
    "revocation_endpoint": f"{issuer}/revoke",
    "introspection_endpoint": f"{issuer}/introspect",
    "response_types_supported": ["code"],
    "grant_types_supported": ["authorization_code", "refresh_token"],
    "token_endpoint_auth_methods_supported": AUTH_METHODS,
    "code_challenge_methods_supported": ["S256"],
}

app = Flask("authlib-as")
# Authlib issues refresh tokens only when told to (its default generator makes none).
app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
server = AuthorizationServer(app, query_client=clients.get, save_token=save_token)
server.register_grant(AuthorizationCodeGrant, [CodeChallenge(required=True)])
server.register_grant(RefreshTokenGrant)
server.register_endpoint(Registration)
server.register_endpoint(Revocation)
server.register_endpoint(Introspection)


@app.get("/.well-known/oauth-authorization-server")
def metadata():
    return jsonify(METADATA)


@app.get("/authorize")
def authorize():
    # A person who is signed in and clicks Approve.
    return server.create_authorization_response(grant_user=USER)


@app.post("/token")
def token():
    return server.create_token_response()


@app.post("/register")
def register():
    return server.create_endpoint_response("client_registration")


@app.post("/revoke")
def revoke():
    return server.create_endpoint_response("revocation")


@app.post("/introspect")
def introspect():
    return server.create_endpoint_response("introspection")


as_server = make_server("127.0.0.1", as_port, app, threaded=True)
threading.Thread(target=as_server.serve_forever, daemon=True).start()

verifier = IntrospectionTokenVerifier(
    introspection_url=f"{issuer}/introspect", client_id=RS_CLIENT, client_secret=RS_SECRET
)
mcp = FastMCP(
    "conformance-authlib",
    auth=RemoteAuthProvider(
        token_verifier=verifier,
        authorization_servers=[issuer],
        base_url=f"http://127.0.0.1:{mcp_port}",
    ),
)


@mcp.tool
def echo(text: str) -> str:
    """Returns its argument."""
    return text


class Server(uvicorn.Server):
    async def startup(self, sockets=None):
        await super().startup(sockets)
        print(f"READY {mcp_url}", flush=True)


Server(uvicorn.Config(mcp.http_app(path="/mcp"), host="127.0.0.1", port=mcp_port,
                      log_level="warning")).run()
