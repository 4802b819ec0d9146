//! Typed values of an `nft -j` dump: addresses, protocols, ports, marks,
//! and set elements (a prefix or a range becomes the two kernel elements
//! of an interval).

use nftables::stmt::Field;
use nftables::{DataType, Element, Value};
use serde_json::Value as Json;
use std::net::IpAddr;

/// The type of a packet field's value.
pub(super) fn field_type(field: Field) -> DataType {
    match field {
        Field::IpSaddr | Field::IpDaddr => DataType::Ipv4Addr,
        Field::Ip6Saddr | Field::Ip6Daddr => DataType::Ipv6Addr,
        Field::L4proto => DataType::InetProto,
        Field::ThDport => DataType::InetService,
        Field::Mark => DataType::Mark,
    }
}

/// One value of type `ty`.
pub(super) fn parse_value(ty: DataType, value: &Json) -> Result<Value, String> {
    let number = || value.as_u64().ok_or_else(|| format!("`{value}` is not a number"));
    Ok(match ty {
        DataType::Ipv4Addr | DataType::Ipv6Addr => {
            let text = value.as_str().ok_or_else(|| format!("`{value}` is not an address"))?;
            match text.parse::<IpAddr>().map_err(|_| format!("`{text}` is not an address"))? {
                IpAddr::V4(a) => Value::Ipv4(a),
                IpAddr::V6(a) => Value::Ipv6(a),
            }
        }
        DataType::InetProto => match value.as_str() {
            Some("tcp") => Value::Proto(6),
            Some("udp") => Value::Proto(17),
            Some("sctp") => Value::Proto(132),
            Some(other) => return Err(format!("protocol `{other}`")),
            None => Value::Proto(u8::try_from(number()?).map_err(|_| "protocol out of range")?),
        },
        DataType::InetService => Value::Port(u16::try_from(number()?).map_err(|_| "port out of range")?),
        DataType::Mark => Value::Mark(number()? as u32),
        DataType::Integer => Value::Integer(number()? as u32),
        DataType::Verdict => return Err("a verdict where a value was expected".to_string()),
    })
}

/// The kernel elements for one key: one for a value or concatenation;
/// a start and an `interval end` (the first address after it) for a
/// prefix or range of a single field.
pub(super) fn element_keys(types: &[DataType], key: &Json) -> Result<Vec<Element>, String> {
    if let Some(parts) = key.get("concat").and_then(Json::as_array) {
        let values = types.iter().zip(parts).map(|(ty, part)| parse_value(*ty, part)).collect::<Result<Vec<_>, _>>()?;
        return Ok(vec![Element::new(values)]);
    }
    let [ty] = types else { return Err(format!("`{key}` does not fit a concatenated key")) };
    let (low, high) = if let Some(prefix) = key.get("prefix") {
        let addr: IpAddr = prefix.get("addr").and_then(Json::as_str).and_then(|a| a.parse().ok()).ok_or("prefix address")?;
        let len = prefix.get("len").and_then(Json::as_u64).ok_or("prefix length")? as u32;
        prefix_bounds(addr, len)
    } else if let Some([low, high]) = key.get("range").and_then(Json::as_array).map(Vec::as_slice) {
        (parse_value(*ty, low)?, parse_value(*ty, high)?)
    } else {
        return Ok(vec![Element::new(vec![parse_value(*ty, key)?])]);
    };
    let mut elements = vec![Element::new(vec![low])];
    if let Some(after) = successor(&high) {
        let mut end = Element::new(vec![after]);
        end.set_interval_end(true);
        elements.push(end);
    }
    Ok(elements)
}

fn prefix_bounds(addr: IpAddr, len: u32) -> (Value, Value) {
    match addr {
        IpAddr::V4(a) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len.min(32)) };
            let low = u32::from(a) & mask;
            (Value::Ipv4(low.into()), Value::Ipv4((low | !mask).into()))
        }
        IpAddr::V6(a) => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len.min(128)) };
            let low = u128::from(a) & mask;
            (Value::Ipv6(low.into()), Value::Ipv6((low | !mask).into()))
        }
    }
}

/// The value right after `v` (where an interval ends), `None` at the top.
fn successor(v: &Value) -> Option<Value> {
    Some(match v {
        Value::Ipv4(a) => Value::Ipv4(u32::from(*a).checked_add(1)?.into()),
        Value::Ipv6(a) => Value::Ipv6(u128::from(*a).checked_add(1)?.into()),
        Value::Port(p) => Value::Port(p.checked_add(1)?),
        Value::Proto(p) => Value::Proto(p.checked_add(1)?),
        Value::Mark(m) | Value::Integer(m) => Value::Integer(m.checked_add(1)?),
    })
}
