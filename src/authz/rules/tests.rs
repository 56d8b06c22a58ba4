//! The access rules: which rule decides, and how a bad file is refused.

use super::*;

fn target(method: &str, host: &str, path: &str) -> Target {
    Target {
        method: method.into(),
        host: super::super::authority::authority_host(host).unwrap(),
        path: NormalPath::parse(path).unwrap(),
    }
}

const EXAMPLE: &str = r#"
    [[rule]]
    hosts = ["admin.example.com"]
    paths = ["/api/admin"]
    methods = ["POST", "delete"]
    policy = "roles"
    roles = ["admin", "ops"]

    [[rule]]
    paths = ["/reports/*/export"]
    policy = "two_factor"

    [[rule]]
    hosts = ["*.internal.example.com"]
    policy = "deny"

    [[rule]]
    paths = ["/internal"]
    policy = "deny"
"#;

#[test]
fn the_first_matching_rule_decides() {
    let rules = AccessRules::parse(EXAMPLE).unwrap();
    let roles = || {
        Policy::Roles(vec![
            Role::parse("admin").unwrap(),
            Role::parse("ops").unwrap(),
        ])
    };
    assert_eq!(
        rules.policy_for(&target("POST", "Admin.Example.com:8443", "/api/admin/x")),
        &roles()
    );
    assert_eq!(
        rules.policy_for(&target("delete", "admin.example.com.", "/api/admin")),
        &roles()
    );
    assert_eq!(
        rules.policy_for(&target("GET", "admin.example.com", "/api/admin")),
        &Policy::Authenticated
    );
    assert_eq!(
        rules.policy_for(&target("POST", "www.example.com", "/api/admin")),
        &Policy::Authenticated
    );
    assert_eq!(
        rules.policy_for(&target("GET", "x", "/reports/7/export")),
        &Policy::TwoFactor
    );
    assert_eq!(
        rules.policy_for(&target("GET", "a.b.internal.example.com", "/")),
        &Policy::Deny
    );
    assert_eq!(
        rules.policy_for(&target("GET", "internal.example.com", "/")),
        &Policy::Authenticated
    );
    assert_eq!(
        rules.policy_for(&target("GET", "x", "/internal/../internal/a")),
        &Policy::Deny
    );
    assert_eq!(
        rules.policy_for(&target("GET", "x", "/internals")),
        &Policy::Authenticated
    );
    assert!(AccessRules::parse("").unwrap().is_empty());
}

#[test]
fn head_is_judged_as_get() {
    let rules = AccessRules::parse("[[rule]]\nmethods = [\"get\"]\npolicy = \"deny\"").unwrap();
    for method in ["GET", "HEAD"] {
        assert_eq!(rules.policy_for(&target(method, "h", "/")), &Policy::Deny);
    }
    assert_eq!(
        rules.policy_for(&target("POST", "h", "/")),
        &Policy::Authenticated
    );
    let only_head =
        AccessRules::parse("[[rule]]\nmethods = [\"HEAD\"]\npolicy = \"deny\"").unwrap();
    assert_eq!(
        only_head.policy_for(&target("GET", "h", "/")),
        &Policy::Authenticated
    );
}

#[test]
fn a_bad_file_names_the_rule_at_fault() {
    let cases = [
        (
            "[[rule]]\npolicy = \"open\"",
            "rule 1: unknown policy \"open\"",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\n[[rule]]\npolicy = \"roles\"",
            "rule 2: policy \"roles\" needs",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\nroles = [\"a\"]",
            "rule 1: roles are given only",
        ),
        (
            "[[rule]]\npolicy = \"roles\"\nroles = [\"Admin\"]",
            "rule 1: \"Admin\" is not a role name",
        ),
        (
            "[[rule]]\npolicy = \"org_roles\"",
            "rule 1: policy \"org_roles\" needs",
        ),
        (
            "[[rule]]\npolicy = \"roles\"\norg_roles = [\"a\"]",
            "rule 1: org_roles are given only",
        ),
        (
            "[[rule]]\npolicy = \"org_roles\"\norg_roles = [\"a\"]\nroles = [\"b\"]",
            "rule 1: roles are given only",
        ),
        (
            "[[rule]]\npolicy = \"org_roles\"\norg_roles = [\"A B\"]",
            "rule 1: \"A B\" is not a role name",
        ),
        (
            "[[rule]]\npolicy = \"clients\"",
            "rule 1: policy \"clients\" needs",
        ),
        (
            "[[rule]]\nname = \"a\\nforged line\"\npolicy = \"deny\"",
            "rule 1: name \"a\\nforged line\" is not 1 to 100 characters",
        ),
        (
            "[[rule]]\npolicy = \"authenticated\"\nclients = [\"0190a000-0000-7000-8000-000000000000\"]",
            "rule 1: clients are given only",
        ),
        (
            "[[rule]]\npolicy = \"clients\"\nclients = [\"reports\"]",
            "rule 1: \"reports\" is not a client id",
        ),
        (
            "[[rule]]\npolicy = \"clients\"\nclients = []",
            "rule 1: clients is empty",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\npaths = [\"/a**\"]",
            "rule 1: path \"/a**\" is not a valid glob",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\npath = [\"/a\"]",
            "rule 1: unknown field `path`",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\nhosts = [\"a.com:80\"]",
            "rule 1: host \"a.com:80\"",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\nmethods = [\"GE T\"]",
            "rule 1: method \"GE T\"",
        ),
        (
            "[[rule]]\npolicy = \"deny\"\npaths = []",
            "rule 1: paths is empty",
        ),
        (
            "[[rule]]\npaths = [\"/a\"]",
            "rule 1: missing field `policy`",
        ),
        (
            "[[rules]]\npolicy = \"deny\"",
            "not a rules file: TOML parse error at line 1, column 3 | 1 | [[rules]] | ^^^^^ unknown field `rules`",
        ),
        ("[[rule]\n", "not a rules file"),
    ];
    for (text, expected) in cases {
        let error = AccessRules::parse(text).unwrap_err();
        assert!(error.starts_with(expected), "{text:?}: {error}");
        assert!(!error.contains('\n'), "{error}");
    }
}
