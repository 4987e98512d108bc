//! `svc_gamestate`: `CL_ParseGamestate` on the client state, recorded when asked.
use super::*;

/// `CL_ParseGamestate`, recorded: its configstrings and, `with_baselines`, its baselines
/// (the game events read none: [`Detail::Events`]).
pub(super) fn parse_gamestate(
    r: &mut BitReader<'_>,
    bit: usize,
    st: &mut ClientState,
    with_baselines: bool,
) -> Result<Gamestate, SvcError> {
    let mut configstrings = Vec::new();
    let mut baselines = Vec::new();
    let record = Record {
        configstrings: &mut configstrings,
        baselines: with_baselines.then_some(&mut baselines),
    };
    let (server_command_seq, client_num, checksum_feed) = read_gamestate(r, st, Some(record))?;
    Ok(Gamestate {
        bit,
        server_command_seq,
        configstrings,
        baselines,
        client_num,
        checksum_feed,
    })
}

/// Where [`read_gamestate`] records a gamestate.
pub(super) struct Record<'a> {
    configstrings: &'a mut Vec<ConfigString>,
    baselines: Option<&'a mut Vec<EntityDelta>>,
}

/// `CL_ParseGamestate` on the client state; the configstrings and baselines also go to
/// `record` when given (without it, as for the flow table, no copy is made). Returns the
/// server command sequence, the client number and the checksum feed.
pub(super) fn read_gamestate(
    r: &mut BitReader<'_>,
    st: &mut ClientState,
    mut record: Option<Record<'_>>,
) -> Result<(i32, i32, i32), SvcError> {
    st.clear_for_gamestate();
    st.gamestates += 1;
    let server_command_seq = r.read_long()?;
    st.server_command_seq = server_command_seq;
    let mut total = 0usize;
    loop {
        let op = r.read_byte()?;
        let at = r.bit_pos();
        match op {
            SVC_EOF => break,
            SVC_CONFIGSTRING => {
                let index = r.read_short()? as i32;
                if index < 0 || index as usize >= MAX_CONFIGSTRINGS {
                    return Err(SvcError::ConfigstringIndex { index, bit: at });
                }
                let value = if st.proto.utf8 {
                    r.read_big_string_utf8()?
                } else {
                    r.read_big_string()?
                };
                total += value.len() + 1;
                // CL_ParseGamestate's dataCount starts at 1 (a 0 for unset configstrings) and
                // must stay within MAX_GAMESTATE_CHARS with each string and its terminator.
                if 1 + total > MAX_GAMESTATE_CHARS {
                    return Err(SvcError::GamestateTooBig { bit: at });
                }
                match &mut record {
                    Some(rec) => {
                        st.set_configstring(index as usize, value.clone());
                        rec.configstrings.push(ConfigString {
                            index: index as u16,
                            value,
                        });
                    }
                    None => st.set_configstring(index as usize, value),
                }
            }
            SVC_BASELINE => {
                let num = r.read_bits(GENTITYNUM_BITS)?;
                let zero = EntityState::default();
                match record.as_mut().and_then(|rec| rec.baselines.as_mut()) {
                    Some(bl) => {
                        let d = read_delta_entity(r, st.proto, &zero, num)?;
                        st.set_baseline(num as usize, &d.state);
                        bl.push(d);
                    }
                    None => {
                        let state = read_delta_entity_state(r, st.proto, &zero, num)?;
                        st.set_baseline(num as usize, &state);
                    }
                }
            }
            _ => return Err(SvcError::BadGamestateOp { op, bit: at }),
        }
    }
    st.baselines.share();
    let client_num = r.read_long()?;
    let checksum_feed = r.read_long()?;
    st.client_num = client_num;
    st.checksum_feed = checksum_feed;
    Ok((server_command_seq, client_num, checksum_feed))
}
