// The conformance suite's server scenarios send no headers of their own, and
// `gatehouse serve --http` has no unauthenticated mode: this proxy stands in for a configured
// AI client by adding that client's bearer token to every request. Nothing else changes.
// Host and Origin naming the proxy itself are rewritten to name the gateway (as if the suite
// had connected to it directly); any other Host or Origin (the DNS-rebinding scenario's
// evil.example.com) passes unchanged, so the gateway's own checks answer it. Streams (SSE)
// pass through as they come, and a client that goes away closes its upstream request.
//
// Usage: node bearer-proxy.mjs GATEWAY_URL   (the token in GATEWAY_TOKEN)
// Prints `listening on http://127.0.0.1:PORT/mcp` once it listens. Test harness only.
import http from "node:http";

const target = new URL(process.argv[2] ?? "");
const token = process.env.GATEWAY_TOKEN;
if (!token) {
  console.error("bearer-proxy: GATEWAY_TOKEN is not set");
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const own = `127.0.0.1:${server.address().port}`;
  const ownLocal = `localhost:${server.address().port}`;
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  if (headers.host === own) headers.host = target.host;
  if (headers.host === ownLocal) headers.host = `localhost:${target.port}`;
  if (headers.origin === `http://${own}`) headers.origin = target.origin;
  if (headers.origin === `http://${ownLocal}`) headers.origin = `http://localhost:${target.port}`;
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (error) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`bearer-proxy: ${error.message}\n`);
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}${target.pathname}`);
});
