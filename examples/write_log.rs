//! Write a small log with the format layer's writer, formatted exactly as
//! CLRProfiler's profiler writes it, then read it back.
//!
//! ```text
//! cargo run --release --example write_log -- /tmp/small.log
//! ```
use clrprof::format::records::*;
use clrprof::format::{Address, FunctionId, LogWriter, ModuleId, Record, StackId, Style, ThreadId, TypeId};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: write_log OUT.log")?;
    let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut w = LogWriter::new(file, Style::BITS64);
    w.type_def(TypeId(1), false, "System.String")?;
    w.function_def(FunctionId(1), "App.Program::Main", "void (String[])", Address(0x7ff0_0000_1000), 64, ModuleId(0), StackId(0))?;
    // An allocation stack: type 1, 24 bytes, allocated in Main.
    w.record(&Record::Stack(StackDef::new(StackId(1), Some((TypeId(1), 24)), None, &[FunctionId(1)])))?;
    w.record(&Record::Tick(Tick { ms: 5 }))?;
    for k in 0..3u64 {
        let address = Address(0x1_0000_1000 + 24 * k);
        w.record(&Record::Alloc(Alloc { thread: Some(ThreadId(1)), address, stack: StackId(1) }))?;
    }
    w.record(&Record::Comment(Comment { text: b"three strings" }))?;
    w.into_inner()?;

    let model = clrprof::model::load_path(path.as_ref(), &Default::default())?;
    let s = clrprof::query::summary(&model);
    println!("{path}: {} objects, {} bytes allocated, {} comment", model.allocations().len(), s.allocated_bytes, s.comments);
    Ok(())
}
