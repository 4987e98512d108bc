//! Link layers: find the network-layer packet inside a frame.

use etherparse::{EtherType, Ethernet2Slice, SingleVlanSlice};

use super::NetError;
use crate::capture::LinkType;

/// The network-layer packet a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum L3<'a> {
    Ipv4(&'a [u8]),
    Ipv6(&'a [u8]),
    /// ARP, LLDP, an unknown family...: not our traffic.
    Other,
}

const SLL_LEN: usize = 16;
const SLL2_LEN: usize = 20;
const NULL_LEN: usize = 4;

/// BSD address families that mean IPv6: the value differs between BSDs
/// (NetBSD/OpenBSD 24, FreeBSD 28, macOS 30).
const AF_INET: u32 = 2;
const AF_INET6: [u32; 3] = [24, 28, 30];

/// Strip the link header of `data` according to `link`.
pub(crate) fn network_layer(link: LinkType, data: &[u8], frame: u64) -> Result<L3<'_>, NetError> {
    match link {
        LinkType::ETHERNET => ethernet(data, frame),
        LinkType::LINUX_SLL => {
            let proto = be16(data, 14)
                .ok_or_else(|| short(frame, "Linux SLL header", SLL_LEN, data.len()))?;
            Ok(by_ether_type(proto, data.get(SLL_LEN..).unwrap_or(&[])))
        }
        LinkType::LINUX_SLL2 => {
            let proto = be16(data, 0).filter(|_| data.len() >= SLL2_LEN);
            let proto =
                proto.ok_or_else(|| short(frame, "Linux SLL2 header", SLL2_LEN, data.len()))?;
            Ok(by_ether_type(proto, data.get(SLL2_LEN..).unwrap_or(&[])))
        }
        LinkType::NULL | LinkType::LOOP => bsd_loopback(link, data, frame),
        LinkType::RAW => raw_ip(data, frame),
        LinkType::IPV4 => Ok(L3::Ipv4(data)),
        LinkType::IPV6 => Ok(L3::Ipv6(data)),
        other => Err(NetError::UnsupportedLink(other)),
    }
}

fn be16(b: &[u8], pos: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(pos)?, *b.get(pos + 1)?]))
}

fn short(frame: u64, layer: &'static str, needed: usize, have: usize) -> NetError {
    NetError::Truncated {
        frame,
        layer,
        needed,
        have,
    }
}

fn by_ether_type(t: u16, payload: &[u8]) -> L3<'_> {
    match EtherType(t) {
        EtherType::IPV4 => L3::Ipv4(payload),
        EtherType::IPV6 => L3::Ipv6(payload),
        _ => L3::Other,
    }
}

/// Ethernet II, then any number of 802.1Q / 802.1ad (QinQ) tags.
fn ethernet(data: &[u8], frame: u64) -> Result<L3<'_>, NetError> {
    let eth = Ethernet2Slice::from_slice_without_fcs(data)
        .map_err(|e| short(frame, "Ethernet header", e.required_len, e.len))?;
    let mut ether_type = eth.ether_type();
    let mut rest = eth.payload_slice();
    while matches!(
        ether_type,
        EtherType::VLAN_TAGGED_FRAME
            | EtherType::PROVIDER_BRIDGING
            | EtherType::VLAN_DOUBLE_TAGGED_FRAME
    ) {
        let tag = SingleVlanSlice::from_slice(rest)
            .map_err(|e| short(frame, "VLAN tag", e.required_len, e.len))?;
        ether_type = tag.ether_type();
        rest = tag.payload_slice();
    }
    Ok(by_ether_type(ether_type.0, rest))
}

/// NULL: 4-byte address family in the capturing host's byte order (unknown to us, so both
/// are tried); LOOP: the same in network byte order.
fn bsd_loopback(link: LinkType, data: &[u8], frame: u64) -> Result<L3<'_>, NetError> {
    let fam: [u8; 4] = data
        .get(..NULL_LEN)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| short(frame, "loopback family", NULL_LEN, data.len()))?;
    let payload = data.get(NULL_LEN..).unwrap_or(&[]);
    let be = u32::from_be_bytes(fam);
    let le = u32::from_le_bytes(fam);
    let candidates: &[u32] = if link == LinkType::LOOP {
        &[be]
    } else {
        &[be, le]
    };
    if candidates.contains(&AF_INET) {
        Ok(L3::Ipv4(payload))
    } else if candidates.iter().any(|f| AF_INET6.contains(f)) {
        Ok(L3::Ipv6(payload))
    } else {
        Ok(L3::Other)
    }
}

