//! A capture's connections with their players' ping and loss: the library's network
//! quality per connection.
//!
//! `cargo run --example capture_ping -- captures/q3-two-clients/capture.pcapng`
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: capture_ping CAPTURE");
        std::process::exit(2);
    };
    let rows = match quakecap::read::network_quality(path.as_ref(), 1.0) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("capture_ping: {e}");
            std::process::exit(2);
        }
    };
    let pct = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{:.1}%", v * 100.0));
    println!("flow  game  player            ping ms  loss up  loss down");
    for r in &rows {
        println!(
            "{:<5} {:<5} {:<17} {:>7}  {:>7}  {:>9}",
            r.flow,
            r.game,
            r.name.as_deref().unwrap_or("-"),
            r.ping.median.map_or("-".to_string(), |p| format!("{p:.0}")),
            pct(r.loss.c2s),
            pct(r.loss.s2c)
        );
    }
    println!("{} connections", rows.len());
}
