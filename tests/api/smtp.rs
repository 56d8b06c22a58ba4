//! A real SMTP server for the mail tests, on a loopback port (`smtp_server.rs`), storing each
//! message it receives in a maildir, which the tests read as a recipient's mailbox would. It can
//! be stopped and started again on the same port, to test delivery across an outage, and can
//! require TLS and a login (tests/api/smtp_tls.rs). Each server runs on a thread and runtime of
//! its own, as a separate process would: stopping it ends its sessions mid-sentence.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::smtp_server::Relay;

pub struct SmtpServer {
    pub port: u16,
    dir: tempfile::TempDir,
    running: Option<Running>,
    /// Sessions open now, across restarts.
    open: Arc<AtomicUsize>,
    /// TLS and AUTH required, when set.
    pub secure: Option<crate::smtp_tls::Secure>,
}

/// A server's thread, which ends (and with it every session) when `stop` is sent.
struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl SmtpServer {
    /// A server on a free loopback port, accepting mail.
    pub fn start() -> SmtpServer {
        let (mut server, listener) = SmtpServer::bound();
        server.run(listener);
        server
    }

    /// A server whose port is bound now and kept: no other process can take it between choosing
    /// the port and listening on it (as it could with a port probed and freed).
    fn bound() -> (SmtpServer, std::net::TcpListener) {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let mut server = SmtpServer::stopped();
        server.port = listener.local_addr().unwrap().port();
        (server, listener)
    }

    /// A port reserved for a server that is not running yet: connections to it are refused.
    pub fn stopped() -> SmtpServer {
        let port = crate::helpers::free_port();
        let dir = tempfile::tempdir().unwrap();
        for sub in ["tmp", "new", "cur"] {
            std::fs::create_dir_all(dir.path().join("maildir").join(sub)).unwrap();
        }
        SmtpServer {
            port,
            dir,
            running: None,
            open: Arc::default(),
            secure: None,
        }
    }

    /// A server that takes mail only over `tls`, with a certificate of its own CA, and only from
    /// the login of `smtp_tls::SMTP_USER`.
    pub fn start_secure(tls: crate::smtp_tls::Tls) -> SmtpServer {
        let (mut server, listener) = SmtpServer::bound();
        server.secure = Some(crate::smtp_tls::Secure::new(tls));
        server.run(listener);
        server
    }

    /// The URL Gatehouse is given (with the right login, for a secure server).
    pub fn url(&self) -> String {
        match &self.secure {
            Some(secure) => secure.url(self.port, crate::smtp_tls::SMTP_PASSWORD),
            None => format!("smtp://127.0.0.1:{}", self.port),
        }
    }

    /// Starts the server (again) on its port: it listens when this returns.
    pub fn resume(&mut self) {
        let listener = std::net::TcpListener::bind(("127.0.0.1", self.port))
            .unwrap_or_else(|e| panic!("the SMTP server cannot listen on {}: {e}", self.port));
        self.run(listener);
    }

    fn run(&mut self, listener: std::net::TcpListener) {
        assert!(self.running.is_none(), "the SMTP server runs already");
        listener.set_nonblocking(true).unwrap();
        let relay = Arc::new(Relay {
            maildir: self.maildir(),
            security: self.secure.as_ref().map(|s| s.security()),
            open: self.open.clone(),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                tokio::select! {
                    () = crate::smtp_server::serve(listener, relay) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime drops every session with its socket.
        });
        self.running = Some(Running { stop, thread });
    }

    /// Stops the server; the port refuses connections until `resume`.
    pub fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.stop.send(());
            let _ = running.thread.join();
        }
    }

    /// Waits until no client is connected: whatever a client still sending had to say is
    /// stored, or never will be.
    pub async fn wait_idle(&self) {
        let started = Instant::now();
        while self.open.load(Ordering::SeqCst) > 0 {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "a client stays connected to the SMTP server"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The maildir the server stores messages in (its `new/` holds one file per message).
    pub fn maildir(&self) -> PathBuf {
        self.dir.path().join("maildir")
    }

    /// Every message received so far, oldest first (the server's file names sort so).
    pub fn messages(&self) -> Vec<Mail> {
        let dir: PathBuf = self.dir.path().join("maildir").join("new");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .map(Mail)
            .collect()
    }

    /// The messages once there are at least `n`, waiting up to `limit` for them.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Mail> {
        let started = Instant::now();
        loop {
            let messages = self.messages();
            if messages.len() >= n {
                return messages;
            }
            assert!(
                started.elapsed() < limit,
                "{} message(s) after {limit:?}, expected {n}",
                messages.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The messages to `to` whose subject contains `subject`, once there are `n`.
    pub async fn wait_for_mail(&self, to: &str, subject: &str, n: usize) -> Vec<Mail> {
        let started = Instant::now();
        loop {
            let found: Vec<Mail> = self
                .messages()
                .into_iter()
                .filter(|m| m.to().contains(to) && m.subject().contains(subject))
                .collect();
            if found.len() >= n {
                return found;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "no mail {subject:?} to {to} (have {:?})",
                self.messages()
                    .iter()
                    .map(|m| (m.to(), m.subject()))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One received message, as its RFC 5322 text.
#[derive(Debug, Clone)]
pub struct Mail(pub String);

impl Mail {
    pub fn header(&self, name: &str) -> String {
        let prefix = format!("{name}: ");
        self.0
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_default()
            .to_owned()
    }

    pub fn to(&self) -> String {
        self.header("To")
    }

    pub fn subject(&self) -> String {
        self.header("Subject")
    }

    /// The body, with quoted-printable soft line breaks and `=3D` undone should a part be so
    /// encoded (the service writes 8bit, and quoted-printable only for a line too long for it):
    /// enough to read links, whose other characters are all plain. Only then: undone in an 8bit
    /// text, it would eat the first two characters of a token that starts with `3D` (1 in 4096).
    pub fn text(&self) -> String {
        if !self
            .0
            .to_ascii_lowercase()
            .contains("content-transfer-encoding: quoted-printable")
        {
            return self.0.clone();
        }
        self.0
            .replace("=\r\n", "")
            .replace("=\n", "")
            .replace("=3D", "=")
    }

    /// The token of the link to `page` (e.g. `/reset-password`) in the plain-text part.
    pub fn token(&self, page: &str) -> String {
        let text = self.text();
        let marker = format!("{page}?token=");
        let start = text
            .find(&marker)
            .unwrap_or_else(|| panic!("no link to {page} in {text}"))
            + marker.len();
        text[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect()
    }

    /// The whole link to `page`, as a mail client would open it.
    pub fn link(&self, page: &str) -> String {
        let text = self.text();
        let marker = format!("{page}?token=");
        let at = text.find(&marker).expect("a link");
        let start = text[..at].rfind("http").expect("an absolute link");
        format!("{}{}{}", &text[start..at], marker, self.token(page))
    }
}

/// Waits until `app` has handed to the SMTP server every mail it will send for what it was asked
/// so far: no forgotten-password request still being handled (each may yet queue a mail), then
/// an empty outbox (a mail leaves it only once the server answered 250, after storing it). What
/// `messages()` holds then is all there will be: "no further mail" proved, not waited for.
pub async fn outbox_drained(app: &crate::helpers::TestApp) {
    let started = Instant::now();
    loop {
        // In this order: a request still in flight may queue a mail after the count.
        if app.handle.resets_in_flight() == 0 {
            let queued: i64 = app.scalar("SELECT COUNT(*) FROM mail_outbox").await;
            if queued == 0 {
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "mail still queued or being queued"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An app whose mail goes to `smtp` (by `args.smtp_url` when given: a wrong login, say), with
/// open registration, retries capped at a second, and links to a public URL of its own (the pages
/// are issue 14's).
pub async fn app_with_smtp(
    backend: crate::helpers::Backend,
    smtp: &SmtpServer,
    args: gatehouse::config::SettingsArgs,
) -> crate::helpers::TestApp {
    crate::helpers::spawn_app_with(
        backend,
        gatehouse::config::SettingsArgs {
            smtp_url: args.smtp_url.clone().or(Some(smtp.url())),
            registration: Some("open".into()),
            mail_retry_max: args.mail_retry_max.clone().or(Some("1s".into())),
            public_url: Some(PUBLIC_URL.into()),
            ..args
        },
    )
    .await
}

pub const PUBLIC_URL: &str = "https://auth.example.com";
