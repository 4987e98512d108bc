//! Delta reader/writer properties: the fast path equals the exact reader, writers and
//! readers round-trip, errors are the engine's, the JSON shape.

use crate::q3::protocol::Protocol;
use super::exact::{fields_exact, Mapped};
use super::read::{entity_fields, player_fields};
use super::*;
use crate::q3::bits::{BitReader, BitWriter};
use crate::q3::fields::{
    NetField, ENTITY_FIELDS, GENTITYNUM_BITS, NUM_ENTITY_FIELDS, NUM_PLAYER_FIELDS, PLAYER_FIELDS,
};
use proptest::prelude::*;

/// Raw values for a field: integers within the field width (the engine never sends more),
/// floats from a mix of integral in/out of the 13-bit range, -0.0, NaN payloads, any bits.
fn field_value(field: &NetField) -> BoxedStrategy<i32> {
    if field.is_float() {
        prop_oneof![
            Just(0i32),
            Just((-0.0f32).to_bits() as i32),
            (-4096i32..4096).prop_map(|v| (v as f32).to_bits() as i32),
            prop_oneof![-100_000i32..-4096, 4096i32..100_000]
                .prop_map(|v| (v as f32).to_bits() as i32),
            Just(0x7fc0_0001),
            Just(0xffc1_2345u32 as i32),
            Just(f32::INFINITY.to_bits() as i32),
            any::<i32>(),
        ]
        .boxed()
    } else {
        let bits = field.bits.unsigned_abs();
        let m = if bits == 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let signed = field.bits < 0;
        prop_oneof![Just(0u32), any::<u32>(), any::<u32>()]
            .prop_map(move |v| {
                let v = v & m;
                if signed && v & (1 << (bits - 1)) != 0 {
                    (v | !m) as i32
                } else {
                    v as i32
                }
            })
            .boxed()
    }
}

fn fields_strategy(table: &'static [NetField]) -> impl Strategy<Value = Vec<i32>> {
    table.iter().map(field_value).collect::<Vec<_>>()
}

/// A "to" that shares a random subset of fields with "from".
fn from_to(table: &'static [NetField]) -> impl Strategy<Value = (Vec<i32>, Vec<i32>)> {
    (
        fields_strategy(table),
        fields_strategy(table),
        proptest::collection::vec(0u8..4, table.len()),
    )
        .prop_map(|(a, b, keep)| {
            let b = b
                .iter()
                .zip(&a)
                .zip(&keep)
                .map(|((&b, &a), &k)| if k != 0 { a } else { b })
                .collect();
            (a, b)
        })
}

/// Protocol 68's tables: the union tables' first fields.
const Q3_E: &[NetField] = ENTITY_FIELDS.split_at(crate::q3::fields::Q3_ENTITY_FIELDS).0;
const Q3_P: &[NetField] = PLAYER_FIELDS.split_at(crate::q3::fields::Q3_PLAYER_FIELDS).0;

fn entity(number: i32, v: &[i32]) -> EntityState {
    let mut e = EntityState::zeroed(number);
    e.fields[..v.len()].copy_from_slice(v);
    e
}

/// What the engine's reader ends up with for a changed field: -0.0 travels as 0.0
/// (the entity "zero" path; the playerstate 13-bit path), everything else exactly.
fn expected_after(from: i32, to: i32, field: &NetField) -> i32 {
    if from != to && field.is_float() && to == (-0.0f32).to_bits() as i32 {
        0
    } else {
        to
    }
}

