//! What one side sends the aligner: a message reduced to its meaning.
use std::sync::Arc;

use crate::flow::Dir;

/// One accepted netchan message or demo record of a connection.
#[derive(Debug, Clone)]
pub struct Item {
    /// The connection it belongs to (player name and occurrence in its input).
    pub conn: Arc<str>,
    /// Direction of the message.
    pub dir: Dir,
    /// Netchan sequence the sides are paired on (.mvd demos: the block's frame number).
    pub seq: i64,
    /// Quake 3 serverTime (ms) of the latest snapshot (s2c) or usercmd (c2s).
    pub game_time: Option<i64>,
    /// A demo's recorder-made record (Quake 3's first gamestate record): compared only
    /// with a gamestate of the same sequence, never reported missing.
    pub synthetic: bool,
    /// What the message means, per game and direction.
    pub content: Content,
}

/// The game-specific part.
#[derive(Debug, Clone)]
pub enum Content {
    /// A Quake 3 server message.
    Q3Server(Box<super::q3::Server>),
    /// A Quake 3 client message.
    Q3Client(Box<super::q3::Client>),
    /// A QuakeWorld message, either direction.
    Qw(Box<super::qw::Msg>),
}

/// What a side says once its input is decoded.
#[derive(Debug, Clone, Default)]
pub struct InputInfo {
    /// The input is a demo file (it holds no client messages).
    pub demo: bool,
    /// Connections in order of appearance.
    pub connections: Vec<String>,
}

/// The stream from one decoding thread.
#[derive(Debug)]
pub enum Feed {
    /// The next message, in input order.
    Item(Item),
    /// The input is finished (sent once, last).
    End,
}
