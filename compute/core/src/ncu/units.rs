//! Numbers and units as Nsight Compute prints them, and their conversion to base SI units.
//!
//! ncu prints numbers with comma thousands separators (`1,234,567.89`) and, by default, scales
//! units to a fitting magnitude (`us`, `Gbyte/s`, `Ghz`, `Kbyte/block`; older versions spell
//! them `usecond`, `Gbyte/second`, `cycle/nsecond`). With `--print-units base` it prints the
//! base unit instead (`ns`, `byte/s`, `hz`, `byte`). [`to_si`] maps both to the same base:
//! seconds, bytes, bytes per second, hertz, using exact decimal prefixes (ncu's `Kbyte` is
//! 1,000 bytes), so the same report exported both ways gives the same SI values up to the
//! rounding of the printed digits. Percentages, cycles, instructions and other counts are
//! left as they are.

/// What a printed metric value is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A finite number.
    Finite(f64),
    /// Written as a number (or `inf`) but not finite in `f64` (`1e400`, `inf`).
    NonFinite,
    /// Not a number: text such as `n/a`, `PolicySpread`, `all`.
    Text,
}

/// Parses a number as ncu prints it: optional sign, digits with optional comma thousands
/// separators (groups of three), optional fraction and exponent. `1,234.5` is 1234.5;
/// `1.234,5` (a decimal comma) is text. `inf` and `infinity` are [`Number::NonFinite`]; `nan`
/// is text (ncu prints it on the raw page for metrics it could not compute).
pub fn parse_number(text: &str) -> Number {
    let s = text.trim();
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned.eq_ignore_ascii_case("inf") || unsigned.eq_ignore_ascii_case("infinity") {
        return Number::NonFinite;
    }
    let bytes = unsigned.as_bytes();
    let mut i = 0;
    // Integer part, with or without thousands separators.
    let int_start = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let first_group = i - int_start;
    let mut has_commas = false;
    while i < bytes.len() && bytes[i] == b',' {
        if first_group == 0 || first_group > 3 {
            return Number::Text;
        }
        let group = &bytes[i + 1..];
        if group.len() < 3 || !group[..3].iter().all(u8::is_ascii_digit) {
            return Number::Text;
        }
        if group.len() > 3 && group[3].is_ascii_digit() {
            return Number::Text;
        }
        has_commas = true;
        i += 4;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
            frac_digits += 1;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return Number::Text;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return Number::Text;
        }
    }
    if i != bytes.len() {
        return Number::Text;
    }
    let parsed = if has_commas {
        let cleaned: String = s.chars().filter(|&c| c != ',').collect();
        cleaned.parse::<f64>()
    } else {
        s.parse::<f64>()
    };
    match parsed {
        Ok(v) if v.is_finite() => Number::Finite(v),
        Ok(_) => Number::NonFinite,
        Err(_) => Number::Text,
    }
}

/// Exact powers of ten representable in `f64` (10^0 ..= 10^22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `value × 10^exp`, as one correctly rounded multiplication or division by an exact power
/// of ten (so `52.9 us` and `52900 ns` land on the same `f64` whenever the digits agree).
pub fn scale_pow10(value: f64, exp: i32) -> f64 {
    let idx = exp.unsigned_abs() as usize;
    match POW10.get(idx) {
        Some(&p) if exp >= 0 => value * p,
        Some(&p) => value / p,
        None => value * 10f64.powi(exp),
    }
}

/// A unit's conversion to its SI base: multiply by `10^exp10` to get `unit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiScale {
    /// Decimal exponent of the factor.
    pub exp10: i32,
    /// The SI unit the value is in after scaling (`second`, `byte`, `byte/second`, `hz`, or
    /// the printed unit when it has no SI scaling).
    pub unit: String,
}

/// Base units of counted things that may carry a decimal prefix in a rate (`Ginst/s`).
const COUNTED: [&str; 10] = [
    "byte",
    "inst",
    "cycle",
    "warp",
    "thread",
    "sector",
    "request",
    "block",
    "wavefront",
    "flop",
];

