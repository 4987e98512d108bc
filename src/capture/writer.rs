//! Capture writers, used by tests and benchmarks to synthesize captures: classic pcap (µs
//! or ns, either byte order, any link type) and pcapng (one SHB, one IDB per link type,
//! EPBs with ns timestamps unless another `if_tsresol` is asked for).

use std::io::{self, Write};

use super::LinkType;

/// Byte order of the written file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ByteOrder {
    /// Little-endian (the default).
    #[default]
    Little,
    /// Big-endian.
    Big,
}

impl ByteOrder {
    fn u16(self, v: u16) -> [u8; 2] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
    fn u32(self, v: u32) -> [u8; 4] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
}

/// Timestamp resolution of a classic pcap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsPrecision {
    /// Microseconds (magic 0xa1b2c3d4).
    Micro,
    /// Nanoseconds (magic 0xa1b23c4d).
    Nano,
}

/// Classic pcap writer.
pub struct PcapWriter<W: Write> {
    w: W,
    order: ByteOrder,
    precision: TsPrecision,
}

impl<W: Write> PcapWriter<W> {
    /// Little-endian pcap with the given link type and resolution; writes the header.
    pub fn new(w: W, link: LinkType, precision: TsPrecision) -> io::Result<Self> {
        Self::with_byte_order(w, link, precision, ByteOrder::Little)
    }

    /// As [`PcapWriter::new`], in the given byte order.
    pub fn with_byte_order(
        mut w: W,
        link: LinkType,
        precision: TsPrecision,
        order: ByteOrder,
    ) -> io::Result<Self> {
        let magic = match precision {
            TsPrecision::Micro => 0xa1b2_c3d4,
            TsPrecision::Nano => 0xa1b2_3c4d,
        };
        w.write_all(&order.u32(magic))?;
        w.write_all(&order.u16(2))?;
        w.write_all(&order.u16(4))?;
        w.write_all(&order.u32(0))?; // thiszone
        w.write_all(&order.u32(0))?; // sigfigs
        w.write_all(&order.u32(262_144))?; // snaplen
        w.write_all(&order.u32(link.0))?;
        Ok(PcapWriter {
            w,
            order,
            precision,
        })
    }

    /// Write one record. `ts_ns` must be at or after the epoch and before 2106 (pcap's
    /// 32-bit seconds); out-of-range times are an `InvalidInput` error.
    pub fn write_packet(&mut self, ts_ns: i64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_string());
        let sec = u32::try_from(ts_ns.div_euclid(1_000_000_000))
            .map_err(|_| invalid("timestamp out of pcap range"))?;
        let ns = ts_ns.rem_euclid(1_000_000_000) as u32;
        let frac = match self.precision {
            TsPrecision::Micro => ns / 1000,
            TsPrecision::Nano => ns,
        };
        let caplen = u32::try_from(data.len()).map_err(|_| invalid("packet too large"))?;
        let o = self.order;
        self.w.write_all(&o.u32(sec))?;
        self.w.write_all(&o.u32(frac))?;
        self.w.write_all(&o.u32(caplen))?;
        self.w.write_all(&o.u32(orig_len.max(caplen)))?;
        self.w.write_all(data)
    }

    /// Flush and give back the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

/// pcapng writer: one section; an interface is described the first time a link type is
/// used.
pub struct PcapNgWriter<W: Write> {
    w: W,
    order: ByteOrder,
    tsresol: u8,
    links: Vec<LinkType>,
}

impl<W: Write> PcapNgWriter<W> {
    /// Little-endian pcapng, ns timestamps (`if_tsresol` = 9). Writes the SHB.
    pub fn new(w: W) -> io::Result<Self> {
        Self::with_options(w, ByteOrder::Little, 9)
    }

    /// Any byte order and any `if_tsresol` byte (high bit clear: 10^-n s; set: 2^-n s).
    /// Timestamps given in ns are converted to that unit (truncated).
    pub fn with_options(w: W, order: ByteOrder, tsresol: u8) -> io::Result<Self> {
        let mut me = PcapNgWriter {
            w,
            order,
            tsresol,
            links: Vec::new(),
        };
        me.write_shb()?;
        Ok(me)
    }

    /// Start a new section (forgets interfaces, as a reader must).
    pub fn new_section(&mut self) -> io::Result<()> {
        self.links.clear();
        self.write_shb()
    }

    fn write_shb(&mut self) -> io::Result<()> {
        let o = self.order;
        let mut body = Vec::with_capacity(16);
        body.extend_from_slice(&o.u32(0x1A2B_3C4D));
        body.extend_from_slice(&o.u16(1));
        body.extend_from_slice(&o.u16(0));
        body.extend_from_slice(&[0xff; 8]); // section length: unknown (-1)
        self.block(0x0A0D_0D0A, &body)
    }

    fn block(&mut self, btype: u32, body: &[u8]) -> io::Result<()> {
        let padded = body.len().div_ceil(4) * 4;
        let total = u32::try_from(padded + 12)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block too large"))?;
        let o = self.order;
        self.w.write_all(&o.u32(btype))?;
        self.w.write_all(&o.u32(total))?;
        self.w.write_all(body)?;
        self.w.write_all(&[0u8; 3][..padded - body.len()])?;
        self.w.write_all(&o.u32(total))
    }

    /// Interface id for `link`, writing its IDB the first time.
    fn interface(&mut self, link: LinkType) -> io::Result<u32> {
        if let Some(i) = self.links.iter().position(|l| *l == link) {
            return Ok(i as u32);
        }
        let o = self.order;
        let link16 = u16::try_from(link.0).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "pcapng link types are 16-bit")
        })?;
        let mut body = Vec::with_capacity(24);
        body.extend_from_slice(&o.u16(link16));
        body.extend_from_slice(&o.u16(0));
        body.extend_from_slice(&o.u32(262_144));
        body.extend_from_slice(&o.u16(9)); // if_tsresol
        body.extend_from_slice(&o.u16(1));
        body.extend_from_slice(&[self.tsresol, 0, 0, 0]);
        body.extend_from_slice(&o.u16(0)); // opt_endofopt
        body.extend_from_slice(&o.u16(0));
        self.block(1, &body)?;
        self.links.push(link);
        Ok(self.links.len() as u32 - 1)
    }

    /// ns since the epoch to this writer's timestamp units (times before 1970 clamp to 0).
    fn units(&self, ts_ns: i64) -> u64 {
        let ns = u128::try_from(ts_ns).unwrap_or(0);
        let r = self.tsresol;
        let u = if r & 0x80 != 0 {
            (ns << (r & 0x7f)) / 1_000_000_000
        } else if r <= 9 {
            ns / 10u128.pow(u32::from(9 - r))
        } else {
            ns.saturating_mul(10u128.saturating_pow(u32::from(r - 9)))
        };
        u64::try_from(u).unwrap_or(u64::MAX)
    }

    /// Write one Enhanced Packet Block.
    pub fn write_packet(
        &mut self,
        link: LinkType,
        ts_ns: i64,
        data: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        let id = self.interface(link)?;
        let caplen = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet too large"))?;
        let units = self.units(ts_ns);
        let o = self.order;
        let mut body = Vec::with_capacity(20 + data.len());
        body.extend_from_slice(&o.u32(id));
        body.extend_from_slice(&o.u32((units >> 32) as u32));
        body.extend_from_slice(&o.u32(units as u32));
        body.extend_from_slice(&o.u32(caplen));
        body.extend_from_slice(&o.u32(orig_len.max(caplen)));
        body.extend_from_slice(data);
        self.block(6, &body)
    }

    /// Flush and give back the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}
