//! clientConnection `qps` / `burst`: a token bucket in front of every
//! request the client sends (lists and watch starts alike), as client-go's
//! rate limiter does. A request that finds the bucket empty waits for the
//! next token; it is never refused.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Requests per second and bucket size, as client-go resolves them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// Tokens added per second.
    pub(crate) qps: f64,
    /// Bucket size: requests that may go at once after a quiet period.
    pub(crate) burst: u32,
}

/// client-go's defaults for a zero `qps` / `burst` (rest.DefaultQPS,
/// rest.DefaultBurst).
const DEFAULT_QPS: f32 = 5.0;
const DEFAULT_BURST: u32 = 10;

impl Limits {
    /// client-go's rules: a negative `qps` turns limiting off; 0 means the
    /// defaults (5 qps, burst 10); a positive `qps` needs a positive
    /// `burst` (`Err(())` otherwise).
    pub(crate) fn resolve(qps: f32, burst: u32) -> Result<Option<Limits>, ()> {
        if qps < 0.0 || qps.is_nan() {
            return Ok(None);
        }
        let (qps, burst) = if qps == 0.0 {
            (DEFAULT_QPS, if burst == 0 { DEFAULT_BURST } else { burst })
        } else if burst == 0 {
            return Err(());
        } else {
            (qps, burst)
        };
        Ok(Some(Limits {
            qps: f64::from(qps),
            burst,
        }))
    }
}

/// The bucket: starts full.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    limits: Limits,
    tokens: f64,
    refilled: Instant,
}

impl TokenBucket {
    pub(crate) fn new(limits: Limits, now: Instant) -> Self {
        Self {
            limits,
            tokens: f64::from(limits.burst),
            refilled: now,
        }
    }

    /// Takes one token, or says how long until one is there.
    pub(crate) fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.limits.qps).min(f64::from(self.limits.burst));
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - self.tokens) / self.limits.qps,
            ))
        }
    }
}

/// A tower layer putting a [`TokenBucket`] in front of a service.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateLimitLayer {
    pub(crate) limits: Limits,
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited {
            inner,
            bucket: TokenBucket::new(self.limits, Instant::now()),
            waiting: None,
            permitted: false,
        }
    }
}

/// A service that is ready only when the bucket has a token. (kube's
/// client puts a `Buffer` in front of it, so all clones of the client
/// share this one bucket.)
pub(crate) struct RateLimited<S> {
    inner: S,
    bucket: TokenBucket,
    waiting: Option<Pin<Box<Sleep>>>,
    permitted: bool,
}

impl<S, R> tower::Service<R> for RateLimited<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        while !self.permitted {
            if let Some(sleep) = self.waiting.as_mut() {
                ready!(sleep.as_mut().poll(cx));
                self.waiting = None;
            }
            match self.bucket.try_take(Instant::now()) {
                Ok(()) => self.permitted = true,
                Err(wait) => self.waiting = Some(Box::pin(tokio::time::sleep(wait))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.permitted = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_client_go() {
        assert_eq!(Limits::resolve(-1.0, 0), Ok(None));
        assert_eq!(
            Limits::resolve(0.0, 0),
            Ok(Some(Limits {
                qps: 5.0,
                burst: 10
            }))
        );
        assert_eq!(
            Limits::resolve(0.0, 3),
            Ok(Some(Limits { qps: 5.0, burst: 3 }))
        );
        assert_eq!(
            Limits::resolve(50.0, 100),
            Ok(Some(Limits {
                qps: 50.0,
                burst: 100
            }))
        );
        assert_eq!(Limits::resolve(5.0, 0), Err(()));
    }

    #[test]
    fn burst_then_qps() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(Limits { qps: 2.0, burst: 3 }, start);
        for _ in 0..3 {
            assert_eq!(bucket.try_take(start), Ok(()));
        }
        let wait = bucket.try_take(start).unwrap_err();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-9, "{wait:?}");
        let later = start + Duration::from_millis(500);
        assert_eq!(bucket.try_take(later), Ok(()));
        assert!(bucket.try_take(later).is_err());
        // A long pause refills only up to the burst.
        let much_later = later + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(bucket.try_take(much_later), Ok(()));
        }
        assert!(bucket.try_take(much_later).is_err());
    }

    /// Answers every request at once with the request.
    struct Echo;

    impl tower::Service<u32> for Echo {
        type Response = u32;
        type Error = ();
        type Future = std::future::Ready<Result<u32, ()>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, n: u32) -> Self::Future {
            std::future::ready(Ok(n))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn service_waits_for_tokens() {
        use tower::{Layer, Service};
        let layer = RateLimitLayer {
            limits: Limits {
                qps: 10.0,
                burst: 2,
            },
        };
        let mut svc = layer.layer(Echo);
        let start = Instant::now();
        for n in 0..6 {
            std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
            assert_eq!(svc.call(n).await, Ok(n));
        }
        // 2 at once, then 4 more at 10 per second.
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(400) && elapsed < Duration::from_millis(450),
            "{elapsed:?}"
        );
    }
}
