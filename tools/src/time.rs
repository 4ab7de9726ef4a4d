//! Times as people read them: milliseconds since the Unix epoch as ISO 8601 in UTC.

/// `2026-12-01T12:30:05.123Z` for `ms` milliseconds since the epoch; the number itself when it
/// is not a whole, non-negative count of milliseconds within the years 0 to 9999.
pub fn iso8601(ms: f64) -> String {
    if !(0.0..=253_402_300_799_999.0).contains(&ms) || ms.fract() != 0.0 {
        return ms.to_string();
    }
    let ms = ms as i64;
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        in_day % 1000
    )
}

/// Now, as ISO 8601 UTC.
pub fn now_iso8601() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    iso8601(ms as f64)
}

/// A duration in milliseconds as people read it: `850 ms`, `12.345 s`, `3 min 05 s`, `2 h 01 min`.
pub fn duration(ms: f64) -> String {
    if !ms.is_finite() || ms < 0.0 {
        return "-".to_owned();
    }
    let s = ms / 1000.0;
    match s {
        s if s < 1.0 => format!("{ms:.0} ms"),
        s if s < 60.0 => format!("{s:.3} s"),
        s if s < 3600.0 => format!("{} min {:02} s", (s / 60.0) as u64, (s % 60.0) as u64),
        s => format!(
            "{} h {:02} min",
            (s / 3600.0) as u64,
            (s % 3600.0 / 60.0) as u64
        ),
    }
}

/// A time given on the command line: milliseconds since the epoch, or ISO 8601 in UTC
/// (`2026-12-01T12:30:05Z`, with optional fractional seconds, or a date alone).
pub fn parse_time(text: &str) -> Result<f64, String> {
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms as f64);
    }
    let bad = || {
        format!("{text:?} is neither milliseconds since the epoch nor an ISO 8601 UTC time like 2026-12-01T12:30:05Z")
    };
    let (date, time) = match text.split_once('T') {
        Some((d, t)) => (d, t.strip_suffix('Z').ok_or_else(bad)?),
        None => (text, "00:00:00"),
    };
    let num = |s: &str, lo: i64, hi: i64| -> Result<i64, String> {
        let n: i64 = s.parse().map_err(|_| bad())?;
        (s.bytes().all(|b| b.is_ascii_digit()) && (lo..=hi).contains(&n))
            .then_some(n)
            .ok_or_else(bad)
    };
    let d: Vec<&str> = date.split('-').collect();
    let [y, m, day] = d.as_slice() else {
        return Err(bad());
    };
    let (y, m, day) = (num(y, 0, 9999)?, num(m, 1, 12)?, num(day, 1, 31)?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<&str> = hms.split(':').collect();
    let [h, min, sec] = t.as_slice() else {
        return Err(bad());
    };
    let (h, min, sec) = (num(h, 0, 23)?, num(min, 0, 59)?, num(sec, 0, 59)?);
    let ms_frac = if frac.is_empty() {
        0.0
    } else {
        format!("0.{}", num(frac, 0, i64::MAX).map(|_| frac)?)
            .parse::<f64>()
            .map_err(|_| bad())?
            * 1000.0
    };
    let days = days_from_civil(y, m, day);
    if civil_from_days(days) != (y, m, day) {
        return Err(bad());
    }
    Ok(((days * 86_400 + h * 3600 + min * 60 + sec) * 1000) as f64 + ms_frac.floor())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn known_instants_print_as_iso_8601_utc() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000.0), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_128_205_123.0), "2026-12-01T12:30:05.123Z");
        assert_eq!(iso8601(1.5), "1.5", "not a whole millisecond");
        assert_eq!(iso8601(-1.0), "-1");
    }

    #[test]
    fn times_parse_from_iso_8601_and_milliseconds_and_round_trip() {
        use super::parse_time;
        assert_eq!(parse_time("1796128205123"), Ok(1_796_128_205_123.0));
        assert_eq!(
            parse_time("2026-12-01T12:30:05.123Z"),
            Ok(1_796_128_205_123.0)
        );
        assert_eq!(parse_time("2000-02-29"), Ok(951_782_400_000.0));
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0.0));
        for bad in [
            "2026-02-30",
            "2026-12-01T25:00:00Z",
            "2026-12-01T12:30:05",
            "yesterday",
            "-5",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        let t = 1_796_128_205_123.0;
        assert_eq!(parse_time(&iso8601(t)), Ok(t));
    }

    #[test]
    fn durations_read_in_the_unit_that_fits() {
        use super::duration;
        assert_eq!(duration(850.0), "850 ms");
        assert_eq!(duration(12_345.0), "12.345 s");
        assert_eq!(duration(185_000.0), "3 min 05 s");
        assert_eq!(duration(7_260_000.0), "2 h 01 min");
        assert_eq!(duration(-1.0), "-");
    }
}
