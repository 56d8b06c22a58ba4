//! The mail tests' SMTP server as a client meets it: both AUTH mechanisms through lettre (the
//! service's lettre picks PLAIN, so LOGIN is tried here), and, in raw SMTP, the rules the mail
//! tests lean on: nothing before STARTTLS, no mail before a login, dot-stuffing undone, and only
//! `<CRLF>.<CRLF>` ending a message.

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{Certificate, Tls as ClientTls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Tokio1Executor};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use crate::smtp::SmtpServer;
use crate::smtp_tls::{SMTP_PASSWORD, SMTP_USER, Tls};

const MESSAGE: &[u8] =
    b"Subject: hello\r\n\r\n..a line that began with a dot\r\n.\nnot the end\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_and_login_over_starttls_are_checked_and_logged() {
    for mechanism in [Mechanism::Plain, Mechanism::Login] {
        let smtp = SmtpServer::start_secure(Tls::StartTls);
        let secure = smtp.secure.as_ref().unwrap();
        let ca = std::fs::read(secure.ca_file()).unwrap();
        let tls = TlsParameters::builder("127.0.0.1".into())
            .add_root_certificate(Certificate::from_pem(&ca).unwrap())
            .build()
            .unwrap();
        let client = |password: &str| {
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
                .port(smtp.port)
                .tls(ClientTls::Required(tls.clone()))
                .credentials(Credentials::new(SMTP_USER.into(), password.into()))
                .authentication(vec![mechanism])
                .build()
        };
        let envelope = Envelope::new(
            Some("from@example.com".parse().unwrap()),
            vec!["to@example.com".parse().unwrap()],
        )
        .unwrap();
        let refused = client("wrong").send_raw(&envelope, MESSAGE).await;
        assert!(
            refused.unwrap_err().to_string().contains("535"),
            "{mechanism:?}"
        );
        client(SMTP_PASSWORD)
            .send_raw(&envelope, MESSAGE)
            .await
            .unwrap();
        let logins = secure.logins();
        let expected = [format!("{SMTP_USER} refused"), format!("{SMTP_USER} ok")];
        assert_eq!(logins, expected, "{mechanism:?}");
        let mails = smtp.messages();
        assert_eq!(mails.len(), 1);
        assert_eq!(mails[0].header("X-RcptTo"), "to@example.com");
        assert_eq!(mails[0].header("X-MailFrom"), "from@example.com");
        // lettre stuffs a dot before each line's leading dot; the server takes it off again.
        let sent = std::str::from_utf8(MESSAGE).unwrap();
        assert!(mails[0].0.contains(sent), "{}", mails[0].0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_keeps_the_rules_the_mail_tests_lean_on() {
    // Requiring STARTTLS: AUTH is not offered before it, and nothing of a mail is taken.
    let secure = SmtpServer::start_secure(Tls::StartTls);
    let mut client = Client::connect(secure.port).await;
    let ehlo = client.say("EHLO client.example").await;
    assert!(
        ehlo.contains("STARTTLS") && !ehlo.contains("AUTH"),
        "{ehlo}"
    );
    assert!(
        client
            .say("AUTH PLAIN AGdhdGVob3VzZQB4")
            .await
            .starts_with("530")
    );
    assert!(
        client
            .say("MAIL FROM:<a@example.com>")
            .await
            .starts_with("530")
    );
    assert!(secure.secure.as_ref().unwrap().logins().is_empty());

    // Without TLS or a login: the envelope's order and parameters are checked.
    let plain = SmtpServer::start();
    let mut client = Client::connect(plain.port).await;
    assert!(
        client
            .say("MAIL FROM:<a@example.com>")
            .await
            .starts_with("503")
    );
    assert!(client.say("EHLO client.example").await.starts_with("250"));
    assert!(client.say("STARTTLS").await.starts_with("502"));
    assert!(
        client
            .say("RCPT TO:<b@example.com>")
            .await
            .starts_with("503")
    );
    assert!(
        client
            .say("MAIL FROM:<a@example.com> X=1")
            .await
            .starts_with("555")
    );
    assert!(
        client
            .say("MAIL FROM:<a@example.com> BODY=8BITMIME")
            .await
            .starts_with("250")
    );
    assert!(
        client
            .say("MAIL FROM:<a@example.com>")
            .await
            .starts_with("503")
    );
    assert!(
        client
            .say("RCPT TO:<b@example.com>")
            .await
            .starts_with("250")
    );
    assert!(client.say("DATA").await.starts_with("354"));
    let stored = client
        .say(std::str::from_utf8(MESSAGE).unwrap().to_owned() + ".")
        .await;
    assert!(stored.starts_with("250"), "{stored}");
    assert!(
        client.say("DATA").await.starts_with("503"),
        "a new transaction"
    );
    assert!(client.say("QUIT").await.starts_with("221"));
    // Sent unstuffed: a leading dot is taken off, and `.<LF>` ended nothing.
    let mails = plain.messages();
    assert_eq!(mails.len(), 1);
    assert!(
        mails[0]
            .0
            .ends_with("\r\n.a line that began with a dot\r\n\nnot the end\r\n")
    );
}

/// A raw SMTP client: one line out, one reply (all its lines) back.
struct Client(BufReader<TcpStream>);

impl Client {
    async fn connect(port: u16) -> Client {
        let mut client = Client(BufReader::new(
            TcpStream::connect(("127.0.0.1", port)).await.unwrap(),
        ));
        assert!(client.reply().await.starts_with("220"));
        client
    }

    async fn say(&mut self, line: impl AsRef<str>) -> String {
        let line = format!("{}\r\n", line.as_ref());
        self.0.get_mut().write_all(line.as_bytes()).await.unwrap();
        self.reply().await
    }

    async fn reply(&mut self) -> String {
        let mut reply = String::new();
        loop {
            let mut line = String::new();
            self.0.read_line(&mut line).await.unwrap();
            assert!(line.len() >= 4, "a reply line: {line:?}");
            reply.push_str(&line);
            if line.as_bytes()[3] == b' ' {
                return reply;
            }
        }
    }
}
