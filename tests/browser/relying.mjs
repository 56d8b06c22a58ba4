// What the relying-party scripts (oidc-rp.mjs, oidc-dcr.mjs, mcp.mjs) share: their settings from
// the environment, a plain assert, and Gatehouse's enveloped API. Apart from common.mjs, which
// starts Chromium's driver and wants the browser tests' settings; these scripts run no browser.

/** The environment variable `name`; the Rust test that runs the script sets each. */
export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (tests/api/relying_parties sets it)`);
  return value;
}

export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

/** An enveloped Gatehouse API call at `base`; returns `data`, or throws with the error. */
export async function api(base, method, path, token, body) {
  const response = await fetch(new URL(path, base), {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const answer = await response.json();
  if (!answer.success) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer.data;
}
