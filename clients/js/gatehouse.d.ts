// Types of gatehouse.js, the Gatehouse browser client (README.md beside this file is the
// reference). Written by hand with the module; the tests compile a typed example that uses every
// member against this file (tsc --noEmit) and check that it declares exactly what the module has.
// Needs the DOM's fetch types (lib "DOM", or Node's own through @types/node).

/** The codes the service puts in its error envelope (docs/api.md §1), and the library's own. */
export type ErrorCode =
  | "VALIDATION_ERROR"
  | "WEAK_PASSWORD"
  | "INVALID_CREDENTIALS"
  | "UNAUTHENTICATED"
  | "TOKEN_EXPIRED"
  | "TOKEN_INVALID"
  | "INVALID_2FA_CODE"
  | "TEMP_TOKEN_INVALID"
  | "REFRESH_TOKEN_INVALID"
  | "ACCOUNT_DISABLED"
  | "REGISTRATION_CLOSED"
  | "LINK_INVALID"
  | "PASSKEY_INVALID"
  | "EMAIL_NOT_VERIFIED"
  | "FORBIDDEN"
  | "TWO_FACTOR_REQUIRED"
  | "INSUFFICIENT_SCOPE"
  | "SSO_REQUIRED"
  | "CONFLICT"
  | "EMAIL_TAKEN"
  | "TWO_FACTOR_ALREADY_ENABLED"
  | "TWO_FACTOR_NOT_ENABLED"
  | "TWO_FACTOR_NOT_SET_UP"
  | "NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "RATE_LIMITED"
  | "SERVICE_UNAVAILABLE"
  | "INTERNAL_ERROR"
  // made by the library
  | "NETWORK_ERROR"
  | "BAD_RESPONSE"
  | "NOT_SIGNED_IN"
  | "ORIGIN_NOT_ALLOWED"
  | "PASSKEY_UNSUPPORTED"
  | "PASSKEY_CANCELLED"
  | "PASSKEY_ALREADY_REGISTERED"
  | "UNKNOWN_ERROR"
  // any code a newer service may add
  | (string & {});

/** Every failure the library reports: an error answer of the service, or one made here. */
export class GatehouseError extends Error {
  constructor(
    message: string,
    info?: {
      status?: number;
      code?: ErrorCode;
      details?: Record<string, unknown>;
      cause?: unknown;
    },
  );
  readonly name: "GatehouseError";
  /** The HTTP status; 0 when no answer came (or the library made the error). */
  readonly status: number;
  readonly code: ErrorCode;
  /**
   * The envelope's `details` (`{}` when none): `fields` with VALIDATION_ERROR,
   * `attemptsRemaining` with INVALID_2FA_CODE, `retryAfter` with RATE_LIMITED.
   */
  readonly details: {
    fields?: Record<string, string>;
    attemptsRemaining?: number;
    retryAfter?: number;
    [name: string]: unknown;
  };
}

/** The signed-in user as the tokens carry it. */
export interface User {
  id: string;
  email: string;
  fullName: string;
}

/** `data` of a login, 2FA verify, refresh, passkey login or invitation acceptance. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string;
  /** Seconds the access token lives. */
  expiresIn: number;
  user: User;
}

/** `GET /auth/me`. Timestamps are RFC 3339 strings. */
export interface Profile extends User {
  twoFactorEnabled: boolean;
  recoveryCodesRemaining: number;
  roles: string[];
  emailVerified: boolean;
  /** `false` for an account another identity provider made, until its owner sets a password. */
  hasPassword: boolean;
  createdAt: string;
  /** Until when this session needs no password at the calls that re-check it; null: not now. */
  reauthenticatedUntil: string | null;
}

export interface Session {
  id: string;
  createdAt: string;
  lastUsedAt: string;
  ip: string | null;
  userAgent: string | null;
  /** The session of this client. */
  current: boolean;
}

/** An identity provider people may sign in with (docs/api.md §14). */
export interface Provider {
  id: string;
  /** On the sign-in page's button. */
  name: string;
  /** `false` while its discovery document could not be read: its sign-in would fail now. */
  available: boolean;
  /** Addresses under these domains (and their subdomains) sign in through this provider only. */
  domains: string[];
}