/// What a numerator (or a whole unit) measures.
enum Dim {
    /// Seconds, scaled by 10^exp.
    Time(i32),
    /// Hertz, scaled by 10^exp.
    Freq(i32),
    /// A counted base (`byte`, `inst`, ...), scaled by 10^exp.
    Count(i32, &'static str),
}

fn time_exp(unit: &str) -> Option<i32> {
    Some(match unit {
        "second" | "s" | "sec" | "seconds" => 0,
        "msecond" | "ms" => -3,
        "usecond" | "us" | "\u{b5}s" | "\u{3bc}s" => -6,
        "nsecond" | "ns" => -9,
        "psecond" | "ps" => -12,
        _ => return None,
    })
}

fn prefix_exp(prefix: &str) -> Option<i32> {
    Some(match prefix {
        "" => 0,
        "K" | "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        _ => return None,
    })
}

fn classify(unit: &str) -> Option<Dim> {
    if let Some(e) = time_exp(unit) {
        return Some(Dim::Time(e));
    }
    let bytes = unit.as_bytes();
    if bytes.len() >= 2 && bytes[bytes.len() - 2..].eq_ignore_ascii_case(b"hz") {
        let e = match &bytes[..bytes.len() - 2] {
            b"" => 0,
            b"k" | b"K" => 3,
            b"m" | b"M" => 6,
            b"g" | b"G" => 9,
            b"t" | b"T" => 12,
            _ => return None,
        };
        return Some(Dim::Freq(e));
    }
    let singular = unit.strip_suffix('s');
    for base in COUNTED {
        let prefix = unit
            .strip_suffix(base)
            .or_else(|| singular.and_then(|u| u.strip_suffix(base)));
        if let Some(e) = prefix.and_then(prefix_exp) {
            return Some(Dim::Count(e, base));
        }
    }
    None
}

/// The conversion of `unit` to SI, or `None` when the unit has no SI scaling (`%`, `inst`,
/// `register/thread`, the empty unit): then the value stays as printed.
///
/// `us` → 10^-6 `second`; `Gbyte/s` → 10^9 `byte/second`; `Ghz` and `cycle/nsecond` → 10^9
/// `hz`; `Kbyte/block` → 10^3 `byte/block`.
pub fn si_scale(unit: &str) -> Option<SiScale> {
    let unit = unit.trim();
    let (num, den) = match unit.split_once('/') {
        Some((n, d)) => (n.trim(), Some(d.trim())),
        None => (unit, None),
    };
    let dim = classify(num)?;
    let (exp_num, base, counted) = match dim {
        Dim::Time(e) => (e, "second", false),
        Dim::Freq(e) => (e, "hz", false),
        Dim::Count(e, b) => (e, b, true),
    };
    let den_time = den.and_then(time_exp);
    if counted && exp_num == 0 && den_time.is_none() {
        // A count without a prefix (`inst`, `sectors`, `byte/block`): already in its base.
        return None;
    }
    match den {
        None => Some(SiScale {
            exp10: exp_num,
            unit: base.to_string(),
        }),
        Some(d) => match den_time {
            Some(exp_den) => {
                let unit = if base == "cycle" {
                    "hz".to_string()
                } else {
                    format!("{base}/second")
                };
                Some(SiScale {
                    exp10: exp_num - exp_den,
                    unit,
                })
            }
            None => {
                if d.is_empty() {
                    return None;
                }
                Some(SiScale {
                    exp10: exp_num,
                    unit: format!("{base}/{d}"),
                })
            }
        },
    }
}

/// `value` in `unit` converted to its SI base: `(si_value, si_unit)`. Units without SI scaling
/// come back unchanged (`(value, unit)`).
pub fn to_si(value: f64, unit: &str) -> (f64, String) {
    match si_scale(unit) {
        Some(s) => (scale_pow10(value, s.exp10), s.unit),
        None => (value, unit.to_string()),
    }
}

/// Formats a number for narratives: at most two decimals, trailing zeros dropped, comma
/// thousands separators (`1,234.5`, `62.5`, `100`).
pub fn fmt_num(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let rounded = format!("{:.2}", value.abs());
    let (int_part, frac_part) = match rounded.split_once('.') {
        Some((i, f)) => (i.to_string(), f.trim_end_matches('0').to_string()),
        None => (rounded.clone(), String::new()),
    };
    let mut grouped = String::with_capacity(int_part.len() + int_part.len() / 3);
    for (i, c) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let negative = value < 0.0 && (grouped != "0" || !frac_part.is_empty());
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    out.push_str(&grouped);
    if !frac_part.is_empty() {
        out.push('.');
        out.push_str(&frac_part);
    }
    out
}

/// Significant digits a readable quantity keeps (`1.586 GHz`, `52.9 µs`, `32 KiB`).
const READABLE_DIGITS: usize = 4;

/// Formats `value` with at most [`READABLE_DIGITS`] significant digits, trailing zeros of the
/// fraction dropped, comma thousands separators in the integer part.
fn sig(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return fmt_num(value);
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (READABLE_DIGITS as i32 - 1 - magnitude).clamp(0, 12) as usize;
    let text = format!("{:.*}", decimals, value.abs());
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    let (int_part, frac) = match text.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (text, None),
    };
    let mut out = String::new();
    if value < 0.0 && (int_part != "0" || frac.is_some()) {
        out.push('-');
    }
    for (i, c) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(&f);
    }
    out
}

