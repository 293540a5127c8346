"""django-oauth-toolkit (PyPI `django-oauth-toolkit` on Django and oauthlib, pinned in
scripts/setup.sh) as an MCP authorization server: its own URLconf mounted at the root serves RFC
8414 metadata, /authorize/, /token/ (authorization code with PKCE required, refresh with
rotation), /revoke_token/ (RFC 7009), /introspect/ (RFC 7662) and open dynamic registration
(RFC 7591, `DCR_ENABLED` with its `AllowAllDCRPermission`). oauthlib does the protocol work; only
the settings, a signed-in user and the approval are ours.

A person is signed in (a middleware logs the one test user in) and approves: applications skip
the consent form, as a deployment marks its trusted clients (`skip_authorization`).

In front, an MCP resource server made of FastMCP's `RemoteAuthProvider` and its RFC 7662
`IntrospectionTokenVerifier`, authenticating to the introspection endpoint as a confidential
application of its own.

Usage: `python dot_server.py AS_PORT MCP_PORT`; prints "READY <mcp url>" once both listen.
Loopback only; the database is a SQLite file in a temporary directory.
"""

import os
import secrets
import sys
import tempfile
import threading

as_port, mcp_port = int(sys.argv[1]), int(sys.argv[2])
issuer = f"http://127.0.0.1:{as_port}"
mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
workdir = tempfile.mkdtemp(prefix="dot-peer-")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

settings.configure(
    DEBUG=False,
    SECRET_KEY=secrets.token_hex(32),
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "oauth2_provider",
    ],
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        f"{__name__}.SignedInUser",
    ],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                           "NAME": os.path.join(workdir, "db.sqlite3")}},
    USE_TZ=True,
    OAUTH2_PROVIDER={
        "DCR_ENABLED": True,
        "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
        "PKCE_REQUIRED": True,
        "ROTATE_REFRESH_TOKEN": True,
        "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
        "SCOPES": {"mcp": "Use the MCP server"},
        "DEFAULT_SCOPES": ["mcp"],
        "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [issuer],
    },
)
django.setup()

from django.contrib.auth import get_user_model, login  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db.models.signals import pre_save  # noqa: E402
from django.urls import include, path  # noqa: E402
from oauth2_provider.models import get_application_model  # noqa: E402
from oauth2_provider.signals import app_authorized  # noqa: E402

urlpatterns = [path("", include("oauth2_provider.urls"))]

call_command("migrate", verbosity=0)
User = get_user_model()
user = User.objects.create_user("conformance-user")
Application = get_application_model()


class SignedInUser:
    """The person at the browser is signed in."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.user.is_authenticated:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return self.get_response(request)


def approve(sender, instance, **kwargs):
    # The person approves every client (the consent form would ask once).
    instance.skip_authorization = True


pre_save.connect(approve, sender=Application)
app_authorized.connect(lambda sender, request, token, **kw: print("AUTHORIZED", flush=True))

rs_secret = secrets.token_hex(16)
Application.objects.create(
    client_id="mcp-resource-server",
    client_secret=rs_secret,
    client_type=Application.CLIENT_CONFIDENTIAL,
    authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
    name="MCP resource server",
)

from django.core.wsgi import get_wsgi_application  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

as_server = make_server("127.0.0.1", as_port, get_wsgi_application(), threaded=True)
threading.Thread(target=as_server.serve_forever, daemon=True).start()

import uvicorn  # noqa: E402
from fastmcp import FastMCP  # noqa: E402
from fastmcp.server.auth import RemoteAuthProvider  # noqa: E402
from fastmcp.server.auth.providers.introspection import IntrospectionTokenVerifier  # noqa: E402

verifier = IntrospectionTokenVerifier(
    introspection_url=f"{issuer}/introspect/",
    client_id="mcp-resource-server",
    client_secret=rs_secret,
)
mcp = FastMCP(
    "conformance-django-oauth-toolkit",
    auth=RemoteAuthProvider(
        token_verifier=verifier,
        authorization_servers=[issuer],
        base_url=f"http://127.0.0.1:{mcp_port}",
        scopes_supported=["mcp"],
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