/** An identity of another provider linked to the account. */
export interface LinkedIdentity {
  providerId: string;
  providerName: string;
  /** The provider's `sub` for the person. */
  subject: string;
  /** The address the provider last gave, if any. */
  email: string | null;
  linkedAt: string;
  lastUsedAt: string | null;
}

/** A personal API key as listed (docs/api.md §12): never the key itself. */
export interface ApiKey {
  id: string;
  name: string;
  /** The first 8 characters after `ghk_`. */
  prefix: string;
  scopes: string[];
  /** The organisation whose contacts the key works with; `null`: the owner's own. */
  orgId: string | null;
  /** `null`: never expires. */
  expiresAt: string | null;
  createdAt: string;
  /** `null` before its first use; at most a minute behind. */
  lastUsedAt: string | null;
}

/** A key just made: `key` (`ghk_…`) is shown this once. */
export interface NewApiKey {
  id: string;
  name: string;
  key: string;
  scopes: string[];
  orgId: string | null;
  expiresAt: string | null;
  createdAt: string;
}

export interface ApiKeyOptions {
  /** Scopes of the business API; both contacts scopes when left out. */
  scopes?: string[];
  /** When the key stops working (RFC 3339 or a Date); never when left out. */
  expiresAt?: string | Date;
  /** One of the caller's organisations. */
  orgId?: string;
}

export interface Passkey {
  id: string;
  name: string;
  createdAt: string;
  /** `null` before its first sign-in. */
  lastUsedAt: string | null;
}

export interface TwoFactorSetup {
  /** base32, for typing into an authenticator app */
  secret: string;
  otpauthUri: string;
  /** the URI as a QR code, an SVG document */
  qrCodeSvg: string;
}

export type LoginResult = { twoFactorRequired: false; user: User } | { twoFactorRequired: true };

export type LogoutScope = "current" | "others" | "all";

export interface SessionChange {
  type: "signed-in" | "refreshed" | "signed-out";
  user: User | null;
  /** Another tab made the change. */
  remote: boolean;
}

/** The Web Storage methods the library uses (localStorage has them). */
export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The Web Locks methods the library uses (navigator.locks has them). */
export interface LocksLike {
  request<T>(
    name: string,
    options: { mode?: "exclusive" | "shared"; ifAvailable?: boolean },
    callback: (lock: unknown) => T | Promise<T>,
  ): Promise<T>;
}

/** An organisation (docs/api.md §13). */
export interface Org {
  id: string;
  name: string;
  slug: string;
  requireTwoFactor: boolean;
  createdAt: string;
}

/** The token's active organisation, with the roles it was issued with. */
export interface ActiveOrg {
  id: string;
  roles: string[];
}

export interface OrgMember {
  userId: string;
  email: string;
  fullName: string;
  roles: string[];
  joinedAt: string;
}

export interface OrgInvitation {
  id: string;
  email: string;
  roles: string[];
  expiresAt: string;
}

export interface GatehouseOptions {
  /** Where the service is; `""` (the default) is this page's origin. */
  baseUrl?: string;
  /** Default `localStorage` (memory where there is none). */
  storage?: StorageLike;
  /** Default `navigator.locks`; without, a single refresh per tab only. */
  locks?: LocksLike;
  /** Default the global fetch. */
  fetch?: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
  /** The storage key, default `"gatehouse"`. */
  key?: string;
  /** Refresh before a call when the token expires within this (or half its lifetime), default 60. */
  refreshMarginSeconds?: number;
  /**
   * Origins (`https://api.example.com`) besides this page's and Gatehouse's that `fetch` sends
   * the access token to.
   */
  apiOrigins?: Iterable<string>;
}

export interface RequestOptions {
  /** Send the access token (default true). */
  auth?: boolean;
  signal?: AbortSignal;
}

export class Gatehouse {
  constructor(options?: GatehouseOptions);

  /** The signed-in user, or null. */
  readonly user: User | null;
  readonly signedIn: boolean;
  /** A password login waits for its second factor. */
  readonly twoFactorPending: boolean;

