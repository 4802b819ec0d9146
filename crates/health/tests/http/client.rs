//! A minimal HTTP/1.1 client over a tokio TcpStream, sending what `curl -si`
//! sends and returning the raw response bytes, plus fixture helpers.

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One response as received.
#[derive(Debug)]
pub struct Reply {
    /// Every byte of the response.
    pub raw: Vec<u8>,
    /// Status code.
    pub status: u16,
    /// Header lines in wire order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Reply {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The raw response with the Date header's value replaced, after
    /// checking it is a valid HTTP date.
    pub fn without_date(&self) -> String {
        let date = self.header("Date").expect("Date header");
        httpdate::parse_http_date(date).expect("IMF-fixdate");
        String::from_utf8(self.raw.clone()).unwrap().replace(date, "<DATE>")
    }
}

/// A keep-alive connection.
pub struct Connection {
    stream: TcpStream,
}

impl Connection {
    /// Connects to `addr`.
    pub async fn open(addr: SocketAddr) -> std::io::Result<Self> {
        Ok(Self { stream: TcpStream::connect(addr).await? })
    }

    /// Sends `GET path` as curl does and reads one response.
    pub async fn get(&mut self, path: &str) -> std::io::Result<Reply> {
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n");
        self.stream.write_all(request.as_bytes()).await?;
        tokio::time::timeout(Duration::from_secs(5), read_reply(&mut self.stream))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply"))?
    }
}

/// `GET path` on a new connection.
pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    Connection::open(addr).await.expect("connect").get(path).await.expect("reply")
}

async fn read_reply(stream: &mut TcpStream) -> std::io::Result<Reply> {
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        raw.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(": ").unwrap();
            (n.to_string(), v.to_string())
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse().unwrap())
        .expect("Content-Length");
    while raw.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8(raw[head_end..head_end + length].to_vec()).unwrap();
    Ok(Reply { raw, status, headers, body })
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A file of upstream's captures (`mode` is `iptables` or `nftables`).
pub fn fixture(mode: &str, name: &str) -> String {
    let path: PathBuf =
        [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "upstream-v1.36", mode, name].iter().collect();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A capture with its Date value replaced, as [`Reply::without_date`] does.
pub fn fixture_without_date(mode: &str, name: &str) -> String {
    let text = fixture(mode, name);
    let date_line = text.lines().find(|l| l.starts_with("Date: ")).unwrap();
    let date = date_line.trim_start_matches("Date: ").trim_end_matches('\r');
    text.replace(date, "<DATE>")
}

/// The time Go would print as `rfc3339` (UTC, nanoseconds), for setting
/// clocks to the captures' instants.
pub fn at(rfc3339: &str) -> SystemTime {
    let (date, time) = rfc3339.trim_end_matches('Z').split_once('T').unwrap();
    let ymd: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let hms: Vec<u64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
    let nanos: u32 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().unwrap() };
    let days = days_from_civil(ymd[0], ymd[1], ymd[2]);
    let secs = days as u64 * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2];
    UNIX_EPOCH + Duration::new(secs, nanos)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
