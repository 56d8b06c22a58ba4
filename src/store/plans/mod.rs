//! The plans of the hot queries: each must find its rows through an index, never by scanning a
//! table, on both databases, whatever the tables hold. Run on the very query texts the store
//! executes (the module consts), against a migrated and seeded database: SQLite's
//! `EXPLAIN QUERY PLAN`, and PostgreSQL's `EXPLAIN` of the prepared statement in both its custom
//! and its generic plan (a prepared statement switches to the generic one after five runs) when
//! `GATEHOUSE_TEST_POSTGRES_URL` is set. `cargo test plans -- --nocapture` prints them.

use sqlx::{Connection as _, Executor as _, Row as _};

use super::{Backend, Store};

mod cases;

use crate::store::admin::{USERS_PAGE, USERS_PAGE_AFTER, USERS_SEARCH, USERS_SEARCH_AFTER};
use crate::store::sessions::INSERT_REFRESH;
use cases::{Case, cases};

/// Rows enough that a planner weighs an index against a scan as it would in production: 5 000
/// accounts, each with a session (1 % revoked) and its refresh token (10 % consumed), contacts,
/// challenges, throttle keys, audit events, mailed tokens, passkeys (a third of the accounts),
/// authorization codes, invitations, registration tokens, federation flows and handoffs, and
/// revoked single tokens. `{id}` and `{bytes}` are each backend's random UUID and byte string.
const SEED: &str = "
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
INSERT INTO users (id, email, email_normalized, full_name, password_hash, created_at, updated_at)
SELECT {id}, 'u' || i || '@example.com', 'u' || i || '@example.com', 'U', 'x', i, i FROM n;
INSERT INTO sessions (id, user_id, amr, created_at, last_used_at, expires_at, revoked_at)
SELECT {id}, id, 'pwd', created_at, created_at, created_at + 5000,
       CASE WHEN created_at % 100 = 0 THEN created_at END FROM users;
INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at, consumed_at)
SELECT {id}, id, created_at, expires_at, CASE WHEN created_at % 10 = 0 THEN created_at END
FROM sessions;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
INSERT INTO contacts (id, owner_id, full_name, search_text, created_at, updated_at)
SELECT {id}, u.id, 'C', 'c' || n.i, u.created_at, u.created_at
FROM users u JOIN n ON u.created_at <= 250;
INSERT INTO temp_tokens (token_hash, user_id, expires_at)
SELECT {bytes}, id, created_at FROM users;
INSERT INTO browser_cookies (token_hash, session_id, created_at)
SELECT {bytes}, id, created_at FROM sessions;
INSERT INTO mail_tokens (token_hash, user_id, purpose, created_at, expires_at)
SELECT {bytes}, id, 'reset', created_at, created_at + 3600 FROM users;
INSERT INTO throttles (key, tat) SELECT email_normalized, created_at FROM users;
INSERT INTO audit_events (id, at, event, user_id) SELECT {id}, created_at, 'login.succeeded', id
FROM users;
INSERT INTO passkeys (id, user_id, credential_id, name, credential, sign_count, backup_eligible,
                      backup_state, created_at)
SELECT {id}, id, {bytes}, 'k', '{}', 0, FALSE, FALSE, created_at FROM users WHERE created_at % 3 = 0;
INSERT INTO orgs (id, name, slug, created_at)
SELECT {id}, 'O', 'o' || created_at, created_at FROM users WHERE created_at % 10 = 0;
INSERT INTO org_members (org_id, user_id, roles, joined_at)
SELECT o.id, u.id, 'member', u.created_at FROM users u JOIN orgs o ON o.created_at = u.created_at - u.created_at % 10 + 10;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
INSERT INTO org_contacts (id, owner_id, full_name, search_text, created_at, updated_at)
SELECT {id}, o.id, 'C', 'c' || n.i, o.created_at, o.created_at
FROM orgs o JOIN n ON o.created_at <= 2500;
INSERT INTO api_keys (id, user_id, name, prefix, key_hash, scopes, created_at)
SELECT {id}, id, 'k', 'p', {bytes}, 'contacts:read', created_at FROM users WHERE created_at % 2 = 0;
INSERT INTO api_clients (id, name, secret_hash, created_at) SELECT {id}, 'c', {bytes}, 0
FROM users WHERE created_at = 1;
INSERT INTO oauth_codes (code_hash, client_id, user_id, parent_id, redirect_uri, code_challenge,
                         scope, amr, auth_time, expires_at)
