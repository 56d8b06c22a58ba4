//! A database outage, for real: the test starts a PostgreSQL server of its own (initdb + pg_ctl on
//! a temporary data directory), runs `gatehouse serve` on it, stops the database under it and
//! starts it again. Runs where the PostgreSQL tests run (`GATEHOUSE_TEST_POSTGRES_URL` set) and the
//! server binaries are installed; elsewhere it passes at once, saying why.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use gatehouse::config::MasterKey;
use serde_json::json;

use crate::helpers::{Http, Instance, PASSWORD, TestDatabase};

/// The directory holding `initdb` and `pg_ctl`.
fn server_binaries() -> Option<PathBuf> {
    let output = Command::new("pg_config").arg("--bindir").output().ok()?;
    let dir = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    if dir.join("pg_ctl").exists() {
        return Some(dir);
    }
    // Debian's pg_config may be the client's; the server lives under /usr/lib/postgresql.
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("pg_ctl").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A PostgreSQL server on a data directory of its own, stopped and removed when dropped.
struct OwnPostgres {
    bin: PathBuf,
    data: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

impl OwnPostgres {
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_postgres {
            // initdb and the server refuse to run as root.
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .output()
            .expect("the PostgreSQL tools run");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn new(bin: PathBuf) -> OwnPostgres {
        let data = tempfile::tempdir().unwrap();
        let as_postgres = is_root();
        if as_postgres {
            let chowned = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(data.path())
                .status()
                .unwrap();
            assert!(chowned.success());
        }
        let port = crate::helpers::free_port();
        let server = OwnPostgres {
            bin,
            data,
            port,
            as_postgres,
        };
        let dir = server.dir();
        server.run(
            "initdb",
            &["-D", &dir, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        server.start();
        server
    }

    fn dir(&self) -> String {
        self.data.path().join("pgdata").display().to_string()
    }

    fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.data.path().display()
        );
        let log = self.data.path().join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &["-D", &self.dir(), "-o", &options, "-l", &log, "-w", "start"],
        );
    }

    fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.dir(), "-m", "fast", "-w", "stop"]);
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-D", &self.dir(), "-m", "immediate", "stop"])
            .output();
    }
}

#[tokio::test]
#[cfg_attr(
    not(gatehouse_postgres_tests),
    ignore = "PostgreSQL half skipped: GATEHOUSE_TEST_POSTGRES_URL is not set"
)]
async fn a_database_outage_is_ridden_out() {
    let bin = server_binaries()
        .expect("the PostgreSQL server binaries (initdb, pg_ctl) are installed beside the server");
    let postgres = OwnPostgres::new(bin);
    let db = TestDatabase::external(&postgres.url(), MasterKey::generate().encode());
    let added = db.cli(
        &[
            "user",
            "add",
            "--email",
            "ora@example.com",
            "--name",
            "Ora",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let server = Instance::start(&db, &[]);
    let http: &Http = &server;
    let login = http.login("ora@example.com", PASSWORD).await;
    let access = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    http.get("/api/v1/auth/sessions", &access).await.data(200);

    postgres.stop();

    // Calls that need the database fail fast and say why.
    for path in ["/api/v1/auth/sessions", "/api/v1/crm/contacts"] {
        let started = Instant::now();
        http.get(path, &access)
            .await
            .error(503, "SERVICE_UNAVAILABLE");
        assert!(started.elapsed() < Duration::from_secs(5), "{path} hung");
    }
    let started = Instant::now();
    http.login("ora@example.com", PASSWORD)
        .await
        .error(503, "SERVICE_UNAVAILABLE");
    assert!(started.elapsed() < Duration::from_secs(5));
    let ready = http.send(http.client.get(http.url("/readyz"))).await;
    ready.error(503, "SERVICE_UNAVAILABLE");
    // Calls that need none keep working: the public keys, and judging tokens (the valid one got
    // past authentication to the 503 above; a forged one is still refused as such).
    let jwks = http
        .client
        .get(http.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(jwks.status(), 200);
    http.get("/api/v1/auth/me", "not.a.token")
        .await
        .error(401, "TOKEN_INVALID");

    postgres.start();
    let back = Instant::now();
    loop {
        let ready = http.client.get(http.url("/readyz")).send().await.unwrap();
        if ready.status() == 200 {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(5),
            "not recovered 5 s after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "ready again {:?} after the database came back",
        back.elapsed()
    );
    http.get("/api/v1/auth/sessions", &access).await.data(200);
    http.post(
        "/api/v1/auth/login",
        json!({ "email": "ora@example.com", "password": PASSWORD }),
    )
    .await
    .data(200);
}
