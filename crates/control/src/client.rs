//! A connection to an agent's control socket.

use crate::protocol::{parse_reply, request_line, Reply, Request, MAX_LINE};
use crate::{paths, trust, Error};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An open control connection.
pub struct Client {
    pid: u32,
    path: PathBuf,
    reader: BufReader<UnixStream>,
}

impl Client {
    /// Connects to the agent in `pid`, if it has one: `Ok(None)` when the
    /// process has no control socket (no agent, or one that has gone).
    pub fn connect(pid: u32) -> Result<Option<Client>, Error> {
        let owner = crate::process::find(pid)?.uid;
        Self::connect_at(pid, owner, &paths::control_socket_for(pid))
    }

    /// Connects to the socket at `path` of process `pid`, run by user
    /// `owner`. The socket must be `owner`'s and be answered by `pid`
    /// itself ([`crate::trust`]); anything else is refused with
    /// [`Error::Untrusted`] before a request is written.
    pub fn connect_at(pid: u32, owner: u32, path: &Path) -> Result<Option<Client>, Error> {
        match trust::connect(path, pid, owner) {
            Ok(s) => Ok(Some(Client { pid, path: path.to_path_buf(), reader: BufReader::new(s) })),
            Err(trust::ConnectError::Refused(e)) => Err(e),
            Err(trust::ConnectError::Absent(e)) => match e.kind() {
                // No socket, or a stale one left by a process that ended.
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => Ok(None),
                _ => Err(Error::io(format!("cannot connect to {}", path.display()), path, e)),
            },
        }
    }

    /// Waits until the agent in `pid` opens its socket (after an attach).
    pub fn wait_for(pid: u32, timeout: Duration) -> Result<Client, Error> {
        let start = std::time::Instant::now();
        loop {
            if let Some(c) = Self::connect(pid)? {
                return Ok(c);
            }
            if start.elapsed() > timeout {
                return Err(Error::Timeout(format!(
                    "the agent in process {pid} did not open {} within {} s",
                    paths::control_socket_for(pid).display(),
                    timeout.as_secs()
                )));
            }
            if std::fs::metadata(format!("/proc/{pid}")).is_err() {
                return Err(Error::NoSuchProcess(pid));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends a request and waits up to `timeout` for its reply; a reply
    /// with `ok: false` becomes [`Error::Agent`].
    pub fn request(&mut self, req: &Request, timeout: Duration) -> Result<Reply, Error> {
        let io = |what: &str, e| Error::io(format!("{what} {}", self.path.display()), &self.path, e);
        let stream = self.reader.get_mut();
        stream.set_write_timeout(Some(timeout)).map_err(|e| io("cannot set a timeout on", e))?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| io("cannot set a timeout on", e))?;
        stream.write_all(&request_line(req)).map_err(|e| io("cannot write to", e))?;
        let mut line = Vec::new();
        let n = (&mut self.reader).take(MAX_LINE as u64).read_until(b'\n', &mut line).map_err(|e| {
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                Error::Timeout(format!("no reply from the agent in process {} within {} s", self.pid, timeout.as_secs()))
            } else {
                io("cannot read from", e)
            }
        })?;
        if n == 0 {
            return Err(Error::BadReply { peer: self.path.display().to_string(), what: "the agent closed the connection without a reply".into() });
        }
        let reply: Reply =
            parse_reply(&line).map_err(|what| Error::BadReply { peer: self.path.display().to_string(), what })?;
        if !reply.ok {
            return Err(Error::Agent { pid: self.pid, message: reply.error.unwrap_or_else(|| "failed (no reason given)".into()) });
        }
        Ok(reply)
    }
}
