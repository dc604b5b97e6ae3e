//! Ending the log on every exit path the process can take.
//!
//! The runtime calls the profiler's `Shutdown` when `Main` returns and at
//! `Environment.Exit`, and on a SIGTERM that its own handler turns into
//! an orderly shutdown; it does not on an unhandled exception (it prints
//! the exception and calls `abort()`), on SIGINT or SIGQUIT (its handler
//! restores the default action and sends the signal again), or on
//! `exit()` called from native code. So the agent ends its log
//! ([`Agent::end`]) from whichever of these runs first:
//!
//! ```text
//!  Shutdown callback ------------------------------> Agent::end("Shutdown")
//!  exit() (any thread) -> atexit handler ----------> Agent::end("exit")
//!  fatal signal -> handler --(byte on a pipe)--> clrprof-exit thread -> Agent::end("signal N")
//!                   |  waits (poll) for its byte back, bounded, then
//!                   +- chains to the handler it replaced
//! ```
//!
//! The signal handler does only what is async-signal-safe: atomics,
//! `write`, `poll`, `sigaction`, `sigpending`, `raise`. The log is ended
//! by a thread of the agent's own (`clrprof-exit`), which takes locks and
//! allocates as any drain does, while the signalled thread waits in the
//! handler. That thread may have been interrupted inside a drain, holding
//! the `out` lock: the handler then puts the signal off and returns; the
//! thread sends it to itself again as it lets go of the lock
//! (`after_out_released`). The agent's own threads block the signals
//! (they are started with them blocked), so a signal sent to the process
//! lands on one of the program's threads.
//!
//! Whether a signal ends the process depends on the handler this one
//! replaced. SIGABRT always does. An ignored signal does nothing; one whose
//! action was the default ends the log, then the process. SIGTERM goes to
//! the runtime's handler first, which shuts down in order (`Shutdown`,
//! then `exit()`, each of which ends the log), so what the program's
//! `ProcessExit` handlers allocate is recorded; the log is ended here only
//! if that handler sent the signal again with the default action. The
//! runtime's SIGINT, SIGQUIT (and a SIGHUP) handlers restore the default
//! action and send the signal again, which kills the process at once on
//! whichever thread takes it: the log is ended before they run. A program
//! that handles such a signal itself (`Console.CancelKeyPress`,
//! `PosixSignalRegistration`) has its handler installed above the agent's
//! (the runtime installs it when the program first asks, after the agent
//! loaded), which passes the signal on only when the program lets it end
//! the process.
//!
//! An unhandled exception is found earlier than its `abort()`: .NET 8
//! puts back the default SIGABRT action just before it aborts, so no
//! handler of the agent's runs then. The runtime searches the thread's
//! frames for a catcher first (the profiler sees each frame searched):
//! with shadow stacks, when the search leaves the thread's outermost
//! managed frame without finding one, nothing can catch the exception
//! (one that leaves managed code at a thread's start or through a reverse
//! P/Invoke ends the process), and the thread ends the log there, from
//! the search callback.
//!
//! Threads still running while the log ends (`exit()` does not stop
//! them) go on recording into their buffers; the last drain takes each
//! thread's records up to where it had got, and what comes after the end
//! is dropped, so the log ends in whole lines and its end line.
//! SIGKILL runs nothing: the log is cut (a collector keeps what it
//! received and marks the session `cut`; a file lacks the end line).

use crate::agent::Agent;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The signals after which the log is ended when they end the process.
const SIGNALS: [libc::c_int; 5] = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP, libc::SIGABRT];
/// The signals the agent's own threads block (SIGABRT stays deliverable:
/// `abort()` unblocks it anyway).
const BLOCKED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP];

/// The handlers replaced, per signal number (written once, before the
/// handlers are installed).
static mut PREVIOUS: [Option<libc::sigaction>; 32] = [None; 32];
/// Write end of the pipe the handler wakes the exit thread through, and
/// the read end of the one it waits on (-1 until installed).
static WAKE: AtomicI32 = AtomicI32::new(-1);
static DONE: AtomicI32 = AtomicI32::new(-1);
/// Set by the first signal that ends the log.
static REQUESTED: AtomicBool = AtomicBool::new(false);
/// A signal put off because the thread held the `out` lock (0: none).
static DEFERRED: AtomicI32 = AtomicI32::new(0);
/// How long the handler waits for the log to end, in milliseconds.
static WAIT_MS: AtomicI32 = AtomicI32::new(10_000);

