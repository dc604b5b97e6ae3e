//! The agent's soname is its file name, so that a program's
//! `DllImport("clrprof_agent")` finds the copy the runtime already loaded
//! as profiler (the dynamic loader matches loaded libraries by soname).
//!
//! It also marks the tests that run real .NET programs as ignored when the
//! runtimes `scripts/setup-dotnet.sh` installs are absent, outside CI: the
//! `no_dotnet` cfg (`tests/common/prereqs.rs`).

#[path = "../tests/common/prereqs.rs"]
mod prereqs;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libclrprof_agent.so");
    prereqs::watch_basics();
    prereqs::mark("no_dotnet", prereqs::dotnet_runtimes());
}
