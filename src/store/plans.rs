//! The plans of the hot queries: each must find its rows through an index, never by scanning a
//! table, on both databases, whatever the tables hold. Run on the very query texts the store
//! executes (the module consts), against a migrated and seeded database: SQLite's
//! `EXPLAIN QUERY PLAN`, and PostgreSQL's `EXPLAIN` of the prepared statement in both its custom
//! and its generic plan (a prepared statement switches to the generic one after five runs) when
//! `GATEHOUSE_TEST_POSTGRES_URL` is set. `cargo test plans -- --nocapture` prints them.

use sqlx::{Connection as _, Executor as _, Row as _};

use super::admin::{USERS_PAGE, USERS_PAGE_AFTER, USERS_SEARCH, USERS_SEARCH_AFTER};
use super::api_keys::{API_KEY_BY_HASH, TOUCH_API_KEY};
use super::challenges::{CHALLENGE_USER, COMPLETE_CHALLENGE, TAKE_CHALLENGE_ATTEMPT};
use super::contacts::{
    LIST_CONTACTS, LIST_CONTACTS_AFTER, LIST_CONTACTS_SEARCH, LIST_CONTACTS_SEARCH_AFTER, ORG_LISTS,
};
use super::cookies::COOKIE_SESSION;
use super::orgs::MEMBERSHIPS_OF;
use super::purge::{
    PURGE_CONSUMED_REFRESH_TOKENS, PURGE_EXPIRED_CHALLENGES, PURGE_EXPIRED_CODES,
    PURGE_EXPIRED_MAIL_TOKENS, PURGE_EXPIRED_ORG_INVITATIONS, PURGE_EXPIRED_REGISTRATION_TOKENS,
    PURGE_IDLE_THROTTLES, PURGE_LAPSED_SESSIONS, PURGE_OLD_AUDIT_EVENTS, PURGE_REVOKED_SESSIONS,
};
use super::sessions::{
    ACTIVE_SESSIONS, CURRENT_REFRESH, INSERT_REFRESH, REFRESH_BY_JTI, REVOKED_SINCE,
    ROTATE_POSTGRES, ROTATE_SQLITE_STEPS, SESSION_BY_ID, TOUCH_SESSION,
};
use super::throttles::{RETURN_THROTTLE_SLOT, TAKE_THROTTLE_SLOT};
use super::users::{USER_BY_EMAIL, USER_BY_ID, USERS_CHANGED_SINCE};
use super::{Backend, Store};

const UUID: &str = "'0190a000-0000-7000-8000-000000000000'";

/// A hot query: its name, its text (SQLite's, PostgreSQL's), and for PostgreSQL its parameters'
/// types and values.
struct Case {
    name: &'static str,
    sql: (&'static str, &'static str),
    types: &'static str,
    args: &'static str,
}

