//! A minimal HTTP/1.1 GET made from inside a namespace, the way the
//! reference corpus captured upstream's answers (`curl -si`): the raw
//! status line, headers and body, for byte comparisons.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use testkit::netns::Netns;

/// How long connecting and reading may each take.
const TIMEOUT: Duration = Duration::from_millis(1500);

/// `GET path` to `addr` from inside `ns`; the raw answer (status line,
/// headers with CRLF, body), or what went wrong.
pub fn get(ns: &Netns, addr: SocketAddr, path: &str) -> Result<String, String> {
    let path = path.to_string();
    ns.run(move || fetch(addr, &path)).map_err(|e| format!("enter {}: {e:#}", ns.name()))?
}

fn fetch(addr: SocketAddr, path: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("send to {addr}: {e}"))?;
    read_answer(&mut stream).map_err(|e| format!("read from {addr}: {e}"))
}

/// Reads the head, then exactly `Content-Length` body bytes (the server
/// keeps the connection open, as it did for curl).
fn read_answer(stream: &mut TcpStream) -> Result<String, String> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(len) = complete_length(&raw) {
            raw.truncate(len);
            break;
        }
    }
    String::from_utf8(raw).map_err(|e| format!("not UTF-8: {e}"))
}

/// The length of the whole answer once its head and body are in `raw`.
fn complete_length(raw: &[u8]) -> Option<usize> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&raw[..head_end]).ok()?;
    let body_len = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    (raw.len() >= head_end + body_len).then_some(head_end + body_len)
}