/// Decimal prefixes, largest first, with the scale each stands for.
const PREFIXES: [(&str, f64); 5] = [("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3), ("", 1.0)];

/// Binary prefixes, largest first: sizes in bytes read in KiB, MiB, GiB, as CUDA quotes
/// shared memory and the occupancy calculator counts it.
const BINARY_PREFIXES: [(&str, f64); 5] = [
    ("Ti", 1_099_511_627_776.0),
    ("Gi", 1_073_741_824.0),
    ("Mi", 1_048_576.0),
    ("Ki", 1024.0),
    ("", 1.0),
];

/// The largest of `prefixes` that keeps `|reference|` at least 1 (none for zero), and its
/// scale.
fn prefix_for(reference: f64, prefixes: &[(&'static str, f64)]) -> (&'static str, f64) {
    let a = reference.abs();
    prefixes
        .iter()
        .find(|(_, f)| a >= *f)
        .map_or(("", 1.0), |&(p, f)| (p, f))
}

/// A value in SI units (see [`to_si`]: `second`, `hz`, `byte`, `byte/second`, `byte/block`,
/// `inst/second`, or a unit without SI scaling) in a readable scaled unit: `52.9 µs`,
/// `1.586 GHz`, `32 KiB`, `2.718 TB/s`, `1 KiB/block`, `62.5 %`. Sizes in bytes take binary
/// prefixes (CUDA's KiB: 32,768 B is `32 KiB`); rates keep decimal ones, as Nsight Compute
/// prints them (`GB/s`).
pub fn readable(si_value: f64, si_unit: &str) -> String {
    readable_in_scale_of(si_value, si_unit, si_value)
}

/// [`readable`], with the unit's prefix chosen for `reference` rather than for the value:
/// a difference reads in the unit of the values it is taken between (`+0.05 µs` between
/// `52.9 µs` and `52.95 µs`, `0 µs` between two equal ones, not `0 s`).
pub fn readable_in_scale_of(si_value: f64, si_unit: &str, reference: f64) -> String {
    if !si_value.is_finite() {
        return format!("{si_value} {si_unit}").trim_end().to_string();
    }
    let reference = if reference.is_finite() && reference != 0.0 {
        reference
    } else {
        si_value
    };
    let a = reference.abs();
    match si_unit {
        "second" => {
            let (f, u) = if a >= 1.0 || a == 0.0 {
                (1.0, "s")
            } else if a >= 1e-3 {
                (1e3, "ms")
            } else if a >= 1e-6 {
                (1e6, "\u{b5}s")
            } else {
                (1e9, "ns")
            };
            format!("{} {u}", sig(si_value * f))
        }
        "hz" => {
            let (p, f) = prefix_for(reference, &PREFIXES);
            format!("{} {}Hz", sig(si_value / f), if p == "K" { "k" } else { p })
        }
        _ => {
            let (base, per) = match si_unit.split_once('/') {
                Some((b, d)) => (b, Some(if d == "second" { "s" } else { d })),
                None => (si_unit, None),
            };
            let base_short = match base {
                "byte" => Some("B"),
                b if COUNTED.contains(&b) && per == Some("s") => Some(b),
                _ => None,
            };
            match base_short {
                Some(b) => {
                    // A size (bytes, bytes per block) in binary prefixes; a rate in decimal.
                    let table: &[(&'static str, f64)] = if b == "B" && per != Some("s") {
                        &BINARY_PREFIXES
                    } else {
                        &PREFIXES
                    };
                    let (p, f) = prefix_for(reference, table);
                    let v = sig(si_value / f);
                    match per {
                        Some(d) => format!("{v} {p}{b}/{d}"),
                        None => format!("{v} {p}{b}"),
                    }
                }
                None if si_unit.is_empty() => sig(si_value),
                None => format!("{} {si_unit}", sig(si_value)),
            }
        }
    }
}

/// [`readable`] with an explicit sign, for differences (`+1.2 µs`, `-3 %`).
pub fn readable_signed(si_value: f64, si_unit: &str) -> String {
    readable_signed_in_scale_of(si_value, si_unit, si_value)
}

/// [`readable_in_scale_of`] with an explicit sign: a difference in the unit of the values
/// it is taken between (`+0.05 µs`, `0 µs`).
pub fn readable_signed_in_scale_of(si_value: f64, si_unit: &str, reference: f64) -> String {
    let text = readable_in_scale_of(si_value, si_unit, reference);
    if si_value > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// A size printed in decimal units (`32.77 Kbyte`, `1.02 Kbyte/block`) that lies within its
/// printed digits of a whole number of KiB, as that number of bytes (32,768, 1,024): ncu
/// prints CUDA's binary sizes rounded in decimal units, and the page shows them in KiB
/// without the rounding (`32 KiB`, not `32.002 KiB`). Anything else (rates, values not that
/// close, base-unit prints) comes back as `si_value`.
pub fn size_through_printed_digits(printed: f64, unit: &str, si_value: f64, si_unit: &str) -> f64 {
    let is_size = si_unit == "byte" || (si_unit.starts_with("byte/") && si_unit != "byte/second");
    if !is_size || !si_value.is_finite() {
        return si_value;
    }
    let resolution = scale_pow10(
        printed_resolution(printed),
        si_scale(unit).map_or(0, |s| s.exp10),
    );
    let whole = (si_value / 1024.0).round() * 1024.0;
    if whole != 0.0 && (si_value - whole).abs() <= resolution {
        whole
    } else {
        si_value
    }
}

/// Half a unit in the last decimal a printed number shows, in the printed unit: how far the
/// true value may lie from what was printed (`32.77` → 0.005, `1,024` → 0.5). Read off the
/// shortest decimal form of `value`, so trailing zeros the export printed are not seen (a
/// wider bound, never a narrower one).
pub fn printed_resolution(value: f64) -> f64 {
    if !value.is_finite() {
        return 0.0;
    }
    let text = format!("{}", value.abs());
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    0.5 * scale_pow10(1.0, -decimals)
}

/// Why a value cannot be what its unit says, if so: a percentage above 100 or below 0, a
/// negative count, size, time or rate. `None` for a plausible value.
pub fn implausible(value: f64, unit: &str) -> Option<String> {
    let unit = unit.trim();
    if unit == "%" {
        if value > 100.0 {
            return Some(format!(
                "{} % is above 100 %: not a possible share; check the export",
                fmt_num(value)
            ));
        }
        if value < 0.0 {
            return Some(format!(
                "{} % is negative: not a possible share; check the export",
                fmt_num(value)
            ));
        }
        return None;
    }
    let measured = si_scale(unit).is_some()
        || COUNTED.iter().any(|b| {
            unit == *b || unit.strip_suffix('s') == Some(b) || unit.starts_with(&format!("{b}/"))
        })
        || unit == "register/thread";
    (measured && value < 0.0).then(|| {
        format!(
            "{} {unit} is negative: a count, size, time or rate cannot be; check the export",
            fmt_num(value)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn si(value: f64, unit: &str) -> (f64, String) {
        to_si(value, unit)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
    }

    #[test]
    fn numbers_with_separators_and_text() {
        assert_eq!(parse_number("1,234.5"), Number::Finite(1234.5));
        assert_eq!(parse_number("84,272"), Number::Finite(84272.0));
        assert_eq!(
            parse_number("2,618,621,430.76"),
            Number::Finite(2_618_621_430.76)
        );
        assert_eq!(parse_number("-0.5"), Number::Finite(-0.5));
        assert_eq!(parse_number("1e3"), Number::Finite(1000.0));
        assert_eq!(parse_number(".5"), Number::Finite(0.5));
        assert_eq!(parse_number("1.234,5"), Number::Text);
        assert_eq!(parse_number("1,23"), Number::Text);
        assert_eq!(parse_number("1234,567"), Number::Text);
        assert_eq!(parse_number("n/a"), Number::Text);
        assert_eq!(parse_number("PolicySpread"), Number::Text);
        assert_eq!(parse_number(""), Number::Text);
        assert_eq!(parse_number("-"), Number::Text);
        assert_eq!(parse_number("1e"), Number::Text);
        assert_eq!(parse_number("1e400"), Number::NonFinite);
        assert_eq!(parse_number("-1e400"), Number::NonFinite);
        assert_eq!(parse_number("inf"), Number::NonFinite);
        assert_eq!(parse_number("-Infinity"), Number::NonFinite);
        assert_eq!(parse_number("NaN"), Number::Text);
        assert_eq!(parse_number("nan"), Number::Text);
    }

    #[test]
    fn si_conversions() {
        let (v, u) = si(1.5, "Gbyte/second");
        assert!(close(v, 1.5e9) && u == "byte/second", "{v} {u}");
        let (v, u) = si(1.5, "Gbyte/s");
        assert!(close(v, 1.5e9) && u == "byte/second");
        let (v, u) = si(3.2, "usecond");
        assert!(close(v, 3.2e-6) && u == "second", "{v} {u}");
        let (v, u) = si(3.2, "us");
        assert!(close(v, 3.2e-6) && u == "second");
        let n = match parse_number("1,024") {
            Number::Finite(n) => n,
            other => panic!("{other:?}"),
        };
        let (v, u) = si(n, "Kbyte");
        assert!(close(v, 1.024e6) && u == "byte", "{v} {u}");
        let (v, u) = si(2.62, "Ghz");
        assert!(close(v, 2.62e9) && u == "hz");
        let (v, u) = si(1.59, "cycle/nsecond");
        assert!(close(v, 1.59e9) && u == "hz", "{v} {u}");
        let (v, u) = si(1_590_000_000.0, "cycle/second");
        assert!(close(v, 1.59e9) && u == "hz");
        let (v, u) = si(7.0, "msecond");
        assert!(close(v, 7e-3) && u == "second");
        let (v, u) = si(52900.0, "ns");
        assert!(close(v, 52.9e-6) && u == "second");
        let (v, u) = si(1.02, "Kbyte/block");
        assert!(close(v, 1020.0) && u == "byte/block", "{v} {u}");
        let (v, u) = si(2.5, "Tbyte/s");
        assert!(close(v, 2.5e12) && u == "byte/second");
        let (v, u) = si(3.0, "sector/ns");
        assert!(close(v, 3e9) && u == "sector/second", "{v} {u}");
        assert_eq!(
            si_scale("byte/s").map(|s| s.unit),
            Some("byte/second".into())
        );
        // Unchanged: percentages, cycles, counts, instructions, compound non-SI units.
        for unit in [
            "%",
            "cycle",
            "inst",
            "inst/cycle",
            "warp",
            "register/thread",
            "",
            "SM",
        ] {
            let (v, u) = si(42.5, unit);
            assert_eq!((v, u.as_str()), (42.5, unit), "unit {unit:?}");
        }
        assert_eq!(si(8.0, "block"), (8.0, "block".to_string()));
    }

    #[test]
    fn same_digits_same_f64() {
        // Human vs base units of the same quantity agree exactly when the digits agree.
        assert_eq!(si(52.9, "us").0, si(52900.0, "ns").0);
        assert_eq!(si(229.83, "Gbyte/s").0, si(229_830_000_000.0, "byte/s").0);
        assert_eq!(si(32.77, "Kbyte").0, si(32770.0, "byte").0);
    }

    #[test]
    fn narrative_numbers() {
        assert_eq!(fmt_num(62.5), "62.5");
        assert_eq!(fmt_num(62.50), "62.5");
        assert_eq!(fmt_num(100.0), "100");
        assert_eq!(fmt_num(1234567.891), "1,234,567.89");
        assert_eq!(fmt_num(-0.001), "0");
        assert_eq!(fmt_num(-12.1), "-12.1");
        assert_eq!(fmt_num(0.0), "0");
    }

    #[test]
    fn readable_units_scale_to_a_fitting_prefix() {
        assert_eq!(readable(52.9e-6, "second"), "52.9 \u{b5}s");
        assert_eq!(readable(0.0000012, "second"), "1.2 \u{b5}s");
        assert_eq!(readable(4.2e-9, "second"), "4.2 ns");
        assert_eq!(readable(0.0123, "second"), "12.3 ms");
        assert_eq!(readable(1_586_317_963.55, "hz"), "1.586 GHz");
        assert_eq!(readable(1_590_000_000.0, "hz"), "1.59 GHz");
        assert_eq!(readable(229_826_981_246.22, "byte/second"), "229.8 GB/s");
        assert_eq!(readable(2.72e12, "byte/second"), "2.72 TB/s");
        // Sizes in CUDA's binary units (issue 37: Act IV showed "32.77 KB").
        assert_eq!(readable(32770.0, "byte"), "32 KiB");
        assert_eq!(readable(32768.0, "byte"), "32 KiB");
        assert_eq!(readable(135_170.0, "byte"), "132 KiB");
        assert_eq!(readable(1020.0, "byte/block"), "1,020 B/block");
        assert_eq!(readable(1024.0, "byte/block"), "1 KiB/block");
        assert_eq!(readable(512.0, "byte"), "512 B");
        assert_eq!(readable(3e9, "sector/second"), "3 Gsector/s");
        assert_eq!(readable(62.5, "%"), "62.5 %");
        assert_eq!(readable(1056.0, ""), "1,056");
        assert_eq!(readable(44.0, "register/thread"), "44 register/thread");
        assert_eq!(readable(0.0, "second"), "0 s");
        assert_eq!(readable_signed(-1.5e-6, "second"), "-1.5 \u{b5}s");
        assert_eq!(readable_signed(2e6, "hz"), "+2 MHz");
        // The same quantity printed in base units or scaled reads the same.
        let (a, ua) = to_si(1_586_317_963.55, "hz");
        let (b, ub) = to_si(1.59, "Ghz");
        assert_eq!(readable(a, &ua), "1.586 GHz");
        assert_eq!(readable(b, &ub), "1.59 GHz");
    }

    /// Issue 37: "32.77 KB" is CUDA's 32 KiB printed in decimal units.
    #[test]
    fn sizes_printed_in_decimal_units_read_in_whole_kib() {
        let through = |v: f64, unit: &str| {
            let (si, su) = to_si(v, unit);
            readable(size_through_printed_digits(v, unit, si, &su), &su)
        };
        assert_eq!(through(32.77, "Kbyte"), "32 KiB");
        assert_eq!(through(1.02, "Kbyte/block"), "1 KiB/block");
        assert_eq!(through(135.17, "Kbyte"), "132 KiB");
        assert_eq!(through(233.47, "Kbyte"), "228 KiB");
        // Not within the printed digits of a whole KiB: as printed.
        assert_eq!(through(33.5, "Kbyte"), "32.71 KiB");
        // Rates stay decimal and untouched.
        assert_eq!(through(32.77, "Kbyte/second"), "32.77 KB/s");
        // Base units are exact already.
        assert_eq!(through(1020.0, "byte/block"), "1,020 B/block");
    }

    #[test]
    fn the_printed_digits_bound_the_true_value() {
        assert_eq!(printed_resolution(32.77), 0.005);
        assert_eq!(printed_resolution(1024.0), 0.5);
        assert_eq!(printed_resolution(1.02), 0.005);
        assert_eq!(printed_resolution(1.5), 0.05);
    }

    #[test]
    fn impossible_values_are_named() {
        assert!(implausible(12_345_678.5, "%").is_some_and(|w| w.contains("above 100")));
        assert!(implausible(-1.0, "%").is_some());
        assert!(implausible(100.0, "%").is_none());
        assert!(implausible(62.5, "%").is_none());
        assert!(implausible(-5.0, "inst").is_some());
        assert!(implausible(-5.0, "byte").is_some());
        assert!(implausible(-2.0, "usecond").is_some());
        assert!(implausible(-2.0, "Kbyte/block").is_some());
        assert!(implausible(-2.0, "register/thread").is_some());
        assert!(implausible(5.0, "inst").is_none());
        // A signed quantity without a unit may be negative.
        assert!(implausible(-2.0, "").is_none());
    }
}
