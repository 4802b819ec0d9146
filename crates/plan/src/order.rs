//! Upstream's endpoint order, which fixes the balancing probability each
//! endpoint gets.

use model::{Endpoint, IpFamily};
use std::borrow::Cow;
use std::io::Write;
use std::net::IpAddr;

/// The endpoints of `family` in upstream's order: sorted by their
/// `ip:port` text (so `10.0.0.10` sorts before `10.0.0.2`). Borrows when
/// already so.
pub fn upstream_order(endpoints: &[Endpoint], family: IpFamily) -> Cow<'_, [Endpoint]> {
    if endpoints.iter().all(|ep| family.contains(ep.ip)) && in_text_order(endpoints) {
        return Cow::Borrowed(endpoints);
    }
    let mut owned: Vec<Endpoint> = endpoints.iter().filter(|ep| family.contains(ep.ip)).cloned().collect();
    owned.sort_by_cached_key(Text::of);
    Cow::Owned(owned)
}

/// Whether `endpoints` are sorted by their text, each written once.
fn in_text_order(endpoints: &[Endpoint]) -> bool {
    let mut texts = endpoints.iter().map(Text::of);
    let Some(mut previous) = texts.next() else {
        return true;
    };
    texts.all(|text| {
        let ordered = previous <= text;
        previous = text;
        ordered
    })
}

/// An endpoint's `ip:port` text, written without allocating (and, for
/// IPv4, without the formatting machinery: a cold start of 10,000
/// services × 10 endpoints orders each port's endpoints several times).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Text {
    bytes: [u8; 64],
    len: usize,
}

impl Text {
    fn of(ep: &Endpoint) -> Self {
        let mut text = Text {
            bytes: [0; 64],
            len: 0,
        };
        match ep.ip {
            IpAddr::V4(ip) => {
                for (i, octet) in ip.octets().into_iter().enumerate() {
                    if i > 0 {
                        text.push(b'.');
                    }
                    text.decimal(u32::from(octet));
                }
                text.push(b':');
                text.decimal(u32::from(ep.port));
            }
            IpAddr::V6(_) => {
                let mut cursor = std::io::Cursor::new(&mut text.bytes[..]);
                // An `[ip]:port` is at most 58 bytes, so the write always fits.
                let _ = write!(cursor, "{}", ep.addr());
                text.len = usize::try_from(cursor.position()).unwrap_or(0);
            }
        }
        text
    }

    fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    fn decimal(&mut self, n: u32) {
        let mut digits = [0u8; 10];
        let mut count = 0;
        let mut rest = n;
        loop {
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        for &digit in digits[..count].iter().rev() {
            self.push(digit);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ep(ip: &str, port: u16) -> Endpoint {
        Endpoint::ready(ip.parse().unwrap(), port, None, false)
    }

    #[test]
    fn endpoints_sort_as_text_like_upstream() {
        let eps = [ep("10.0.0.2", 80), ep("10.0.0.10", 80), ep("fd00::1", 80)];
        let sorted = upstream_order(&eps, IpFamily::V4);
        let got: Vec<String> = sorted.iter().map(|e| e.to_string()).collect();
        assert_eq!(got, ["10.0.0.10:80", "10.0.0.2:80"]);
    }

    #[test]
    fn the_text_compares_as_the_formatted_address_does() {
        let addrs = [
            "10.0.0.2", "10.0.0.10", "1.2.3.4", "255.255.255.255", "0.0.0.0", "10.0.0.1",
            "fd00::1", "fd00::10", "::ffff:1.2.3.4",
        ];
        let ports = [0, 8, 80, 443, 8080, 65535];
        let eps: Vec<Endpoint> = addrs
            .iter()
            .flat_map(|a| ports.iter().map(move |p| ep(a, *p)))
            .collect();
        for a in &eps {
            assert_eq!(&Text::of(a).bytes[..Text::of(a).len], a.addr().to_string().as_bytes());
            for b in &eps {
                let formatted = a.addr().to_string().cmp(&b.addr().to_string());
                assert_eq!(Text::of(a).cmp(&Text::of(b)), formatted, "{a} {b}");
            }
        }
    }

    #[test]
    fn already_ordered_endpoints_are_borrowed() {
        let eps = [ep("10.0.0.10", 80), ep("10.0.0.2", 80)];
        assert!(matches!(upstream_order(&eps, IpFamily::V4), Cow::Borrowed(_)));
    }
}
