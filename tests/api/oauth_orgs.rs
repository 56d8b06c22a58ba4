//! The OpenID provider and organisations (docs/api.md §13): a client bound to an organisation
//! acts in it (its client-credentials tokens and the people who authorize it), an unbound client
//! acts where the person chooses on the consent page, a remembered consent in the organisation
//! chosen with it, and a bound client goes with its organisation.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::oauth_helpers::{
    Client, add_client, authorization, authorize, code, exchange, param, pkce, provider_app, token,
};
use crate::orgs::create_org;

both_backends!(
    a_client_bound_to_an_organisation_acts_in_it,
    an_unbound_client_acts_where_the_person_chooses,
    a_bound_client_goes_with_its_organisation,
);

const SCOPE: &str = "openid contacts:read contacts:write offline_access";

fn bound_client(app: &TestApp, name: &str, org: &str) -> Client {
    add_client(
        app,
        name,
        &[
            "--org",
            org,
            "--grant",
            "authorization_code",
            "--grant",
            "refresh_token",
            "--grant",
            "client_credentials",
            "--scope",
            SCOPE,
        ],
    )
}

/// The contacts' names the holder of `token` reads.
async fn contact_names(app: &TestApp, token: &str) -> Vec<String> {
    let answer = app
        .call(Method::GET, "/api/v1/crm/contacts", Some(token), None)
        .await;
    answer.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["fullName"].as_str().unwrap().to_owned())
        .collect()
}

async fn add_contact(app: &TestApp, token: &str, name: &str) {
    app.call(
        Method::POST,
        "/api/v1/crm/contacts",
        Some(token),
        Some(json!({ "fullName": name })),
    )
    .await
    .data(201);
}

