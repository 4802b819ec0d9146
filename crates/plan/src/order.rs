//! Upstream's endpoint order, which fixes the balancing probability each
//! endpoint gets.

use model::{Endpoint, IpFamily};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::io::Write;

/// The endpoints of `family` in upstream's order: sorted by their
/// `ip:port` text (so `10.0.0.10` sorts before `10.0.0.2`). Borrows when
/// already so.
pub fn upstream_order(endpoints: &[Endpoint], family: IpFamily) -> Cow<'_, [Endpoint]> {
    let in_order = endpoints.iter().all(|ep| family.contains(ep.ip))
        && endpoints.windows(2).all(|w| text_cmp(&w[0], &w[1]) != Ordering::Greater);
    if in_order {
        return Cow::Borrowed(endpoints);
    }
    let mut owned: Vec<Endpoint> = endpoints.iter().filter(|ep| family.contains(ep.ip)).cloned().collect();
    owned.sort_by(text_cmp);
    Cow::Owned(owned)
}

/// Compares two endpoints by their `ip:port` text without allocating.
fn text_cmp(a: &Endpoint, b: &Endpoint) -> Ordering {
    let (mut buf_a, mut buf_b) = ([0u8; 64], [0u8; 64]);
    text(a, &mut buf_a).cmp(text(b, &mut buf_b))
}

fn text<'b>(ep: &Endpoint, buf: &'b mut [u8; 64]) -> &'b [u8] {
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    // An `ip:port` is at most 47 bytes, so the write always fits.
    let _ = write!(cursor, "{}", ep.addr());
    let len = usize::try_from(cursor.position()).unwrap_or(0);
    &buf[..len]
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
    fn already_ordered_endpoints_are_borrowed() {
        let eps = [ep("10.0.0.10", 80), ep("10.0.0.2", 80)];
        assert!(matches!(upstream_order(&eps, IpFamily::V4), Cow::Borrowed(_)));
    }
}
