//! The hot queries whose plans `plans` checks: the store's own query texts, with PostgreSQL's
//! parameter types and sample values.

use crate::store::admin::{USERS_PAGE, USERS_PAGE_AFTER, USERS_SEARCH, USERS_SEARCH_AFTER};
use crate::store::api_keys::{API_KEY_BY_HASH, TOUCH_API_KEY};
use crate::store::challenges::{CHALLENGE_USER, COMPLETE_CHALLENGE, TAKE_CHALLENGE_ATTEMPT};
use crate::store::contacts::{
    LIST_CONTACTS, LIST_CONTACTS_AFTER, LIST_CONTACTS_SEARCH, LIST_CONTACTS_SEARCH_AFTER, ORG_LISTS,
};
use crate::store::cookies::COOKIE_SESSION;
use crate::store::orgs::MEMBERSHIPS_OF;
use crate::store::purge::{
    PURGE_CONSUMED_REFRESH_TOKENS, PURGE_EXPIRED_CHALLENGES, PURGE_EXPIRED_CODES,
    PURGE_EXPIRED_DEVICE_CODES, PURGE_EXPIRED_DPOP_PROOFS, PURGE_EXPIRED_FEDERATION_FLOWS,
    PURGE_EXPIRED_FEDERATION_HANDOFFS, PURGE_EXPIRED_MAIL_TOKENS, PURGE_EXPIRED_ORG_INVITATIONS,
    PURGE_EXPIRED_REGISTRATION_TOKENS, PURGE_EXPIRED_TOKEN_REVOCATIONS, PURGE_IDLE_THROTTLES,
    PURGE_LAPSED_SESSIONS, PURGE_OLD_AUDIT_EVENTS, PURGE_REVOKED_SESSIONS,
};
use crate::store::sessions::{
    ACTIVE_SESSIONS, CURRENT_REFRESH, REFRESH_BY_JTI, REVOKED_SINCE, ROTATE_POSTGRES,
    ROTATE_SQLITE_STEPS, SESSION_BY_ID, TOUCH_SESSION,
};
use crate::store::throttles::{RETURN_THROTTLE_SLOT, TAKE_THROTTLE_SLOT};
use crate::store::users::{USER_BY_EMAIL, USER_BY_ID, USERS_CHANGED_SINCE};

const UUID: &str = "'0190a000-0000-7000-8000-000000000000'";

/// A hot query: its name, its text (SQLite's, PostgreSQL's), and for PostgreSQL its parameters'
/// types and values.
pub(super) struct Case {
    pub name: &'static str,
    pub sql: (&'static str, &'static str),
    pub types: &'static str,
    pub args: &'static str,
}

pub(super) fn cases() -> Vec<Case> {
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
        case(
            "revocation poll",
            REVOKED_SINCE,
            "bigint, bigint",
            "4990, 9223372036854775807",
        ),
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
            "purge: expired device authorizations",
            PURGE_EXPIRED_DEVICE_CODES,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired DPoP proofs",
            PURGE_EXPIRED_DPOP_PROOFS,
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
        purge(
            "purge: expired federation flows",
            PURGE_EXPIRED_FEDERATION_FLOWS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: expired federation handoffs",
            PURGE_EXPIRED_FEDERATION_HANDOFFS,
            "bigint, bigint",
            "100, 500",
        ),
        purge(
            "purge: revocations of expired single tokens",
            PURGE_EXPIRED_TOKEN_REVOCATIONS,
            "bigint, bigint",
            "100, 500",
        ),
    ]
}
