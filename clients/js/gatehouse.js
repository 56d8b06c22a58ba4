// Gatehouse browser client: sign-in (password, second factor, passkeys), tokens kept and refreshed,
// the self-service calls, an authenticated fetch for the application's own API, typed errors. One
// ES module without dependencies; runs in browsers and in Node 20 or newer. The README beside this
// file documents every method and why the tokens live where they do; gatehouse.d.ts types them.

const API_PREFIX = "/api/v1";
// A refresh that hangs would hold the cross-tab lock and stall every tab: give up after this.
const REFRESH_TIMEOUT_MS = 30_000;
// Cross-tab refresh (see #lockedRotate): how long a tab that waited for another tab's refresh
// watches for its tokens before refreshing itself, and how long a tab that rotated keeps the lock.
const ROTATION_VISIBLE_MS = 2_000;
const LOCK_HOLD_AFTER_ROTATION_MS = 250;

/** Every failure the library reports: an error answer of the service, or one made here. */
export class GatehouseError extends Error {
  /**
   * @param {string} message human sentence
   * @param {{status?: number, code?: string, details?: object, cause?: unknown}} [info]
   *   status: the HTTP status (0 when no answer came); code: the envelope's `code`, or one of
   *   NETWORK_ERROR, BAD_RESPONSE, NOT_SIGNED_IN, ORIGIN_NOT_ALLOWED, TEMP_TOKEN_INVALID,
   *   PASSKEY_UNSUPPORTED, PASSKEY_CANCELLED, PASSKEY_ALREADY_REGISTERED made by the library;
   *   details: the envelope's `details` ({} when none).
   */
  constructor(message, { status = 0, code = "UNKNOWN_ERROR", details = {}, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "GatehouseError";
    this.status = status;
    this.code = code;
    this.details = details ?? {};
  }
}

/** Storage for runtimes without localStorage (Node): this tab only, gone with the process. */
class MemoryStorage {
  #items = new Map();
  getItem(key) {
    return this.#items.has(key) ? this.#items.get(key) : null;
  }
  setItem(key, value) {
    this.#items.set(key, String(value));
  }
  removeItem(key) {
    this.#items.delete(key);
  }
}

function defaultStorage() {
  try {
    // Reading localStorage throws where the browser forbids storage (blocked cookies, some
    // sandboxed frames): the library then still works, for this page only.
    return globalThis.localStorage ?? new MemoryStorage();
  } catch {
    return new MemoryStorage();
  }
}

export class Gatehouse {
  #baseUrl;
  #storage;
  #locks;
  #fetch;
  #key;
  #marginMs;
  #apiOrigins;
  #listeners = new Set();
  #storageListener = null;
  #refreshing = null; // the refresh in flight in this tab, shared by every caller
  #tempToken = null; // a pending 2FA challenge; in memory only, never stored

  constructor({
    baseUrl = "",
    storage = defaultStorage(),
    locks = globalThis.navigator?.locks,
    fetch = globalThis.fetch,
    key = "gatehouse",
    refreshMarginSeconds = 60,
    apiOrigins = [],
  } = {}) {
    if (typeof fetch !== "function") {
      throw new TypeError("Gatehouse needs a fetch function (global fetch or the `fetch` option)");
    }
    this.#baseUrl = String(baseUrl).replace(/\/+$/, "");
    this.#storage = storage ?? new MemoryStorage();
    this.#locks = locks;
    // Called unbound: browsers refuse window.fetch invoked with another `this`.
    this.#fetch = (input, init) => fetch(input, init);
    this.#key = key;
    this.#marginMs = Math.max(0, Number(refreshMarginSeconds) || 0) * 1000;
    this.#apiOrigins = new Set([...apiOrigins].map(exactOrigin));
  }

  /** The signed-in user `{id, email, fullName}`, or null. */
  get user() {
    return this.#read()?.user ?? null;
  }

  get signedIn() {
    return this.#read() !== null;
  }

  /** Whether a password login is waiting for its second factor (verifyTwoFactor). */
  get twoFactorPending() {
    return this.#tempToken !== null;
  }

