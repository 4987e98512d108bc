//! Print the QuakeWorld decode of a capture or demo as text or JSON lines (a development aid
//! until the CLI's `decode` routes QuakeWorld): `cargo run --example qw_dump FILE [--json]`.
use quakecap::capture::CaptureReader;
use quakecap::net::NetDecoder;
use quakecap::qw::{self, Event};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: qw_dump FILE [--json]")?;
    let json = args.iter().any(|a| a == "--json");
    let mut events = Vec::new();
    let flows = if path.ends_with(".qwd") || path.ends_with(".mvd") {
        qw::decode_demo_file(path, &std::fs::read(path)?, &mut events)
    } else {
        let mut reader = CaptureReader::open(std::path::Path::new(path))?;
        let mut net = NetDecoder::new();
        let mut t = qw::Tracker::new(qw::Options {
            decode: true,
            keep_raw: false,
        });
        let mut next = 1;
        while let Some(frame) = reader.next_frame()? {
            if let Ok(Some(d)) = net.decode(&frame) {
                t.offer(&d, &mut next, &mut events);
            }
        }
        t.finish(&mut events)
    };
    for e in &events {
        if let Event::Message(m) = e {
            if json {
                println!("{}", serde_json::to_string(m)?);
            } else {
                let mut s = String::new();
                m.write_text(&mut s)?;
                print!("{s}");
            }
        }
    }
    for f in flows {
        eprintln!("{}", serde_json::to_string(&f)?);
    }
    Ok(())
}
