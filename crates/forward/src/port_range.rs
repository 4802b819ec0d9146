//! `--proxy-port-range` parsing (upstream's `utilnet.ParsePortRange`
//! forms): `first-last`, `first+count` or a single port.

use crate::PortRange;
use std::str::FromStr;

/// Why a `--proxy-port-range` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParsePortRangeError {
    /// A part is not a port number.
    #[error("{0:?} is not a port number (0-65535)")]
    NotAPort(String),
    /// `last` below `first`, or `first+count` past 65535.
    #[error("{0:?}: the range is empty or ends past 65535")]
    Empty(String),
    /// Port 0 cannot start a range.
    #[error("{0:?}: a range cannot include port 0")]
    Zero(String),
}

impl FromStr for PortRange {
    type Err = ParsePortRangeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let port = |part: &str| part.trim().parse::<u16>().map_err(|_| ParsePortRangeError::NotAPort(part.to_owned()));
        let (first, last) = if let Some((first, last)) = text.split_once('-') {
            (port(first)?, port(last)?)
        } else if let Some((first, count)) = text.split_once('+') {
            let first = port(first)?;
            let count = count.trim().parse::<u32>().map_err(|_| ParsePortRangeError::NotAPort(count.to_owned()))?;
            let last = (u32::from(first) + count).checked_sub(1).ok_or_else(|| ParsePortRangeError::Empty(text.to_owned()))?;
            (first, u16::try_from(last).map_err(|_| ParsePortRangeError::Empty(text.to_owned()))?)
        } else {
            let single = port(text)?;
            (single, single)
        };
        if first == 0 {
            return Err(ParsePortRangeError::Zero(text.to_owned()));
        }
        if last < first {
            return Err(ParsePortRangeError::Empty(text.to_owned()));
        }
        Ok(Self { first, last })
    }
}

impl PortRange {
    /// Its ports, first to last.
    pub fn ports(&self) -> std::ops::RangeInclusive<u16> {
        self.first..=self.last
    }

    /// How many ports it holds.
    pub fn len(&self) -> usize {
        usize::from(self.last - self.first) + 1
    }

    /// Never true (a range holds at least one port); for clippy's `len` rule.
    pub fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(first: u16, last: u16) -> Result<PortRange, ParsePortRangeError> {
        Ok(PortRange { first, last })
    }

    #[test]
    fn parses_the_three_forms() {
        assert_eq!("30000-30100".parse(), range(30000, 30100));
        assert_eq!(" 40000+10 ".parse(), range(40000, 40009));
        assert_eq!("8080".parse(), range(8080, 8080));
        assert_eq!("65535+1".parse(), range(65535, 65535));
        assert_eq!("1-65535".parse::<PortRange>().map(|r| r.len()), Ok(65535));
    }

    #[test]
    fn refuses_what_upstream_refuses_with_the_reason() {
        assert_eq!("3000-20".parse::<PortRange>(), Err(ParsePortRangeError::Empty("3000-20".into())));
        assert_eq!("65535+2".parse::<PortRange>(), Err(ParsePortRangeError::Empty("65535+2".into())));
        assert_eq!("100+0".parse::<PortRange>(), Err(ParsePortRangeError::Empty("100+0".into())));
        assert_eq!("0-10".parse::<PortRange>(), Err(ParsePortRangeError::Zero("0-10".into())));
        assert_eq!("a-10".parse::<PortRange>(), Err(ParsePortRangeError::NotAPort("a".into())));
        assert_eq!("70000".parse::<PortRange>(), Err(ParsePortRangeError::NotAPort("70000".into())));
        assert!("".parse::<PortRange>().is_err());
        assert!("1-2-3".parse::<PortRange>().is_err());
    }

    #[test]
    fn displays_as_first_dash_last() {
        assert_eq!(PortRange { first: 1, last: 2 }.to_string(), "1-2");
    }
}
