//! Shared helpers of the QuakeWorld end-to-end tests: run a capture through the tracker.
#![allow(dead_code)]
use quakecap::capture::CaptureReader;
use quakecap::flow::FlowSummary;
use quakecap::net::NetDecoder;
use quakecap::qw::{self, Event};
use std::path::PathBuf;

pub fn path(dir: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(dir)
        .join(file)
}

pub struct Run {
    pub events: Vec<Event>,
    pub flows: Vec<FlowSummary>,
    /// UDP datagrams in the capture, and how many the QuakeWorld tracker took.
    pub datagrams: u64,
    pub taken: u64,
}

pub fn run_capture(dir: &str, opts: qw::Options) -> Run {
    let mut reader = CaptureReader::open(&path(dir, "capture.pcapng")).unwrap();
    let mut net = NetDecoder::new();
    let mut tracker = qw::Tracker::new(opts);
    let mut events = Vec::new();
    let mut next_id = 1;
    let (mut datagrams, mut taken) = (0, 0);
    while let Some(frame) = reader.next_frame().unwrap() {
        if let Ok(Some(d)) = net.decode(&frame) {
            datagrams += 1;
            if tracker.offer(&d, &mut next_id, &mut events) {
                taken += 1;
            }
        }
    }
    let flows = tracker.finish(&mut events);
    Run {
        events,
        flows,
        datagrams,
        taken,
    }
}

pub fn messages(events: &[Event]) -> impl Iterator<Item = &qw::Message> {
    events.iter().filter_map(|e| match e {
        Event::Message(m) => Some(m),
        _ => None,
    })
}
