// The agent's soname is its file name, so that a program's
// `DllImport("clrprof_agent")` finds the copy the runtime already loaded
// as profiler (the dynamic loader matches loaded libraries by soname).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libclrprof_agent.so");
}