fn cases() -> Vec<Case> {
    let case = |name, sql, types, args| Case {
        name,
        sql: (sql, sql),
        types,
        args,
    };
    let purge = |name, sql, types, args| Case {
        name,
        sql,
        types,
        args,
    };
    let admin_page = |name, sql, types, args| Case {
        name,
        sql: ("", sql),
        types,
        args,
    };
    let uuid_time = "'0190a000-0000-7000-8000-000000000000', 4990";
    vec![
        Case {
            name: "refresh: the rotation (PostgreSQL)",
            sql: ("", ROTATE_POSTGRES),
            types: "uuid, bigint, uuid, bigint",
            args: "'0190a000-0000-7000-8000-000000000000', 4990, \
                   '0190a000-0000-7000-8000-000000000001', 9990",
        },
        Case {
            name: "refresh (SQLite script): consume",
            sql: (ROTATE_SQLITE_STEPS[0], ""),
            types: "",
            args: "",
        },
        Case {
            name: "refresh (SQLite script): insert the next token",
            sql: (ROTATE_SQLITE_STEPS[1], ""),
            types: "",
            args: "",
        },
        Case {
            name: "refresh (SQLite script): touch the session",
            sql: (ROTATE_SQLITE_STEPS[2], ""),
            types: "",
            args: "",
        },
        case("refresh: the user", USER_BY_ID, "uuid", UUID),
        case(
            "refresh (grace): the presented token",
            REFRESH_BY_JTI,
            "uuid",
            UUID,
        ),
        case(
            "refresh (grace): the current token",
            CURRENT_REFRESH,
            "uuid",
            UUID,
        ),
        case("session lookup", SESSION_BY_ID, "uuid", UUID),
        case("user by e-mail", USER_BY_EMAIL, "text", "'u7@example.com'"),
        case(
            "contacts: first page",
            LIST_CONTACTS,
            "uuid, bigint",
            "'0190a000-0000-7000-8000-000000000000', 21",
        ),
        case(
            "contacts: page after a cursor",
            LIST_CONTACTS_AFTER,
            "uuid, uuid, bigint",
            "'0190a000-0000-7000-8000-000000000000', 'ffffffff-ffff-7fff-bfff-ffffffffffff', 21",
        ),
        case(
            "contacts: search",
            LIST_CONTACTS_SEARCH,
            "uuid, text, bigint",
            "'0190a000-0000-7000-8000-000000000000', '%acme%', 21",
        ),
        case(
            "contacts: search after a cursor",
            LIST_CONTACTS_SEARCH_AFTER,
            "uuid, uuid, text, bigint",
            "'0190a000-0000-7000-8000-000000000000', 'ffffffff-ffff-7fff-bfff-ffffffffffff', '%acme%', 21",
        ),
        case(
            "organisation contacts: first page",
            ORG_LISTS[0],
            "uuid, bigint",
            "'0190a000-0000-7000-8000-000000000000', 21",
        ),
        case(
            "organisation contacts: page after a cursor",
            ORG_LISTS[1],
            "uuid, uuid, bigint",
            "'0190a000-0000-7000-8000-000000000000', 'ffffffff-ffff-7fff-bfff-ffffffffffff', 21",
        ),
        case(
            "memberships of an account (forward-auth's directory)",
            MEMBERSHIPS_OF,
            "uuid",
            UUID,
        ),
        case("revocation poll", REVOKED_SINCE, "bigint", "4990"),
        case(
            "changed accounts poll (forward-auth's directory)",
            USERS_CHANGED_SINCE,
            "bigint, bigint",
            "4990, 9223372036854775807",
        ),
        case(
            "sessions of a user",
            ACTIVE_SESSIONS,
            "uuid, bigint",
            uuid_time,
        ),
        case(
            "session use written",
            TOUCH_SESSION,
            "uuid, bigint",
            uuid_time,
        ),
        case(
            "API key by its hash (bearer calls, forward-auth)",
            API_KEY_BY_HASH,
            "bytea",
            "'\\x00'",
        ),
        case(
            "API key use written",
            TOUCH_API_KEY,
            "uuid, bigint, bigint",
            "'0190a000-0000-7000-8000-000000000000', 5, 4",
        ),
        case(
            "session cookie: its session (forward-auth)",
            COOKIE_SESSION,
            "bytea",
            "'\\x00'",
        ),
        case(
            "challenge lookup",
            CHALLENGE_USER,
            "bytea, bigint, bigint",
            "'\\x00', 5, 4990",
        ),
        case(
            "challenge attempt",
            TAKE_CHALLENGE_ATTEMPT,
            "bytea, bigint, bigint",
            "'\\x00', 5, 4990",
        ),
        case(
            "challenge completed",
            COMPLETE_CHALLENGE,
            "bytea, bigint",
            "'\\x00', 4990",
        ),
        case(
            "throttle slot taken",
            TAKE_THROTTLE_SLOT,
            "text, bigint, bigint, bigint",
            "'u7@example.com', 4990, 18000, 900000",
        ),
        case(
            "throttle slot given back",
            RETURN_THROTTLE_SLOT,
            "text, bigint",
            "'u7@example.com', 18000",
        ),
        // The admin's account list walks the address index in order (a search filters as it
        // walks, a substring having no index to seek). On SQLite a walk of an index is a "SCAN …
        // USING INDEX", which `check` would take for a table scan: `admin_pages_walk_the_index`
        // checks those plans instead.
        admin_page("admin: accounts, first page", USERS_PAGE, "bigint", "51"),
        admin_page(
            "admin: accounts after a cursor",
            USERS_PAGE_AFTER,
            "bigint, text",
            "51, 'u2500@example.com'",
        ),
        admin_page(
            "admin: accounts, search",
            USERS_SEARCH,
            "bigint, text",
            "51, '%u25%'",
        ),
        admin_page(
            "admin: accounts, search after a cursor",
            USERS_SEARCH_AFTER,
            "bigint, text, text",
            "51, '%u25%', 'u2500@example.com'",
        ),
        purge(
            "purge: lapsed sessions",
            PURGE_LAPSED_SESSIONS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: revoked sessions",
            PURGE_REVOKED_SESSIONS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: consumed refresh tokens",
            PURGE_CONSUMED_REFRESH_TOKENS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired challenges",
            PURGE_EXPIRED_CHALLENGES,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: idle throttle keys",
            PURGE_IDLE_THROTTLES,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: old audit events",
            PURGE_OLD_AUDIT_EVENTS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired mail tokens",
            PURGE_EXPIRED_MAIL_TOKENS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired authorization codes",
            PURGE_EXPIRED_CODES,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired organisation invitations",
            PURGE_EXPIRED_ORG_INVITATIONS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired client registration tokens",
            PURGE_EXPIRED_REGISTRATION_TOKENS,
            "bigint, bigint",
            "100, 500",
        ),
    ]
}

/// Rows enough that a planner weighs an index against a scan as it would in production: 5 000
/// accounts, each with a session (1 % revoked) and its refresh token (10 % consumed), contacts,
/// challenges, throttle keys, audit events, mailed tokens, passkeys (a third of the accounts),
/// authorization codes, invitations and registration tokens. `{id}` and `{bytes}` are each
/// backend's random UUID and byte string.
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
INSERT INTO org_invitations (id, org_id, email, email_normalized, roles, token_hash, created_at,
                             expires_at)
SELECT {id}, o.id, 'i' || u.created_at || '@example.com', 'i' || u.created_at || '@example.com',
       'member', {bytes}, u.created_at, u.created_at + 600
FROM users u JOIN orgs o ON o.created_at = u.created_at - u.created_at % 10 + 10;
INSERT INTO client_registration_tokens (id, token_hash, created_at, expires_at)
SELECT {id}, {bytes}, created_at, created_at + 3600 FROM users;
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
