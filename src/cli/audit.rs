//! `gatehouse audit`: the audit trail, oldest first, as lines or JSON.

use crate::clock::rfc3339;
use crate::domain::Email;
use crate::services::Services;
use crate::store::audit::EventQuery;

/// `--since`: an RFC 3339 time, or a span back from now.
fn parse_since(text: &str, now: i64) -> anyhow::Result<i64> {
    if let Ok(t) = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
    {
        return Ok((t.unix_timestamp_nanos() / 1_000_000) as i64);
    }
    match humantime::parse_duration(text) {
        Ok(span) => Ok(now - span.as_millis() as i64),
        Err(_) => anyhow::bail!(
            "--since {text:?} is neither an RFC 3339 time (2026-11-21T08:00:00Z) nor a span (24h, 7d)"
        ),
    }
}

pub(super) async fn audit(
    user: Option<String>,
    since: Option<String>,
    json: bool,
    services: &Services,
) -> anyhow::Result<()> {
    let since = parse_since(since.as_deref().unwrap_or("24h"), services.clock.now_ms())?;
    let user_id = match user {
        Some(email) => {
            let email =
                Email::parse(&email).map_err(|reason| anyhow::anyhow!("--user {reason}"))?;
            Some(
                services
                    .store
                    .user_by_email(&email.normalized())
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("no account has the e-mail {email}"))?
                    .id,
            )
        }
        None => None,
    };
    let query = EventQuery {
        since: Some(since),
        user_id,
        ..EventQuery::default()
    };
    let events = services.store.events(&query).await?;
    if json {
        let items: Vec<serde_json::Value> = events
            .iter()
            .map(|e| {
                serde_json::json!({
                    "at": rfc3339(e.at),
                    "event": e.event,
                    "userId": e.user_id,
                    "email": e.email,
                    "sessionId": e.session_id,
                    "ip": e.ip,
                    "userAgent": e.user_agent,
                    "detail": e.detail,
                    "actorId": e.actor_id,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(());
    }
    for e in &events {
        let mut line = format!("{}  {:<26}", rfc3339(e.at), e.event);
        if let Some(email) = &e.email {
            line.push_str(&format!("  user={email}"));
        }
        if let Some(actor) = e.actor_id {
            line.push_str(&format!("  by={actor}"));
        }
        if let Some(session) = e.session_id {
            line.push_str(&format!("  session={session}"));
        }
        if let Some(ip) = &e.ip {
            line.push_str(&format!("  ip={ip}"));
        }
        if let Some(detail) = &e.detail {
            line.push_str(&format!("  {detail}"));
        }
        if let Some(agent) = &e.user_agent {
            // Quoted with escapes: a user agent is the client's text, and must not forge lines.
            line.push_str(&format!("  agent={agent:?}"));
        }
        println!("{line}");
    }
    Ok(())
}