/// The access token the person's consent to `client` gives (exchanged by the client).
async fn authorized_token(
    app: &TestApp,
    person: &str,
    client: &Client,
    org: Option<&str>,
) -> Value {
    let (verifier, challenge) = pkce();
    let mut body = authorization(client, SCOPE, &challenge);
    body["consent"] = json!(true);
    if let Some(org) = org {
        body["orgId"] = json!(org);
    }
    let answer = authorize(app, person, body).await;
    let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let code = param(&to, "code").unwrap_or_else(|| panic!("a code: {to}"));
    let (status, tokens) = exchange(app, client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    tokens
}

async fn a_client_bound_to_an_organisation_acts_in_it(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (ada, _) = app.logged_in_user("ada@example.com").await;
    let (bo, _) = app.logged_in_user("bo@example.com").await;
    let acme = create_org(&app, &ada, "acme").await;
    let crm = bound_client(&app, "Acme CRM sync", &acme);

    // Operators see the binding.
    let listed = app.cli(&["clients", "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["orgId"], acme.as_str());
    // An organisation that does not exist cannot be named.
    let refused = app.cli(
        &[
            "clients",
            "add",
            "Ghost",
            "--org",
            &uuid::Uuid::now_v7().to_string(),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("--org"),
        "{stderr}"
    );

    // The consent page offers the client's organisation only, chosen and fixed.
    let (_, challenge) = pkce();
    let asked = authorize(&app, &ada, authorization(&crm, SCOPE, &challenge)).await;
    let asked = asked.data(200);
    assert_eq!(asked["consentRequired"], true);
    assert_eq!(asked["orgId"], acme.as_str());
    assert_eq!(asked["orgFixed"], true);
    let offered: Vec<&str> = asked["organisations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["slug"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["acme"]);

    // Ada's authorization acts in Acme: its token names it, with her roles there, and its
    // contacts are Acme's, not hers.
    add_contact(&app, &ada, "Ada's own").await;
    let tokens = authorized_token(&app, &ada, &crm, None).await;
    let access = tokens["access_token"].as_str().unwrap();
    let at = claims(access);
    assert_eq!(at["org_id"], acme.as_str());
    assert_eq!(at["org_roles"], json!(["owner"]));
    add_contact(&app, access, "Shared with Acme").await;
    assert_eq!(contact_names(&app, access).await, ["Shared with Acme"]);
    assert_eq!(contact_names(&app, &ada).await, ["Ada's own"]);
    // Refresh keeps the organisation.
    let (status, _, renewed) = token(
        &app,
        Some((&crm.id, crm.secret.as_deref().unwrap())),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    assert_eq!(
        claims(renewed["access_token"].as_str().unwrap())["org_id"],
        acme.as_str()
    );
    // Asking for another organisation is a mistake of the request.
    let mut other = authorization(&crm, SCOPE, &challenge);
    other["orgId"] = json!(uuid::Uuid::now_v7());
    authorize(&app, &ada, other)
        .await
        .error(400, "VALIDATION_ERROR");

    // Bo is not a member: the client hears access_denied, and no consent page is offered.
    let denied = authorize(&app, &bo, authorization(&crm, SCOPE, &challenge)).await;
    let to = denied.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert_eq!(
        param(&to, "error").as_deref(),
        Some("access_denied"),
        "{to}"
    );
    assert!(param(&to, "code").is_none());

    // The client's token for itself names its organisation too.
    let (status, _, own) = token(
        &app,
        Some((&crm.id, crm.secret.as_deref().unwrap())),
        &[("grant_type", "client_credentials")],
    )
    .await;
    assert_eq!(status, 200, "{own}");
    let own = claims(own["access_token"].as_str().unwrap());
    assert_eq!(own["sub"], crm.id.as_str());
    assert_eq!(own["org_id"], acme.as_str());
}

async fn an_unbound_client_acts_where_the_person_chooses(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (ada, _) = app.logged_in_user("ada@example.com").await;
    let (bo, _) = app.logged_in_user("bo@example.com").await;
    let acme = create_org(&app, &ada, "acme").await;
    let beta = create_org(&app, &ada, "beta").await;
    let bos = create_org(&app, &bo, "bos-own").await;
    let reports = add_client(
        &app,
        "Reports",
        &[
            "--scope",
            SCOPE,
            "--grant",
            "authorization_code",
            "--grant",
            "refresh_token",
        ],
    );

    // Ada's organisations are offered; none is chosen for her (she has two), and none is fine.
    let (_, challenge) = pkce();
    let asked = authorize(&app, &ada, authorization(&reports, SCOPE, &challenge)).await;
    let asked = asked.data(200);
    assert_eq!(asked["orgFixed"], false);
    assert_eq!(asked["orgId"], Value::Null);
    let mut offered: Vec<&str> = asked["organisations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    offered.sort();
    let mut mine = vec![acme.as_str(), beta.as_str()];
    mine.sort();
    assert_eq!(offered, mine);

    // She chooses Beta: the token names it; the remembered consent authorizes in Beta again
    // without asking.
    let tokens = authorized_token(&app, &ada, &reports, Some(&beta)).await;
    assert_eq!(
        claims(tokens["access_token"].as_str().unwrap())["org_id"],
        beta.as_str()
    );
    let (verifier, challenge2) = pkce();
    let again = authorize(&app, &ada, authorization(&reports, SCOPE, &challenge2)).await;
    let to = again.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert!(param(&to, "code").is_some(), "remembered: {to}");
    let (_, tokens) = exchange(&app, &reports, &param(&to, "code").unwrap(), &verifier).await;
    assert_eq!(
        claims(tokens["access_token"].as_str().unwrap())["org_id"],
        beta.as_str()
    );

    // Consenting without an organisation acts in none, and is remembered so.
    let tokens = authorized_token(&app, &ada, &reports, None).await;
    assert!(
        claims(tokens["access_token"].as_str().unwrap())
            .get("org_id")
            .is_none()
    );

    // An organisation she is not a member of is not found; one requiring two factors refuses a
    // sign-in with one.
    let mut foreign = authorization(&reports, SCOPE, &challenge);
    foreign["orgId"] = json!(bos);
    foreign["consent"] = json!(true);
    authorize(&app, &ada, foreign).await.error(404, "NOT_FOUND");
    app.call(
        Method::PATCH,
        &format!("/api/v1/orgs/{acme}"),
        Some(&ada),
        Some(json!({ "requireTwoFactor": true })),
    )
    .await
    .data(200);
    let mut strict = authorization(&reports, SCOPE, &challenge);
    strict["orgId"] = json!(acme);
    strict["consent"] = json!(true);
    authorize(&app, &ada, strict)
        .await
        .error(403, "TWO_FACTOR_REQUIRED");

    // Bo, with one organisation, finds it chosen for him (he may still choose none).
    let asked = authorize(&app, &bo, authorization(&reports, SCOPE, &challenge)).await;
    assert_eq!(asked.data(200)["orgId"], bos.as_str());
}

async fn a_bound_client_goes_with_its_organisation(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (ada, _) = app.logged_in_user("ada@example.com").await;
    let acme = create_org(&app, &ada, "acme").await;
    let crm = bound_client(&app, "Acme CRM sync", &acme);
    let tokens = authorized_token(&app, &ada, &crm, None).await;
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert_eq!(contact_names(&app, &access).await, Vec::<String>::new());
    // A code issued before the deletion is not exchanged after it.
    let (pending, verifier) = code(&app, &ada, &crm, SCOPE).await;

    app.call(
        Method::DELETE,
        &format!("/api/v1/orgs/{acme}"),
        Some(&ada),
        None,
    )
    .await
    .data(200);

    // The client is gone with it, its session ended: its tokens are refused, its refresh token
    // and pending code are worth nothing, and it cannot get a token for itself.
    let listed = app.cli(&["clients", "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed, json!([]));
    app.call(Method::GET, "/api/v1/crm/contacts", Some(&access), None)
        .await
        .error(401, "TOKEN_INVALID");
    // The registry is read again within a second (docs/api.md §11, removing a client).
    let secret = crm.secret.as_deref().unwrap();
    let started = std::time::Instant::now();
    loop {
        let (status, _, answer) = token(
            &app,
            Some((&crm.id, secret)),
            &[("grant_type", "client_credentials")],
        )
        .await;
        if status == 401 {
            assert_eq!(answer["error"], "invalid_client");
            break;
        }
        assert!(
            started.elapsed() < crate::helpers::SPREAD_DEADLINE,
            "{answer}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (status, _, refused) = token(
        &app,
        Some((&crm.id, secret)),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (401, Some("invalid_client"))
    );
    let (status, _) = exchange(&app, &crm, &pending, &verifier).await;
    assert_eq!(status, 401);
}
