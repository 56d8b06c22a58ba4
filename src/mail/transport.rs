//! Handing a message over: to an SMTP server (lettre: plain, STARTTLS or TLS, with
//! authentication) or, without one, to an `.eml` file in a folder. Every SMTP exchange is bounded
//! in time, so a server that accepts the connection and then stalls holds up nothing.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use lettre::address::Envelope;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use crate::config::{MailDelivery, MailSettings};

pub enum Transport {
    Smtp {
        transport: AsyncSmtpTransport<Tokio1Executor>,
        /// Of a whole exchange; lettre's own timeout is per read or write.
        timeout: Duration,
    },
    Files {
        dir: PathBuf,
    },
}

/// Where a delivered message went.
#[derive(Debug)]
pub enum Delivered {
    Smtp,
    File(PathBuf),
}

impl Transport {
    pub fn new(mail: &MailSettings) -> anyhow::Result<Transport> {
        let timeout = mail.smtp_timeout;
        Ok(match &mail.delivery {
            MailDelivery::Smtp(url) => {
                let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .context("GATEHOUSE_SMTP_URL is not an SMTP URL")?
                    .timeout(Some(timeout));
                if !mail.smtp_ca.is_empty() {
                    builder = builder.tls(tls_trusting(url, &mail.smtp_ca)?);
                }
                Transport::Smtp {
                    transport: builder.build(),
                    timeout: timeout * 3,
                }
            }
            MailDelivery::Files(dir) => Transport::Files { dir: dir.clone() },
        })
    }

    /// Makes the folder of `.eml` files, for a server about to deliver (the CLI, which does
    /// not deliver, leaves no folder behind).
    pub fn prepare(&self) -> anyhow::Result<()> {
        if let Transport::Files { dir, .. } = self {
            create_private_dir(dir)
                .with_context(|| format!("cannot create the mail folder {}", dir.display()))?;
        }
        Ok(())
    }

    /// Where mail goes, for the start-up log (never the SMTP URL: it may hold a password).
    pub fn describe(&self) -> String {
        match self {
            Transport::Smtp { .. } => "an SMTP server (GATEHOUSE_SMTP_URL)".to_owned(),
            Transport::Files { dir, .. } => {
                let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
                format!(".eml files in {}", dir.display())
            }
        }
    }

    /// Hands `message` (of `kind`, sent at `at_ms`) over; `kind` and `at_ms` name the `.eml`
    /// file.
    pub async fn send(
        &self,
        from: &lettre::Address,
        to: &str,
        message: &[u8],
        (kind, at_ms): (&str, i64),
    ) -> Result<Delivered, String> {
        let recipient = to;
        let to: lettre::Address = to.parse().map_err(|e| format!("recipient: {e}"))?;
        let envelope =
            Envelope::new(Some(from.clone()), vec![to]).map_err(|e| format!("envelope: {e}"))?;
        match self {
            Transport::Smtp { transport, timeout } => {
                match tokio::time::timeout(*timeout, transport.send_raw(&envelope, message)).await {
                    Ok(Ok(_)) => Ok(Delivered::Smtp),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer from the SMTP server within {timeout:?}")),
                }
            }
            Transport::Files { dir } => {
                let name = super::eml_file::name(at_ms, kind, recipient);
                super::eml_file::write(dir, &name, message)
                    .await
                    .map(Delivered::File)
                    .map_err(|e| format!("cannot write the mail file in {}: {e}", dir.display()))
            }
        }
    }
}

/// The TLS mode `from_url` chose for `url`, with `roots` trusted beside the system's: lettre's URL
/// has no place for them. Verification stays whole (chain and host name).
fn tls_trusting(url: &str, roots: &[Vec<u8>]) -> anyhow::Result<Tls> {
    let parsed = url::Url::parse(url).context("GATEHOUSE_SMTP_URL is not an SMTP URL")?;
    let host = parsed
        .host_str()
        .context("GATEHOUSE_SMTP_URL names no host")?;
    let mut parameters = TlsParameters::builder(host.to_owned());
    for der in roots {
        let root = Certificate::from_der(der.clone()).context("GATEHOUSE_SMTP_CA_FILE")?;
        parameters = parameters.add_root_certificate(root);
    }
    let parameters = parameters.build().context("GATEHOUSE_SMTP_CA_FILE")?;
    // The two encrypted forms config/mail.rs writes; it refuses the CA file with any other.
    if parsed.scheme() == "smtps" {
        Ok(Tls::Wrapper(parameters))
    } else if parsed.query() == Some("tls=required") {
        Ok(Tls::Required(parameters))
    } else {
        anyhow::bail!("GATEHOUSE_SMTP_CA_FILE needs an smtp+starttls:// or smtps:// URL")
    }
}

/// The folder of `.eml` files, readable by the service's user only: the files hold live links.
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}