/// Raw IP: the version nibble tells IPv4 from IPv6.
fn raw_ip(data: &[u8], frame: u64) -> Result<L3<'_>, NetError> {
    match data.first().map(|b| b >> 4) {
        Some(4) => Ok(L3::Ipv4(data)),
        Some(6) => Ok(L3::Ipv6(data)),
        Some(v) => Err(NetError::Malformed {
            frame,
            message: format!("raw IP packet with IP version {v}"),
        }),
        None => Err(short(frame, "raw IP packet", 1, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // captures/q3-basic/capture.pcapng frame 1: Ethernet (zero MACs) + IPv4 + UDP header
    // (first 46 bytes of the frame).
    const FRAME1_HEAD: [u8; 14] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00];

    #[test]
    fn ethernet_and_vlan_tags() {
        let mut f = FRAME1_HEAD.to_vec();
        f.extend_from_slice(&[0x45, 0]);
        assert_eq!(
            network_layer(LinkType::ETHERNET, &f, 1),
            Ok(L3::Ipv4(&[0x45, 0][..]))
        );
        // QinQ: 88a8 tag, 8100 tag, then IPv6
        let mut q = vec![0u8; 12];
        q.extend_from_slice(&[0x88, 0xa8, 0, 1, 0x81, 0x00, 0, 2, 0x86, 0xdd, 0x60]);
        assert_eq!(
            network_layer(LinkType::ETHERNET, &q, 1),
            Ok(L3::Ipv6(&[0x60][..]))
        );
        // a tag cut short
        assert!(network_layer(LinkType::ETHERNET, &q[..15], 1).is_err());
        assert!(network_layer(LinkType::ETHERNET, &f[..13], 1).is_err());
        // ARP
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06, 0, 1]);
        assert_eq!(network_layer(LinkType::ETHERNET, &arp, 1), Ok(L3::Other));
    }

    #[test]
    fn null_both_orders_and_loop() {
        let ip = [0x45u8];
        for fam in [[2u8, 0, 0, 0], [0, 0, 0, 2]] {
            let f = [&fam[..], &ip[..]].concat();
            assert_eq!(network_layer(LinkType::NULL, &f, 1), Ok(L3::Ipv4(&ip[..])));
        }
        for v6 in [24u32, 28, 30] {
            let f = [&v6.to_le_bytes()[..], &ip[..]].concat();
            assert_eq!(network_layer(LinkType::NULL, &f, 1), Ok(L3::Ipv6(&ip[..])));
            let f = [&v6.to_be_bytes()[..], &ip[..]].concat();
            assert_eq!(network_layer(LinkType::LOOP, &f, 1), Ok(L3::Ipv6(&ip[..])));
        }
        // LOOP is network order only
        let f = [&2u32.to_le_bytes()[..], &ip[..]].concat();
        assert_eq!(network_layer(LinkType::LOOP, &f, 1), Ok(L3::Other));
        assert!(network_layer(LinkType::NULL, &[2, 0], 1).is_err());
    }

    #[test]
    fn sll_sll2_raw_unknown() {
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&[0x08, 0x00, 0x45]);
        assert_eq!(
            network_layer(LinkType::LINUX_SLL, &sll, 1),
            Ok(L3::Ipv4(&[0x45][..]))
        );
        let mut sll2 = vec![0x86, 0xdd];
        sll2.extend_from_slice(&[0u8; 18]);
        sll2.push(0x60);
        assert_eq!(
            network_layer(LinkType::LINUX_SLL2, &sll2, 1),
            Ok(L3::Ipv6(&[0x60][..]))
        );
        assert!(network_layer(LinkType::LINUX_SLL2, &sll2[..19], 1).is_err());
        assert!(network_layer(LinkType::LINUX_SLL, &sll[..15], 1).is_err());
        assert_eq!(
            network_layer(LinkType::RAW, &[0x60], 1),
            Ok(L3::Ipv6(&[0x60][..]))
        );
        assert!(network_layer(LinkType::RAW, &[0x50], 1).is_err());
        assert!(network_layer(LinkType::RAW, &[], 1).is_err());
        assert_eq!(
            network_layer(LinkType(147), &[], 1),
            Err(NetError::UnsupportedLink(LinkType(147)))
        );
    }
}
