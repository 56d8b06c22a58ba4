//! The OpenID provider across two instances of one database (docs/api.md §11): a code issued by
//! one is redeemed at the other, and a client's session ended at one is refused at the other
//! within §2's 2 s.

use reqwest::Method;

use crate::guard::within;
use crate::helpers::{Backend, SPREAD_DEADLINE, both_backends, claims};
use crate::oauth_helpers::{add_client, code, exchange, provider_pair, userinfo};

both_backends!(codes_and_revocations_reach_every_instance);

async fn codes_and_revocations_reach_every_instance(backend: Backend) {
    let (one, two) = provider_pair(backend).await;
    let client = add_client(&one, "Reports", &["--first-party"]);
    let (person, _) = one.logged_in_user("ada@example.com").await;

    let (code, verifier) = code(&one, &person, &client, "openid offline_access").await;
    let (status, tokens) = exchange(&two, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert_eq!(userinfo(&two, &access).await.0, 200);

    // The person ends the client's session at the first instance.
    let sid = claims(&access)["sid"].as_str().unwrap().to_owned();
    one.call(
        Method::DELETE,
        &format!("/api/v1/auth/sessions/{sid}"),
        Some(&person),
        None,
    )
    .await
    .data(200);
    assert_eq!(userinfo(&one, &access).await.0, 401);
    within(SPREAD_DEADLINE, || {
        let two = &two;
        let access = access.clone();
        async move { userinfo(two, &access).await.0 == 401 }
    })
    .await;
}
