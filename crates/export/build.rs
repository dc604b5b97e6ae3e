//! Generates the pprof message structs from `proto/profile.proto` with
//! prost-build; protox parses the file, so no `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/profile.proto");
    let descriptors = protox::compile(["proto/profile.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
