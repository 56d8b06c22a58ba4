//! The SMTP server the mail tests deliver to, over real TCP on a loopback port: RFC 5321 with
//! STARTTLS (RFC 3207), TLS from the first byte, and AUTH PLAIN and LOGIN (RFC 4954), storing each
//! message it accepts as one file in a maildir's `new/`. Gatehouse's lettre client talks to it as
//! to any MTA; `tests/api/smtp.rs` is what the tests see of it.
//!
//! Written here because no crate fits: mailin-embedded has no implicit TLS and blocks a thread
//! per connection, and mailin's state machine, which it builds on, refuses MAIL after an RSET or
//! a second EHLO of an authenticated session; rs-smtp, async, brings rustls 0.20 and tokio's
//! every feature. This one is the small subset an outbound relay needs, strict where a client's
//! mistake would matter to the tests (TLS before AUTH, AUTH before MAIL, nothing kept from before
//! STARTTLS, only `<CRLF>.<CRLF>` ends a message), on the TLS of `tokio-native-tls` that lettre
//! already links.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use subtle::ConstantTimeEq as _;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_native_tls::TlsAcceptor;

use crate::smtp_tls::Tls;
use wire::{COMMAND_LINE, Line, TEXT_LINE, path_after, read_line, reply, respond};

mod wire;

/// The largest message taken, as announced by SIZE.
const MAX_SIZE: usize = 10 << 20;
const MAX_RECIPIENTS: usize = 100;
const NAME: &str = "localhost";

/// What a server does with a connection: where mail goes, and what it asks first.
pub struct Relay {
    pub maildir: PathBuf,
    pub security: Option<Security>,
    /// Sessions open now (see `SmtpServer::wait_idle`).
    pub open: Arc<AtomicUsize>,
}

/// TLS and a login required before any mail.
pub struct Security {
    pub tls: Tls,
    pub acceptor: TlsAcceptor,
    pub user: &'static str,
    pub password: &'static str,
    /// Every AUTH seen: `<login> ok` or `<login> refused`.
    pub logins: Arc<Mutex<Vec<String>>>,
}

