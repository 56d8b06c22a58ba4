//! `gatehouse user`: accounts, named by their e-mail address (docs/api.md §4). Each action is the
//! administration API's own (`admin::Admin`), done as the operator (`Operator::Cli`).

use std::io::BufRead as _;

use clap::Subcommand;
use secrecy::SecretString;
use serde_json::json;
use uuid::Uuid;

use crate::auth::audit::Operator;
use crate::clock::rfc3339;
use crate::domain::{Email, FullName, Role};
use crate::error::Error;
use crate::flows::AuthService;
use crate::services::Services;

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create an account; prints its id
    Add {
        /// The account's e-mail address, its sign-in name (verified: an operator vouches for it)
        #[arg(long)]
        email: String,
        /// The account's full name, as shown to its owner and in forward-auth's Remote-Name
        #[arg(long)]
        name: String,
        /// Read the password from the first line of standard input
        #[arg(long)]
        password_stdin: bool,
        /// Give the new account this role (repeatable; `admin` for the first administrator)
        #[arg(long = "role", value_name = "ROLE")]
        role: Vec<String>,
    },
    /// List accounts
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Disable an account and end all its sessions
    Disable { email: String },
    /// Enable a disabled account
    Enable { email: String },
    /// Set an account's password and end all its sessions
    SetPassword {
        email: String,
        /// Read the password from the first line of standard input
        #[arg(long)]
        password_stdin: bool,
    },
    /// Turn two-factor authentication off for an account and end all its sessions
    #[command(name = "reset-2fa")]
    Reset2fa { email: String },
    /// End all sessions of an account
    EndSessions { email: String },
    /// Mail an account a password-reset link (within its 3 reset mails an hour)
    SendReset { email: String },
    /// Delete an account as its owner leaving would: sessions end, personal data goes
    Delete { email: String },
    /// Create an account without a password and mail its owner an invitation link; prints its id
    Invite {
        /// The address the invitation goes to, the account's sign-in name
        #[arg(long)]
        email: String,
        /// The account's full name
        #[arg(long)]
        name: String,
        /// Give the new account this role (repeatable)
        #[arg(long = "role", value_name = "ROLE")]
        role: Vec<String>,
    },
    /// Print an account's roles, one a line, after adding and removing the ones given
    Roles {
        email: String,
        /// Give the account this role (repeatable)
        #[arg(long = "add", value_name = "ROLE")]
        add: Vec<String>,
        /// Take this role from the account (repeatable)
        #[arg(long = "remove", value_name = "ROLE")]
        remove: Vec<String>,
    },
}

fn email(raw: &str) -> anyhow::Result<Email> {
    Email::parse(raw).map_err(|reason| anyhow::anyhow!("the e-mail address {raw:?} {reason}"))
}

/// Domain errors read as sentences on the command line.
fn explain(error: Error, email: &Email) -> anyhow::Error {
    match error {
        Error::NotFound => anyhow::anyhow!("there is no account with the e-mail address {email}"),
        Error::EmailTaken => anyhow::anyhow!("the e-mail address {email} is in use already"),
        Error::Internal(cause) | Error::Unavailable(cause) => cause,
        other => anyhow::anyhow!("{other}"),
    }
}

/// The id of the account with this e-mail (the command names accounts by address; the actions
/// take ids, as the administration API does).
async fn account(auth: &AuthService, email: &Email) -> anyhow::Result<Uuid> {
    auth.admin
        .find_user(email)
        .await
        .map(|u| u.id)
        .map_err(|e| explain(e, email))
}

/// Role names as given on the command line, each checked.
fn roles(names: &[String]) -> anyhow::Result<Vec<Role>> {
    names
        .iter()
        .map(|n| Role::parse(n).map_err(|reason| anyhow::anyhow!("{reason}")))
        .collect()
}

/// One line of standard input, without its line ending.
fn password_from_stdin(given: bool) -> anyhow::Result<SecretString> {
    if !given {
        anyhow::bail!(
            "pass --password-stdin and the password on standard input (on the command line it would show in process lists and shell history)"
        );
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        anyhow::bail!("no password on standard input");
    }
    Ok(SecretString::from(password))
}

