//! Captures that start mid-session, protocol 68: the searches that recover what the missed
//! handshake and gamestate would have given. The server-message key (`keysearch`: the
//! challenge byte and the acknowledged client command), the client-message key streams
//! (`c2ssearch`), message tails (`tailsearch`), locking on again after an unseen command
//! (`relock`), and the usercmd key's gamestate part from the snapshots' echoes
//! (`feedsearch`). `docs/mid-session.md` tells the whole story.
pub mod c2ssearch;
pub mod feedsearch;
pub mod keysearch;
pub mod relock;
pub mod tailsearch;
