//! OTLP/HTTP over plain `http://`: a minimal HTTP/1.1 client for one
//! endpoint, its connection kept for the next request. A request is two
//! `write`s (its head, its body) on a socket with `TCP_NODELAY`: a
//! general client copies a body of a few hundred kilobytes through an
//! 8 KiB buffer, one system call (and, on loopback, one trip through the
//! receiver's TCP stack) per 8 KiB, which cost `lt run` more than
//! encoding its spans did (docs/performance.md, issue 27).
//!
//! ```text
//! post(body) ─▶ the kept connection, else a new one (each address the
//!   authority resolves to, TIMEOUT each) ─▶ POST path HTTP/1.1 + body
//!   ─▶ the status line and headers ─▶ the body read whole (Content-Length,
//!   chunked, or to the end) so the connection can be kept; a kept
//!   connection the receiver closed meanwhile: once more on a new one
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A client for one `http://` endpoint.
pub(super) struct Plain {
    /// `host[:port]` as written (the `Host` header).
    authority: String,
    /// What is connected to: the authority with its port.
    address: String,
    path: String,
    timeout: Duration,
    conn: Option<BufReader<TcpStream>>,
}

impl Plain {
    /// The client of `endpoint` (`http://host[:port][/path]`).
    pub(super) fn new(endpoint: &str, timeout: Duration) -> Plain {
        let rest = endpoint.strip_prefix("http://").unwrap_or(endpoint);
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        // A port is there when the text after the last `:` is past any `]`.
        let has_port = authority
            .rfind(':')
            .is_some_and(|i| !authority[i..].contains(']'));
        let address = if has_port {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        Plain {
            authority: authority.to_string(),
            address,
            path: path.to_string(),
            timeout,
            conn: None,
        }
    }

    fn connect(&self) -> Result<BufReader<TcpStream>, String> {
        let addrs = self
            .address
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.address))?;
        let mut last = format!("{} resolves to no address", self.address);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.timeout) {
                Ok(s) => {
                    let set = s
                        .set_nodelay(true)
                        .and_then(|()| s.set_read_timeout(Some(self.timeout)))
                        .and_then(|()| s.set_write_timeout(Some(self.timeout)));
                    set.map_err(|e| e.to_string())?;
                    return Ok(BufReader::new(s));
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        Err(last)
    }

    /// Posts `body` as `content_type`. Errors: why it was not accepted.
    pub(super) fn post(&mut self, content_type: &str, body: &[u8]) -> Result<(), String> {
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: lt/{}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            self.path,
            self.authority,
            env!("CARGO_PKG_VERSION"),
            body.len()
        );
        let kept = self.conn.take();
        let reused = kept.is_some();
        let mut conn = match kept {
            Some(c) => c,
            None => self.connect()?,
        };
        match exchange(&mut conn, head.as_bytes(), body) {
            Ok(Answer { keep, result }) => {
                if keep {
                    self.conn = Some(conn);
                }
                result
            }
            // The receiver closed a kept connection: once more, anew.
            Err(_) if reused => {
                let mut conn = self.connect()?;
                let Answer { keep, result } =
                    exchange(&mut conn, head.as_bytes(), body).map_err(|e| e.to_string())?;
                if keep {
                    self.conn = Some(conn);
                }
                result
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// What the receiver answered, and whether the connection can be kept.
struct Answer {
    keep: bool,
    result: Result<(), String>,
}

/// Writes one request and reads its answer whole.
fn exchange(conn: &mut BufReader<TcpStream>, head: &[u8], body: &[u8]) -> std::io::Result<Answer> {
    let s = conn.get_mut();
    s.write_all(head)?;
    s.write_all(body)?;
    s.flush()?;
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let mut parts = line.trim_end().splitn(3, ' ');
    let version = parts.next().unwrap_or_default().to_string();
    let code: u16 = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let reason = parts.next().unwrap_or_default().to_string();
    let (mut length, mut chunked) = (None, false);
    let mut keep = version == "HTTP/1.1";
    loop {
        line.clear();
        if conn.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        let Some((k, v)) = h.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("content-length") {
            length = v.parse::<u64>().ok();
        } else if k.eq_ignore_ascii_case("transfer-encoding") {
            chunked = v.to_ascii_lowercase().contains("chunked");
        } else if k.eq_ignore_ascii_case("connection") {
            keep = !v.eq_ignore_ascii_case("close");
        }
    }
    let sink = &mut std::io::sink();
    if code == 204 || code == 304 || (100..200).contains(&code) {
        // No body.
    } else if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = line.trim_end().split(';').next().unwrap_or_default();
            let size = u64::from_str_radix(size.trim(), 16)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
            if size == 0 {
                // Trailers, to the blank line.
                loop {
                    line.clear();
                    if conn.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            std::io::copy(&mut conn.by_ref().take(size), sink)?;
            line.clear();
            conn.read_line(&mut line)?;
        }
    } else if let Some(n) = length {
        std::io::copy(&mut conn.by_ref().take(n), sink)?;
    } else {
        std::io::copy(conn, sink)?;
        keep = false;
    }
    let result = if (200..300).contains(&code) {
        Ok(())
    } else {
        Err(format!("the receiver answered {code} {reason}"))
    };
    Ok(Answer { keep, result })
}

#[cfg(test)]
mod tests {
    use super::Plain;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    /// A receiver answering each request on one connection in turn with
    /// `answers`; the bodies it got.
    fn receiver(answers: Vec<&'static str>) -> (String, std::thread::JoinHandle<Vec<Vec<u8>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("addr"));
        let thread = std::thread::spawn(move || {
            let mut bodies = Vec::new();
            let (conn, _) = listener.accept().expect("accept");
            let mut r = BufReader::new(conn);
            for answer in answers {
                let mut line = String::new();
                r.read_line(&mut line).expect("request line");
                assert_eq!(line, "POST /v1/traces HTTP/1.1\r\n");
                let mut length = 0;
                loop {
                    line.clear();
                    r.read_line(&mut line).expect("header");
                    if line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        length = v.trim().parse().expect("length");
                    }
                }
                let mut body = vec![0; length];
                r.read_exact(&mut body).expect("body");
                bodies.push(body);
                r.get_mut().write_all(answer.as_bytes()).expect("answer");
            }
            bodies
        });
        (url, thread)
    }

    #[test]
    fn requests_share_one_connection_whatever_the_answers_framing() {
        let (url, thread) = receiver(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad",
        ]);
        let mut c = Plain::new(&url, Duration::from_secs(5));
        let big = vec![7u8; 300_000];
        assert_eq!(c.post("application/x-protobuf", b"one"), Ok(()));
        assert_eq!(c.post("application/x-protobuf", &big), Ok(()));
        assert_eq!(
            c.post("application/x-protobuf", b"three"),
            Err("the receiver answered 400 Bad Request".to_string())
        );
        let bodies = thread.join().expect("receiver");
        assert_eq!(bodies, [b"one".to_vec(), big, b"three".to_vec()]);
    }

    #[test]
    fn an_endpoint_without_a_port_or_a_path_gets_the_defaults() {
        let c = Plain::new("http://example.com", Duration::from_secs(1));
        assert_eq!(
            (c.address.as_str(), c.path.as_str()),
            ("example.com:80", "/")
        );
        let c = Plain::new("http://[::1]:4318/v1/traces", Duration::from_secs(1));
        assert_eq!(c.address, "[::1]:4318");
        let c = Plain::new("http://[::1]/x", Duration::from_secs(1));
        assert_eq!(
            (c.address.as_str(), c.authority.as_str()),
            ("[::1]:80", "[::1]")
        );
    }
}
