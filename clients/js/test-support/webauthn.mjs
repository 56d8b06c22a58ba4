// A software passkey authenticator behind the browser's WebAuthn interface
// (`navigator.credentials.create/get`, `PublicKeyCredential`), for Node, which has none: ES256 keys
// from node:crypto, "none" attestation, user verification always done. It answers with
// ArrayBuffers and no toJSON(), as older browsers do, so the library's own conversion to
// WebAuthn's JSON form is what the service receives. Chromium's virtual authenticator covers the
// browsers' toJSON() path in the end-to-end tests.

import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";

const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

// ---- the CBOR subset attestation objects and COSE keys use (RFC 8949) ----

function head(major, n) {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 256) return Buffer.from([(major << 5) | 24, n]);
  if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
  throw new Error("too long for this encoder");
}

function cbor(value) {
  if (Number.isInteger(value)) return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  if (value instanceof Map) {
    const parts = [head(5, value.size)];
    for (const [k, v] of value) parts.push(cbor(k), cbor(v));
    return Buffer.concat(parts);
  }
  throw new Error(`cannot encode ${typeof value}`);
}

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

export class SoftwareAuthenticator {
  credentials = [];
  #origin;

  constructor(origin) {
    this.#origin = origin;
  }

  /** Installs this authenticator as the global WebAuthn API; returns a function that removes it. */
  install() {
    const had = Object.getOwnPropertyDescriptor(globalThis, "navigator");
    globalThis.PublicKeyCredential = class PublicKeyCredential {};
    Object.defineProperty(globalThis, "navigator", {
      configurable: true,
      value: {
        credentials: {
          create: ({ publicKey }) => this.create(publicKey),
          get: ({ publicKey }) => this.get(publicKey),
        },
      },
    });
    return () => {
      delete globalThis.PublicKeyCredential;
      if (had) Object.defineProperty(globalThis, "navigator", had);
      else delete globalThis.navigator;
    };
  }

  #clientData(type, challenge) {
    return Buffer.from(
      JSON.stringify({ type, challenge: b64url(new Uint8Array(challenge)), origin: this.#origin, crossOrigin: false }),
    );
  }

  async create(options) {
    assertBuffer(options.challenge, "challenge");
    assertBuffer(options.user.id, "user.id");
    const excluded = (options.excludeCredentials ?? []).map((d) => b64url(new Uint8Array(d.id)));
    if (this.credentials.some((c) => c.rpId === options.rp.id && excluded.includes(b64url(c.id)))) {
      throw Object.assign(new Error("already registered"), { name: "InvalidStateError" });
    }
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const jwk = publicKey.export({ format: "jwk" });
    const cose = new Map([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, Buffer.from(jwk.x, "base64url")],
      [-3, Buffer.from(jwk.y, "base64url")],
    ]);
    const id = randomBytes(32);
    const credential = {
      id,
      rpId: options.rp.id,
      userHandle: Buffer.from(new Uint8Array(options.user.id)),
      counter: 0,
      privateKey,
    };
    const authData = Buffer.concat([
      createHash("sha256").update(options.rp.id).digest(),
      Buffer.from([FLAG_UP | FLAG_UV | FLAG_AT]),
      Buffer.alloc(4), // sign counter 0
      Buffer.alloc(16), // AAGUID: none
      Buffer.from([id.length >> 8, id.length & 0xff]),
      id,
      cbor(cose),
    ]);
    const attestationObject = cbor(
      new Map([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", authData],
      ]),
    );
    this.credentials.push(credential);
    return publicKeyCredential(id, {
      clientDataJSON: arrayBuffer(this.#clientData("webauthn.create", options.challenge)),
      attestationObject: arrayBuffer(attestationObject),
      getTransports: () => ["internal"],
    });
  }

  async get(options) {
    assertBuffer(options.challenge, "challenge");
    const allowed = (options.allowCredentials ?? []).map((d) => b64url(new Uint8Array(d.id)));
    const credential = this.credentials.find(
      (c) => c.rpId === options.rpId && (allowed.length === 0 || allowed.includes(b64url(c.id))),
    );
    if (!credential) {
      throw Object.assign(new Error("no credential for these options"), { name: "NotAllowedError" });
    }
    credential.counter += 1;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(credential.counter);
    const authData = Buffer.concat([
      createHash("sha256").update(options.rpId).digest(),
      Buffer.from([FLAG_UP | FLAG_UV]),
      counter,
    ]);
    const clientData = this.#clientData("webauthn.get", options.challenge);
    const signature = sign(
      "sha256",
      Buffer.concat([authData, createHash("sha256").update(clientData).digest()]),
      credential.privateKey,
    );
    return publicKeyCredential(credential.id, {
      clientDataJSON: arrayBuffer(clientData),
      authenticatorData: arrayBuffer(authData),
      signature: arrayBuffer(signature),
      userHandle: arrayBuffer(credential.userHandle),
    });
  }
}

function publicKeyCredential(id, response) {
  return {
    id: b64url(id),
    rawId: arrayBuffer(id),
    type: "public-key",
    authenticatorAttachment: "platform",
    response,
    getClientExtensionResults: () => ({}),
  };
}

function arrayBuffer(buffer) {
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength);
}

function assertBuffer(value, name) {
  if (!(value instanceof ArrayBuffer) && !ArrayBuffer.isView(value)) {
    throw new TypeError(`${name} must be a BufferSource, as the browser requires`);
  }
}