/// The calling thread, as `pthread_self` (no system call).
#[inline]
pub(crate) fn this_thread() -> usize {
    // Safety: no preconditions.
    unsafe { libc::pthread_self() as usize }
}

/// The signals the agent's threads block, as a set.
fn blocked_set() -> libc::sigset_t {
    // Safety: sigemptyset initialises the set; sigaddset adds valid signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in BLOCKED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// While alive, the calling thread blocks the exit signals, so that
/// threads it starts are born blocking them; the old mask comes back on
/// drop.
pub struct Blocked(libc::sigset_t);

impl Blocked {
    /// Blocks the signals for the calling thread.
    pub fn now() -> Blocked {
        let set = blocked_set();
        // Safety: valid sets; `old` is written by pthread_sigmask.
        unsafe {
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked(old)
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // Safety: restores the mask saved in `now`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// Installs the exit paths for `agent`: the `atexit` handler, the
/// `clrprof-exit` thread and the signal handlers. Call with the signals
/// blocked ([`Blocked`]), so the exit thread is born blocking them.
pub fn install(agent: &'static Agent) -> Result<(), String> {
    let wait = agent.config.stream.as_ref().map_or(0, |s| s.linger_ms).saturating_add(5_000).min(60_000);
    WAIT_MS.store(wait as i32, Ordering::Relaxed);
    let mut wake = [0 as libc::c_int; 2];
    let mut done = [0 as libc::c_int; 2];
    // Safety: pipe2 writes two descriptors into each array.
    let ok = unsafe { libc::pipe2(wake.as_mut_ptr(), libc::O_CLOEXEC) == 0 && libc::pipe2(done.as_mut_ptr(), libc::O_CLOEXEC) == 0 };
    if !ok {
        return Err(format!("cannot make the exit pipes: {}", std::io::Error::last_os_error()));
    }
    let (wake_read, done_write) = (wake[0], done[1]);
    std::thread::Builder::new()
        .name("clrprof-exit".into())
        .spawn(move || exit_thread(agent, wake_read, done_write))
        .map_err(|e| format!("cannot start the exit thread: {e}"))?;
    WAKE.store(wake[1], Ordering::Release);
    DONE.store(done[0], Ordering::Release);
    // Safety: `at_exit` is an extern "C" fn with no arguments.
    if unsafe { libc::atexit(at_exit) } != 0 {
        eprintln!("clrprof agent: atexit failed: a log may be cut when native code calls exit()");
    }
    for sig in SIGNALS {
        // Safety: the handler is async-signal-safe (see the module docs);
        // PREVIOUS is written before the handler can run for `sig`, and
        // only read afterwards.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let slot = std::ptr::addr_of_mut!(PREVIOUS);
            (*slot)[sig as usize] = Some(old);
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// Waits for the handler's byte, ends the log, answers with a byte.
fn exit_thread(agent: &'static Agent, wake: libc::c_int, done: libc::c_int) {
    let mut sig = [0u8; 1];
    loop {
        // Safety: reads one byte into `sig`.
        let n = unsafe { libc::read(wake, sig.as_mut_ptr().cast(), 1) };
        if n == 1 {
            break;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
    let how = match libc::c_int::from(sig[0]) {
        libc::SIGABRT => "SIGABRT: abort(), an unhandled exception".to_string(),
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        libc::SIGQUIT => "SIGQUIT".to_string(),
        libc::SIGHUP => "SIGHUP".to_string(),
        n => format!("signal {n}"),
    };
    crate::guard((), || agent.end(&how));
    // Safety: writes one byte; the handler polls the other end.
    unsafe { libc::write(done, [1u8].as_ptr().cast(), 1) };
}

extern "C" fn at_exit() {
    crate::guard((), || {
        if let Some(a) = crate::agent::get() {
            a.end("exit");
        }
    })
}

/// Asks the exit thread to end the log and waits (bounded) until it has.
fn end_from_handler(sig: libc::c_int) {
    if !REQUESTED.swap(true, Ordering::AcqRel) {
        let fd = WAKE.load(Ordering::Acquire);
        if fd >= 0 {
            let b = [sig as u8];
            // Safety: write(2) is async-signal-safe.
            unsafe { libc::write(fd, b.as_ptr().cast(), 1) };
        }
    }
    let fd = DONE.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    let mut left = WAIT_MS.load(Ordering::Relaxed);
    // The byte is never read: once written, every later wait returns at once.
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    while left > 0 {
        // Safety: poll(2) is async-signal-safe; one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, 100) };
        if r > 0 || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
            return;
        }
        left -= 100;
    }
}

/// True when `sig` is pending and its action is the default: the
/// handler that ran wants the process to die of it.
fn dying_of(sig: libc::c_int) -> bool {
    // Safety: sigpending, sigismember and sigaction are async-signal-safe.
    unsafe {
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pending);
        if libc::sigpending(&mut pending) != 0 || libc::sigismember(&pending, sig) != 1 {
            return false;
        }
        let mut now: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut now) == 0 && now.sa_sigaction == libc::SIG_DFL
    }
}

/// Calls the handler `sig` had before the agent's.
///
/// # Safety
///
/// Called from the signal handler with its own arguments.
unsafe fn chain(prev: &libc::sigaction, sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        return;
    }
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // Safety: a handler installed with SA_SIGINFO takes three arguments.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // Safety: a plain handler takes the signal number.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// Restores the default action of `sig` and sends it to this thread
/// again: it is delivered (and ends the process) when the handler
/// returns.
fn die_of(sig: libc::c_int) {
    // Safety: sigaction and raise are async-signal-safe.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut());
        libc::raise(sig);
    }
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // Safety: errno is thread-local; saved and restored around the handler.
    let errno = unsafe { *libc::__errno_location() };
    handle(sig, info, ctx);
    // Safety: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn handle(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let agent = crate::agent::get();
    if agent.is_some_and(|a| a.holds_out()) {
        // Interrupted inside a drain: ending the log now would wait for
        // this very thread. Sent again when it lets go of the lock.
        DEFERRED.store(sig, Ordering::Release);
        return;
    }
    // Safety: PREVIOUS is only read once the handlers are installed.
    let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS)).get(sig as usize).copied().flatten() };
    let Some(prev) = prev else { return };
    if sig == libc::SIGABRT {
        // abort() ends the process whatever the handler does.
        end_from_handler(sig);
        // Safety: the arguments are the handler's own.
        unsafe { chain(&prev, sig, info, ctx) };
        if prev.sa_sigaction == libc::SIG_DFL {
            die_of(sig);
        }
        return;
    }
    if prev.sa_sigaction == libc::SIG_IGN {
        return;
    }
    if prev.sa_sigaction == libc::SIG_DFL {
        end_from_handler(sig);
        die_of(sig);
        return;
    }
    if sig == libc::SIGTERM {
        // The runtime's handler asks for an orderly shutdown (`Shutdown`,
        // then `exit()`: both end the log), and the program's
        // `ProcessExit` handlers run first and are recorded.
        // Safety: the arguments are the handler's own.
        unsafe { chain(&prev, sig, info, ctx) };
        if dying_of(sig) {
            end_from_handler(sig);
        }
        return;
    }
    // SIGINT, SIGQUIT, SIGHUP: the runtime's handler restores the default
    // action and sends the signal again, and the process dies at once (on
    // whichever thread takes it), so the log ends first. A program that
    // handles the signal (`Console.CancelKeyPress`,
    // `PosixSignalRegistration`) has its handler installed above this one,
    // which runs only once the program let the signal through.
    end_from_handler(sig);
    // Safety: the arguments are the handler's own.
    unsafe { chain(&prev, sig, info, ctx) };
}

/// Called by a thread as it lets go of the `out` lock: a signal put off
/// while it held it is sent again, to this thread.
#[inline]
pub(crate) fn after_out_released() {
    if DEFERRED.load(Ordering::Relaxed) != 0 {
        let sig = DEFERRED.swap(0, Ordering::AcqRel);
        if sig != 0 {
            // Safety: raise has no preconditions.
            unsafe { libc::raise(sig) };
        }
    }
}
