// A real MCP client against an MCP server guarded by Gatehouse, both from the TypeScript MCP SDK
// (@modelcontextprotocol/sdk): the client's first call is refused (401), and the SDK finds its
// way on its own: the server's protected resource metadata (RFC 9728), Gatehouse's authorization
// server metadata (RFC 8414, S256 PKCE), registration, the authorization request with `resource`
// = the server (RFC 8707), the code exchange; then the tool call answers the person's contacts.
// The person's part is played here without a browser: signed in through the API, their consent
// given through the authorization page's own call (`POST /api/v1/oauth2/authorize`), and the code
// handed to the SDK as its redirect handler would. Withdrawing the consent (`DELETE
// /api/v1/auth/consents/{clientId}`) makes the next tool call fail within 2 s.
//
// Environment (tests/api/relying_parties/mcp.rs): GATEHOUSE_URL (the issuer), GATEHOUSE_EMAIL,
// GATEHOUSE_PASSWORD, MCP_PORT (the server's port; Gatehouse lists http://127.0.0.1:PORT/mcp in
// GATEHOUSE_OAUTH_RESOURCES), MCP_INTROSPECTOR (JSON {clientId, clientSecret}), MCP_REDIRECT_URI,
// MCP_CONTACTS (JSON: the names the tool must answer), MCP_REGISTRATION: `dcr` (RFC 7591),
// `metadata-document` (a client ID metadata document served here on loopback) or `client:ID` (a
// client registered by the operator).
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { once } from "node:events";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

import { SCOPE, startMcpServer } from "./mcp-server.mjs";
import { api as gatehouseApi, assert, env } from "./relying.mjs";

const GATEHOUSE = env("GATEHOUSE_URL");
const EMAIL = env("GATEHOUSE_EMAIL");
const PASSWORD = env("GATEHOUSE_PASSWORD");
const REDIRECT_URI = env("MCP_REDIRECT_URI");
const CONTACTS = JSON.parse(env("MCP_CONTACTS"));
const REGISTRATION = env("MCP_REGISTRATION");
const CLIENT_NAME = `MCP test client (${REGISTRATION.startsWith("client:") ? "registered" : REGISTRATION})`;

const step = (what) => console.log(`mcp ${REGISTRATION}: ${what}`);

/** An enveloped Gatehouse API call; returns `data`, or throws with the error. */
const api = (method, path, token, body) => gatehouseApi(GATEHOUSE, method, path, token, body);

/** The claims of a JWT, unverified (the server's introspection is what checks it). */
const claims = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());

