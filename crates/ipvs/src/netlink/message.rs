//! One IPVS generic-netlink message: a command and its top-level
//! attributes. Encoding and decoding only; sending is the socket's job.

use super::constants::*;
use super::dest_attr::{DestAttr, parse_dest_attrs};
use super::nla::{emit_nested, nested_len, parse_all, parse_default};
use super::service_attr::{ServiceAttr, parse_service_attrs};
use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, ParseableParametrized,
    parse_u32,
};
use netlink_packet_generic::{GenlFamily, GenlHeader};

/// An IPVS command (`IPVS_CMD_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpvsCmd {
    /// Add a virtual service; also the kernel's reply to `GetService`.
    NewService,
    /// Change a virtual service's scheduler, flags or timeout.
    SetService,
    /// Delete a virtual service and its destinations.
    DelService,
    /// Get one service, or dump all of them.
    GetService,
    /// Add a destination; also the kernel's reply to `GetDest`.
    NewDest,
    /// Change a destination's weight, method or thresholds.
    SetDest,
    /// Delete a destination.
    DelDest,
    /// Dump the destinations of one service.
    GetDest,
    /// Set the TCP / TCP-FIN / UDP timeouts; also the reply to `GetConfig`.
    SetConfig,
    /// Get the timeouts.
    GetConfig,
    /// Reply to `GetInfo`.
    SetInfo,
    /// Get the IPVS version and connection table size.
    GetInfo,
    /// Zero the counters.
    Zero,
    /// Delete every service.
    Flush,
    /// A command this codec has no name for (daemon commands, future ones).
    Other(u8),
}

impl From<IpvsCmd> for u8 {
    fn from(cmd: IpvsCmd) -> u8 {
        use IpvsCmd::*;
        match cmd {
            NewService => IPVS_CMD_NEW_SERVICE,
            SetService => IPVS_CMD_SET_SERVICE,
            DelService => IPVS_CMD_DEL_SERVICE,
            GetService => IPVS_CMD_GET_SERVICE,
            NewDest => IPVS_CMD_NEW_DEST,
            SetDest => IPVS_CMD_SET_DEST,
            DelDest => IPVS_CMD_DEL_DEST,
            GetDest => IPVS_CMD_GET_DEST,
            SetConfig => IPVS_CMD_SET_CONFIG,
            GetConfig => IPVS_CMD_GET_CONFIG,
            SetInfo => IPVS_CMD_SET_INFO,
            GetInfo => IPVS_CMD_GET_INFO,
            Zero => IPVS_CMD_ZERO,
            Flush => IPVS_CMD_FLUSH,
            Other(n) => n,
        }
    }
}

impl From<u8> for IpvsCmd {
    fn from(n: u8) -> IpvsCmd {
        use IpvsCmd::*;
        match n {
            IPVS_CMD_NEW_SERVICE => NewService,
            IPVS_CMD_SET_SERVICE => SetService,
            IPVS_CMD_DEL_SERVICE => DelService,
            IPVS_CMD_GET_SERVICE => GetService,
            IPVS_CMD_NEW_DEST => NewDest,
            IPVS_CMD_SET_DEST => SetDest,
            IPVS_CMD_DEL_DEST => DelDest,
            IPVS_CMD_GET_DEST => GetDest,
            IPVS_CMD_SET_CONFIG => SetConfig,
            IPVS_CMD_GET_CONFIG => GetConfig,
            IPVS_CMD_SET_INFO => SetInfo,
            IPVS_CMD_GET_INFO => GetInfo,
            IPVS_CMD_ZERO => Zero,
            IPVS_CMD_FLUSH => Flush,
            other => Other(other),
        }
    }
}

/// A top-level attribute of an IPVS message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpvsAttr {
    /// The service a command is about (nested).
    Service(Vec<ServiceAttr>),
    /// The destination a command is about (nested).
    Dest(Vec<DestAttr>),
    /// TCP established timeout, seconds (0 = leave unchanged).
    TimeoutTcp(u32),
    /// TCP FIN-wait timeout, seconds.
    TimeoutTcpFin(u32),
    /// UDP timeout, seconds.
    TimeoutUdp(u32),
    /// IPVS version (`GetInfo` reply): `0x010201` is 1.2.1.
    InfoVersion(u32),
    /// Connection hash table size (`GetInfo` reply).
    InfoConnTabSize(u32),
    /// Anything else, kept verbatim.
    Other(DefaultNla),
}