/// Accepts connections until the task is dropped (its runtime's end closes every session).
pub async fn serve(listener: TcpListener, relay: Arc<Relay>) {
    loop {
        let Ok((socket, peer)) = listener.accept().await else {
            // Out of file descriptors, say: a moment for the other tests to give some back.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let relay = relay.clone();
        let open = Open::count(&relay.open);
        tokio::spawn(async move {
            let _open = open;
            let _ = connection(socket, peer, &relay).await;
        });
    }
}

/// One open session in `Relay::open`, for as long as it lives (also when its runtime ends).
struct Open(Arc<AtomicUsize>);

impl Open {
    fn count(open: &Arc<AtomicUsize>) -> Open {
        open.fetch_add(1, Ordering::SeqCst);
        Open(open.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(socket: TcpStream, peer: SocketAddr, relay: &Relay) -> std::io::Result<()> {
    let mut session = Session::new(relay, peer);
    let tls = relay.security.as_ref().map(|s| (s.tls, s.acceptor.clone()));
    match tls {
        Some((Tls::Implicit, acceptor)) => {
            let stream = acceptor
                .accept(socket)
                .await
                .map_err(std::io::Error::other)?;
            session.tls = true;
            session.converse(&mut BufReader::new(stream), true).await?;
        }
        Some((Tls::StartTls, acceptor)) => {
            let mut plain = BufReader::new(socket);
            if session.converse(&mut plain, true).await? == Next::StartTls {
                // `into_inner` drops whatever the client sent after STARTTLS: nothing from
                // before the handshake may be taken as said inside it (RFC 3207 §6).
                let stream = acceptor
                    .accept(plain.into_inner())
                    .await
                    .map_err(std::io::Error::other)?;
                let mut session = Session::new(relay, peer);
                session.tls = true;
                session.converse(&mut BufReader::new(stream), false).await?;
            }
        }
        None => {
            session.converse(&mut BufReader::new(socket), true).await?;
        }
    }
    Ok(())
}

#[derive(PartialEq, Eq)]
enum Next {
    Close,
    StartTls,
}

struct Session<'a> {
    relay: &'a Relay,
    peer: SocketAddr,
    tls: bool,
    greeted: bool,
    authenticated: bool,
    from: Option<String>,
    to: Vec<String>,
}

impl<'a> Session<'a> {
    fn new(relay: &'a Relay, peer: SocketAddr) -> Session<'a> {
        Session {
            relay,
            peer,
            tls: false,
            greeted: false,
            authenticated: false,
            from: None,
            to: Vec::new(),
        }
    }

    async fn converse<S>(&mut self, io: &mut BufReader<S>, greet: bool) -> std::io::Result<Next>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if greet {
            reply(io, &format!("220 {NAME} ESMTP Gatehouse test relay")).await?;
        }
        loop {
            let line = match read_line(io, COMMAND_LINE).await? {
                Line::Closed => return Ok(Next::Close),
                Line::TooLong => {
                    reply(io, "500 5.5.2 Line too long").await?;
                    continue;
                }
                Line::Text(line) => line,
            };
            let Ok(line) = String::from_utf8(line) else {
                reply(io, "500 5.5.2 Syntax error").await?;
                continue;
            };
            let line = line.trim_end_matches(['\r', '\n']);
            let (verb, arg) = line.split_once(' ').unwrap_or((line, ""));
            let answer = match verb.to_ascii_uppercase().as_str() {
                "EHLO" => self.hello(arg, true),
                "HELO" => self.hello(arg, false),
                "STARTTLS" => match self.start_tls(arg) {
                    Ok(answer) => {
                        reply(io, answer).await?;
                        return Ok(Next::StartTls);
                    }
                    Err(answer) => answer.to_owned(),
                },
                "AUTH" => self.auth(io, arg).await?,
                "MAIL" => self.mail(arg).to_owned(),
                "RCPT" => self.rcpt(arg).to_owned(),
                "DATA" => self.data(io, arg).await?,
                "RSET" if arg.is_empty() => {
                    self.reset();
                    "250 2.0.0 OK".to_owned()
                }
                "NOOP" => "250 2.0.0 OK".to_owned(),
                "VRFY" => "252 2.5.0 Cannot VRFY user".to_owned(),
                "QUIT" => {
                    reply(io, "221 2.0.0 Bye").await?;
                    return Ok(Next::Close);
                }
                "RSET" => "501 5.5.4 RSET takes no argument".to_owned(),
                _ => "500 5.5.2 Command not recognized".to_owned(),
            };
            reply(io, &answer).await?;
        }
    }

    fn reset(&mut self) {
        self.from = None;
        self.to.clear();
    }

    fn hello(&mut self, domain: &str, extended: bool) -> String {
        if domain.trim().is_empty() {
            return "501 5.5.4 A domain or address is needed".to_owned();
        }
        self.reset();
        self.greeted = true;
        if !extended {
            return format!("250 {NAME}");
        }
        let mut lines = vec![
            format!("{NAME} greets {domain}"),
            "8BITMIME".to_owned(),
            "SMTPUTF8".to_owned(),
            format!("SIZE {MAX_SIZE}"),
        ];
        if let Some(security) = &self.relay.security {
            if security.tls == Tls::StartTls && !self.tls {
                lines.push("STARTTLS".to_owned());
            }
            if self.tls {
                lines.push("AUTH PLAIN LOGIN".to_owned());
            }
        }
        let last = lines.len() - 1;
        let lines: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("250{}{l}", if i == last { ' ' } else { '-' }))
            .collect();
        lines.join("\r\n")
    }

    fn start_tls(&self, arg: &str) -> Result<&'static str, &'static str> {
        let offered = self
            .relay
            .security
            .as_ref()
            .is_some_and(|s| s.tls == Tls::StartTls);
        if !offered {
            Err("502 5.5.1 STARTTLS not offered")
        } else if self.tls {
            Err("503 5.5.1 TLS already active")
        } else if !arg.is_empty() {
            Err("501 5.5.4 STARTTLS takes no argument")
        } else if !self.greeted {
            Err("503 5.5.1 Send EHLO first")
        } else {
            Ok("220 2.0.0 Ready to start TLS")
        }
    }

    /// Refuses a command that needs STARTTLS first, when the server requires it.
    fn needs_tls(&self) -> Option<&'static str> {
        let required = self.relay.security.as_ref().is_some_and(|_| !self.tls);
        required.then_some("530 5.7.0 Must issue a STARTTLS command first")
    }

    async fn auth<S>(&mut self, io: &mut BufReader<S>, arg: &str) -> std::io::Result<String>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(security) = &self.relay.security else {
            return Ok("502 5.5.1 AUTH not offered".to_owned());
        };
        if let Some(refusal) = self.needs_tls() {
            return Ok(refusal.to_owned());
        }
        if !self.greeted || self.authenticated || self.from.is_some() {
            return Ok("503 5.5.1 AUTH not allowed now".to_owned());
        }
        let (mechanism, initial) = arg.split_once(' ').unwrap_or((arg, ""));
        let (login, password) = match mechanism.to_ascii_uppercase().as_str() {
            "PLAIN" => {
                let Some(response) = respond(io, initial, "").await? else {
                    return Ok("501 5.7.0 Authentication cancelled or not base64".to_owned());
                };
                // authzid NUL authcid NUL password; an authzid other than the login is refused.
                let parts: Vec<&[u8]> = response.split(|b| *b == 0).collect();
                match parts[..] {
                    [authz, login, password] if authz.is_empty() || authz == login => {
                        (login.to_vec(), password.to_vec())
                    }
                    _ => return Ok("501 5.5.2 Malformed PLAIN response".to_owned()),
                }
            }
            "LOGIN" => {
                let Some(login) = respond(io, initial, "VXNlcm5hbWU6").await? else {
                    return Ok("501 5.7.0 Authentication cancelled or not base64".to_owned());
                };
                let Some(password) = respond(io, "", "UGFzc3dvcmQ6").await? else {
                    return Ok("501 5.7.0 Authentication cancelled or not base64".to_owned());
                };
                (login, password)
            }
            _ => return Ok("504 5.5.4 Unrecognized authentication type".to_owned()),
        };
        let ok = bool::from(login.ct_eq(security.user.as_bytes()))
            & bool::from(password.ct_eq(security.password.as_bytes()));
        let outcome = if ok { "ok" } else { "refused" };
        let login = String::from_utf8_lossy(&login);
        security
            .logins
            .lock()
            .unwrap()
            .push(format!("{login} {outcome}"));
        self.authenticated = ok;
        Ok(if ok {
            "235 2.7.0 Authentication successful"
        } else {
            "535 5.7.8 Authentication credentials invalid"
        }
        .to_owned())
    }

    fn mail(&mut self, arg: &str) -> &'static str {
        if let Some(refusal) = self.needs_tls() {
            return refusal;
        }
        if !self.greeted {
            return "503 5.5.1 Send EHLO first";
        }
        if self.relay.security.is_some() && !self.authenticated {
            return "530 5.7.0 Authentication required";
        }
        if self.from.is_some() {
            return "503 5.5.1 Nested MAIL command";
        }
        let Some((path, parameters)) = path_after(arg, "FROM:") else {
            return "501 5.5.4 Syntax: MAIL FROM:<address>";
        };
        for parameter in parameters.split_whitespace() {
            let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
            match (key.to_ascii_uppercase().as_str(), value) {
                ("BODY", v) if v.eq_ignore_ascii_case("7BIT") => {}
                ("BODY", v) if v.eq_ignore_ascii_case("8BITMIME") => {}
                ("SMTPUTF8", "") => {}
                ("SIZE", v) => match v.parse::<usize>() {
                    Ok(size) if size <= MAX_SIZE => {}
                    Ok(_) => return "552 5.3.4 Message size exceeds fixed limit",
                    Err(_) => return "501 5.5.4 Bad SIZE",
                },
                _ => return "555 5.5.4 Unsupported MAIL parameter",
            }
        }
        self.from = Some(path.to_owned());
        "250 2.1.0 OK"
    }

    fn rcpt(&mut self, arg: &str) -> &'static str {
        if let Some(refusal) = self.needs_tls() {
            return refusal;
        }
        if self.from.is_none() {
            return "503 5.5.1 Need MAIL first";
        }
        match path_after(arg, "TO:") {
            Some((path, "")) if !path.is_empty() => {
                if self.to.len() >= MAX_RECIPIENTS {
                    return "452 4.5.3 Too many recipients";
                }
                self.to.push(path.to_owned());
                "250 2.1.5 OK"
            }
            Some((_, "")) => "501 5.1.3 A recipient is needed",
            Some(_) => "555 5.5.4 Unsupported RCPT parameter",
            None => "501 5.5.4 Syntax: RCPT TO:<address>",
        }
    }

    /// Reads the message to `<CRLF>.<CRLF>` and stores it: the answer is 250 only once its
    /// file is in `new/`, so a client that saw the 250 will find its mail there.
    async fn data<S>(&mut self, io: &mut BufReader<S>, arg: &str) -> std::io::Result<String>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if let Some(refusal) = self.needs_tls() {
            return Ok(refusal.to_owned());
        }
        if !arg.is_empty() {
            return Ok("501 5.5.4 DATA takes no argument".to_owned());
        }
        if self.to.is_empty() {
            return Ok("503 5.5.1 Need RCPT first".to_owned());
        }
        reply(io, "354 End data with <CR><LF>.<CR><LF>").await?;
        let mut message = Vec::new();
        let mut failure = None;
        loop {
            let line = match read_line(io, TEXT_LINE).await? {
                Line::Closed => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Line::TooLong => {
                    failure = Some("500 5.5.6 Line too long");
                    continue;
                }
                Line::Text(line) => line,
            };
            if line == b".\r\n" {
                break;
            }
            let line = line.strip_prefix(b".").unwrap_or(&line);
            if message.len() + line.len() > MAX_SIZE {
                failure = Some("552 5.3.4 Message too big");
            } else {
                message.extend_from_slice(line);
            }
        }
        let answer = match failure {
            Some(failure) => failure.to_owned(),
            None => {
                let name = self.store(&message)?;
                format!("250 2.0.0 OK: queued as {name}")
            }
        };
        self.reset();
        Ok(answer)
    }

    /// Writes the message with the envelope as aiosmtpd's Mailbox did (`X-Peer`, `X-MailFrom`,
    /// `X-RcptTo` first), into `tmp/` and then `new/`: a reader never sees half a message.
    fn store(&self, message: &[u8]) -> std::io::Result<String> {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let sequence = SEQUENCE.fetch_add(1, Ordering::SeqCst);
        // Names sort in the order the messages were accepted.
        let name = format!("{sequence:08}.{}.gatehouse-test", std::process::id());
        let from = self.from.as_deref().unwrap_or_default();
        let mut text = format!(
            "X-Peer: {}\r\nX-MailFrom: {from}\r\nX-RcptTo: {}\r\n",
            self.peer,
            self.to.join(", ")
        )
        .into_bytes();
        text.extend_from_slice(message);
        let temporary = self.relay.maildir.join("tmp").join(&name);
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, self.relay.maildir.join("new").join(&name))?;
        Ok(name)
    }
}
