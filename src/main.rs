//! The `quakecap` command: parse arguments, run, map the outcome to an exit code
//! (0 ok, 2 unusable input, 1 other failure).
use clap::Parser;

fn main() {
    let cli = quakecap_cli::Cli::parse();
    std::process::exit(quakecap_cli::run(cli));
}

#[path = "cli/mod.rs"]
mod quakecap_cli;