/// Message bytes for the fast-path tests: random, or mostly zero so that long runs of
/// unchanged fields, message ends inside a field and NYT codes all occur.
fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(prop_oneof![4 => Just(0u8), 1 => any::<u8>()], 0..40),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The window fast path of the entity fields gives exactly the bit-by-bit reader's
    /// fields, changes, end position and errors.
    #[test]
    fn prop_entity_fields_fast_equals_exact(
        data in wire_bytes(),
        start in 0usize..320,
        n in 0usize..=NUM_ENTITY_FIELDS,
        base in any::<[i32; 8]>(),
        proto in proptest::sample::select(vec![68u32, 73, 90, 91]),
    ) {
        let proto = Protocol::of(proto);
        let n = n.min(proto.entity.len());
        let mut f1 = [0i32; NUM_ENTITY_FIELDS];
        for (k, v) in f1.iter_mut().enumerate() {
            *v = base[k % 8];
        }
        let mut f2 = f1;
        let (mut c1, mut c2) = (Vec::new(), Vec::new());
        let mut r1 = BitReader::new(&data);
        r1.set_bit_pos(start);
        let mut r2 = r1.clone();
        let a = entity_fields(&mut r1, proto, &mut f1, n, &mut c1);
        let table = Mapped { fields: &proto.wire.entity, slots: &proto.wire.entity_slots };
        let b = fields_exact::<true, _, _>(&mut r2, &table, &mut f2, (0, n), &mut c2)
                .map_err(DeltaError::from);
        prop_assert_eq!(&a, &b);
        if a.is_ok() {
            prop_assert_eq!(f1, f2);
            prop_assert_eq!(c1, c2);
            prop_assert_eq!(r1.bit_pos(), r2.bit_pos());
        }
    }

    /// The same for the playerstate fields.
    #[test]
    fn prop_player_fields_fast_equals_exact(
        data in wire_bytes(),
        start in 0usize..320,
        n in 0usize..=NUM_PLAYER_FIELDS,
        base in any::<[i32; 8]>(),
        proto in proptest::sample::select(vec![68u32, 73, 90, 91]),
    ) {
        let proto = Protocol::of(proto);
        let n = n.min(proto.player.len());
        let mut p1 = PlayerState::default();
        for (k, v) in p1.fields.iter_mut().enumerate() {
            *v = base[k % 8];
        }
        let mut p2 = p1.clone();
        let (mut c1, mut c2) = (Vec::new(), Vec::new());
        let mut r1 = BitReader::new(&data);
        r1.set_bit_pos(start);
        let mut r2 = r1.clone();
        let a = player_fields(&mut r1, proto, &mut p1, n, &mut c1);
        let table = Mapped { fields: &proto.wire.player, slots: &proto.wire.player_slots };
        let b = fields_exact::<false, _, _>(&mut r2, &table, &mut p2.fields, (0, n), &mut c2)
                .map_err(DeltaError::from);
        prop_assert_eq!(&a, &b);
        if a.is_ok() {
            prop_assert_eq!(p1, p2);
            prop_assert_eq!(c1, c2);
            prop_assert_eq!(r1.bit_pos(), r2.bit_pos());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn prop_entity_delta_roundtrip((a, b) in from_to(Q3_E), number in 0i32..1023, force in any::<bool>()) {
        let from = entity(number, &a);
        let to = entity(number, &b);
        let mut w = BitWriter::new();
        w.write_long(77); // something before, so positions are not trivially 0
        let start = w.bit_pos();
        write_delta_entity(&mut w, Protocol::q3(), &from, Some(&to), force);
        let end = w.bit_pos();
        let out = w.finish();
        let changed: Vec<usize> = (0..51).filter(|&i| a[i] != b[i]).collect();
        if changed.is_empty() && !force {
            prop_assert_eq!(end, start);
            return Ok(());
        }
        let mut r = BitReader::new(&out);
        prop_assert_eq!(r.read_long(), Ok(77));
        let n = r.read_bits(GENTITYNUM_BITS)?;
        prop_assert_eq!(n, number);
        let after_number = r.bit_pos();
        prop_assert!(after_number > start);
        let d = read_delta_entity(&mut r, Protocol::q3(), &from, n)?;
        prop_assert_eq!(d.end_bit, end);
        prop_assert_eq!(d.start_bit, after_number);
        prop_assert!(!d.removed);
        prop_assert_eq!(d.has_delta, !changed.is_empty());
        let idx: Vec<usize> = d.changes.iter().map(|c| c.index as usize).collect();
        prop_assert_eq!(&idx, &changed);
        prop_assert_eq!(d.lc as usize, changed.last().map_or(0, |&i| i + 1));
        for (i, f) in Q3_E.iter().enumerate() {
            prop_assert_eq!(d.state.fields[i], expected_after(a[i], b[i], f), "field {}", f.name);
        }
        for c in &d.changes {
            let f = &ENTITY_FIELDS[c.index as usize];
            let v = d.state.fields[c.index as usize];
            match c.enc {
                FieldEnc::Zero => prop_assert_eq!(v, 0),
                FieldEnc::Int if f.is_float() => prop_assert_eq!(f32::from_bits(v as u32), c.value as f32),
                FieldEnc::Int | FieldEnc::Float => prop_assert_eq!(v, c.value),
            }
        }
        if d.has_delta {
            prop_assert_eq!(d.bit_after_flag, after_number + 2 + BitWriter::byte_len_bits(d.lc));
        } else {
            prop_assert_eq!(d.bit_after_flag, after_number + 2);
        }
    }

    #[test]
    fn prop_entity_removal(a in fields_strategy(Q3_E), number in 0i32..1023) {
        let from = entity(number, &a);
        let mut w = BitWriter::new();
        write_delta_entity(&mut w, Protocol::q3(), &from, None, false);
        let end = w.bit_pos();
        let out = w.finish();
        let mut r = BitReader::new(&out);
        let n = r.read_bits(10)?;
        prop_assert_eq!(n, number);
        prop_assert_eq!(r.bit_pos() + 1, end);
        let d = read_delta_entity(&mut r, Protocol::q3(), &from, n)?;
        prop_assert!(d.removed);
        prop_assert_eq!(d.state, EntityState::zeroed(number));
        prop_assert_eq!(d.bit_after_flag, end);
        prop_assert_eq!(d.end_bit, end);
    }

    #[test]
    fn prop_playerstate_roundtrip(
        (a, b) in from_to(Q3_P),
        arrays in proptest::collection::vec((any::<i16>(), any::<i16>(), 0u8..3, any::<i32>(), any::<i32>()), 64),
        use_from in any::<bool>(),
    ) {
        let mut from = PlayerState::default();
        let mut to = PlayerState::default();
        if use_from { from.fields[..a.len()].copy_from_slice(&a); }
        to.fields[..b.len()].copy_from_slice(&b);
        for (k, (x, y, keep, lx, ly)) in arrays.into_iter().enumerate() {
            let (fa, ta, long) = match k / 16 {
                0 => (&mut from.stats, &mut to.stats, false),
                1 => (&mut from.persistant, &mut to.persistant, false),
                2 => (&mut from.ammo, &mut to.ammo, false),
                _ => (&mut from.powerups, &mut to.powerups, true),
            };
            let (x, y) = if long { (lx, ly) } else { (i32::from(x), i32::from(y)) };
            if use_from { fa[k % 16] = x; }
            ta[k % 16] = if keep == 0 { fa[k % 16] } else { y };
        }
        let base = use_from.then_some(&from);
        let zero = PlayerState::default();
        let eff_from = base.unwrap_or(&zero);
        let mut w = BitWriter::new();
        write_delta_playerstate(&mut w, Protocol::q3(), base, &to);
        let end = w.bit_pos();
        let out = w.finish();
        let mut r = BitReader::new(&out);
        let d = read_delta_playerstate(&mut r, Protocol::q3(), base)?;
        prop_assert_eq!(d.end_bit, end);
        prop_assert_eq!(d.start_bit, 0);
        let changed: Vec<usize> = (0..48).filter(|&i| eff_from.fields[i] != to.fields[i]).collect();
        let idx: Vec<usize> = d.changes.iter().map(|c| c.index as usize).collect();
        prop_assert_eq!(&idx, &changed);
        for (i, f) in Q3_P.iter().enumerate() {
            prop_assert_eq!(d.state.fields[i], expected_after(eff_from.fields[i], to.fields[i], f), "field {}", f.name);
        }
        prop_assert!(d.changes.iter().all(|c| c.enc != FieldEnc::Zero));
        prop_assert_eq!(d.state.stats, to.stats);
        prop_assert_eq!(d.state.persistant, to.persistant);
        prop_assert_eq!(d.state.ammo, to.ammo);
        prop_assert_eq!(d.state.powerups, to.powerups);
        let masks = [d.changed_stats, d.changed_persistant, d.changed_ammo, d.changed_powerups];
        for (k, (&mask, &present)) in masks.iter().zip(&d.arrays).enumerate() {
            let want = (0..16).filter(|&i| eff_from.arrays()[k][i] != to.arrays()[k][i]).fold(0u16, |m, i| m | 1 << i);
            prop_assert_eq!(mask, want);
            prop_assert_eq!(present, want != 0);
        }
        prop_assert_eq!(d.arrays_changed, masks != [0; 4]);
    }

    #[test]
    fn prop_random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120), n in 0i32..1024) {
        let from = EntityState::zeroed(n);
        let mut r = BitReader::new(&data);
        let _ = read_delta_entity(&mut r, Protocol::q3(), &from, n);
        let mut r = BitReader::new(&data);
        let _ = read_delta_playerstate(&mut r, Protocol::q3(), None);
    }

    #[test]
    fn prop_truncated_gives_past_end((a, b) in from_to(Q3_E), cut in any::<prop::sample::Index>()) {
        let from = entity(5, &a);
        let to = entity(5, &b);
        let mut w = BitWriter::new();
        write_delta_entity(&mut w, Protocol::q3(), &from, Some(&to), true);
        write_delta_playerstate(&mut w, Protocol::q3(), None, &PlayerState { fields: [0x4000_0000; NUM_PLAYER_FIELDS], ..Default::default() });
        let out = w.finish();
        let cut = cut.index(out.len() - 1);
        let mut r = BitReader::new(&out[..cut]);
        let res = r.read_bits(10).map_err(DeltaError::from)
            .and_then(|n| read_delta_entity(&mut r, Protocol::q3(), &from, n))
            .and_then(|_| read_delta_playerstate(&mut r, Protocol::q3(), None));
        match res {
            Err(DeltaError::Bits(BitError::PastEnd { bit })) => prop_assert!(bit <= cut * 8),
            other => prop_assert!(false, "expected PastEnd, got {:?}", other),
        }
    }
}

