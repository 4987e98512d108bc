//! Capture files: pcap (µs and ns, both byte orders) and pcapng (several sections and
//! interfaces, per-interface link type and timestamp resolution), read as a stream of
//! [`Frame`]s in one pass with memory bounded by the largest record.
//!
//! This layer never knows about IP, UDP or games.

/// Link-layer header type (the LINKTYPE_* registry numbers used by pcap and pcapng).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct LinkType(pub u32);

impl LinkType {
    pub const NULL: LinkType = LinkType(0);
    pub const ETHERNET: LinkType = LinkType(1);
    pub const RAW: LinkType = LinkType(101);
    pub const LOOP: LinkType = LinkType(108);
    pub const LINUX_SLL: LinkType = LinkType(113);
    pub const IPV4: LinkType = LinkType(228);
    pub const IPV6: LinkType = LinkType(229);
    pub const LINUX_SLL2: LinkType = LinkType(276);
}

/// One captured packet, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// 1-based frame number in the file, as Wireshark numbers it.
    pub index: u64,
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    pub link: LinkType,
    /// Captured bytes (may be shorter than `orig_len` when the snaplen cut it).
    pub data: &'a [u8],
    pub orig_len: u32,
    /// Offset of the record in the file.
    pub file_offset: u64,
}
