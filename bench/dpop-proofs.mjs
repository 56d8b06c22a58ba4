// DPoP proofs (RFC 9449 §4) for bench/dpop.sh, made ahead of a run: the server accepts each jti
// once, so a load run needs one proof per request, and signing them in the request loop (wrk's
// Lua has no crypto) is not possible. Node's own crypto, no package.
//
//   node bench/dpop-proofs.mjs key ES256|EdDSA > key.json
//     a fresh key: {"jwk": <private JWK>, "alg", "jkt": <RFC 7638 thumbprint of the public key>}
//   node bench/dpop-proofs.mjs proofs KEY-FILE METHOD HTU COUNT IAT [ACCESS-TOKEN] > proofs
//     COUNT proofs by that key for METHOD HTU, one a line, all issued at IAT (seconds: the caller
//     picks one instant for the whole set, a few seconds ahead, so that the set stays valid for
//     the 60 s the server allows), with ath (the token's hash) when ACCESS-TOKEN is given. Each
//     process draws its own jti prefix, so that sets made side by side never share a jti.
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';

const b64url = (data) => Buffer.from(data).toString('base64url');

function thumbprint(jwk) {
  const members = jwk.kty === 'EC' ? ['crv', 'kty', 'x', 'y'] : ['crv', 'kty', 'x'];
  const canonical = JSON.stringify(Object.fromEntries(members.map((m) => [m, jwk[m]])));
  return b64url(createHash('sha256').update(canonical).digest());
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'key') {
  const alg = args[0] ?? 'ES256';
  const { privateKey } = alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  process.stdout.write(JSON.stringify({ jwk, alg, jkt: thumbprint(jwk) }) + '\n');
} else if (mode === 'proofs') {
  const [keyFile, htm, htu, count, iat, token] = args;
  const { jwk, alg } = JSON.parse(readFileSync(keyFile, 'utf8'));
  const key = createPrivateKey({ key: jwk, format: 'jwk' });
  // The header carries the public key only: the private member `d` stays out.
  const { d: _private, ...publicJwk } = jwk;
  const head = b64url(JSON.stringify({ typ: 'dpop+jwt', alg, jwk: publicJwk }));
  const ath = token ? b64url(createHash('sha256').update(token).digest()) : undefined;
  const prefix = randomUUID();
  const lines = [];
  for (let i = 0; i < Number(count); i++) {
    const claims = { jti: `${prefix}-${i}`, htm, htu, iat: Number(iat), ...(ath ? { ath } : {}) };
    const input = `${head}.${b64url(JSON.stringify(claims))}`;
    // ES256 wants the raw r‖s signature (JWS, RFC 7518 §3.4), not DER.
    const signature = alg === 'ES256'
      ? sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' })
      : sign(null, Buffer.from(input), key);
    lines.push(`${input}.${b64url(signature)}`);
    // Written in batches: a set of 100 000 proofs is some 60 MB.
    if (lines.length === 10000) {
      process.stdout.write(lines.join('\n') + '\n');
      lines.length = 0;
    }
  }
  if (lines.length) process.stdout.write(lines.join('\n') + '\n');
} else {
  console.error('usage: dpop-proofs.mjs key ALG | proofs KEY-FILE METHOD HTU COUNT IAT [ACCESS-TOKEN]');
  process.exit(2);
}
