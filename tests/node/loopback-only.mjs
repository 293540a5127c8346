// Imported first by sdk-oauth-server.mjs (the end-to-end tests' peer): a server that
// listens on a bare port (as the SDK's examples do) binds 127.0.0.1 instead of every interface.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const barePort = typeof port === 'number' || (typeof port === 'string' && /^\d+$/.test(port));
  if (barePort && (args.length === 1 || typeof args[1] === 'function')) {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
