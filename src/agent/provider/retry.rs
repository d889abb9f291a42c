//! When to retry a model request, and how long to wait first.
//!
//! Retried: transport errors, timeouts, HTTP 408, 429 and every 5xx (500,
//! 502, 503, 504, Anthropic's 529 "overloaded"), and malformed 2xx replies.
//! Not retried: the other 4xx (400 bad request, 401/403 key, 404 URL or
//! model) and 3xx (redirects are not followed).
//!
//! The wait before retry `r` (from 0) is `min(initial × 2^r, max)` less a
//! random part of up to a quarter (the OpenAI SDK's jitter), the random
//! part from the system's source (`getrandom`). A server's own wait
//! (`retry-after-ms`, or `Retry-After` in seconds or as an HTTP date) is
//! honoured instead, without jitter, up to [`retry_after_cap`] (`max × 4`,
//! two minutes by default). A server asking for longer (an hour, a day)
//! ends the call at once with an error that says so: waiting the cap
//! before each retry would stall the loop for minutes, silently, and the
//! retries would come too early anyway.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Whether a response with this status is worth another attempt.
pub(super) fn status_is_retried(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// The backoff before retry `retry` (0 for the first retry of a call).
pub(super) fn backoff(initial: Duration, max: Duration, retry: u32) -> Duration {
    let factor = 2u32.saturating_pow(retry.min(31));
    let base = initial.saturating_mul(factor).min(max);
    // Jitter: subtract up to 25 %.
    let mut bytes = [0u8; 8];
    let fraction = if getrandom::fill(&mut bytes).is_ok() {
        (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
    } else {
        0.0
    };
    base.mul_f64(1.0 - 0.25 * fraction)
}

/// The most a server's `Retry-After` is honoured: `backoff_max × 4`.
pub(super) fn retry_after_cap(backoff_max: Duration) -> Duration {
    backoff_max.saturating_mul(4)
}

/// A duration in seconds for messages: whole seconds when it is whole
/// (`120`), else rounded up to a tenth (`0.3`).
pub(super) fn seconds(d: Duration) -> String {
    let tenths = d.as_millis().div_ceil(100);
    match (tenths / 10, tenths % 10) {
        (whole, 0) => format!("{whole}"),
        (whole, tenth) => format!("{whole}.{tenth}"),
    }
}

/// The wait a response asks for: `retry-after-ms` (OpenAI) in
/// milliseconds, else `Retry-After` in seconds (possibly fractional) or as
/// an HTTP date (IMF-fixdate, RFC 9110 §5.6.7). `None` when absent or
/// unreadable.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
        }
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = parse_http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37
/// GMT`); the obsolete HTTP date formats are not read.
fn parse_http_date(text: &str) -> Option<u64> {
    let rest = text.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split_ascii_whitespace().collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !(1..=31).contains(&day)
        || !(0..24).contains(h)
        || !(0..60).contains(m)
        || !(0..61).contains(s)
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s;
    u64::try_from(secs).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_up_to_the_max_with_at_most_a_quarter_off() {
        let (initial, max) = (Duration::from_millis(500), Duration::from_secs(30));
        for (retry, full) in [(0, 500), (1, 1000), (2, 2000), (6, 30_000), (40, 30_000)] {
            let d = backoff(initial, max, retry).as_millis() as u64;
            assert!(d <= full && d >= full * 3 / 4, "retry {retry}: {d} ms");
        }
    }

    #[test]
    fn seconds_for_messages() {
        assert_eq!(seconds(Duration::from_secs(120)), "120");
        assert_eq!(seconds(Duration::from_secs(99_999)), "99999");
        assert_eq!(seconds(Duration::from_millis(250)), "0.3");
        assert_eq!(seconds(Duration::from_millis(4000)), "4");
        assert_eq!(seconds(Duration::ZERO), "0");
    }

    #[test]
    fn http_dates_are_read() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("soon"), None);
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(500)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("-3"));
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    }
}
