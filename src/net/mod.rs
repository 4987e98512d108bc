//! Link, IP and UDP: turns a [`Frame`](crate::capture::Frame) into a UDP [`Datagram`].
//! Ethernet (802.1Q / QinQ), Linux SLL and SLL2, BSD NULL and LOOP, raw IPv4/IPv6;
//! IPv4 fragments are reassembled; IPv6.
use std::net::SocketAddr;

/// One UDP datagram, whole (reassembled when it came in IPv4 fragments).
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    /// Frame number of the packet that completed the datagram.
    pub frame: u64,
    pub ts_ns: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub payload: &'a [u8],
}
