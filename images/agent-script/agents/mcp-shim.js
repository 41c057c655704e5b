'use strict';
// stdio ↔ tool gateway: lets any MCP-capable harness CLI use the platform's tools.
// Configure the CLI with the command `node /opt/tarmac/agents/mcp-shim.js`; it
// forwards stdin to the gateway socket and the socket to stdout, unchanged.
const net = require('node:net');

const path = process.env.TARMAC_GATEWAY_SOCKET || '/tarmac/gateway/gateway.sock';
const socket = net.connect(path);
socket.on('connect', () => {
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
});
socket.on('error', (error) => {
  process.stderr.write(`mcp-shim: cannot reach the tool gateway at ${path}: ${error.message}\n`);
  process.exit(1);
});
socket.on('close', () => process.exit(0));
process.stdin.on('end', () => socket.end());