impl Nla for IpvsAttr {
    fn value_len(&self) -> usize {
        use IpvsAttr::*;
        match self {
            Service(attrs) => nested_len(attrs),
            Dest(attrs) => nested_len(attrs),
            TimeoutTcp(_) | TimeoutTcpFin(_) | TimeoutUdp(_) | InfoVersion(_) | InfoConnTabSize(_) => 4,
            Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        use IpvsAttr::*;
        match self {
            Service(_) => IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED,
            Dest(_) => IPVS_CMD_ATTR_DEST | NLA_F_NESTED,
            TimeoutTcp(_) => IPVS_CMD_ATTR_TIMEOUT_TCP,
            TimeoutTcpFin(_) => IPVS_CMD_ATTR_TIMEOUT_TCP_FIN,
            TimeoutUdp(_) => IPVS_CMD_ATTR_TIMEOUT_UDP,
            InfoVersion(_) => IPVS_INFO_ATTR_VERSION,
            InfoConnTabSize(_) => IPVS_INFO_ATTR_CONN_TAB_SIZE,
            Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        use IpvsAttr::*;
        match self {
            Service(attrs) => emit_nested(attrs, buffer),
            Dest(attrs) => emit_nested(attrs, buffer),
            TimeoutTcp(v) | TimeoutTcpFin(v) | TimeoutUdp(v) | InfoVersion(v) | InfoConnTabSize(v) => {
                buffer.copy_from_slice(&v.to_ne_bytes())
            }
            Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl IpvsAttr {
    /// Parses one top-level attribute of a message carrying `cmd`: the
    /// `GetInfo` reply numbers its attributes differently from every other
    /// command.
    fn parse(buf: &NlaBuffer<&[u8]>, cmd: IpvsCmd) -> Result<Self, DecodeError> {
        use IpvsAttr::*;
        let payload = buf.value();
        if matches!(cmd, IpvsCmd::SetInfo) {
            return Ok(match buf.kind() {
                IPVS_INFO_ATTR_VERSION => InfoVersion(parse_u32(payload)?),
                IPVS_INFO_ATTR_CONN_TAB_SIZE => InfoConnTabSize(parse_u32(payload)?),
                _ => Other(parse_default(buf)?),
            });
        }
        Ok(match buf.kind() {
            IPVS_CMD_ATTR_SERVICE => Service(parse_service_attrs(payload)?),
            IPVS_CMD_ATTR_DEST => Dest(parse_dest_attrs(payload)?),
            IPVS_CMD_ATTR_TIMEOUT_TCP => TimeoutTcp(parse_u32(payload)?),
            IPVS_CMD_ATTR_TIMEOUT_TCP_FIN => TimeoutTcpFin(parse_u32(payload)?),
            IPVS_CMD_ATTR_TIMEOUT_UDP => TimeoutUdp(parse_u32(payload)?),
            _ => Other(parse_default(buf)?),
        })
    }
}

/// The payload of one IPVS generic-netlink message (after the genl header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsMessage {
    /// The command.
    pub cmd: IpvsCmd,
    /// Its top-level attributes.
    pub attrs: Vec<IpvsAttr>,
}

impl IpvsMessage {
    /// A message with `cmd` and `attrs`.
    pub fn new(cmd: IpvsCmd, attrs: Vec<IpvsAttr>) -> Self {
        Self { cmd, attrs }
    }

    /// The nested service attributes, if the message has them.
    pub fn service(&self) -> Option<&[ServiceAttr]> {
        self.attrs.iter().find_map(|a| match a {
            IpvsAttr::Service(s) => Some(s.as_slice()),
            _ => None,
        })
    }

    /// The nested destination attributes, if the message has them.
    pub fn dest(&self) -> Option<&[DestAttr]> {
        self.attrs.iter().find_map(|a| match a {
            IpvsAttr::Dest(d) => Some(d.as_slice()),
            _ => None,
        })
    }
}

impl GenlFamily for IpvsMessage {
    fn family_name() -> &'static str {
        IPVS_GENL_NAME
    }

    fn command(&self) -> u8 {
        self.cmd.into()
    }

    fn version(&self) -> u8 {
        IPVS_GENL_VERSION
    }
}

impl Emitable for IpvsMessage {
    fn buffer_len(&self) -> usize {
        nested_len(&self.attrs)
    }

    fn emit(&self, buffer: &mut [u8]) {
        emit_nested(&self.attrs, buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for IpvsMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let cmd = IpvsCmd::from(header.cmd);
        let attrs = parse_all(buf, |nla| IpvsAttr::parse(nla, cmd)).context("parsing IPVS message")?;
        Ok(Self { cmd, attrs })
    }
}