SELECT {bytes}, c.id, u.id, u.id, 'https://a.example/cb', 'x', 'openid', 'pwd', u.created_at,
       u.created_at + 60 FROM users u CROSS JOIN api_clients c;
INSERT INTO device_authorizations (device_hash, user_code_hash, client_id, scope, created_at,
                                   expires_at, interval_ms, status)
SELECT {bytes}, {bytes}, c.id, 'openid', u.created_at, u.created_at + 600, 5000, 'pending'
FROM users u CROSS JOIN api_clients c;
INSERT INTO dpop_proofs (proof_hash, expires_at) SELECT {bytes}, created_at + 65000 FROM users;
INSERT INTO org_invitations (id, org_id, email, email_normalized, roles, token_hash, created_at,
                             expires_at)
SELECT {id}, o.id, 'i' || u.created_at || '@example.com', 'i' || u.created_at || '@example.com',
       'member', {bytes}, u.created_at, u.created_at + 600
FROM users u JOIN orgs o ON o.created_at = u.created_at - u.created_at % 10 + 10;
INSERT INTO client_registration_tokens (id, token_hash, created_at, expires_at)
SELECT {id}, {bytes}, created_at, created_at + 3600 FROM users;
INSERT INTO federation_flows (binding_hash, provider_id, state_hash, nonce, verifier, return_to,
                              purpose, user_id, session_id, expires_at)
SELECT {bytes}, 'up', {bytes}, 'n', {bytes}, '/account', 'sign_in',
       CASE WHEN created_at % 10 = 0 THEN user_id END, CASE WHEN created_at % 10 = 0 THEN id END,
       created_at + 600 FROM sessions;
INSERT INTO federation_handoffs (binding_hash, outcome, expires_at)
SELECT {bytes}, {bytes}, created_at + 60 FROM users;
INSERT INTO token_revocations (sid, revoked_at, expires_at)
SELECT {id}, created_at, created_at + 5000 FROM users;
ANALYZE;
";

/// A migrated SQLite store holding `SEED`; the directory lives as long as the caller keeps it.
async fn seeded_sqlite() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("plans.db").display());
    let store = Store::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let Backend::Sqlite { write, .. } = &store.backend else {
        unreachable!("a SQLite URL")
    };
    let seed = SEED
        .replace("{id}", "randomblob(16)")
        .replace("{bytes}", "randomblob(32)");
    let mut conn = write.acquire().await.unwrap();
    sqlx::raw_sql(&seed).execute(&mut *conn).await.unwrap();
    drop(conn);
    (dir, store)
}

/// SQLite's plan of `sql`, a line per step.
async fn sqlite_plan(conn: &mut sqlx::SqliteConnection, sql: &str) -> Vec<String> {
    sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
        .fetch_all(conn)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(3))
        .collect()
}

/// SQLite: each page of the admin's account list reads the address index in order, from the
/// cursor on (no sort of the table, no scan of the table itself), and counts passkeys by their
/// index.
#[tokio::test]
async fn admin_pages_walk_the_index() {
    let (_dir, store) = seeded_sqlite().await;
    let Backend::Sqlite { read, .. } = &store.backend else {
        unreachable!("a SQLite URL")
    };
    let mut conn = read.acquire().await.unwrap();
    for sql in [
        USERS_PAGE,
        USERS_PAGE_AFTER,
        USERS_SEARCH,
        USERS_SEARCH_AFTER,
    ] {
        let plan = sqlite_plan(&mut conn, sql).await;
        eprintln!("SQLite, admin accounts:\n    {}", plan.join("\n    "));
        assert!(
            plan.iter()
                .any(|l| l.contains("users USING INDEX sqlite_autoindex_users")),
            "{plan:?}"
        );
        assert!(plan.iter().any(|l| l.contains("passkeys_user")), "{plan:?}");
        assert!(!plan.iter().any(|l| l.contains("TEMP B-TREE")), "{plan:?}");
    }
}