  /**
   * Password login. Resolves to `{twoFactorRequired: false, user}` when signed in, or
   * `{twoFactorRequired: true}` when the account has 2FA: then call verifyTwoFactor(code) (or
   * verifyTwoFactorWithPasskey()).
   */
  async login(email, password) {
    this.#tempToken = null;
    const data = await this.request("POST", "/auth/login", { email, password }, { auth: false });
    if (data?.requiresTwoFactor) {
      this.#tempToken = data.tempToken;
      return { twoFactorRequired: true };
    }
    return { twoFactorRequired: false, user: this.#signIn(data) };
  }

  /**
   * An invited account's first password (the mailed link's token); signs in, → the user. For an
   * organisation's invitation to an address without an account, this makes the account (named
   * `fullName`, else the address's local part) and its membership; for an address with an
   * account it fails with EMAIL_TAKEN: sign in and call acceptOrgInvitation(token).
   */
  async acceptInvitation(token, password, fullName) {
    const body = fullName ? { token, password, fullName } : { token, password };
    const data = await this.request("POST", "/auth/invitations/accept", body, { auth: false });
    return this.#signIn(data);
  }

  /**
   * Signs in with a token set answered by a call this library does not wrap (the `data` of a
   * login, 2FA verify, refresh or invitation acceptance); → the user.
   */
  useTokenSet(tokenSet) {
    this.#tempToken = null;
    return this.#signIn(tokenSet);
  }

  // ---- other identity providers (docs/api.md §14) ----

  /**
   * The identity providers people may sign in with → `[{id, name, available, domains}]`. A
   * provider's sign-in starts by sending the browser to `providerSignInUrl(id, returnTo)`.
   */
  async listProviders() {
    return (await this.request("GET", "/auth/providers", undefined, { auth: false })).items;
  }

  /**
   * Where to send the browser to sign in with provider `id`; it comes back to the service's
   * `/sign-in` page, which calls finishProviderSignIn(), then goes on to `returnTo`.
   */
  providerSignInUrl(id, returnTo, loginHint) {
    const query = new URLSearchParams();
    if (returnTo) query.set("return_to", returnTo);
    if (loginHint) query.set("login_hint", loginHint);
    const tail = query.size ? `?${query}` : "";
    return `${this.#baseUrl}/auth/providers/${encodeURIComponent(id)}/start${tail}`;
  }

  /**
   * Collects the sign-in a provider's callback finished in this browser (once): resolves as
   * login() does, `{twoFactorRequired: true}` when the account asks for its second factor.
   */
  async finishProviderSignIn() {
    this.#tempToken = null;
    const data = await this.request("POST", "/auth/providers/finish", undefined, { auth: false });
    if (data?.requiresTwoFactor) {
      this.#tempToken = data.tempToken;
      return { twoFactorRequired: true };
    }
    return { twoFactorRequired: false, user: this.#signIn(data) };
  }

  /** The signed-in account's linked identities → `[{providerId, providerName, subject, email, linkedAt, lastUsedAt}]`. */
  async listIdentities() {
    return (await this.request("GET", "/auth/identities")).items;
  }

  /**
   * Starts linking an identity of provider `providerId` to the signed-in account (the password
   * is re-checked; it may be left out while the session is re-authenticated) → the URL to send
   * the browser to; it comes back to `/account`.
   */
  async linkIdentity(providerId, password) {
    const body = password ? { providerId, password } : { providerId };
    return (await this.request("POST", "/auth/identities/start", body)).redirectTo;
  }

  /**
   * Re-authenticates this session through its identity at `providerId` (docs/api.md §3, §14: the
   * way an account without a password confirms it is its owner) → the URL to send the browser to;
   * it comes back to `/account?reauthenticated=<id>` with the 5-minute window open.
   */
  async reauthenticateWithProvider(providerId) {
    return (await this.request("POST", "/auth/reauthenticate/provider", { providerId })).redirectTo;
  }

  /** Unlinks the account's identity at `providerId` (refused when it is the last way in). */
  async unlinkIdentity(providerId) {
    await this.request("DELETE", `/auth/identities/${encodeURIComponent(providerId)}`);
  }

  /** Finishes a 2FA login with a TOTP code or a recovery code; resolves to the user. */
  async verifyTwoFactor(code) {
    const tempToken = this.#pendingChallenge();
    try {
      const data = await this.request(
        "POST",
        "/auth/2fa/verify",
        { tempToken, code },
        { auth: false },
      );
      this.#tempToken = null;
      return this.#signIn(data);
    } catch (error) {
      // A wrong code may be retried with the same challenge; a dead challenge may not.
      if (error.code === "TEMP_TOKEN_INVALID") this.#tempToken = null;
      throw error;
    }
  }

  /** Finishes a 2FA login with a passkey instead of a code; resolves to the user. */
  async verifyTwoFactorWithPasskey() {
    const tempToken = this.#pendingChallenge();
    try {
      const user = await this.#passkeyCeremony({ tempToken });
      this.#tempToken = null;
      return user;
    } catch (error) {
      if (error.code === "TEMP_TOKEN_INVALID") this.#tempToken = null;
      throw error;
    }
  }

  /**
   * Passkey sign-in. With `email`, the account's passkeys are offered; without, the browser
   * offers the discoverable passkeys it holds for this site. Resolves to the user.
   */
  async passkeyLogin(email) {
    return this.#passkeyCeremony(email ? { email } : {});
  }

  /** Adds a passkey to the signed-in account (the password is re-checked); resolves to it. */
  async registerPasskey(password, name) {
    const credentials = webAuthn();
    const start = await this.request("POST", "/auth/passkeys/register/start", { password });
    const credential = await callAuthenticator(() =>
      credentials.create({ publicKey: creationOptions(start.options) }),
    );
    const body = { ceremonyId: start.ceremonyId, credential: credentialJson(credential) };
    if (name !== undefined && name !== null && name !== "") body.name = name;
    return this.request("POST", "/auth/passkeys/register/finish", body);
  }

  /**
   * Re-authenticates this session with one of the account's passkeys instead of the password
   * (docs/api.md §3): for 5 minutes the calls that re-check the password take none. Resolves to
   * `reauthenticatedUntil` (RFC 3339).
   */
  async reauthenticateWithPasskey() {
    const credentials = webAuthn();
    const start = await this.request("POST", "/auth/reauthenticate/passkey/start", {});
    const credential = await callAuthenticator(() =>
      credentials.get({ publicKey: requestOptions(start.options) }),
    );
    const body = { ceremonyId: start.ceremonyId, credential: credentialJson(credential) };
    const data = await this.request("POST", "/auth/reauthenticate/passkey/finish", body);
    return data.reauthenticatedUntil;
  }

  /**
   * A JSON call to Gatehouse's API; resolves to the envelope's `data`, rejects with
   * GatehouseError. `path` is relative to `/api/v1` (`"/auth/me"`); one starting with `/api/` is
   * used as is. With `auth` (the default) the call carries the access token, refreshed first when
   * it expires within refreshMarginSeconds, and refreshed once more, the call then retried once,
   * when the service answers 401 TOKEN_EXPIRED (or TOKEN_INVALID: the session may have been
   * revoked). For the application's own API, which answers without Gatehouse's envelope, use
   * fetch().
   */
  async request(method, path, body, { auth = true, signal } = {}) {
    if (!auth) return this.#send(method, path, body, null, signal);
    let session = await this.#freshSession();
    try {
      return await this.#send(method, path, body, session.accessToken, signal);
    } catch (error) {
      if (error.status !== 401 || !["TOKEN_EXPIRED", "TOKEN_INVALID"].includes(error.code)) {
        throw error;
      }
      session = await this.#refreshFrom(session.refreshToken);
      return this.#send(method, path, body, session.accessToken, signal);
    }
  }

  /**
   * An access token good for a while yet: the stored one, or a new one when it expires within
   * refreshMarginSeconds (one refresh in flight across calls and tabs, as for request()).
   */
  async getAccessToken() {
    return (await this.#freshSession()).accessToken;
  }

  /**
   * `fetch(input, init)` with the access token as a bearer, for the application's own API: a URL
   * of this page's origin, of Gatehouse's (baseUrl) or of one listed in `apiOrigins`; any other
   * is refused (ORIGIN_NOT_ALLOWED) before anything is sent. The token is refreshed first when
   * it expires within the margin; on a 401 it is refreshed once and the request sent once more.
   * Resolves to the Response as it came (any status, any body); rejects with GatehouseError
   * (NOT_SIGNED_IN, ORIGIN_NOT_ALLOWED, NETWORK_ERROR, a refused refresh's code), or with the
   * signal's reason when `init.signal` aborts, as fetch does.
   */
  async fetch(input, init) {
    init = init ?? {};
    const request = typeof Request === "function" && input instanceof Request ? input : null;
    const url = this.#apiUrl(request ? request.url : input);
    let session = await this.#freshSession();
    // A Request's body can be read once: each attempt sends a copy. A stream given as
    // init.body cannot be copied, so that call is not sent twice (its 401 is handed back).
    const template = request ? new Request(request, init) : null;
    const retryable = template !== null || !isStream(init.body);
    const attempt = (token) => {
      if (template) {
        const copy = template.clone();
        copy.headers.set("Authorization", `Bearer ${token}`);
        return this.#fetchRaw(copy);
      }
      const headers = new Headers(init.headers);
      headers.set("Authorization", `Bearer ${token}`);
      return this.#fetchRaw(url.href, { ...init, headers });
    };
    const response = await attempt(session.accessToken);
    if (response.status !== 401 || !retryable) return response;
    // Whatever the 401 says (the application's API may answer it in any form): one refresh, or
    // the tokens another tab or call rotated meanwhile, and one more try.
    await response.body?.cancel().catch(() => {});
    session = await this.#refreshFrom(session.refreshToken);
    return attempt(session.accessToken);
  }

  /**
   * Rotates the tokens now; resolves to the user. One refresh is in flight at a time in this tab
   * (callers share it) and, with Web Locks, across tabs: inside the lock the stored tokens are
   * read again, and when another tab rotated them meanwhile those are used instead. A refresh
   * the service refuses (REFRESH_TOKEN_INVALID) signs out.
   */
  async refresh() {
    const session = this.#read();
    if (!session) throw new GatehouseError("Not signed in.", { code: "NOT_SIGNED_IN" });
    return (await this.#refreshFrom(session.refreshToken)).user;
  }

  /**
   * Signs out: `"current"` (this session), `"all"` (every session of the account) or `"others"`
   * (every other session; this one stays signed in). With "current" and "all" the tokens are
   * forgotten even when the call fails, and the failure is then re-thrown.
   */
  async logout(scope = "current") {
    if (!["current", "others", "all"].includes(scope)) {
      // A typo must not sign this tab out while the session lives on at the service.
      throw new TypeError(`logout scope must be "current", "others" or "all", not ${scope}`);
    }
    this.#tempToken = null;
    if (!this.#read()) return { revokedSessions: 0 };
    if (scope === "others") return this.request("POST", "/auth/logout", { scope });
    try {
      return await this.request("POST", "/auth/logout", { scope });
    } finally {
      this.#signOut();
    }
  }

  /**
   * Calls `callback({type, user, remote})` whenever the session changes: type "signed-in",
   * "refreshed" or "signed-out"; remote is true when another tab made the change. Returns a
   * function that unsubscribes.
   */
  onChange(callback) {
    this.#listeners.add(callback);
    if (!this.#storageListener && typeof globalThis.addEventListener === "function") {
      this.#storageListener = (event) => this.#onStorage(event);
      globalThis.addEventListener("storage", this.#storageListener);
    }
    return () => {
      this.#listeners.delete(callback);
      if (this.#listeners.size === 0 && this.#storageListener) {
        globalThis.removeEventListener("storage", this.#storageListener);
        this.#storageListener = null;
      }
    };
  }

  // ---- self-service calls (docs/api.md §3, §7, §9): each resolves to what the call is about,
  // a list as an array, nothing (undefined) where the service answers `{}` ----

  /** Opens an account (GATEHOUSE_REGISTRATION=open); does not sign in. → the new user. */
  async register(email, password, fullName) {
    const body = { email, password, fullName };
    return (await this.request("POST", "/auth/register", body, { auth: false })).user;
  }

  /** Mails a reset link to the address, if it has an account (the same answer either way). */
  async forgotPassword(email) {
    await this.request("POST", "/auth/password/forgot", { email }, { auth: false });
  }

  /** A new password with the token of the mailed `/reset-password?token=…` link. */
  async resetPassword(token, newPassword) {
    await this.request("POST", "/auth/password/reset", { token, newPassword }, { auth: false });
  }

  /** Confirms an address (a new account's, or an address change's) with its mailed token. */
  async verifyEmail(token) {
    await this.request("POST", "/auth/email/verify", { token }, { auth: false });
  }

  /** Mails the signed-in account's address a new verification link. */
  async resendVerificationEmail() {
    await this.request("POST", "/auth/email/verify/resend");
  }

  /** Starts an address change: a link goes to the new address (the change happens there). */
  async changeEmail(newEmail, password) {
    await this.request("POST", "/auth/email", { newEmail, password });
  }

  /** Changes the password; every other session of the account ends, this one stays. */
  async changePassword(currentPassword, newPassword) {
    await this.request("POST", "/auth/password", { currentPassword, newPassword });
  }

  /** The signed-in account as the service has it now (`GET /auth/me`). */
  async me() {
    return this.request("GET", "/auth/me");
  }

  /** Begins 2FA enrolment → `{secret, otpauthUri, qrCodeSvg}`, pending until enableTwoFactor. */
  async setupTwoFactor(password) {
    return this.request("POST", "/auth/2fa/setup", { password });
  }

  /** Turns 2FA on with a code of the pending secret → the ten recovery codes, shown this once. */
  async enableTwoFactor(code) {
    return (await this.request("POST", "/auth/2fa/enable", { code })).recoveryCodes;
  }

  /** Turns 2FA off (password, and a TOTP or recovery code). */
  async disableTwoFactor(password, code) {
    await this.request("POST", "/auth/2fa/disable", { password, code });
  }

  /** Ten new recovery codes (after a TOTP or recovery code); the old ones are void. */
  async regenerateRecoveryCodes(code) {
    return (await this.request("POST", "/auth/2fa/recovery-codes", { code })).recoveryCodes;
  }

  /** The account's live sessions, `current` marking this one. */
  async listSessions() {
    return (await this.request("GET", "/auth/sessions")).items;
  }

  /** Ends one session of the account; ending this one signs this client out. */
  async deleteSession(id) {
    const own = this.#sessionId();
    await this.request("DELETE", `/auth/sessions/${encodeURIComponent(id)}`);
    if (id === own) this.#signOut();
  }

  /** The account's passkeys. */
  async listPasskeys() {
    return (await this.request("GET", "/auth/passkeys")).items;
  }

  /** Renames a passkey → the passkey. */
  async renamePasskey(id, name) {
    return this.request("PATCH", `/auth/passkeys/${encodeURIComponent(id)}`, { name });
  }

  /** Removes a passkey from the account. */
  async deletePasskey(id) {
    await this.request("DELETE", `/auth/passkeys/${encodeURIComponent(id)}`);
  }

  /**
   * Makes a personal API key (docs/api.md §12) → `{id, name, key, scopes, orgId, expiresAt,
   * createdAt}`; `key` (`ghk_…`) is in this answer only. `password` may be left out while the
   * session is re-authenticated. Options: `scopes` (default both contacts scopes), `expiresAt`
   * (RFC 3339 or a Date), `orgId`.
   */
  async createApiKey(name, password, { scopes, expiresAt, orgId } = {}) {
    const body = { name };
    if (password) body.password = password;
    if (scopes !== undefined) body.scopes = scopes;
    if (expiresAt !== undefined) body.expiresAt = expiresAt instanceof Date ? expiresAt.toISOString() : expiresAt;
    if (orgId !== undefined) body.orgId = orgId;
    return this.request("POST", "/auth/api-keys", body);
  }

  /** The account's API keys, newest first (never the keys themselves). */
  async listApiKeys() {
    return (await this.request("GET", "/auth/api-keys")).items;
  }

  /** Deletes one of the account's API keys: it stops working within 2 s everywhere. */
  async deleteApiKey(id) {
    await this.request("DELETE", `/auth/api-keys/${encodeURIComponent(id)}`);
  }

  /**
   * Deletes the account (password, plus a TOTP or recovery code when 2FA is on) and signs this
   * client out.
   */
  async deleteAccount(password, code) {
    const body =
      code === undefined || code === null || code === "" ? { password } : { password, code };
    await this.request("DELETE", "/auth/me", body);
    this.#signOut();
  }

  // ---- organisations (docs/api.md §13) ----

  /**
   * The active organisation the stored access token names, `{id, roles}` (roles as issued), or
   * null: none, or not signed in.
   */
  get currentOrg() {
    const claims = this.#claims();
    return claims?.org_id ? { id: claims.org_id, roles: claims.org_roles ?? [] } : null;
  }

  /**
   * Makes `orgId` the session's active organisation (null: none), without a new login: the
   * service answers new tokens for the same session, which are stored (every tab gets them) →
   * currentOrg. Fails with NOT_FOUND (not a member) or TWO_FACTOR_REQUIRED.
   */
  async switchOrg(orgId) {
    const data = await this.request("POST", "/auth/org", { orgId: orgId ?? null });
    const session = this.#write(data);
    this.#emit({ type: "refreshed", user: session.user, remote: false });
    return this.currentOrg;
  }

  /** The signed-in person's organisations → `[{org, roles}]`. */
  async listOrgs() {
    return (await this.request("GET", "/orgs")).items;
  }

  /** A new organisation, the caller its owner → the organisation. */
  async createOrg(name, slug) {
    return this.request("POST", "/orgs", { name, slug });
  }

  /** An organisation the caller belongs to → the organisation with the caller's `roles`. */
  async getOrg(id) {
    return this.request("GET", `/orgs/${encodeURIComponent(id)}`);
  }

  /** Changes any of `{name, slug, requireTwoFactor}` (owner or admin) → the organisation. */
  async updateOrg(id, changes) {
    return this.request("PATCH", `/orgs/${encodeURIComponent(id)}`, changes);
  }

  /** Deletes an organisation (owner). */
  async deleteOrg(id) {
    await this.request("DELETE", `/orgs/${encodeURIComponent(id)}`);
  }

  /** A page of members → `{items: [{userId, email, fullName, roles, joinedAt}], nextCursor}`. */
  async listOrgMembers(id, { limit, cursor } = {}) {
    const query = new URLSearchParams();
    if (limit !== undefined) query.set("limit", String(limit));
    if (cursor) query.set("cursor", cursor);
    const suffix = query.size ? `?${query}` : "";
    return this.request("GET", `/orgs/${encodeURIComponent(id)}/members${suffix}`);
  }

  /** Replaces a member's roles → the roles they hold now. */
  async setOrgMemberRoles(id, userId, roles) {
    const path = `/orgs/${encodeURIComponent(id)}/members/${encodeURIComponent(userId)}`;
    return (await this.request("PATCH", path, { roles })).roles;
  }

  /** Removes a member; one's own id leaves the organisation. */
  async removeOrgMember(id, userId) {
    const path = `/orgs/${encodeURIComponent(id)}/members/${encodeURIComponent(userId)}`;
    await this.request("DELETE", path);
  }

  /** Mails an invitation → `{id, email, roles, expiresAt}`. */
  async inviteToOrg(id, email, roles) {
    return this.request("POST", `/orgs/${encodeURIComponent(id)}/invitations`, { email, roles });
  }

  /** The pending invitations (owner or admin). */
  async listOrgInvitations(id) {
    return (await this.request("GET", `/orgs/${encodeURIComponent(id)}/invitations`)).items;
  }

  /** Withdraws an invitation: its link stops working. */
  async deleteOrgInvitation(id, invitationId) {
    const path = `/orgs/${encodeURIComponent(id)}/invitations/${encodeURIComponent(invitationId)}`;
    await this.request("DELETE", path);
  }

  /** Joins with the token of a mailed `/accept-invitation?token=…` link → the organisation. */
  async acceptOrgInvitation(token) {
    return this.request("POST", "/orgs/invitations/accept", { token });
  }

  // ---- tokens ----

  /** The stored session, refreshed first when its access token expires within the margin. */
  async #freshSession() {
    const session = this.#read();
    if (!session) throw new GatehouseError("Not signed in.", { code: "NOT_SIGNED_IN" });
    if (session.expiresAt - Date.now() <= this.#margin(session)) {
      return this.#refreshFrom(session.refreshToken);
    }
    return session;
  }

  /** The session id (`sid`) in the stored access token, or null. */
  #sessionId() {
    return this.#claims()?.sid ?? null;
  }

  /** The stored access token's claims (read, not verified: the service verifies), or null. */
  #claims() {
    const token = this.#read()?.accessToken;
    try {
      const payload = token.split(".")[1];
      return JSON.parse(new TextDecoder().decode(fromBase64Url(payload)));
    } catch {
      return null;
    }
  }

  /** A refresh of the tokens whose refresh token was `seen`, shared by every caller. */
  #refreshFrom(seen) {
    if (!this.#refreshing) {
      const rotation = this.#locks?.request
        ? this.#lockedRotate(seen)
        : this.#rotate(seen).then(({ session }) => session);
      this.#refreshing = rotation.finally(() => {
        this.#refreshing = null;
      });
    }
    return this.#refreshing;
  }

  /**
   * The rotation under the cross-tab lock. Chromium keeps a copy of localStorage per renderer
   * process and delivers other tabs' writes to it asynchronously, on another channel than the
   * lock's grant: a tab can be granted the lock before it sees the tokens that the previous
   * holder stored. Hence two precautions. A tab that rotated keeps the lock a little after
   * storing (its callers do not wait for that), so that a tab asking just then waits instead of
   * reading stale tokens; and a tab that had to wait watches its storage for a while before
   * concluding that the other tab failed and refreshing itself.
   */
  #lockedRotate(seen) {
    const name = `${this.#key}:refresh`;
    return new Promise((resolve, reject) => {
      const underLock = async (rotate) => {
        let outcome;
        try {
          outcome = await rotate();
        } catch (error) {
          reject(error);
          return;
        }
        resolve(outcome.session);
        if (outcome.rotated) await sleep(LOCK_HOLD_AFTER_ROTATION_MS);
      };
      this.#locks
        .request(name, { mode: "exclusive", ifAvailable: true }, (lock) => {
          if (lock) return underLock(() => this.#rotate(seen));
          return this.#locks.request(name, { mode: "exclusive" }, () =>
            underLock(async () => {
              await this.#storageMoves(seen);
              return this.#rotate(seen);
            }),
          );
        })
        .catch(reject);
    });
  }

