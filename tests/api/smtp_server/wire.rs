//! Lines in and out of an SMTP session: a command or a line of a message read with a length
//! limit, a reply written, a SASL response decoded, a `<path>` parsed.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

/// The longest command line: RFC 4954 raises RFC 5321's 512 octets to 12 288 for AUTH.
pub const COMMAND_LINE: usize = 12_288;
/// The longest line of a message, with its CRLF (RFC 5321 §4.5.3.1.6).
pub const TEXT_LINE: usize = 1_000;

pub enum Line {
    Text(Vec<u8>),
    TooLong,
    Closed,
}

/// The `<path>` after `keyword` (`FROM:`, `TO:`), and the parameters after it.
pub fn path_after<'l>(arg: &'l str, keyword: &str) -> Option<(&'l str, &'l str)> {
    let head = arg.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = arg[keyword.len()..].trim_start();
    let inner = rest.strip_prefix('<')?;
    let end = inner.find('>')?;
    let path = &inner[..end];
    // A source route (`@a,@b:user@c`) is to be ignored (RFC 5321 §3.3).
    let path = path.rsplit_once(':').map_or(path, |(_, p)| p);
    Some((path, inner[end + 1..].trim()))
}

/// The decoded SASL response: `initial` if given (`=` is an empty one), else the client's answer
/// to a `334 challenge`. None when cancelled (`*`) or not base64.
pub async fn respond<S>(
    io: &mut BufReader<S>,
    initial: &str,
    challenge: &str,
) -> std::io::Result<Option<Vec<u8>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let text = if initial.is_empty() {
        reply(io, &format!("334 {challenge}")).await?;
        match read_line(io, COMMAND_LINE).await? {
            Line::Text(line) => String::from_utf8_lossy(&line).trim_end().to_owned(),
            Line::TooLong => return Ok(None),
            Line::Closed => return Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    } else {
        initial.to_owned()
    };
    Ok(match text.as_str() {
        "*" => None,
        "=" => Some(Vec::new()),
        text => BASE64.decode(text).ok(),
    })
}

pub async fn reply<S>(io: &mut BufReader<S>, text: &str) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let stream = io.get_mut();
    stream.write_all(format!("{text}\r\n").as_bytes()).await?;
    stream.flush().await
}

/// One line with its line ending, or `TooLong` (the rest of it read and dropped) past `limit`.
pub async fn read_line<S>(io: &mut BufReader<S>, limit: usize) -> std::io::Result<Line>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = io.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(Line::Closed);
        }
        let (take, end) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        if line.len() + take > limit {
            too_long = true;
            line.clear();
        } else if !too_long {
            line.extend_from_slice(&buffer[..take]);
        }
        io.consume(take);
        if end {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}