/// The lines of a plan that say how a table is read, if any reads it by a scan.
fn scans<'a>(plan: &'a [String], scan: &str) -> Vec<&'a str> {
    plan.iter()
        .map(String::as_str)
        .filter(|line| line.contains(scan) && !line.contains("CONSTANT ROW"))
        .collect()
}

fn check(backend: &str, case: &Case, sql: &str, plan: &[String], scan: &str, index: &[&str]) {
    eprintln!("{backend}, {}:\n    {}", case.name, plan.join("\n    "));
    let found = scans(plan, scan);
    assert!(
        found.is_empty(),
        "{backend}, {}: a table is scanned: {found:?}\n{sql}",
        case.name,
    );
    // An INSERT … VALUES reads nothing; every other hot query must show the index it uses.
    if !sql.starts_with("INSERT") || !backend.starts_with("SQLite") {
        assert!(
            plan.iter().any(|l| index.iter().any(|i| l.contains(i))),
            "{backend}, {}: no index in the plan\n{sql}",
            case.name,
        );
    }
}

#[tokio::test]
async fn hot_queries_use_indexes_on_sqlite() {
    let (_dir, store) = seeded_sqlite().await;
    let Backend::Sqlite { read, .. } = &store.backend else {
        unreachable!("a SQLite URL")
    };
    let mut conn = read.acquire().await.unwrap();
    for case in cases().into_iter().filter(|c| !c.sql.0.is_empty()) {
        let plan = sqlite_plan(&mut conn, case.sql.0).await;
        let index = ["USING INDEX", "USING COVERING INDEX", "USING PRIMARY KEY"];
        check("SQLite", &case, case.sql.0, &plan, "SCAN ", &index);
    }
    // The plain insert of each rotation has no plan to check; it is listed so that every
    // statement of the refresh is accounted for here.
    assert!(INSERT_REFRESH.starts_with("INSERT"));
}

#[tokio::test]
async fn hot_queries_use_indexes_on_postgres() {
    let Some(server) = std::env::var("GATEHOUSE_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("PostgreSQL plans skipped: GATEHOUSE_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("gatehouse_plans_{}", uuid::Uuid::new_v4().simple());
    let mut admin = sqlx::PgConnection::connect(&server).await.unwrap();
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    let url = match server.rfind('/') {
        Some(i) if i > "postgres://".len() => format!("{}/{name}", &server[..i]),
        _ => format!("{server}/{name}"),
    };
    let result = plans_on_postgres(&url).await;
    admin
        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
        .await
        .unwrap();
    result.unwrap();
}

async fn plans_on_postgres(url: &str) -> Result<(), sqlx::Error> {
    let store = Store::connect(url).await.expect("the test database");
    store.migrate().await.expect("migrations");
    let seed = SEED
        .replace("{id}", "gen_random_uuid()")
        .replace("{bytes}", "decode(md5(random()::text), 'hex')");
    let mut conn = sqlx::PgConnection::connect(url).await?;
    sqlx::raw_sql(&seed).execute(&mut conn).await?;
    for case in cases().into_iter().filter(|c| !c.sql.1.is_empty()) {
        sqlx::raw_sql(&format!("PREPARE hot ({}) AS {}", case.types, case.sql.1))
            .execute(&mut conn)
            .await?;
        for mode in ["force_custom_plan", "force_generic_plan"] {
            conn.execute(format!("SET plan_cache_mode = {mode}").as_str())
                .await?;
            let plan: Vec<String> = sqlx::raw_sql(&format!("EXPLAIN EXECUTE hot ({})", case.args))
                .fetch_all(&mut conn)
                .await?
                .iter()
                .map(|r| r.get::<String, _>(0))
                .collect();
            let index = [
                "Index Scan",
                "Index Only Scan",
                "Bitmap Index Scan",
                "Conflict Arbiter Indexes",
            ];
            let backend = format!("PostgreSQL ({mode})");
            check(&backend, &case, case.sql.1, &plan, "Seq Scan", &index);
        }
        conn.execute("DEALLOCATE hot").await?;
    }
    store.close().await;
    Ok(())
}
