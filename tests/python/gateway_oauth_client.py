"""The MCP Python SDK's own OAuth client (mcp 2.3.0 `OAuthClientProvider`) given only a Patchbay
gateway URL, as a user's agent would be: it meets the gateway's 401, discovers its
protected-resource and authorization-server metadata, registers, opens the consent page in the
"browser" (tests/support/consent-browser.sh, a headless chromium that answers it as
PATCHBAY_CONSENT says), takes the code at its own loopback callback, and then lists tools and
calls one.

    gateway_oauth_client.py URL STORE [TOOL [ARGS_JSON]]

STORE is a JSON file the client keeps its registration and tokens in (as a real client would),
so a second run signs in without a browser unless the tokens were revoked. One JSON object is
printed: {"ok": true, "tools": [...], "called": "text", "browser_runs": N, "client_id": "..."}
or {"ok": false, "error": "..."}.

With CLIENT_DOCUMENT_CA=FILE the client identifies itself by a Client ID Metadata Document
instead of registering (the SDK's `client_metadata_url`): it serves that document itself, over
https on 127.0.0.1 with a certificate from a throwaway CA whose certificate it writes to FILE
(the gateway trusts FILE through SSL_CERT_FILE), as a client's own website would.
"""

import asyncio
import json
import os
import sys
import urllib.parse
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

BROWSER = Path(__file__).resolve().parent.parent / "support" / "consent-browser.sh"
STEP = 60


class FileStorage:
    """Registration and tokens in one JSON file (the SDK's TokenStorage protocol)."""

    def __init__(self, path: Path):
        self.path = path

    def _read(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def _write(self, key: str, value: dict) -> None:
        data = self._read()
        data[key] = value
        self.path.write_text(json.dumps(data))

    async def get_tokens(self):
        t = self._read().get("tokens")
        return OAuthToken.model_validate(t) if t else None

    async def set_tokens(self, tokens) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self):
        c = self._read().get("client")
        return OAuthClientInformationFull.model_validate(c) if c else None

    async def set_client_info(self, info) -> None:
        self._write("client", info.model_dump(mode="json", exclude_none=True))


def throwaway_tls(ca_file: Path):
    """A CA (its certificate written to ca_file) and a server certificate for 127.0.0.1 it
    signed, as an ssl.SSLContext."""
    import datetime
    import ipaddress
    import ssl
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    window = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(hours=1))

    def certificate(subject, issuer, key, signer, ca):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(window[0]).not_valid_after(window[1])
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = (builder
                       .add_extension(x509.SubjectAlternativeName(
                           [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                       .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                                      critical=False))
        return builder.sign(signer, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Patchbay e2e client CA")])
    ca = certificate(ca_name, ca_name, ca_key, ca_key, True)
    leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    leaf = certificate(leaf_name, ca_name, leaf_key, ca_key, False)
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pem = tempfile.NamedTemporaryFile(suffix=".pem", delete=False)
    pem.write(leaf.public_bytes(serialization.Encoding.PEM))
    pem.write(leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    pem.close()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem.name)
    os.unlink(pem.name)
    return context


async def serve_document(ca_file: Path, redirect_uri: str, port: int = 0) -> str:
    """The client's metadata document at https://127.0.0.1:PORT/oauth/client.json: its URL."""
    server = None

    async def answer(reader, writer):
        line = (await reader.readline()).decode()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        body = json.dumps({
            "client_id": url, "client_name": "Python SDK e2e (CIMD)",
            "redirect_uris": [redirect_uri], "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none",
        }).encode()
        status = "200 OK" if line.startswith("GET /oauth/client.json ") else "404 Not Found"
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", port, ssl=throwaway_tls(ca_file))
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/oauth/client.json"
    return url


class Callback:
    """The client's loopback redirect URI: one GET with code (or error) and state."""

    def __init__(self):
        self.answer: asyncio.Future = asyncio.get_running_loop().create_future()
        self.browser_runs = 0
        self.browser = None

    async def start(self, port: int = 0) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/callback"

    async def _serve(self, reader, writer):
        line = (await reader.readline()).decode()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        target = line.split(" ")[1] if " " in line else "/"
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query))
        if target.startswith("/callback") and not self.answer.done():
            self.answer.set_result(query)
        body = b"<!doctype html><title>Signed in</title><p>You can close this tab."
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    async def open_browser(self, url: str) -> None:
        self.browser_runs += 1
        self.browser = await asyncio.create_subprocess_exec(str(BROWSER), url)

    async def wait(self) -> AuthorizationCodeResult:
        browser_done = asyncio.ensure_future(self.browser.wait())
        done, _ = await asyncio.wait({self.answer, browser_done}, timeout=STEP,
                                     return_when=asyncio.FIRST_COMPLETED)
        if self.answer not in done:
            if browser_done in done:
                await asyncio.wait({self.answer}, timeout=2)
            if not self.answer.done():
                raise RuntimeError(f"no callback (browser exit {self.browser.returncode})")
        query = self.answer.result()
        await self.browser.wait()
        if "error" in query:
            raise RuntimeError(f"authorization refused: {query['error']}: {query.get('error_description', '')}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


async def main() -> dict:
    url, store = sys.argv[1], Path(sys.argv[2])
    tool = sys.argv[3] if len(sys.argv) > 3 else None
    arguments = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    callback = Callback()
    # A registered client keeps its redirect URI: a later run listens there again.
    saved = await FileStorage(store).get_client_info()
    port = urllib.parse.urlsplit(str(saved.redirect_uris[0])).port if saved and saved.redirect_uris else 0
    redirect_uri = await callback.start(port)
    ca_file = os.environ.get("CLIENT_DOCUMENT_CA")
    # A client id that is a document's URL stays that URL: a later run serves it there again.
    document_port = (urllib.parse.urlsplit(saved.client_id).port or 0
                     if saved and saved.client_id.startswith("https://") else 0)
    document_url = (await serve_document(Path(ca_file), redirect_uri, document_port)
                    if ca_file else None)
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK e2e",
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=FileStorage(store),
        redirect_handler=callback.open_browser,
        callback_handler=callback.wait,
        client_metadata_url=document_url,
    )
    result = {"ok": True}
    async with httpx2.AsyncClient(auth=provider, timeout=STEP) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            listed = await client.list_tools()
            result["tools"] = [t.name for t in listed.tools]
            if tool:
                called = await client.call_tool(tool, arguments)
                result["called"] = " ".join(getattr(c, "text", "") for c in called.content)
                result["is_error"] = bool(called.is_error)
    result["browser_runs"] = callback.browser_runs
    saved = await FileStorage(store).get_client_info()
    result["client_id"] = saved.client_id if saved else None
    return result


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(asyncio.wait_for(main(), 3 * STEP))))
    except BaseException as e:  # noqa: BLE001 - one line for the test, whatever went wrong
        causes, seen = [], e
        while seen is not None:
            causes.append(f"{type(seen).__name__}: {seen}")
            if isinstance(seen, BaseExceptionGroup) and seen.exceptions:
                seen = seen.exceptions[0]
            else:
                seen = seen.__cause__ or seen.__context__
            if len(causes) > 8:
                break
        print(json.dumps({"ok": False, "error": " <- ".join(causes)}))
        sys.exit(1)
