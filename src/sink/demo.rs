//! Demo writers (filled in with the demo command).