pub(super) async fn user(command: UserCommand, services: &Services) -> anyhow::Result<()> {
    let auth = &services.auth;
    let cli = Operator::Cli;
    match command {
        UserCommand::Add {
            email,
            name,
            password_stdin,
            role,
        } => {
            let roles = roles(&role)?;
            let password = password_from_stdin(password_stdin)?;
            let id = add(auth, &email, &name, &roles, Some(password)).await?;
            println!("{id}");
        }
        UserCommand::Invite { email, name, role } => {
            // Checked before anything is made, so a bad role leaves no half-made invitation.
            let roles = roles(&role)?;
            let id = add(auth, &email, &name, &roles, None).await?;
            println!("{id}");
        }
        UserCommand::List { json } => list(services, json).await?,
        UserCommand::Disable { email } => {
            let (email, n) = act(auth, &email, |id| auth.admin.disable_user(cli, id)).await?;
            eprintln!("gatehouse: disabled {email}; ended {n} session(s)");
        }
        UserCommand::Enable { email } => {
            let (email, ()) = act(auth, &email, |id| auth.admin.enable_user(cli, id)).await?;
            eprintln!("gatehouse: enabled {email}");
        }
        UserCommand::SetPassword {
            email,
            password_stdin,
        } => {
            let password = password_from_stdin(password_stdin)?;
            let (email, n) = act(auth, &email, |id| {
                auth.admin.set_password(cli, id, password)
            })
            .await?;
            eprintln!("gatehouse: set the password of {email}; ended {n} session(s)");
        }
        UserCommand::Reset2fa { email } => {
            let (email, _) = act(auth, &email, |id| auth.admin.reset_two_factor(cli, id)).await?;
            eprintln!("gatehouse: two-factor authentication is off for {email}");
        }
        UserCommand::EndSessions { email } => {
            let (email, n) = act(auth, &email, |id| auth.admin.end_user_sessions(cli, id)).await?;
            eprintln!("gatehouse: ended {n} session(s) of {email}");
        }
        UserCommand::SendReset { email } => {
            let (email, ()) =
                act(auth, &email, |id| auth.admin.send_password_reset(cli, id)).await?;
            eprintln!("gatehouse: a reset link for {email} is in the outbox");
        }
        UserCommand::Delete { email } => {
            let (email, n) = act(auth, &email, |id| auth.admin.delete_user(cli, id)).await?;
            eprintln!("gatehouse: deleted {email}; ended {n} session(s)");
        }
        UserCommand::Roles { email, add, remove } => {
            let (add, remove) = (roles(&add)?, roles(&remove)?);
            let (_, roles) = act(auth, &email, |id| {
                auth.admin.change_roles(cli, id, &add, &remove)
            })
            .await?;
            for role in roles {
                println!("{role}");
            }
        }
    }
    Ok(())
}

/// An action of the administration API on the account with the address `raw`: its result, and
/// the address for the line that says what was done.
async fn act<T, F>(
    auth: &AuthService,
    raw: &str,
    action: impl FnOnce(Uuid) -> F,
) -> anyhow::Result<(Email, T)>
where
    F: Future<Output = Result<T, Error>>,
{
    let email = email(raw)?;
    let id = account(auth, &email).await?;
    let done = action(id).await.map_err(|e| explain(e, &email))?;
    Ok((email, done))
}

/// `user add` and `user invite`: a new account (with a password, or invited without one).
async fn add(
    auth: &AuthService,
    raw: &str,
    name: &str,
    roles: &[Role],
    password: Option<SecretString>,
) -> anyhow::Result<Uuid> {
    let email = email(raw)?;
    let name = FullName::parse(name).map_err(|reason| anyhow::anyhow!("the name {reason}"))?;
    let user = auth
        .admin
        .add_user(Operator::Cli, &email, &name, roles, password)
        .await
        .map_err(|e| explain(e, &email))?;
    Ok(user.id)
}

async fn list(services: &Services, json: bool) -> anyhow::Result<()> {
    let users = services.store.list_users().await?;
    if !json {
        print_table(&users);
        return Ok(());
    }
    let items: Vec<_> = users
        .iter()
        .map(|u| {
            json!({
                "id": u.id, "email": u.email, "fullName": u.full_name, "disabled": u.disabled,
                "twoFactorEnabled": u.two_factor_enabled(), "roles": u.roles,
                "createdAt": rfc3339(u.created_at), "emailVerified": u.email_verified,
                "lastLoginAt": u.last_login_at.map(rfc3339),
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&items)?);
    Ok(())
}

/// `user list`: one account a line, each column as wide as its widest value.
fn print_table(users: &[crate::model::User]) {
    let header = [
        "ID", "EMAIL", "NAME", "ROLES", "STATE", "2FA", "VERIFIED", "CREATED",
    ];
    let rows: Vec<[String; 8]> = users
        .iter()
        .map(|u| {
            [
                u.id.to_string(),
                u.email.clone(),
                u.full_name.clone(),
                if u.roles.is_empty() {
                    "-".to_owned()
                } else {
                    u.roles.join(",")
                },
                (if u.disabled { "disabled" } else { "active" }).to_owned(),
                (if u.two_factor_enabled() { "on" } else { "off" }).to_owned(),
                (if u.email_verified { "yes" } else { "no" }).to_owned(),
                rfc3339(u.created_at),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
}
