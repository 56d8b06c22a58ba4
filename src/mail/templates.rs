//! Mail bodies from templates (minijinja): a subject, a plain-text part and an HTML part per kind
//! of mail, embedded in the binary; an operator replaces any of them with a file of the same name
//! in the `GATEHOUSE_MAIL_TEMPLATES` folder. The HTML parts are auto-escaped (by their `.html`
//! name), so a name like `<script>` arrives as text.

use std::path::Path;

use anyhow::Context as _;
use minijinja::{Environment, Value};

use crate::error::{Error, Result};

/// Every template, with its embedded text.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "reset.subject.txt",
        include_str!("../../assets/mail/reset.subject.txt"),
    ),
    ("reset.txt", include_str!("../../assets/mail/reset.txt")),
    ("reset.html", include_str!("../../assets/mail/reset.html")),
    (
        "verify.subject.txt",
        include_str!("../../assets/mail/verify.subject.txt"),
    ),
    ("verify.txt", include_str!("../../assets/mail/verify.txt")),
    ("verify.html", include_str!("../../assets/mail/verify.html")),
    (
        "email_change.subject.txt",
        include_str!("../../assets/mail/email_change.subject.txt"),
    ),
    (
        "email_change.txt",
        include_str!("../../assets/mail/email_change.txt"),
    ),
    (
        "email_change.html",
        include_str!("../../assets/mail/email_change.html"),
    ),
    (
        "invite.subject.txt",
        include_str!("../../assets/mail/invite.subject.txt"),
    ),
    ("invite.txt", include_str!("../../assets/mail/invite.txt")),
    ("invite.html", include_str!("../../assets/mail/invite.html")),
    (
        "org_invite.subject.txt",
        include_str!("../../assets/mail/org_invite.subject.txt"),
    ),
    (
        "org_invite.txt",
        include_str!("../../assets/mail/org_invite.txt"),
    ),
    (
        "org_invite.html",
        include_str!("../../assets/mail/org_invite.html"),
    ),
    (
        "notice.subject.txt",
        include_str!("../../assets/mail/notice.subject.txt"),
    ),
    ("notice.txt", include_str!("../../assets/mail/notice.txt")),
    ("notice.html", include_str!("../../assets/mail/notice.html")),
];

pub struct Templates {
    env: Environment<'static>,
}

/// One mail, rendered.
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

impl Templates {
    /// The embedded templates, each replaced by its file in `dir` if there is one. A template
    /// that does not parse stops the start, naming the file.
    pub fn load(dir: Option<&Path>) -> anyhow::Result<Templates> {
        let mut env = Environment::new();
        // A variable a replaced template misspells fails the mail rather than vanishing from it.
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        for (name, embedded) in EMBEDDED {
            let source = match dir.map(|d| d.join(name)) {
                Some(path) if path.exists() => std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read the mail template {}", path.display()))?,
                _ => (*embedded).to_owned(),
            };
            env.add_template_owned(*name, source)
                .with_context(|| format!("the mail template {name} is not valid"))?;
        }
        Ok(Templates { env })
    }

    /// The templates a file in `dir` replaces (`gatehouse check`).
    pub fn replaced(dir: &Path) -> Vec<&'static str> {
        EMBEDDED
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| dir.join(name).exists())
            .collect()
    }

    pub fn render(&self, kind: &str, context: &Value) -> Result<Rendered> {
        let render = |name: String| {
            self.env
                .get_template(&name)
                .and_then(|t| t.render(context))
                .map_err(|e| Error::internal(anyhow::anyhow!("mail template {name}: {e}")))
        };
        let subject = render(format!("{kind}.subject.txt"))?;
        Ok(Rendered {
            // One line: a subject is a header, and a template must not be able to break it.
            subject: subject
                .split(['\r', '\n'])
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
            text: render(format!("{kind}.txt"))?,
            html: render(format!("{kind}.html"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped_and_text_is_not() {
        let t = Templates::load(None).unwrap();
        let context = minijinja::context! {
            product_name => "Gatehouse", public_url => "http://x", full_name => "<b>Eve</b> & co",
            email => "e@x", link => "http://x/reset-password?token=abc", expires_in => "1h",
        };
        let r = t.render("reset", &context).unwrap();
        assert!(
            r.html.contains("&lt;b&gt;Eve&lt;&#x2f;b&gt; &amp; co"),
            "{}",
            r.html
        );
        assert!(r.text.contains("<b>Eve</b> & co"));
        assert!(r.text.contains("http://x/reset-password?token=abc"));
        assert_eq!(r.subject, "Gatehouse: reset your password");
    }

    #[test]
    fn a_replaced_template_is_used_and_a_broken_one_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("reset.subject.txt"),
            "Reset at {{ product_name }}",
        )
        .unwrap();
        let t = Templates::load(Some(dir.path())).unwrap();
        let context = minijinja::context! {
            product_name => "Acme", public_url => "http://x", full_name => "A",
            email => "e@x", link => "l", expires_in => "1h",
        };
        assert_eq!(
            t.render("reset", &context).unwrap().subject,
            "Reset at Acme"
        );
        std::fs::write(dir.path().join("reset.txt"), "{% if %}").unwrap();
        let err = Templates::load(Some(dir.path())).err().unwrap();
        assert!(err.to_string().contains("reset.txt"), "{err}");
    }
}
