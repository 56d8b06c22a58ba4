-- Signing keys per JWS algorithm (docs/api.md §2, API.md §11): beside the Ed25519 key, an RSA
-- (RS256) and a P-256 (ES256) key. The keys made before this are Ed25519 keys, and stay the EdDSA
-- one. `private_key` is sealed under the master key bound to the kid: an Ed25519 seed, a PKCS#1
-- DER RSA key, a PKCS#8 DER P-256 key; `public_key` is the raw Ed25519 key, the PKCS#1 DER RSA
-- public key, the uncompressed SEC1 P-256 point.
ALTER TABLE signing_keys ADD COLUMN alg TEXT NOT NULL DEFAULT 'EdDSA'
    CHECK (alg IN ('EdDSA', 'ES256', 'RS256'));

-- One active key per algorithm: two instances starting at once cannot both make one of a kind.
DROP INDEX signing_keys_one_active;
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (alg) WHERE state = 'active';
