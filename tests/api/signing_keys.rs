//! Signing keys per algorithm (docs/api.md §2): the JWK Set, rotation of all three, access tokens
//! signed with RS256 or ES256, and refusal of a header naming another algorithm than its key's.
//! Signatures are checked with OpenSSL against the published JWKs, independently of the service.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use gatehouse::config::SettingsArgs;
use hmac::Mac as _;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use openssl::bn::BigNum;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Http, Instance, TestDatabase, both_backends, jwt_header, spawn_app, spawn_app_with,
};

both_backends!(
    the_jwk_set_holds_a_key_of_each_algorithm,
    rotation_replaces_all_three_keys_and_keeps_the_old_ones_published,
    access_tokens_can_be_signed_with_rs256_or_es256,
    a_header_naming_another_algorithm_than_its_keys_is_refused,
    a_database_from_before_keeps_its_key_as_the_eddsa_one,
    two_instances_starting_at_once_make_one_key_of_each_algorithm,
);

/// Settings that turn the OpenID provider on (a URL issuer): only then does an instance make the
/// keys of every algorithm (an RSA key costs ~0.3 s to make; one that never signs RS256 skips it).
fn provider_on() -> SettingsArgs {
    SettingsArgs {
        public_url: Some("https://login.example.com/".into()),
        ..SettingsArgs::default()
    }
}

async fn jwks(http: &Http) -> Vec<Value> {
    http.get_json("/.well-known/jwks.json").await["keys"]
        .as_array()
        .unwrap()
        .clone()
}

fn b64(value: &Value) -> Vec<u8> {
    B64.decode(value.as_str().unwrap()).unwrap()
}

fn members(key: &Value) -> Vec<String> {
    let mut names: Vec<String> = key.as_object().unwrap().keys().cloned().collect();
    names.sort();
    names
}

async fn the_jwk_set_holds_a_key_of_each_algorithm(backend: Backend) {
    let plain = spawn_app(backend).await;
    let signs_eddsa: Vec<String> = jwks(&plain)
        .await
        .iter()
        .map(|k| k["alg"].to_string())
        .collect();
    assert_eq!(
        signs_eddsa,
        ["\"EdDSA\""],
        "without the provider, only the access tokens' key"
    );
    let app = plain.twin_with(provider_on()).await;
    let keys = jwks(&app).await;
    assert_eq!(keys.len(), 3, "{keys:?}");
    let key = |alg: &str| keys.iter().find(|k| k["alg"] == alg).unwrap().clone();

    let rsa = key("RS256");
    assert_eq!(members(&rsa), ["alg", "e", "kid", "kty", "n", "use"]);
    assert_eq!(
        (rsa["kty"].as_str(), rsa["use"].as_str()),
        (Some("RSA"), Some("sig"))
    );
    assert_eq!(b64(&rsa["n"]).len() * 8, 2048, "a 2048-bit modulus");
    assert_eq!(rsa["e"], "AQAB");

    let ec = key("ES256");
    assert_eq!(members(&ec), ["alg", "crv", "kid", "kty", "use", "x", "y"]);
    assert_eq!(
        (ec["kty"].as_str(), ec["crv"].as_str()),
        (Some("EC"), Some("P-256"))
    );
    assert_eq!((b64(&ec["x"]).len(), b64(&ec["y"]).len()), (32, 32));

    let ed = key("EdDSA");
    assert_eq!(members(&ed), ["alg", "crv", "kid", "kty", "use", "x"]);
    assert_eq!(
        (ed["kty"].as_str(), ed["crv"].as_str()),
        (Some("OKP"), Some("Ed25519"))
    );
    assert_eq!(b64(&ed["x"]).len(), 32);

    // Each kid is the RFC 7638 thumbprint of its key, as another library computes it (but for
    // Ed25519: jsonwebtoken 10.3 leaves `crv` unquoted in the OKP form, so it is computed here).
    for key in [&rsa, &ec] {
        let jwk: Jwk = serde_json::from_value(key.clone()).unwrap();
        assert_eq!(key["kid"], jwk.thumbprint(ThumbprintHash::SHA256), "{key}");
    }
    let canonical = format!(
        r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
        ed["x"].as_str().unwrap()
    );
    let digest = openssl::sha::sha256(canonical.as_bytes());
    assert_eq!(ed["kid"], B64.encode(digest));
    // The P-256 point is on the curve.
    ec_key(&ec);
}

