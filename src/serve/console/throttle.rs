//! The login's rate limit: each client address may fail `/login`
//! [`MAX_FAILURES`] times within [`WINDOW`]; past that, every login from
//! it (a right key too) is refused with 429 and `Retry-After` until the
//! window that began at its first failure is over. A successful login
//! forgets the address's failures. The address is the TCP peer's: behind
//! a proxy every browser shares the proxy's (the server trusts no
//! `X-Forwarded-For`). At most [`MAX_ADDRESSES`] addresses are kept; past
//! it the stalest goes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed logins an address may make within [`WINDOW`].
pub const MAX_FAILURES: u32 = 5;

/// The window failures are counted in, from an address's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Addresses kept at most.
const MAX_ADDRESSES: usize = 10_000;

/// One address's failures: how many since when.
struct Failures {
    count: u32,
    since: Instant,
}

/// Failed logins by client address (`None`: the peer is unknown).
pub struct Throttle {
    map: Mutex<HashMap<Option<IpAddr>, Failures>>,
    max: u32,
    window: Duration,
}

impl Throttle {
    /// A throttle allowing `max` failures per `window`.
    pub fn new(max: u32, window: Duration) -> Throttle {
        Throttle {
            map: Mutex::new(HashMap::new()),
            max,
            window,
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, Failures>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `Err(wait)` when `addr` may not try now: how long until it may.
    pub fn check(&self, addr: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let mut map = self.map();
        let Some(f) = map.get(&addr) else {
            return Ok(());
        };
        let end = f.since + self.window;
        if now >= end {
            map.remove(&addr);
            return Ok(());
        }
        if f.count >= self.max {
            return Err(end - now);
        }
        Ok(())
    }

    /// Counts a failed login of `addr`.
    pub fn failed(&self, addr: Option<IpAddr>, now: Instant) {
        let mut map = self.map();
        if map.len() >= MAX_ADDRESSES && !map.contains_key(&addr) {
            let window = self.window;
            map.retain(|_, f| f.since + window > now);
            if map.len() >= MAX_ADDRESSES {
                if let Some(stalest) = map.iter().min_by_key(|(_, f)| f.since).map(|(k, _)| *k) {
                    map.remove(&stalest);
                }
            }
        }
        let f = map.entry(addr).or_insert(Failures {
            count: 0,
            since: now,
        });
        if f.since + self.window <= now {
            *f = Failures {
                count: 0,
                since: now,
            };
        }
        f.count += 1;
    }

    /// Forgets `addr`'s failures (it logged in).
    pub fn succeeded(&self, addr: Option<IpAddr>) {
        self.map().remove(&addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_refused_after_its_failures_until_the_window_ends() {
        let t = Throttle::new(3, Duration::from_secs(60));
        let a: Option<IpAddr> = "10.0.0.1".parse().ok();
        let b: Option<IpAddr> = "10.0.0.2".parse().ok();
        let t0 = Instant::now();
        for i in 0..3 {
            assert_eq!(t.check(a, t0), Ok(()), "failure {i} is allowed");
            t.failed(a, t0);
        }
        let at = t0 + Duration::from_secs(20);
        assert_eq!(t.check(a, at), Err(Duration::from_secs(40)));
        assert_eq!(t.check(b, at), Ok(()), "another address is not refused");
        assert_eq!(t.check(a, t0 + Duration::from_secs(60)), Ok(()));
        // A fresh window counts from one again.
        t.failed(a, t0 + Duration::from_secs(61));
        assert_eq!(t.check(a, t0 + Duration::from_secs(62)), Ok(()));
        for _ in 0..3 {
            t.failed(b, at);
        }
        assert!(t.check(b, at).is_err());
        t.succeeded(b);
        assert_eq!(t.check(b, at), Ok(()), "a login forgets the failures");
    }
}
