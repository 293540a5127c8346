// Loaded with `node --import ./record-issued.mjs` into the loopback authorization servers the
// end-to-end tests run (the SDK's examples, oidc-provider, node-oauth2-server) when
// PATCHBAY_E2E_ISSUED names a file: every secret that crosses the server's HTTP edge is appended
// there as one JSON line {"label", "value"}, so tests/src/secret_scan.rs knows what to look for
// in Patchbay's files and output without trusting Patchbay to say what it was given.
// Read passively: responses are seen as they are written, request bodies as their 'data' events
// go by; nothing the server does changes.
import http from 'node:http';
import { appendFileSync } from 'node:fs';

const file = process.env.PATCHBAY_E2E_ISSUED;
const seen = new Set();

function record(label, value) {
  if (!file || typeof value !== 'string') return;
  // Shorter values are not secrets worth a hit (and would match by chance).
  if (value.length < 8 || seen.has(value)) return;
  seen.add(value);
  appendFileSync(file, `${JSON.stringify({ label, value })}\n`);
}

// Issued in answers: tokens, client secrets (dynamic registration), and in redirects: codes.
const ANSWER_FIELDS = ['access_token', 'refresh_token', 'id_token', 'client_secret', 'registration_access_token'];
// Presented in requests: what the client proves itself with.
const REQUEST_FIELDS = ['code_verifier', 'client_secret', 'code', 'refresh_token', 'access_token', 'token'];

function fromJsonText(text, fields, side) {
  for (const field of fields) {
    const re = new RegExp(`"${field}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)"`, 'g');
    for (const m of text.matchAll(re)) {
      try {
        record(`${side} ${field}`, JSON.parse(`"${m[1]}"`));
      } catch {
        // Not a JSON string after all.
      }
    }
  }
}

function fromForm(text, fields, side) {
  let params;
  try {
    params = new URLSearchParams(text);
  } catch {
    return;
  }
  for (const field of fields) {
    for (const value of params.getAll(field)) record(`${side} ${field}`, value);
  }
}

function fromLocation(location) {
  if (typeof location !== 'string') return;
  try {
    const url = new URL(location, 'http://localhost/');
    for (const value of url.searchParams.getAll('code')) record('authorization code', value);
  } catch {
    // Not a URL.
  }
}

function headerValue(headers, name) {
  if (!headers || typeof headers !== 'object') return undefined;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === name) return headers[i + 1];
    }
    return undefined;
  }
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}

const res = http.ServerResponse.prototype;
const { write, end, writeHead } = res;
function keep(self, chunk, encoding) {
  if (chunk == null || typeof chunk === 'function') return;
  const text = Buffer.isBuffer(chunk) || chunk instanceof Uint8Array
    ? Buffer.from(chunk).toString('utf8')
    : String(chunk);
  // Bounded: a long event stream is not a token answer.
  if ((self.__pbBody ?? '').length < 1 << 20) self.__pbBody = (self.__pbBody ?? '') + text;
}
res.write = function (chunk, encoding, cb) {
  keep(this, chunk, encoding);
  return write.call(this, chunk, encoding, cb);
};
res.writeHead = function (status, ...rest) {
  const headers = rest.find((r) => r && typeof r === 'object');
  fromLocation(headerValue(headers, 'location'));
  return writeHead.call(this, status, ...rest);
};
res.end = function (chunk, encoding, cb) {
  keep(this, chunk, encoding);
  try {
    fromLocation(this.getHeader('location'));
    if (this.__pbBody) {
      fromJsonText(this.__pbBody, ANSWER_FIELDS, 'issued');
      fromForm(this.__pbBody.includes('=') && !this.__pbBody.includes('<') ? this.__pbBody : '', ANSWER_FIELDS, 'issued');
    }
  } catch {
    // Recording never breaks the server.
  }
  return end.call(this, chunk, encoding, cb);
};

const req = http.IncomingMessage.prototype;
const emit = req.emit;
req.emit = function (event, chunk, ...rest) {
  try {
    if (event === 'data' && chunk != null && (this.__pbBody ?? '').length < 1 << 20) {
      this.__pbBody = (this.__pbBody ?? '') + Buffer.from(chunk).toString('utf8');
    } else if (event === 'end') {
      const body = this.__pbBody ?? '';
      fromJsonText(body, REQUEST_FIELDS, 'presented');
      fromForm(body, REQUEST_FIELDS, 'presented');
      // A client secret sent as HTTP Basic (RFC 6749 2.3.1: form-encoded, then base64).
      const auth = this.headers?.authorization;
      if (typeof auth === 'string' && /^basic /i.test(auth)) {
        const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon >= 0) {
          const secret = decoded.slice(colon + 1);
          try {
            record('presented client_secret (Basic)', decodeURIComponent(secret.replace(/\+/g, ' ')));
          } catch {
            record('presented client_secret (Basic)', secret);
          }
        }
      }
    }
  } catch {
    // Recording never breaks the server.
  }
  return emit.call(this, event, chunk, ...rest);
};
