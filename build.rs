//! Rebuilds when a migration is added, and tells the tests whether a PostgreSQL server was given (`GATEHOUSE_TEST_POSTGRES_URL`), so that
//! without one the PostgreSQL half of the suite is reported as ignored, not as passed.

fn main() {
    // `sqlx::migrate!` embeds the migrations: a new file must rebuild the crate even when no
    // source file changed.
    println!("cargo::rerun-if-changed=migrations");
    println!("cargo::rerun-if-env-changed=GATEHOUSE_TEST_POSTGRES_URL");
    println!("cargo::rustc-check-cfg=cfg(gatehouse_postgres_tests)");
    if std::env::var("GATEHOUSE_TEST_POSTGRES_URL").is_ok_and(|url| !url.is_empty()) {
        println!("cargo::rustc-cfg=gatehouse_postgres_tests");
    }
}