  /** Resolves once the stored refresh token is no longer `seen`, or after a bounded wait. */
  #storageMoves(seen) {
    const moved = () => this.#read()?.refreshToken !== seen;
    if (moved()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (moved()) done();
      };
      const done = () => {
        clearInterval(poll);
        clearTimeout(limit);
        globalThis.removeEventListener?.("storage", check);
        resolve();
      };
      // The storage event is the prompt signal; polling covers storages that fire none.
      globalThis.addEventListener?.("storage", check);
      const poll = setInterval(check, 20);
      const limit = setTimeout(done, ROTATION_VISIBLE_MS);
    });
  }

  /**
   * Rotates `seen` → `{session, rotated}`, unless another tab (or call) already did: then the
   * stored session, `rotated: false`.
   */
  async #rotate(seen) {
    const current = this.#read();
    if (!current) throw new GatehouseError("Signed out.", { code: "NOT_SIGNED_IN" });
    if (current.refreshToken !== seen) return { session: current, rotated: false };
    let data;
    try {
      data = await this.#send(
        "POST",
        "/auth/refresh",
        { refreshToken: seen },
        null,
        globalThis.AbortSignal?.timeout?.(REFRESH_TIMEOUT_MS),
      );
    } catch (error) {
      const now = this.#read();
      // Another tab without Web Locks may have rotated meanwhile: its tokens are good.
      if (now && now.refreshToken !== seen) return { session: now, rotated: false };
      if (error.code === "REFRESH_TOKEN_INVALID") this.#signOut();
      throw error;
    }
    const now = this.#read();
    // Signed out, or signed in anew, elsewhere while this refresh was in flight: that wins.
    if (!now) throw new GatehouseError("Signed out.", { code: "NOT_SIGNED_IN" });
    if (now.refreshToken !== seen) return { session: now, rotated: false };
    const session = this.#write(data);
    this.#emit({ type: "refreshed", user: session.user, remote: false });
    return { session, rotated: true };
  }

  /**
   * How long before expiry to refresh: the configured margin, but at most half the token's
   * lifetime, so that short-lived tokens (a small GATEHOUSE_ACCESS_TOKEN_TTL) are not refreshed
   * before every call.
   */
  #margin(session) {
    const lifetimeMs = Number(session.expiresIn) * 1000;
    return lifetimeMs > 0 ? Math.min(this.#marginMs, lifetimeMs / 2) : this.#marginMs;
  }

  #signIn(tokenSet) {
    const session = this.#write(tokenSet);
    this.#emit({ type: "signed-in", user: session.user, remote: false });
    return session.user;
  }

  #signOut() {
    const had = this.#read() !== null;
    try {
      this.#storage.removeItem(this.#key);
    } catch {
      // Storage that refuses to forget still must not keep the caller signed in here: nothing
      // else to do, the tokens die with their lifetimes.
    }
    if (had) this.#emit({ type: "signed-out", user: null, remote: false });
  }

  #write({ accessToken, refreshToken, expiresIn, user }) {
    if (typeof accessToken !== "string" || typeof refreshToken !== "string") {
      throw new GatehouseError("The service answered without tokens.", { code: "BAD_RESPONSE" });
    }
    const session = {
      accessToken,
      refreshToken,
      // On this clock, from the answer's arrival: a skewed client clock does not matter.
      expiresAt: Date.now() + Number(expiresIn) * 1000,
      expiresIn: Number(expiresIn),
      user: user ? { id: user.id, email: user.email, fullName: user.fullName } : null,
    };
    this.#storage.setItem(this.#key, JSON.stringify(session));
    return session;
  }

  #read() {
    let raw;
    try {
      raw = this.#storage.getItem(this.#key);
    } catch {
      return null;
    }
    return parseSession(raw);
  }

  #onStorage(event) {
    if (event.key !== this.#key && event.key !== null) return;
    if (event.storageArea && event.storageArea !== this.#storage) return;
    const before = event.key === null ? null : parseSession(event.oldValue);
    const after = this.#read();
    if (!after) {
      if (before) this.#emit({ type: "signed-out", user: null, remote: true });
      return;
    }
    const sameUser = before && before.user?.id === after.user?.id;
    this.#emit({ type: sameUser ? "refreshed" : "signed-in", user: after.user, remote: true });
  }

  #emit(change) {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch (error) {
        // One broken listener must not stop the others nor the sign-in that fired it.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  #pendingChallenge() {
    if (this.#tempToken === null) {
      throw new GatehouseError("No sign-in is waiting for a second factor: sign in again.", {
        code: "TEMP_TOKEN_INVALID",
      });
    }
    return this.#tempToken;
  }

  // ---- passkeys ----

  async #passkeyCeremony(startBody) {
    const credentials = webAuthn();
    const start = await this.request("POST", "/auth/passkeys/login/start", startBody, {
      auth: false,
    });
    const credential = await callAuthenticator(() =>
      credentials.get({ publicKey: requestOptions(start.options) }),
    );
    const data = await this.request(
      "POST",
      "/auth/passkeys/login/finish",
      { ceremonyId: start.ceremonyId, credential: credentialJson(credential) },
      { auth: false },
    );
    return this.#signIn(data);
  }

  // ---- HTTP ----

  /**
   * `input` as an absolute URL, if the access token may go there: this page's origin,
   * Gatehouse's, or one of `apiOrigins`, over HTTP(S). Relative URLs resolve as fetch resolves
   * them (against the document), or against baseUrl where there is no document (Node).
   */
  #apiUrl(input) {
    const page = globalThis.document?.baseURI ?? globalThis.location?.href;
    let url;
    try {
      url = new URL(String(input), page ?? (this.#baseUrl || undefined));
    } catch (cause) {
      throw new TypeError(`fetch needs a URL, not ${input}`, { cause });
    }
    const allowed = new Set(this.#apiOrigins);
    for (const known of [globalThis.location?.origin, this.#gatehouseOrigin(page)]) {
      if (known && known !== "null") allowed.add(known);
    }
    if (!/^https?:$/.test(url.protocol) || !allowed.has(url.origin)) {
      throw new GatehouseError(
        `The access token is not sent to ${url.origin}: list it in the apiOrigins option if it is your API.`,
        { code: "ORIGIN_NOT_ALLOWED" },
      );
    }
    return url;
  }

  #gatehouseOrigin(page) {
    try {
      return new URL(this.#baseUrl || "/", page).origin;
    } catch {
      return null;
    }
  }

  /** The platform's fetch; a failure without an answer is NETWORK_ERROR, an abort stays one. */
  async #fetchRaw(input, init) {
    try {
      return await this.#fetch(input, init);
    } catch (cause) {
      if (cause?.name === "AbortError" || init?.signal?.aborted || input?.signal?.aborted) {
        throw cause;
      }
      throw new GatehouseError("The service could not be reached.", {
        code: "NETWORK_ERROR",
        cause,
      });
    }
  }

  async #send(method, path, body, accessToken, signal) {
    const url = this.#baseUrl + (path.startsWith("/api/") ? path : API_PREFIX + path);
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (accessToken) headers.Authorization = `Bearer ${accessToken}`;
    let response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (cause) {
      throw new GatehouseError("The service could not be reached.", {
        code: "NETWORK_ERROR",
        cause,
      });
    }
    let envelope;
    try {
      const text = await response.text();
      envelope = text === "" ? null : JSON.parse(text);
    } catch (cause) {
      if (cause?.name === "AbortError" || cause?.name === "TimeoutError") {
        throw new GatehouseError("The answer did not arrive.", { code: "NETWORK_ERROR", cause });
      }
      envelope = undefined;
    }
    if (envelope && typeof envelope === "object" && typeof envelope.success === "boolean") {
      if (envelope.success) return envelope.data;
      const { code, message, details } = envelope.error ?? {};
      throw new GatehouseError(message || `The service answered ${response.status}.`, {
        status: response.status,
        code: code || "UNKNOWN_ERROR",
        details,
      });
    }
    if (response.ok && envelope === null) return null;
    throw new GatehouseError(`The service answered ${response.status} without its JSON envelope.`, {
      status: response.status,
      code: "BAD_RESPONSE",
    });
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `value` as an origin (`https://api.example.com`); anything more or less is a TypeError. */
function exactOrigin(value) {
  let url;
  try {
    url = new URL(String(value));
  } catch (cause) {
    throw new TypeError(`apiOrigins: ${value} is not an origin`, { cause });
  }
  if (
    !/^https?:$/.test(url.protocol) ||
    url.username ||
    url.password ||
    url.pathname !== "/" ||
    url.search ||
    url.hash
  ) {
    throw new TypeError(`apiOrigins: ${value} is not an origin such as https://api.example.com`);
  }
  return url.origin;
}

const isStream = (body) => typeof ReadableStream === "function" && body instanceof ReadableStream;

function parseSession(raw) {
  if (typeof raw !== "string" || raw === "") return null;
  try {
    const s = JSON.parse(raw);
    if (
      s &&
      typeof s.accessToken === "string" &&
      typeof s.refreshToken === "string" &&
      typeof s.expiresAt === "number"
    ) {
      return s;
    }
  } catch {
    // Unreadable: as if signed out.
  }
  return null;
}

// ---- WebAuthn: the service speaks WebAuthn's JSON form (base64url for binary fields) ----

function webAuthn() {
  const credentials = globalThis.navigator?.credentials;
  if (!credentials || typeof globalThis.PublicKeyCredential === "undefined") {
    throw new GatehouseError("This browser cannot use passkeys.", { code: "PASSKEY_UNSUPPORTED" });
  }
  return credentials;
}

async function callAuthenticator(call) {
  try {
    const credential = await call();
    if (!credential) {
      throw new GatehouseError("No passkey was chosen.", { code: "PASSKEY_CANCELLED" });
    }
    return credential;
  } catch (error) {
    if (error instanceof GatehouseError) throw error;
    if (error?.name === "NotAllowedError" || error?.name === "AbortError") {
      throw new GatehouseError("The passkey prompt was cancelled or timed out.", {
        code: "PASSKEY_CANCELLED",
        cause: error,
      });
    }
    if (error?.name === "InvalidStateError") {
      // The authenticator already holds one of the account's passkeys (excludeCredentials).
      throw new GatehouseError("This device already has a passkey for the account.", {
        code: "PASSKEY_ALREADY_REGISTERED",
        cause: error,
      });
    }
    throw new GatehouseError(error?.message || "The passkey could not be used.", {
      code: "PASSKEY_UNSUPPORTED",
      cause: error,
    });
  }
}

function creationOptions(options) {
  const PKC = globalThis.PublicKeyCredential;
  if (typeof PKC?.parseCreationOptionsFromJSON === "function") {
    return PKC.parseCreationOptionsFromJSON(options);
  }
  return {
    ...options,
    challenge: fromBase64Url(options.challenge),
    user: { ...options.user, id: fromBase64Url(options.user.id) },
    excludeCredentials: (options.excludeCredentials ?? []).map(descriptor),
  };
}

function requestOptions(options) {
  const PKC = globalThis.PublicKeyCredential;
  if (typeof PKC?.parseRequestOptionsFromJSON === "function") {
    return PKC.parseRequestOptionsFromJSON(options);
  }
  return {
    ...options,
    challenge: fromBase64Url(options.challenge),
    allowCredentials: (options.allowCredentials ?? []).map(descriptor),
  };
}

function descriptor(d) {
  return { ...d, id: fromBase64Url(d.id) };
}

function credentialJson(credential) {
  if (typeof credential.toJSON === "function") return credential.toJSON();
  const r = credential.response;
  const response = { clientDataJSON: toBase64Url(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toBase64Url(r.attestationObject);
    response.transports = r.getTransports?.() ?? [];
  } else {
    response.authenticatorData = toBase64Url(r.authenticatorData);
    response.signature = toBase64Url(r.signature);
    if (r.userHandle) response.userHandle = toBase64Url(r.userHandle);
  }
  return {
    id: credential.id,
    rawId: toBase64Url(credential.rawId),
    type: credential.type,
    authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
    clientExtensionResults: credential.getClientExtensionResults?.() ?? {},
    response,
  };
}

function fromBase64Url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}

function toBase64Url(buffer) {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
