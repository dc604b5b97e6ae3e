//! `cargo run --release -p clrprof-ui --example serve -- LOG... [--listen ADDR]`:
//! the UI server without the CLI (the CLI's `clrprof ui` does the same).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut logs = Vec::new();
    let mut listen = clrprof_ui::DEFAULT_LISTEN.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--listen" {
            listen = args.next().ok_or("--listen needs an address")?;
        } else {
            logs.push(std::path::PathBuf::from(a));
        }
    }
    let options = clrprof_ui::ServeOptions { logs, listen: listen.parse()?, threads: None, quiet: false, collector: None, child_loader: None };
    clrprof_ui::serve(options, |url| println!("clrprof ui: open {url}"))?;
    Ok(())
}
