//! A program started under a session: the runtime is told to connect to a
//! socket of ours and wait (`DOTNET_DiagnosticPorts=PATH,connect,suspend`,
//! .NET 5+); on its first connection the session is started, on its next
//! the runtime is resumed, so the trace holds the program's first
//! allocation.
//!
//! The socket is in a directory only this user can enter, and a
//! connection counts only if the peer is the started program itself.
//! Once the program runs, the port goes on serving its process tree
//! ([`crate::port`]) until the last process that inherited its address
//! has ended.

use crate::port::{Held, Port};
use crate::protocol::{self, Advertise, Collect, Provider};
use crate::session::{exchange, Session, BUFFER_MB};
use crate::tree::{self, Tree};
use crate::Error;
use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A program running under a session.
pub struct Launched {
    /// The program's process id.
    pub pid: u32,
    /// The session.
    pub session: Session,
    /// The launch port, served for the program's process tree until it
    /// has ended; the program's exit status comes from its tree
    /// ([`Port::tree`]).
    pub port: Port,
}

/// How long a program has to connect.
const CONNECT_WAIT: Duration = Duration::from_secs(30);

/// Starts `cmd` suspended under a session with `providers`; `dir` is a
/// private directory for the socket (it must exist, owned by this user,
/// mode 0700). This process becomes the reaper of the program's orphaned
/// descendants, and its children are reaped by the program's [`Tree`]
/// from then on.
pub fn launch(cmd: &mut Command, providers: &[Provider], dir: &Path) -> Result<Launched, Error> {
    tree::adopt_orphans().map_err(|e| Error::Launch(format!("cannot become the reaper of the program's processes: {e}")))?;
    let path = dir.join("diagnostics.sock");
    let listener = UnixListener::bind(&path).map_err(|e| Error::io("cannot listen on", &path, e))?;
    listener.set_nonblocking(true).map_err(|e| Error::io("cannot use", &path, e))?;
    let port = format!("{},connect,suspend", path.display());
    cmd.env("DOTNET_DiagnosticPorts", &port);
    let mut child = cmd.spawn().map_err(|e| Error::Launch(format!("cannot start the program: {e}")))?;
    let pid = child.id();
    let held = Arc::new(Held::default());
    let result =
        (|| {
            let (first, said) = accept(&listener, &mut child, pid)?;
            let request = protocol::collect_request(Collect::V2 { rundown: true }, BUFFER_MB, providers)
                .map_err(|what| Error::BadReply { pid, command: "CollectTracing", what })?;
            let session = Session::over(pid, first, &request, held.clone())?;
            let (mut second, _) = accept(&listener, &mut child, pid)?;
            match exchange(&mut second, &protocol::resume_request(), pid, "ResumeRuntime")? {
                Ok(_) => Ok((session, said)),
                Err(hr) => Err(Error::Refused { pid, command: "ResumeRuntime", hresult: hr, message: protocol::describe(hr).into() }),
            }
        })();
    match result {
        Ok((session, said)) => {
            // The socket stays: the program connects again after each
            // command, and every process it starts inherits the address.
            drop(child);
            let tree = Arc::new(Tree::watch(pid));
            let port = Port::serve(listener, dir.to_path_buf(), tree, said, held);
            Ok(Launched { pid, session, port })
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// The program's next connection, greeted and checked. Connections of
/// other processes are closed without a byte.
fn accept(listener: &UnixListener, child: &mut Child, pid: u32) -> Result<(UnixStream, Advertise), Error> {
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_nonblocking(false);
                let peer =
                    clrprof_control::trust::peer_cred(&s).map_err(|e| Error::io("cannot check the peer of", "the diagnostics port", e))?;
                if peer.pid != pid {
                    // Someone else of this user: not the program (the
                    // wait for the program still ends in time).
                    if start.elapsed() > CONNECT_WAIT {
                        return Err(Error::Launch(format!("the program did not connect to clrprof within {} s", CONNECT_WAIT.as_secs())));
                    }
                    continue;
                }
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut hello = [0u8; protocol::ADVERTISE_LEN];
                s.read_exact(&mut hello).map_err(|e| Error::io("cannot read the greeting of the program on", "the diagnostics port", e))?;
                let said =
                    protocol::parse_advertise(&hello).map_err(|what| Error::BadReply { pid, command: "the diagnostics port", what })?;
                if said.pid != u64::from(pid) {
                    return Err(Error::BadReply {
                        pid,
                        command: "the diagnostics port",
                        what: format!("a greeting naming process {}", said.pid),
                    });
                }
                return Ok((s, said));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(Error::Launch(format!(
                        "the program ended ({status}) without connecting to clrprof: it is not a .NET 5 or later program (CoreCLR 3.x and programs that are not .NET do not know DOTNET_DiagnosticPorts)"
                    )));
                }
                if start.elapsed() > CONNECT_WAIT {
                    return Err(Error::Launch(format!(
                        "the program did not connect to clrprof within {} s: it is not a .NET 5 or later program, or DOTNET_DiagnosticPorts was overridden",
                        CONNECT_WAIT.as_secs()
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(Error::io("cannot accept on", "the diagnostics port", e)),
        }
    }
}
