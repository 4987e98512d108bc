//! Who killed whom in a demo (or capture): the library's game events.
//!
//! `cargo run --example demo_kills -- ../shared/demos/q3/SOME.dm_68`
use quakecap::gameevent::{Detail, Kind};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: demo_kills DEMO_OR_CAPTURE");
        std::process::exit(2);
    };
    let events = match quakecap::read::game_events(path.as_ref()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("demo_kills: {e}");
            std::process::exit(2);
        }
    };
    let mut kills = 0;
    for e in events.iter().filter(|e| e.kind == Kind::Kill) {
        if let Detail::Kill(k) = &e.detail {
            let who = |name: &Option<String>, num: Option<i32>| match (name, num) {
                (Some(n), _) => n.clone(),
                (None, Some(n)) => format!("#{n}"),
                (None, None) => "<world>".to_string(),
            };
            println!(
                "{:>9.3}  {} -> {}  {}",
                e.time,
                who(&k.killer, k.killer_num),
                who(&k.victim, k.victim_num),
                k.means
            );
            kills += 1;
        }
    }
    println!("{kills} kills");
}
