//! Enter/leave hooks (`SetEnterLeaveFunctionHooks3`) keeping a shadow stack
//! per thread.
//!
//! On x86-64 Linux the JIT calls the hooks directly with its own
//! convention: Enter gets the FunctionID in R14 while the argument
//! registers are live, Leave and Tailcall get it in RDI while the return
//! registers are live. The full stubs below save every register a C
//! function may clobber (integer and the eight SSE argument/return
//! registers), align the stack and call the Rust side.
//!
//! Most hooks need none of that: without call logging, `enter_fast` and
//! `leave_fast` push and pop the shadow stack themselves, saving only the
//! two registers they use. They find the thread's state through the
//! agent's initial-exec thread-local slot (one `fs`-relative load; see
//! `thread::slot`) and its shadow stack at offset 0 (`ptr`, `len`, `cap`;
//! the layout is asserted in `thread`). A thread without a state yet, or a
//! full shadow stack, takes the full stub.

use crate::thread::{self, Frame, NO_NODE};

/// Pushes a frame (and logs a call when call logging is on).
extern "C" fn enter(func: usize) {
    crate::guard((), || {
        let Some(ts) = thread::current() else { return };
        ts.with_local(|l| l.frames.push(Frame { func, node: NO_NODE }));
        if let Some(agent) = crate::agent::get() {
            if agent.config.calls && agent.calls_on.load(std::sync::atomic::Ordering::Relaxed) {
                agent.called(ts);
            }
        }
    })
}

/// Pops a frame.
extern "C" fn leave(_func: usize) {
    crate::guard((), || {
        if let Some(ts) = thread::current() {
            ts.with_local(|l| {
                l.frames.pop();
            });
        }
    })
}

/// An exception unwinds out of `func`: remember it.
pub fn unwind_enter(func: usize) {
    if let Some(ts) = thread::current() {
        ts.with_local(|l| l.unwinding.push(func));
    }
}

/// An exception was thrown: its search for a catcher starts at the top
/// of the shadow stack.
pub fn search_start() {
    if let Some(ts) = thread::current() {
        ts.with_local(|l| l.search = Some((l.frames.len(), false)));
    }
}

/// The search reached `func`: the frame of it nearest the top, below the
/// frames searched so far (a function without hooks has no frame).
pub fn search_enter(func: usize) {
    if let Some(ts) = thread::current() {
        ts.with_local(|l| {
            if let Some((below, _)) = &mut l.search {
                let frames = l.frames.as_slice();
                if let Some(i) = frames[..(*below).min(frames.len())].iter().rposition(|f| f.func == func) {
                    *below = i;
                }
            }
        });
    }
}

/// The search found a catcher.
pub fn search_caught() {
    if let Some(ts) = thread::current() {
        ts.with_local(|l| {
            if let Some((_, caught)) = &mut l.search {
                *caught = true;
            }
        });
    }
}

/// The search left a function. True when it was the thread's outermost
/// frame and no catcher was found: the exception is unhandled (the
/// runtime reports it and aborts, without a second pass).
pub fn search_leave() -> bool {
    let Some(ts) = thread::current() else { return false };
    ts.with_local(|l| match l.search {
        Some((0, false)) if !l.frames.as_slice().is_empty() => {
            l.search = None;
            true
        }
        _ => false,
    })
}

/// The unwind left the function: pop its frame if it is on top (functions
/// without hooks never pushed one).
pub fn unwind_leave() {
    if let Some(ts) = thread::current() {
        ts.with_local(|l| {
            let func = l.unwinding.pop();
            if func.is_some() && l.frames.last().map(|f| f.func) == func {
                l.frames.pop();
            }
        });
    }
}

