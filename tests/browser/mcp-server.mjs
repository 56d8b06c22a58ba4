// A small MCP server guarded by Gatehouse, built with the TypeScript MCP SDK's server side only:
// streamable HTTP (stateless), the SDK's bearer middleware with a token verifier that asks
// Gatehouse's introspection (RFC 7662) as a confidential client, and its own protected resource
// metadata (RFC 9728) naming Gatehouse as its authorization server. One tool, `list_contacts`,
// answers the person's contacts, read from Gatehouse's business API.
//
// Used by mcp.mjs (which runs it in the same process); tests/api/relying_parties/mcp.rs registers
// the introspection client and lists the server's URL in GATEHOUSE_OAUTH_RESOURCES.
import { once } from "node:events";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";

export const SCOPE = "contacts:read";

/**
 * Starts the server on 127.0.0.1:`port`; its resource (RFC 8707, RFC 9728) is
 * `http://127.0.0.1:PORT/mcp`. `gatehouse`: the issuer URL; `introspector`: `{clientId,
 * clientSecret}` of a confidential client. Returns `{url, metadataUrl, close}`.
 */
export async function startMcpServer({ port, gatehouse, introspector }) {
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  // RFC 8414 metadata of the authorization server, which the SDK's metadata router also serves
  // (older clients look for it at the resource).
  const discovery = await fetch(new URL("/.well-known/oauth-authorization-server", gatehouse));
  if (!discovery.ok) throw new Error(`Gatehouse's RFC 8414 metadata: ${discovery.status}`);
  const oauthMetadata = await discovery.json();

  const verifier = {
    // RFC 7662, client_secret_basic. Gatehouse answers the token's claims with its current
    // account; the SDK's middleware then checks `aud` (expectedResource), scope and expiry.
    async verifyAccessToken(token) {
      const enc = encodeURIComponent;
      const basic = Buffer.from(`${enc(introspector.clientId)}:${enc(introspector.clientSecret)}`).toString("base64");
      const response = await fetch(oauthMetadata.introspection_endpoint, {
        method: "POST",
        headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token }),
      });
      if (!response.ok) throw new Error(`introspection answered ${response.status}`);
      const answer = await response.json();
      if (!answer.active) throw new InvalidTokenError("the token is not active");
      return {
        token,
        clientId: answer.client_id,
        scopes: (answer.scope ?? "").split(" ").filter(Boolean),
        expiresAt: answer.exp,
        // `aud` may be no URL at all (GATEHOUSE_AUDIENCE is `gatehouse-api` by default): then
        // it is not this server, and the middleware refuses it as for any other.
        resource: URL.canParse(answer.aud ?? "") ? new URL(answer.aud) : undefined,
        extra: { sub: answer.sub },
      };
    },
  };

  const app = createMcpExpressApp({ host: "127.0.0.1" });
  app.use(
    mcpAuthMetadataRouter({
      oauthMetadata,
      resourceServerUrl: url,
      scopesSupported: [SCOPE],
      resourceName: "Contacts (MCP test server)",
    }),
  );
  const guard = requireBearerAuth({
    verifier,
    requiredScopes: [SCOPE],
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(url),
    expectedResource: url,
  });

  // Stateless: a server and a transport per request, as the SDK's stateless example does.
  app.post("/mcp", guard, async (req, res) => {
    const server = new McpServer({ name: "gatehouse-contacts", version: "1.0.0" });
    server.registerTool(
      "list_contacts",
      { description: "The signed-in person's contacts in Gatehouse" },
      async (extra) => {
        // The token was checked above: for this server (aud), with contacts:read, live.
        // Gatehouse's business API honours tokens for the resource servers it lists.
        const response = await fetch(new URL("/api/v1/crm/contacts", gatehouse), {
          headers: { authorization: `Bearer ${extra.authInfo.token}` },
        });
        const body = await response.json();
        if (!body.success) {
          return { isError: true, content: [{ type: "text", text: `Gatehouse: ${response.status} ${JSON.stringify(body)}` }] };
        }
        const contacts = body.data.items.map((c) => ({ name: c.fullName, email: c.email }));
        return { content: [{ type: "text", text: JSON.stringify(contacts) }] };
      },
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  // A stateless server has no stream to resume and no session to end.
  for (const method of ["get", "delete"]) {
    app[method]("/mcp", (_req, res) => res.status(405).set("allow", "POST").end());
  }

  const listener = app.listen(port, "127.0.0.1");
  await once(listener, "listening");
  return {
    url,
    metadataUrl: getOAuthProtectedResourceMetadataUrl(url),
    close: () => new Promise((resolve) => listener.close(resolve)),
  };
}
