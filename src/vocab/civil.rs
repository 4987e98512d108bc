//! The calendar date and clock time of Unix epoch seconds (proleptic Gregorian calendar;
//! UTC, or local time when the caller adds its offset first): the one conversion every
//! output that prints a wall-clock time uses (`--time`, the report's clock).

/// `YYYY-MM-DD` and `HH:MM:SS` of `secs` (days-from-civil inverted by 400-year eras).
pub fn civil(secs: i64) -> (String, String) {
    let days = secs.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (format!("{year:04}-{month:02}-{day:02}"), hms(secs))
}

/// `HH:MM:SS` of `secs`, the time of day.
pub fn hms(secs: i64) -> String {
    let s = secs.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_across_leap_days_and_eras() {
        assert_eq!(civil(0), ("1970-01-01".into(), "00:00:00".into()));
        assert_eq!(civil(951_782_400), ("2000-02-29".into(), "00:00:00".into()));
        assert_eq!(civil(1_795_361_221).1, "15:27:01");
        assert_eq!(civil(-1), ("1969-12-31".into(), "23:59:59".into()));
        assert_eq!(civil(1_795_361_221).0, "2026-11-22");
    }
}