#[test]
fn field_count_errors() {
    let mut w = BitWriter::new();
    w.write_bit(false);
    w.write_bit(true);
    w.write_byte(52);
    let out = w.finish();
    let mut r = BitReader::new(&out);
    assert_eq!(
        read_delta_entity(&mut r, Protocol::q3(), &EntityState::default(), 3),
        Err(DeltaError::FieldCount { lc: 52, bit: 2 })
    );
    let mut w = BitWriter::new();
    w.write_byte(49);
    let out = w.finish();
    let mut r = BitReader::new(&out);
    assert_eq!(
        read_delta_playerstate(&mut r, Protocol::q3(), None),
        Err(DeltaError::FieldCount { lc: 49, bit: 0 })
    );
}

#[test]
fn forced_no_change_and_float_forms() {
    let from = EntityState::zeroed(7);
    let mut w = BitWriter::new();
    write_delta_entity(&mut w, Protocol::q3(), &from, Some(&from), false);
    assert_eq!(w.bit_pos(), 0);
    write_delta_entity(&mut w, Protocol::q3(), &from, Some(&from), true);
    let end = w.bit_pos();
    let out = w.finish();
    let mut r = BitReader::new(&out);
    assert_eq!(r.read_bits(10), Ok(7));
    assert_eq!(r.bit_pos() + 2, end);
    let d = read_delta_entity(&mut r, Protocol::q3(), &from, 7).map(|d| (d.has_delta, d.removed, d.end_bit));
    assert_eq!(d, Ok((false, false, end)));

    // pos.trBase[0] (index 1): -392.0 -> 13-bit Int -392; 0.5 -> raw Float; -0.0 -> Zero.
    for (v, enc, value) in [
        (-392.0f32, FieldEnc::Int, -392),
        (0.5, FieldEnc::Float, 0.5f32.to_bits() as i32),
        (-0.0, FieldEnc::Zero, 0),
        (4095.0, FieldEnc::Int, 4095),
        (4096.0, FieldEnc::Float, 4096.0f32.to_bits() as i32),
        (-4096.0, FieldEnc::Int, -4096),
        (-4097.0, FieldEnc::Float, (-4097.0f32).to_bits() as i32),
    ] {
        let mut to = from.clone();
        to.fields[1] = v.to_bits() as i32;
        let mut w = BitWriter::new();
        write_delta_entity(&mut w, Protocol::q3(), &from, Some(&to), false);
        let out = w.finish();
        let mut r = BitReader::new(&out);
        let n = r.read_bits(10).unwrap_or(-1);
        let d = read_delta_entity(&mut r, Protocol::q3(), &from, n).map(|d| d.changes);
        assert_eq!(
            d,
            Ok(vec![FieldChange {
                index: 1,
                enc,
                value
            }]),
            "{v}"
        );
    }
}

#[test]
fn serializes_names_and_values() {
    let mut to = EntityState::zeroed(3);
    to.fields[1] = 1.5f32.to_bits() as i32;
    to.fields[11] = 4;
    let mut w = BitWriter::new();
    write_delta_entity(&mut w, Protocol::q3(), &EntityState::zeroed(3), Some(&to), false);
    let out = w.finish();
    let mut r = BitReader::new(&out);
    let n = r.read_bits(10).unwrap_or(-1);
    let d = read_delta_entity(&mut r, Protocol::q3(), &EntityState::zeroed(3), n);
    let json = d.map(|d| serde_json::to_string(&d).unwrap_or_default());
    let json = json.unwrap_or_default();
    assert!(
        json.contains(r#"{"name":"pos.trBase[0]","enc":"Float","value":1.5}"#),
        "{json}"
    );
    assert!(
        json.contains(r#"{"name":"eType","enc":"Int","value":4}"#),
        "{json}"
    );
    assert!(json.contains(r#""pos.trBase[0]":1.5"#), "{json}");
}
