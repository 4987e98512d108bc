//! What decoding learnt of a flow for its summary: the errors, kept and counted, and the
//! mid-session story.
use super::*;

/// What decoding learnt of one flow for its summary: errors (all counted, the first
/// [`MAX_KEPT_ERRORS`] kept) and the maps of its gamestates. Decoders that run on worker
/// threads hand it back at the end.
#[derive(Debug, Clone, Default)]
pub struct DecodeLog {
    pub count: u64,
    pub kept: Vec<Error>,
    pub maps: Vec<String>,
    /// Mid-session protocol 68 after the lock-on: what stayed undecodable and how often
    /// decoding resumed (see [`crate::q3::midsession::relock`]).
    pub mid68: Mid68Log,
}

/// What a mid-session protocol-68 decoder could not descramble after the lock-on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mid68Log {
    /// Server messages acknowledging a client command whose text is unknown.
    pub server_undecoded: u64,
    /// Client messages acknowledging a server command whose text is unknown.
    pub client_undecoded: u64,
    /// Client commands whose text a search over guesses found after the lock-on.
    pub resumed: u32,
    pub searches: u32,
    pub decodes: usize,
    /// Key streams of client messages (acknowledging a server command whose text is
    /// unknown) found by search, and what the searches cost (see [`ClientRelock`]).
    pub client_keys: u32,
    pub client_searches: u32,
    pub client_decodes: usize,
}

impl DecodeLog {
    pub(super) fn push(&mut self, e: Error) {
        self.count += 1;
        if self.kept.len() < MAX_KEPT_ERRORS {
            self.kept.push(e);
        }
    }

    /// Add what stayed undecodable after a protocol-68 lock-on to the mid-session note.
    fn note_mid68(&self, s: &mut FlowSummary) {
        let m = &self.mid68;
        if *m == Mid68Log::default() {
            return;
        }
        let Some(e) = s
            .error_details
            .iter_mut()
            .find(|e| e.kind == ErrorKind::MidSession)
        else {
            return;
        };
        e.message = format!(
            "{}; after the lock-on {} server and {} client messages stayed undecodable (their key string, a command the capture did not show, unknown); {} client commands found after the lock-on, guessed or read off message ends ({} searches, {} body decodes); {} client-message key streams found by search ({} searches, {} body decodes)",
            e.message,
            m.server_undecoded,
            m.client_undecoded,
            m.resumed,
            m.searches,
            m.decodes,
            m.client_keys,
            m.client_searches,
            m.client_decodes
        );
    }

    pub(super) fn map(&mut self, name: Option<String>) {
        if let Some(name) = name {
            if self.maps.len() < crate::flow::MAX_MAPS && self.maps.last() != Some(&name) {
                self.maps.push(name);
            }
        }
    }

    /// Fold into a summary whose own errors come from other datagrams: each datagram's
    /// errors come from one side only, so ordering by frame restores capture order.
    pub fn merge_into(&self, s: &mut FlowSummary) {
        for m in &self.maps {
            s.add_map(m);
        }
        self.note_mid68(s);
        if self.count == 0 {
            return;
        }
        s.errors += self.count;
        // Decoded after the flow may have adopted an earlier one: name the summary's id.
        s.error_details
            .extend(self.kept.iter().cloned().map(|e| e.flow(s.id)));
        s.error_details.sort_by_key(Error::frame_or_record);
        s.error_details.truncate(MAX_KEPT_ERRORS);
    }
}
