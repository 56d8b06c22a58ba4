//! The services the proxy tests put behind nginx and Caddy, each recording what it received of
//! every request: the target, the `Host` and every header that names itself `Remote-…` in any
//! spelling. Two kinds, because upstreams read headers differently: a Rust one (hyper, which keeps
//! each header as it came) and a WSGI one (Python's wsgiref, which folds `Remote_User`,
//! `remote-user` and `REMOTE-USER` into one `HTTP_REMOTE_USER`, as Django, Flask and Rack do).

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, Uri};

/// Any python3: wsgiref is in its standard library (`.ci/run` installs Debian's).
const PYTHON: &str = "python3";

/// What an upstream received of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The path and query as the upstream read them (WSGI: `PATH_INFO`, percent-decoded).
    pub target: String,
    pub host: Option<String>,
    /// Every `Remote-*` header by its folded name (`remote-email-verified`), each value received.
    pub remote: BTreeMap<String, Vec<String>>,
    /// The headers of `STEERING` received, by folded name.
    pub steering: BTreeMap<String, Vec<String>>,
}

/// Headers that some frameworks read as the request's path, method or host in place of the
/// request line's and `Host` (Symfony and IIS: `X-Original-URL`, `X-Rewrite-URL`; many:
/// `X-HTTP-Method-Override`; apps behind proxies: `X-Forwarded-Host`, `Forwarded`), by folded name.
pub const STEERING: &[&str] = &[
    "x-original-url",
    "x-rewrite-url",
    "x-forwarded-uri",
    "x-forwarded-prefix",
    "x-forwarded-host",
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "forwarded",
];

/// A header name as WSGI and Rack fold it, lower-cased with `-` for `_`; `None` unless it is a
/// `Remote-*` header.
fn folded_remote(name: &str) -> Option<String> {
    let folded = name.to_ascii_lowercase().replace('_', "-");
    folded.starts_with("remote-").then_some(folded)
}

/// The folded name of a header of `STEERING`, or `None`.
fn folded_steering(name: &str) -> Option<String> {
    let folded = name.to_ascii_lowercase().replace('_', "-");
    STEERING.contains(&folded.as_str()).then_some(folded)
}

pub struct Upstream {
    pub addr: SocketAddr,
    record: Record,
}

enum Record {
    Memory(Arc<Mutex<Vec<Seen>>>),
    /// The WSGI process appends a JSON line per request to `path` before it answers.
    Wsgi {
        path: PathBuf,
        child: Child,
        _dir: tempfile::TempDir,
    },
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Record::Wsgi { child, .. } = &mut self.record {
            crate::helpers::kill_group(child);
        }
    }
}

/// A WSGI application on wsgiref's server: answers "upstream" and logs what it was given.
const WSGI_APP: &str = r#"
import json, sys
from wsgiref.simple_server import make_server, WSGIRequestHandler

log = open(sys.argv[1], "a", buffering=1)

def app(environ, start_response):
    query = environ.get("QUERY_STRING", "")
    log.write(json.dumps({
        "target": environ.get("PATH_INFO", "") + ("?" + query if query else ""),
        "host": environ.get("HTTP_HOST"),
        "headers": {k: v for k, v in environ.items() if k.startswith("HTTP_")},
    }) + "\n")
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"upstream"]

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
print(server.server_port, flush=True)
server.serve_forever()
"#;

impl Upstream {
    /// The Rust upstream.
    pub async fn start() -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
            let record = record.clone();
            async move {
                let mut remote: BTreeMap<String, Vec<String>> = BTreeMap::new();
                let mut steering: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for (name, value) in &headers {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    if let Some(name) = folded_remote(name.as_str()) {
                        remote.entry(name).or_default().push(value);
                    } else if let Some(name) = folded_steering(name.as_str()) {
                        steering.entry(name).or_default().push(value);
                    }
                }
                let host = headers
                    .get("host")
                    .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
                let target = uri.to_string();
                record.lock().unwrap().push(Seen {
                    target,
                    host,
                    remote,
                    steering,
                });
                "upstream"
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        Upstream {
            addr,
            record: Record::Memory(seen),
        }
    }

    /// The WSGI upstream, on python3's wsgiref; `None` without python3, which is a failure in
    /// CI (`.ci/run` installs it).
    pub fn wsgi() -> Option<Upstream> {
        let found = Command::new(PYTHON)
            .args(["-c", "import wsgiref.simple_server"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                std::env::var_os("CI").is_none(),
                "python3 is needed in CI (.ci/run installs it)"
            );
            eprintln!("python3 is not installed: the WSGI upstream is left out");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("upstream.py");
        std::fs::write(&script, WSGI_APP).unwrap();
        let path = dir.path().join("seen.jsonl");
        std::fs::write(&path, "").unwrap();
        let mut child = Command::new(PYTHON)
            .arg(&script)
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the WSGI upstream did not name its port: {line:?}"));
        Some(Upstream {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            record: Record::Wsgi {
                path,
                child,
                _dir: dir,
            },
        })
    }

    pub fn kind(&self) -> &'static str {
        match self.record {
            Record::Memory(_) => "Rust upstream",
            Record::Wsgi { .. } => "WSGI upstream",
        }
    }

    /// Every request received so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        match &self.record {
            Record::Memory(seen) => seen.lock().unwrap().clone(),
            Record::Wsgi { path, .. } => std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .map(|line| {
                    let v: serde_json::Value = serde_json::from_str(line).unwrap();
                    let headers = v["headers"].as_object().unwrap();
                    let pick = |fold: fn(&str) -> Option<String>| {
                        headers
                            .iter()
                            .filter_map(|(k, value)| {
                                let name = fold(k.strip_prefix("HTTP_")?)?;
                                Some((name, vec![value.as_str()?.to_owned()]))
                            })
                            .collect()
                    };
                    Seen {
                        target: v["target"].as_str().unwrap().to_owned(),
                        host: v["host"].as_str().map(str::to_owned),
                        remote: pick(folded_remote),
                        steering: pick(folded_steering),
                    }
                })
                .collect(),
        }
    }

    pub fn requests(&self) -> usize {
        self.seen().len()
    }

    /// The last request received.
    pub fn last(&self) -> Seen {
        self.seen().pop().expect("the upstream was reached")
    }
}
