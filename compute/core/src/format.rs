//! Numbers and text as the pages and the exports show them: counts with thousands separators,
//! accuracies as percentages, speed-ups in words, and text escaped for HTML. A leaf: every
//! report's sentences use it.

/// `1234567` as `1,234,567` (counts on the pages and in the reports' sentences).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `0.9125` as `91.25 %` (the Act II result table's form).
pub fn percent(accuracy: f64) -> String {
    format!("{:.2} %", accuracy * 100.0)
}

/// A speed-up (their time over ours) in words: `4.00× faster`, `2.00× slower` (its inverse),
/// `at the same pace (1.02×)` within 2 %.
pub fn speedup_words(speedup: f64) -> String {
    if !(speedup.is_finite() && speedup > 0.0) {
        "—".to_string()
    } else if (speedup - 1.0).abs() < 0.02 {
        format!("at the same pace ({speedup:.2}×)")
    } else if speedup > 1.0 {
        format!("{speedup:.2}× faster")
    } else {
        format!("{:.2}× slower", 1.0 / speedup)
    }
}

/// A chart axis's tick label: a whole number without decimals (`100`, `1024`: counts read as
/// counts, not `100.0`), anything else with at most three decimals, trailing zeros dropped
/// (`0.25`, `1.5`).
pub fn axis_tick(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if (v - v.round()).abs() < 1e-9 * v.abs().max(1.0) {
        return format!("{:.0}", v.round() + 0.0);
    }
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by their character references: safe as HTML
/// text and inside quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_html_into(&mut out, s);
    out
}

/// [`escape_html`], appending to `out`.
pub fn escape_html_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// `unix_secs` as a UTC date and time, `2025-03-14 09:30 UTC`.
pub fn utc_date_time(unix_secs: u64) -> String {
    let (y, mo, d, h, mi, _) = utc_parts(unix_secs);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02} UTC")
}

/// `unix_secs` split into UTC (year, month, day, hour, minute, second).
pub fn utc_parts(unix_secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Howard Hinnant's civil_from_days (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem / 60 % 60) as u32,
        (rem % 60) as u32,
    )
}

/// `unix_secs` as a UTC date, `2025-03-14`.
pub fn utc_date(unix_secs: u64) -> String {
    let (y, mo, d, ..) = utc_parts(unix_secs);
    format!("{y:04}-{mo:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_special_characters_are_escaped() {
        assert_eq!(escape_html("a&b\"c'd"), "a&amp;b&quot;c&#39;d");
    }

    #[test]
    fn speedups_read_as_faster_slower_or_the_same_pace() {
        assert_eq!(speedup_words(4.0), "4.00× faster");
        assert_eq!(speedup_words(0.5), "2.00× slower");
        // Issue 37: the axes of counts read "100.0 / 200.0".
        assert_eq!(axis_tick(100.0), "100");
        assert_eq!(axis_tick(200.0), "200");
        assert_eq!(axis_tick(-0.0), "0");
        assert_eq!(axis_tick(1024.0), "1024");
        assert_eq!(axis_tick(0.25), "0.25");
        assert_eq!(axis_tick(1.5), "1.5");
        assert_eq!(axis_tick(0.1 + 0.2), "0.3");
        assert_eq!(speedup_words(1.01), "at the same pace (1.01×)");
        assert_eq!(speedup_words(f64::NAN), "—");
    }
}