macro_rules! stub {
    ($name:ident, $load:literal, $target:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        /// A register-preserving hook stub.
        pub extern "C" fn $name() {
            core::arch::naked_asm!(
                "push rbp",
                "mov rbp, rsp",
                "and rsp, -16",
                "sub rsp, 208",
                "mov [rsp + 0], rax",
                "mov [rsp + 8], rcx",
                "mov [rsp + 16], rdx",
                "mov [rsp + 24], rsi",
                "mov [rsp + 32], rdi",
                "mov [rsp + 40], r8",
                "mov [rsp + 48], r9",
                "mov [rsp + 56], r10",
                "mov [rsp + 64], r11",
                "movdqu [rsp + 80], xmm0",
                "movdqu [rsp + 96], xmm1",
                "movdqu [rsp + 112], xmm2",
                "movdqu [rsp + 128], xmm3",
                "movdqu [rsp + 144], xmm4",
                "movdqu [rsp + 160], xmm5",
                "movdqu [rsp + 176], xmm6",
                "movdqu [rsp + 192], xmm7",
                $load,
                "call {target}",
                "movdqu xmm7, [rsp + 192]",
                "movdqu xmm6, [rsp + 176]",
                "movdqu xmm5, [rsp + 160]",
                "movdqu xmm4, [rsp + 144]",
                "movdqu xmm3, [rsp + 128]",
                "movdqu xmm2, [rsp + 112]",
                "movdqu xmm1, [rsp + 96]",
                "movdqu xmm0, [rsp + 80]",
                "mov r11, [rsp + 64]",
                "mov r10, [rsp + 56]",
                "mov r9, [rsp + 48]",
                "mov r8, [rsp + 40]",
                "mov rdi, [rsp + 32]",
                "mov rsi, [rsp + 24]",
                "mov rdx, [rsp + 16]",
                "mov rcx, [rsp + 8]",
                "mov rax, [rsp + 0]",
                "mov rsp, rbp",
                "pop rbp",
                "ret",
                target = sym $target,
            )
        }
    };
}

stub!(enter_stub, "mov rdi, r14", enter);
stub!(leave_stub, "nop", leave);

/// Enter without call logging: pushes `{ func: R14, node: NO_NODE }` on
/// the shadow stack, or goes to [`enter_stub`] (no state yet, stack full).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[unsafe(naked)]
pub extern "C" fn enter_fast() {
    core::arch::naked_asm!(
        "push rax",
        "push rcx",
        "mov rax, qword ptr [rip + clrprof_agent_current_thread@GOTTPOFF]",
        "mov rax, qword ptr fs:[rax]",
        "test rax, rax",
        "jz 2f",
        "mov rcx, qword ptr [rax + 8]",
        "cmp rcx, qword ptr [rax + 16]",
        "jae 2f",
        "shl rcx, 4",
        "add rcx, qword ptr [rax]",
        "mov qword ptr [rcx], r14",
        "mov dword ptr [rcx + 8], -1",
        "inc qword ptr [rax + 8]",
        "pop rcx",
        "pop rax",
        "ret",
        "2:",
        "pop rcx",
        "pop rax",
        "jmp {slow}",
        slow = sym enter_stub,
    )
}

/// Leave (and tailcall) without call logging: pops the shadow stack if
/// the thread has one and it is not empty.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[unsafe(naked)]
pub extern "C" fn leave_fast() {
    core::arch::naked_asm!(
        "push rax",
        "mov rax, qword ptr [rip + clrprof_agent_current_thread@GOTTPOFF]",
        "mov rax, qword ptr fs:[rax]",
        "test rax, rax",
        "jz 2f",
        "cmp qword ptr [rax + 8], 0",
        "je 2f",
        "dec qword ptr [rax + 8]",
        "2:",
        "pop rax",
        "ret",
    )
}

/// The three hook addresses (enter, leave, tailcall), where supported:
/// the fast stubs, or with call logging the full ones (the enter hook
/// then logs a call).
pub fn hook_addresses(calls: bool) -> Option<(usize, usize, usize)> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let enter = if calls { enter_stub as *const () as usize } else { enter_fast as *const () as usize };
        Some((enter, leave_fast as *const () as usize, leave_fast as *const () as usize))
    }
    #[cfg(all(target_arch = "x86_64", not(target_os = "linux")))]
    {
        let _ = calls;
        Some((enter_stub as *const () as usize, leave_stub as *const () as usize, leave_stub as *const () as usize))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = calls;
        None
    }
}