  login(email: string, password: string): Promise<LoginResult>;
  verifyTwoFactor(code: string): Promise<User>;
  verifyTwoFactorWithPasskey(): Promise<User>;
  passkeyLogin(email?: string): Promise<User>;
  acceptInvitation(token: string, password: string, fullName?: string): Promise<User>;
  listProviders(): Promise<Provider[]>;
  providerSignInUrl(id: string, returnTo?: string, loginHint?: string): string;
  finishProviderSignIn(): Promise<LoginResult>;
  listIdentities(): Promise<LinkedIdentity[]>;
  /** → the URL to send the browser to. */
  linkIdentity(providerId: string, password?: string): Promise<string>;
  unlinkIdentity(providerId: string): Promise<void>;
  /** → the URL to send the browser to; it comes back to `/account?reauthenticated=<id>`. */
  reauthenticateWithProvider(providerId: string): Promise<string>;
  useTokenSet(tokenSet: TokenSet): User;
  refresh(): Promise<User>;
  logout(scope?: LogoutScope): Promise<{ revokedSessions: number }>;
  onChange(callback: (change: SessionChange) => void): () => void;

  /** A fresh access token (refreshed when it expires within the margin). */
  getAccessToken(): Promise<string>;
  /** fetch with the bearer, for this page's origin, Gatehouse's and `apiOrigins` only. */
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** A JSON call to Gatehouse's API → the envelope's `data`. */
  request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    options?: RequestOptions,
  ): Promise<T>;

  register(email: string, password: string, fullName: string): Promise<User>;
  forgotPassword(email: string): Promise<void>;
  resetPassword(token: string, newPassword: string): Promise<void>;
  verifyEmail(token: string): Promise<void>;
  resendVerificationEmail(): Promise<void>;
  changeEmail(newEmail: string, password: string): Promise<void>;
  changePassword(currentPassword: string, newPassword: string): Promise<void>;
  me(): Promise<Profile>;

  setupTwoFactor(password: string): Promise<TwoFactorSetup>;
  /** → the ten recovery codes */
  enableTwoFactor(code: string): Promise<string[]>;
  disableTwoFactor(password: string, code: string): Promise<void>;
  /** → ten new recovery codes */
  regenerateRecoveryCodes(code: string): Promise<string[]>;

  listSessions(): Promise<Session[]>;
  deleteSession(id: string): Promise<void>;

  registerPasskey(password: string | undefined, name?: string): Promise<Passkey>;
  /** Opens this session's re-authentication window with a passkey; resolves to its end. */
  reauthenticateWithPasskey(): Promise<string>;
  listPasskeys(): Promise<Passkey[]>;
  renamePasskey(id: string, name: string): Promise<Passkey>;
  deletePasskey(id: string): Promise<void>;

  /** `password` may be undefined while the session is re-authenticated. */
  createApiKey(name: string, password: string | undefined, options?: ApiKeyOptions): Promise<NewApiKey>;
  listApiKeys(): Promise<ApiKey[]>;
  deleteApiKey(id: string): Promise<void>;

  deleteAccount(password: string, code?: string): Promise<void>;

  /** The active organisation the stored access token names, or null. */
  readonly currentOrg: ActiveOrg | null;
  /** Makes `orgId` (null: none) the session's active organisation, without a new login. */
  switchOrg(orgId: string | null): Promise<ActiveOrg | null>;
  listOrgs(): Promise<{ org: Org; roles: string[] }[]>;
  createOrg(name: string, slug: string): Promise<Org>;
  getOrg(id: string): Promise<Org & { roles: string[] }>;
  updateOrg(
    id: string,
    changes: { name?: string; slug?: string; requireTwoFactor?: boolean },
  ): Promise<Org>;
  deleteOrg(id: string): Promise<void>;
  listOrgMembers(
    id: string,
    page?: { limit?: number; cursor?: string },
  ): Promise<{ items: OrgMember[]; nextCursor: string | null }>;
  /** → the roles the member holds now */
  setOrgMemberRoles(id: string, userId: string, roles: string[]): Promise<string[]>;
  removeOrgMember(id: string, userId: string): Promise<void>;
  inviteToOrg(id: string, email: string, roles: string[]): Promise<OrgInvitation>;
  listOrgInvitations(id: string): Promise<OrgInvitation[]>;
  deleteOrgInvitation(id: string, invitationId: string): Promise<void>;
  acceptOrgInvitation(token: string): Promise<Org>;
}
