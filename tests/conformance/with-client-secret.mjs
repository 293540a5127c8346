// A loopback pass-through in front of Patchbay's gateway for the framework's server scenarios,
// whose runner cannot send a header of ours: it adds the gateway client's secret
// (X-Patchbay-Client, so a client's own Authorization is left as it was) and changes nothing
// else but a loopback Host's port (this port for the gateway's): a foreign Host or Origin goes
// through as sent (the DNS-rebinding scenario sends them on purpose). Bodies stream both ways
// unbuffered (SSE).
// Usage: node with-client-secret.mjs LISTEN_PORT GATEWAY_PORT, the secret in PATCHBAY_GW_SECRET.
import http from 'node:http';

const [listen, target] = process.argv.slice(2).map(Number);
const secret = process.env.PATCHBAY_GW_SECRET;
if (!listen || !target || !secret) {
  console.error('usage: PATCHBAY_GW_SECRET=pbgw_... node with-client-secret.mjs LISTEN GATEWAY');
  process.exit(2);
}

const loopbackHost = new RegExp(`^(localhost|127\\.0\\.0\\.1|\\[::1\\]):${listen}$`, 'i');

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, 'x-patchbay-client': secret };
  if (headers.host && loopbackHost.test(headers.host))
    headers.host = headers.host.replace(/:\d+$/, `:${target}`);
  const upstream = http.request(
    {
      host: '127.0.0.1',
      port: target,
      method: req.method,
      path: req.url,
      headers
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
      answer.pipe(res);
    }
  );
  upstream.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`gateway unreachable: ${e.message}`);
  });
  req.pipe(upstream);
  res.on('close', () => upstream.destroy());
});
server.listen(listen, '127.0.0.1', () => console.error(`forwarding 127.0.0.1:${listen} to the gateway on ${target}`));
