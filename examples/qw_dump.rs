//! Print the QuakeWorld decode of a capture or demo as text or JSON lines (a development aid
//! until the CLI's `decode` routes QuakeWorld): `cargo run --example qw_dump FILE [--json]`;
//! `--qwd DIR` also writes one .qwd per connection of a capture into DIR.
use quakecap::capture::CaptureReader;
use quakecap::net::NetDecoder;
use quakecap::qw::{self, Event};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: qw_dump FILE [--json]")?;
    let json = args.iter().any(|a| a == "--json");
    let qwd_dir = args
        .iter()
        .position(|a| a == "--qwd")
        .and_then(|i| args.get(i + 1));
    let mut events = Vec::new();
    let flows = if path.ends_with(".qwd") || path.ends_with(".mvd") {
        qw::decode_demo_file(path, &std::fs::read(path)?, &mut events)
    } else {
        let mut reader = CaptureReader::open(std::path::Path::new(path))?;
        let mut net = NetDecoder::new();
        let mut t = qw::Tracker::new(qw::Options {
            decode: true,
            keep_raw: qwd_dir.is_some(),
        });
        let mut next = quakecap::flow::FlowTable::default();
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
                quakecap::sink::text::qw::write_message(m, &mut s)?;
                print!("{s}");
            }
        }
    }
    if let Some(dir) = qwd_dir {
        let mut w = qw::qwd::Writers::new();
        events.iter().for_each(|e| w.push(e));
        for (flow, data) in w.finish() {
            let p = std::path::Path::new(dir).join(format!("flow{flow}.qwd"));
            std::fs::write(&p, data)?;
            eprintln!("wrote {}", p.display());
        }
    }
    for f in flows {
        eprintln!("{}", serde_json::to_string(&f)?);
    }
    Ok(())
}