fn kids_of(keys: &[Value], alg: &str) -> Vec<String> {
    keys.iter()
        .filter(|k| k["alg"] == alg)
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

async fn rotation_replaces_all_three_keys_and_keeps_the_old_ones_published(backend: Backend) {
    let app = spawn_app_with(backend, provider_on()).await;
    let (old_token, _) = app.logged_in_user("rae@example.com").await;
    let old = jwks(&app).await;

    let output = app.cli(&["keys", "rotate"], None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    let new: Vec<(String, String)> = printed
        .lines()
        .map(|l| {
            let (kid, alg) = l.split_once("  ").unwrap();
            (alg.to_owned(), kid.to_owned())
        })
        .collect();
    let algs: Vec<&str> = new.iter().map(|(alg, _)| alg.as_str()).collect();
    assert_eq!(algs, ["RS256", "ES256", "EdDSA"], "{printed}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for (alg, kid) in &new {
        assert!(
            stderr.contains(&format!("{kid} is the {alg} signing key now")),
            "{stderr}"
        );
    }

    // Within the reload interval (and some slack) the running service publishes both
    // generations of every algorithm, the new key first, and signs with the new EdDSA key.
    let started = Instant::now();
    loop {
        let keys = jwks(&app).await;
        let all = new.iter().all(|(alg, kid)| {
            let old_kid = kids_of(&old, alg).remove(0);
            kids_of(&keys, alg) == [kid.clone(), old_kid]
        });
        if all {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{keys:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let login = app.login("rae@example.com", crate::helpers::PASSWORD).await;
    let token = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    let ed_kid = &new.iter().find(|(alg, _)| alg == "EdDSA").unwrap().1;
    assert_eq!(jwt_header(&token)["kid"], ed_kid.as_str());
    // What the old key signed stays good.
    app.get("/api/v1/auth/me", &old_token).await.data(200);

    let listed = String::from_utf8(app.cli(&["keys", "list"], None).stdout).unwrap();
    for (alg, kid) in &new {
        assert!(
            listed.lines().any(|l| l.starts_with(kid.as_str())
                && l.contains(alg.as_str())
                && l.contains("active")),
            "{listed}"
        );
    }
    assert_eq!(
        listed.lines().filter(|l| l.contains("retired")).count(),
        3,
        "{listed}"
    );
}

/// The public key of a published P-256 JWK.
fn ec_key(jwk: &Value) -> openssl::pkey::PKey<openssl::pkey::Public> {
    let group = openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap();
    let x = BigNum::from_slice(&b64(&jwk["x"])).unwrap();
    let y = BigNum::from_slice(&b64(&jwk["y"])).unwrap();
    let key = openssl::ec::EcKey::from_public_key_affine_coordinates(&group, &x, &y).unwrap();
    key.check_key().unwrap();
    openssl::pkey::PKey::from_ec_key(key).unwrap()
}

/// Whether `token`'s signature verifies with OpenSSL under the published `jwk` and its `alg`.
fn verifies(token: &str, jwk: &Value) -> bool {
    let (message, signature) = token.rsplit_once('.').unwrap();
    let signature = B64.decode(signature).unwrap();
    let sha256 = openssl::hash::MessageDigest::sha256();
    match jwk["alg"].as_str().unwrap() {
        "RS256" => {
            let n = BigNum::from_slice(&b64(&jwk["n"])).unwrap();
            let e = BigNum::from_slice(&b64(&jwk["e"])).unwrap();
            let rsa = openssl::rsa::Rsa::from_public_components(n, e).unwrap();
            let key = openssl::pkey::PKey::from_rsa(rsa).unwrap();
            let mut verifier = openssl::sign::Verifier::new(sha256, &key).unwrap();
            verifier
                .verify_oneshot(&signature, message.as_bytes())
                .unwrap()
        }
        "ES256" => {
            // JWS carries r ‖ s (RFC 7518 §3.4); OpenSSL wants DER.
            assert_eq!(signature.len(), 64);
            let r = BigNum::from_slice(&signature[..32]).unwrap();
            let s = BigNum::from_slice(&signature[32..]).unwrap();
            let der = openssl::ecdsa::EcdsaSig::from_private_components(r, s)
                .unwrap()
                .to_der()
                .unwrap();
            let key = ec_key(jwk);
            let mut verifier = openssl::sign::Verifier::new(sha256, &key).unwrap();
            verifier.verify_oneshot(&der, message.as_bytes()).unwrap()
        }
        other => panic!("{other}"),
    }
}

async fn access_tokens_can_be_signed_with_rs256_or_es256(backend: Backend) {
    let app = spawn_app_with(backend, provider_on()).await;
    let (eddsa_token, _) = app.logged_in_user("sol@example.com").await;
    for alg in ["RS256", "ES256"] {
        let signing = app
            .twin_with(SettingsArgs {
                access_token_alg: Some(alg.into()),
                ..provider_on()
            })
            .await;
        let login = signing
            .login("sol@example.com", crate::helpers::PASSWORD)
            .await;
        let data = login.data(200);
        let access = data["accessToken"].as_str().unwrap();
        let refresh = data["refreshToken"].as_str().unwrap();
        let keys = jwks(&signing).await;
        let jwk = keys.iter().find(|k| k["alg"] == alg).unwrap();
        for token in [access, refresh] {
            let header = jwt_header(token);
            assert_eq!(header["alg"], alg, "{header}");
            assert_eq!(header["kid"], jwk["kid"], "{header}");
            assert!(verifies(token, jwk), "{alg} signature of {token}");
        }
        assert_eq!(jwt_header(access)["typ"], "at+jwt");
        // Accepted by the API, by the instance that signed it and by one that signs EdDSA; and an
        // EdDSA token from before the switch stays good on the switched instance.
        signing.get("/api/v1/auth/me", access).await.data(200);
        app.get("/api/v1/auth/me", access).await.data(200);
        signing.get("/api/v1/auth/me", &eddsa_token).await.data(200);
        let refreshed = signing
            .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
            .await;
        let next = refreshed.data(200)["accessToken"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(jwt_header(&next)["alg"], alg);
    }
}

/// A database as 0012 left it (one Ed25519 key, no `alg`, one active key in all) is upgraded at
/// the next start: its key stays the EdDSA one, and the RS256 and ES256 keys are made.
async fn a_database_from_before_keeps_its_key_as_the_eddsa_one(backend: Backend) {
    let app = spawn_app_with(backend, provider_on()).await;
    let (token, _) = app.logged_in_user("vic@example.com").await;
    let ed_kid = jwt_header(&token)["kid"].as_str().unwrap().to_owned();
    for sql in [
        "DELETE FROM signing_keys WHERE alg <> 'EdDSA'",
        "DROP INDEX signing_keys_one_active",
        "ALTER TABLE signing_keys DROP COLUMN alg",
        "CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (state) WHERE state = 'active'",
        "DELETE FROM _sqlx_migrations WHERE version = 13",
    ] {
        app.execute(sql).await;
    }

    let upgraded = app.twin_with(provider_on()).await;
    let keys = jwks(&upgraded).await;
    assert_eq!(
        kids_of(&keys, "EdDSA"),
        std::slice::from_ref(&ed_kid),
        "{keys:?}"
    );
    assert_eq!(
        (kids_of(&keys, "RS256").len(), kids_of(&keys, "ES256").len()),
        (1, 1)
    );
    upgraded.get("/api/v1/auth/me", &token).await.data(200);
    let login = upgraded
        .login("vic@example.com", crate::helpers::PASSWORD)
        .await;
    let fresh = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    assert_eq!(jwt_header(&fresh)["kid"], ed_kid.as_str());
}

async fn two_instances_starting_at_once_make_one_key_of_each_algorithm(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    let provider = [("GATEHOUSE_PUBLIC_URL", "https://login.example.com/")];
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Instance::start(&db, &provider));
        let b = s.spawn(|| Instance::start(&db, &provider));
        (a.join().unwrap(), b.join().unwrap())
    });
    let (keys_a, keys_b) = (jwks(&a).await, jwks(&b).await);
    assert_eq!(keys_a, keys_b);
    for alg in ["RS256", "ES256", "EdDSA"] {
        assert_eq!(kids_of(&keys_a, alg).len(), 1, "{keys_a:?}");
    }
    let listed = String::from_utf8(db.cli(&["keys", "list"], None).stdout).unwrap();
    assert_eq!(listed.lines().count(), 3, "{listed}");
}

fn forge(header: Value, rest_of: &str, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
    let claims = rest_of.split('.').nth(1).unwrap();
    let message = format!("{}.{claims}", B64.encode(header.to_string()));
    let signature = B64.encode(sign(message.as_bytes()));
    format!("{message}.{signature}")
}

async fn a_header_naming_another_algorithm_than_its_keys_is_refused(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            access_token_alg: Some("RS256".into()),
            ..provider_on()
        },
    )
    .await;
    let (token, _) = app.logged_in_user("uma@example.com").await;
    app.get("/api/v1/auth/me", &token).await.data(200);
    let keys = jwks(&app).await;
    let kid = |alg: &str| {
        keys.iter().find(|k| k["alg"] == alg).unwrap()["kid"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (rsa_kid, ec_kid) = (kid("RS256"), kid("ES256"));
    let signature = B64.decode(token.rsplit_once('.').unwrap().1).unwrap();

    // The RSA key's signature, with a header naming another algorithm (or another key).
    for (alg, kid) in [
        ("PS256", &rsa_kid),
        ("RS384", &rsa_kid),
        ("ES256", &rsa_kid),
        ("RS256", &ec_kid),
    ] {
        let header = json!({ "alg": alg, "typ": "at+jwt", "kid": kid });
        let relabelled = forge(header, &token, |_| signature.clone());
        let answer = app.get("/api/v1/auth/me", &relabelled).await;
        answer.error(401, "TOKEN_INVALID");
    }
    // The classic confusion: HS256 keyed with the public key (its JWK's modulus, its JSON).
    let rsa_jwk = keys.iter().find(|k| k["alg"] == "RS256").unwrap();
    for secret in [b64(&rsa_jwk["n"]), rsa_jwk.to_string().into_bytes()] {
        let header = json!({ "alg": "HS256", "typ": "at+jwt", "kid": rsa_kid });
        let forged = forge(header, &token, |message| {
            let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&secret).unwrap();
            mac.update(message);
            mac.finalize().into_bytes().to_vec()
        });
        app.get("/api/v1/auth/me", &forged)
            .await
            .error(401, "TOKEN_INVALID");
    }
    // `none`, unsigned.
    let header = json!({ "alg": "none", "typ": "at+jwt", "kid": rsa_kid });
    let unsigned = forge(header, &token, |_| Vec::new());
    app.get("/api/v1/auth/me", &unsigned)
        .await
        .error(401, "TOKEN_INVALID");
}
