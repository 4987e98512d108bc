//! How times are shown (`--time`, like tshark's `-t`): local date-time, relative to the first
//! packet, raw epoch, or UTC; durations as `mm:ss`.
use quakecap::vocab::civil::civil;

/// The `--time` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TimeFormat {
    /// Local date and time of day (`2026-11-24 18:20:21`).
    #[default]
    Abs,
    /// Since the first packet of the file (`+01:02.5`).
    Rel,
    /// Seconds since the Unix epoch, as captured (`1795361221.861`).
    Epoch,
    /// UTC date and time (`2026-11-24T17:20:21Z`).
    Utc,
}

/// Format capture time `t` (epoch seconds); `base` is the file's first packet (for `rel`);
/// `time_only` leaves the date out of `abs` and `utc` (shown once elsewhere).
pub fn format_time(fmt: TimeFormat, t: f64, base: f64, time_only: bool) -> String {
    // Demo files carry no capture time: say so rather than print 1970.
    if t <= 0.0 && fmt != TimeFormat::Epoch {
        return "-".into();
    }
    match fmt {
        TimeFormat::Epoch => format!("{t:.3}"),
        TimeFormat::Rel => format!("+{}", duration_precise(t - base)),
        TimeFormat::Utc => {
            let (d, s) = civil(t.floor() as i64);
            if time_only {
                format!("{s}Z")
            } else {
                format!("{d}T{s}Z")
            }
        }
        TimeFormat::Abs => {
            let secs = t.floor() as i64;
            let (d, s) = civil(secs + local_offset(secs));
            if time_only {
                s
            } else {
                format!("{d} {s}")
            }
        }
    }
}

/// The date all these times fall on (local for `abs`, UTC for `utc`), if they share one.
pub fn common_date(fmt: TimeFormat, times: impl Iterator<Item = f64>) -> Option<String> {
    let mut date: Option<String> = None;
    for t in times.filter(|t| *t > 0.0) {
        let secs = t.floor() as i64;
        let d = match fmt {
            TimeFormat::Abs => civil(secs + local_offset(secs)).0,
            TimeFormat::Utc => civil(secs).0,
            TimeFormat::Rel | TimeFormat::Epoch => return None,
        };
        match &date {
            Some(prev) if *prev != d => return None,
            _ => date = Some(d),
        }
    }
    date
}

/// `mm:ss` (or `h:mm:ss` from an hour on), whole seconds: a table column.
pub fn duration(secs: f64) -> String {
    let total = secs.max(0.0).round() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

/// `mm:ss.s`: relative times need sub-second precision to order packets.
fn duration_precise(secs: f64) -> String {
    let tenths = (secs.max(0.0) * 10.0).round() as u64;
    let (m, s, t) = (tenths / 600, tenths / 10 % 60, tenths % 10);
    format!("{m:02}:{s:02}.{t}")
}

/// The local time zone's offset from UTC at `secs`, in seconds (0 when unknown).
#[allow(unsafe_code)] // localtime_r: a libc call (see the SAFETY note)
pub fn local_offset(secs: i64) -> i64 {
    let t: libc::time_t = secs as libc::time_t;
    // SAFETY: `localtime_r` writes only into `tm`, which lives for the call; the standard
    // library exposes no time zone, and this is the one call that reads the system's.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        tm.tm_gmtoff
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_and_durations() {
        assert_eq!(
            format_time(TimeFormat::Utc, 1_795_361_221.861, 0.0, false),
            "2026-11-22T15:27:01Z"
        );
        assert_eq!(
            format_time(TimeFormat::Utc, 951_782_400.0, 0.0, false),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(format_time(TimeFormat::Epoch, 12.5, 0.0, false), "12.500");
        assert_eq!(format_time(TimeFormat::Rel, 75.25, 10.0, false), "+01:05.3");
        assert_eq!(duration(25.229), "00:25");
        assert_eq!(duration(3725.0), "1:02:05");
    }
}
