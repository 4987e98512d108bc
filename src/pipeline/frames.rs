//! Where the pass's frames come from: one capture file, or several merged in time order (like
//! mergecap). Either way each frame goes through the IP reassembly of its own file, and the
//! one loop of [`super::run_frames`] reads them.
use std::io::Read;

use super::{push_warning, warn_unfinished, Report};
use crate::capture::{CaptureReader, Frame, LinkType};
use crate::error::Error;
use crate::net::NetDecoder;

/// One step of a frame source.
pub(super) enum Step<'a> {
    /// A frame, the IP reassembly it goes through, and its file when several are merged.
    Frame(Frame<'a>, &'a mut NetDecoder, Option<&'a str>),
    /// A record that could not be read (its warning is in the report): go on.
    Skip,
    /// A followed input ([`super::follow`]): no frame for a while, or a tick of the wall
    /// clock; capture time has reached at least this (seconds since the Unix epoch).
    Idle(f64),
    /// The end of the input (or a capture error that stops it, in the report).
    End,
}

/// A source of frames for the pass.
pub(super) trait Frames {
    /// The next frame; read problems go to the report.
    fn next(&mut self, report: &mut Report) -> Step<'_>;
    /// The link and bytes of the record `k` after the one [`Self::next`] gives next, and
    /// where the record after it starts (for the next peek's `at`), when the source can tell
    /// cheaply ([`CaptureReader::peek`]). For hints only.
    fn peek(&self, _k: usize, _at: Option<u64>) -> Option<(LinkType, &[u8], u64)> {
        None
    }
    /// Bytes read so far (progress).
    fn bytes_read(&self) -> u64;
    /// End of the input: what the IP reassembly still held, into the report.
    fn finish(&self, report: &mut Report);
}

/// One capture, read in place.
pub(super) struct OneFile<R: Read> {
    pub reader: CaptureReader<R>,
    pub net: NetDecoder,
}

impl<R: Read> Frames for OneFile<R> {
    #[inline]
    fn next(&mut self, report: &mut Report) -> Step<'_> {
        match self.reader.next_frame() {
            Ok(Some(f)) => Step::Frame(f, &mut self.net, None),
            Ok(None) => Step::End,
            Err(e) => {
                push_warning(report, Error::from(&e));
                if e.is_fatal() {
                    report.fatal = Some(e.to_string());
                    Step::End
                } else {
                    Step::Skip
                }
            }
        }
    }

    #[inline]
    fn peek(&self, k: usize, at: Option<u64>) -> Option<(LinkType, &[u8], u64)> {
        self.reader.peek(k, at)
    }

    fn bytes_read(&self) -> u64 {
        self.reader.bytes_read()
    }

    fn finish(&self, report: &mut Report) {
        warn_unfinished(report, &self.net, None);
    }
}

/// Several captures as one stream in time order: equal times keep the order the files were
/// given.
pub(super) struct Merged {
    sources: Vec<Source>,
    /// The source whose frame was handed out last: it reads its next one before the next
    /// pick (so that its read problems follow what that frame gave).
    taken: Option<usize>,
    /// The frame handed out last.
    frame: Option<OwnedFrame>,
}

/// One input of a merged run: its reader, its own IP reassembly, and the next frame, owned.
struct Source {
    file: String,
    reader: CaptureReader<std::fs::File>,
    net: NetDecoder,
    next: Option<OwnedFrame>,
}

/// A frame copied out of its reader's buffer so several files can be interleaved (or a
/// followed input's frames handed over from its reading thread).
pub(super) struct OwnedFrame {
    pub(super) index: u64,
    pub(super) ts_ns: i64,
    pub(super) link: LinkType,
    pub(super) data: Vec<u8>,
    pub(super) orig_len: u32,
    pub(super) file_offset: u64,
}

impl OwnedFrame {
    /// A copy of `f`.
    pub(super) fn of(f: &Frame<'_>) -> Self {
        OwnedFrame {
            index: f.index,
            ts_ns: f.ts_ns,
            link: f.link,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
            file_offset: f.file_offset,
        }
    }

    /// The frame, borrowed.
    pub(super) fn frame(&self) -> Frame<'_> {
        Frame {
            index: self.index,
            ts_ns: self.ts_ns,
            link: self.link,
            data: &self.data,
            orig_len: self.orig_len,
            file_offset: self.file_offset,
        }
    }
}

impl Source {
    /// Read ahead one frame; problems go to the report's warnings.
    fn refill(&mut self, report: &mut Report) {
        self.next = loop {
            match self.reader.next_frame() {
                Ok(Some(f)) => {
                    break Some(OwnedFrame {
                        index: f.index,
                        ts_ns: f.ts_ns,
                        link: f.link,
                        data: f.data.to_vec(),
                        orig_len: f.orig_len,
                        file_offset: f.file_offset,
                    })
                }
                Ok(None) => break None,
                Err(e) => {
                    push_warning(report, Error::from(&e).file(&self.file));
                    if e.is_fatal() {
                        break None;
                    }
                }
            }
        };
    }
}

impl Merged {
    /// The readers, opened, each with its first frame read ahead.
    pub(super) fn new(
        readers: Vec<(String, CaptureReader<std::fs::File>)>,
        report: &mut Report,
    ) -> Self {
        let sources = readers
            .into_iter()
            .map(|(file, reader)| {
                let mut src = Source {
                    file,
                    reader,
                    net: NetDecoder::new(),
                    next: None,
                };
                src.refill(report);
                src
            })
            .collect();
        Merged {
            sources,
            taken: None,
            frame: None,
        }
    }
}

impl Frames for Merged {
    fn next(&mut self, report: &mut Report) -> Step<'_> {
        if let Some(i) = self.taken.take() {
            self.sources[i].refill(report);
        }
        let sources = &self.sources;
        let Some(i) = (0..sources.len())
            .filter(|&i| sources[i].next.is_some())
            .min_by_key(|&i| sources[i].next.as_ref().map(|f| f.ts_ns))
        else {
            return Step::End;
        };
        let src = &mut self.sources[i];
        let Some(of) = src.next.take() else {
            return Step::End;
        };
        self.taken = Some(i);
        let of = self.frame.insert(of);
        let frame = Frame {
            index: of.index,
            ts_ns: of.ts_ns,
            link: of.link,
            data: &of.data,
            orig_len: of.orig_len,
            file_offset: of.file_offset,
        };
        Step::Frame(frame, &mut src.net, Some(&src.file))
    }

    fn bytes_read(&self) -> u64 {
        self.sources.iter().map(|s| s.reader.bytes_read()).sum()
    }

    fn finish(&self, report: &mut Report) {
        for src in &self.sources {
            warn_unfinished(report, &src.net, Some(&src.file));
        }
    }
}