/** A client ID metadata document on loopback: `http://127.0.0.1:PORT/clients/mcp.json`. */
async function serveMetadataDocument() {
  let url;
  let fetched = 0;
  const server = createServer((req, res) => {
    if (req.url !== "/clients/mcp.json") return res.writeHead(404).end();
    fetched += 1;
    res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=60" });
    res.end(
      JSON.stringify({
        client_id: url,
        client_name: CLIENT_NAME,
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        scope: SCOPE,
      }),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${server.address().port}/clients/mcp.json`;
  return { url, fetched: () => fetched, close: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * The SDK's OAuthClientProvider, kept in memory. `redirectToAuthorization` only records the URL:
 * the person's part is played by `consent` below.
 */
class Provider {
  constructor(clientInformation) {
    this.client = clientInformation;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata() {
    return {
      client_name: CLIENT_NAME,
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      scope: SCOPE,
    };
  }
  state() {
    this.sentState = randomUUID();
    return this.sentState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(information) {
    this.client = information;
  }
  tokens() {
    return this.savedTokens;
  }
  saveTokens(tokens) {
    this.savedTokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = new URL(url);
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") this.savedTokens = undefined;
  }
}

/**
 * What the authorization page does for the person: the authorization URL's query as `POST
 * /api/v1/oauth2/authorize`, consent asked (the client's name, the scope) and given. Returns the
 * code of the redirect.
 */
async function consent(person, url, provider) {
  const q = url.searchParams;
  const body = {
    clientId: q.get("client_id"),
    redirectUri: q.get("redirect_uri"),
    scope: q.get("scope"),
    state: q.get("state"),
    codeChallenge: q.get("code_challenge"),
    codeChallengeMethod: q.get("code_challenge_method"),
    resource: q.get("resource"),
  };
  const asked = await api("POST", "/api/v1/oauth2/authorize", person, body);
  assert(asked.consentRequired === true, `consent was not asked: ${JSON.stringify(asked)}`);
  assert(asked.client.name === CLIENT_NAME && asked.client.firstParty === false, `the client shown: ${JSON.stringify(asked.client)}`);
  assert(JSON.stringify(asked.scopes) === JSON.stringify([SCOPE]), `the scopes asked: ${JSON.stringify(asked.scopes)}`);
  const { redirectTo } = await api("POST", "/api/v1/oauth2/authorize", person, { ...body, consent: true });
  const back = new URL(redirectTo);
  assert(redirectTo.startsWith(REDIRECT_URI), `redirected to ${redirectTo}`);
  assert(back.searchParams.get("state") === provider.sentState, `state ${back.searchParams.get("state")}`);
  assert(back.searchParams.get("iss") === GATEHOUSE, `iss ${back.searchParams.get("iss")}`);
  const code = back.searchParams.get("code");
  assert(code, `no code: ${redirectTo}`);
  return code;
}

/** The contacts' names in a `list_contacts` answer, or throws with what came back. */
function names(result) {
  assert(!result.isError, `the tool failed: ${JSON.stringify(result)}`);
  return JSON.parse(result.content[0].text).map((c) => c.name).sort();
}

const server = await startMcpServer({
  port: Number(env("MCP_PORT")),
  gatehouse: GATEHOUSE,
  introspector: JSON.parse(env("MCP_INTROSPECTOR")),
});
const document = REGISTRATION === "metadata-document" ? await serveMetadataDocument() : undefined;
try {
  const person = (await api("POST", "/api/v1/auth/login", null, { email: EMAIL, password: PASSWORD })).accessToken;

  // The server takes only tokens for itself: the person's own (aud GATEHOUSE_AUDIENCE, live at
  // introspection) is refused, with the challenge that leads a client to the metadata.
  const foreign = await fetch(server.url, {
    method: "POST",
    headers: { authorization: `Bearer ${person}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert(foreign.status === 401, `a token for another audience: ${foreign.status}`);
  const challenge = foreign.headers.get("www-authenticate") ?? "";
  assert(challenge.includes(`resource_metadata="${server.metadataUrl}"`), `challenge ${challenge}`);

  // Every request the SDK makes, in order, to show it found its own way.
  const seen = [];
  const recording = async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : input);
    seen.push(`${init?.method ?? "GET"} ${url.origin === GATEHOUSE ? "gatehouse" : "mcp"}${url.pathname} ${response.status}`);
    return response;
  };
  const initial = REGISTRATION.startsWith("client:")
    ? { client_id: REGISTRATION.slice("client:".length) }
    : REGISTRATION === "metadata-document"
      ? // The SDK takes a client ID metadata document URL only over https (`clientMetadataUrl`);
        // the loopback http one Gatehouse fetches in tests is handed over as the client's id.
        { client_id: document.url }
      : undefined;
  const provider = new Provider(initial);
  const newClient = () => new Client({ name: "gatehouse-mcp-test", version: "1.0.0" });
  const transport = () => new StreamableHTTPClientTransport(server.url, { authProvider: provider, fetch: recording });

  const first = transport();
  const refused = await newClient().connect(first).then(
    () => null,
    (e) => e,
  );
  assert(refused instanceof UnauthorizedError, `the first connection was not refused for authorization: ${refused?.stack ?? "it succeeded"}`);
  step(`first connection refused; the SDK asked: ${seen.join(", ")}`);
  assert(seen[0] === "POST mcp/mcp 401", `the first request: ${seen[0]}`);
  assert(seen.includes("GET mcp/.well-known/oauth-protected-resource/mcp 200"), "no RFC 9728 metadata fetched");
  assert(seen.includes("GET gatehouse/.well-known/oauth-authorization-server 200"), "no RFC 8414 metadata fetched from Gatehouse");
  if (REGISTRATION === "dcr") {
    assert(seen.includes("POST gatehouse/oauth2/register 201"), "no dynamic registration");
    assert(provider.client?.client_id && !provider.client.client_secret, `registered: ${JSON.stringify(provider.client)}`);
  }

  const url = provider.authorizationUrl;
  assert(url && url.href.startsWith(`${GATEHOUSE}/oauth2/authorize?`), `authorization URL ${url}`);
  assert(url.searchParams.get("resource") === server.url.href, `resource ${url.searchParams.get("resource")}`);
  assert(url.searchParams.get("code_challenge_method") === "S256", "no S256 PKCE");
  assert(url.searchParams.get("scope") === SCOPE, `scope ${url.searchParams.get("scope")}`);
  const clientId = url.searchParams.get("client_id");
  if (document) assert(clientId === document.url, `client_id ${clientId}`);
  const code = await consent(person, url, provider);
  await first.finishAuth(code);
  const token = provider.savedTokens?.access_token;
  assert(token, "no access token saved");
  const c = claims(token);
  assert(c.aud === server.url.href, `aud ${c.aud}`);
  assert(c.scope === SCOPE, `scope ${c.scope}`);
  assert(c.client_id === provider.client.client_id, `client_id ${c.client_id}, not ${provider.client.client_id}`);
  if (document) assert(document.fetched() > 0, "Gatehouse never fetched the metadata document");
  step(`authorized: aud ${c.aud}, scope ${c.scope}`);

  // A new connection with the tokens, as the SDK's examples reconnect after finishAuth.
  const client = newClient();
  await client.connect(transport());
  const tools = (await client.listTools()).tools.map((t) => t.name);
  assert(JSON.stringify(tools) === JSON.stringify(["list_contacts"]), `tools ${tools}`);
  const got = names(await client.callTool({ name: "list_contacts", arguments: {} }));
  assert(JSON.stringify(got) === JSON.stringify([...CONTACTS].sort()), `contacts ${got}`);
  step(`list_contacts answered ${got.join(", ")}`);

  // The consent withdrawn: the client's sessions end, introspection stops answering the token,
  // and the SDK, refused, starts a new authorization.
  const consents = (await api("GET", "/api/v1/auth/consents", person)).items;
  const given = consents.find((item) => item.clientName === CLIENT_NAME);
  assert(given, `no consent listed for ${CLIENT_NAME}: ${JSON.stringify(consents)}`);
  provider.authorizationUrl = undefined;
  await api("DELETE", `/api/v1/auth/consents/${encodeURIComponent(given.clientId)}`, person);
  const withdrawn = Date.now();
  let failure;
  while (!failure) {
    failure = await client.callTool({ name: "list_contacts", arguments: {} }).then(
      (result) => (result.isError ? new Error(result.content[0].text) : undefined),
      (e) => e,
    );
    if (!failure) {
      assert(Date.now() - withdrawn < 2000, "the tool still answered 2 s after the consent was withdrawn");
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  assert(failure instanceof UnauthorizedError, `the tool call failed otherwise: ${failure?.stack ?? failure}`);
  assert(provider.authorizationUrl, "the SDK did not start a new authorization");
  step(`refused ${Date.now() - withdrawn} ms after the consent was withdrawn`);
  await client.close();
  step("ok");
} finally {
  await server.close();
  await document?.close();
}
