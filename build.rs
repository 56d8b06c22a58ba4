//! Tells the tests whether a PostgreSQL server was given (`GATEHOUSE_TEST_POSTGRES_URL`), so that
//! without one the PostgreSQL half of the suite is reported as ignored, not as passed.

fn main() {
    println!("cargo::rerun-if-env-changed=GATEHOUSE_TEST_POSTGRES_URL");
    println!("cargo::rustc-check-cfg=cfg(gatehouse_postgres_tests)");
    if std::env::var("GATEHOUSE_TEST_POSTGRES_URL").is_ok_and(|url| !url.is_empty()) {
        println!("cargo::rustc-cfg=gatehouse_postgres_tests");
    }
}
