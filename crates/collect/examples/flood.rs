//! Load generator for `crates/collect/bench/load.sh`: AGENTS fake agents
//! (threads with blocking sockets and the wire protocol) each stream MB
//! megabytes of allocation lines to a collector as fast as it takes them,
//! end their logs and wait for the last acknowledgement. Prints the bytes
//! sent and the rate.
//!
//! ```text
//! cargo run --release -p clrprof-collect --example flood -- TARGET TOKEN_FILE AGENTS MB
//! ```

use clrprof_wire::frame::{small_frame, HEADER};
use clrprof_wire::{handshake, FrameHeader, FrameKind, Hello, Nonce, Role, Token};
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Instant;

fn agent(target: &str, token: &Token, id: u32, megabytes: usize) -> Result<u64, String> {
    let s = std::net::TcpStream::connect(target).map_err(|e| e.to_string())?;
    let mut w = s.try_clone().map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    let server = handshake::parse_challenge(&line).map_err(|e| e.to_string())?;
    let client = Nonce([id as u8; 32]);
    let hello = Hello {
        role: Role::Stream,
        nonce: clrprof_wire::token::to_hex(&client.0),
        pid: 100_000 + id,
        program: format!("flood{id}"),
        runtime: "none".into(),
        session: None,
        spool: None,
        spool_from: None,
        catch_up: false,
        resume_mac: None,
        content: Default::default(),
    };
    w.write_all(handshake::hello_line(token, &server, &hello).map_err(|e| e.to_string())?.as_bytes()).map_err(|e| e.to_string())?;
    line.clear();
    r.read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    handshake::parse_ok(&line, token, &client, &server).map_err(|e| e.to_string())?;
    // One megabyte of allocation lines, as the agent writes them.
    let mut chunk = Vec::with_capacity(1 << 20);
    let mut n = 0u64;
    while chunk.len() < (1 << 20) - 64 {
        writeln!(chunk, "! {} 0x7f{:010x} {}", 4000 + id, 0x1000 + n * 24, 300 + n % 50).map_err(|e| e.to_string())?;
        n += 1;
    }
    let mut sent = 0u64;
    for _ in 0..megabytes {
        w.write_all(&FrameHeader::encode(FrameKind::Data, chunk.len() as u32)).map_err(|e| e.to_string())?;
        w.write_all(&chunk).map_err(|e| e.to_string())?;
        sent += chunk.len() as u64;
    }
    w.write_all(&small_frame(FrameKind::End, b"")).map_err(|e| e.to_string())?;
    let mut acked = 0u64;
    loop {
        let mut h = [0u8; HEADER];
        if r.read_exact(&mut h).is_err() {
            break;
        }
        let h = FrameHeader::parse(h).map_err(|e| e.to_string())?;
        let mut p = vec![0u8; h.len as usize];
        r.read_exact(&mut p).map_err(|e| e.to_string())?;
        if h.kind == FrameKind::Ack {
            let mut b = [0u8; 8];
            b.copy_from_slice(&p);
            acked = u64::from_be_bytes(b);
        }
    }
    if acked != sent {
        return Err(format!("agent {id}: sent {sent} bytes, {acked} acknowledged"));
    }
    Ok(sent)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: flood TARGET TOKEN_FILE AGENTS MB");
        std::process::exit(2);
    }
    let token = match std::fs::read_to_string(&args[2]).ok().and_then(|t| Token::from_hex(&t).ok()) {
        Some(t) => t,
        None => {
            eprintln!("flood: {}: not a token file", args[2]);
            std::process::exit(2);
        }
    };
    let agents: u32 = args[3].parse().unwrap_or(32);
    let megabytes: usize = args[4].parse().unwrap_or(64);
    let start = Instant::now();
    let threads: Vec<_> = (0..agents)
        .map(|id| {
            let (target, token) = (args[1].clone(), token.clone());
            std::thread::spawn(move || agent(&target, &token, id, megabytes))
        })
        .collect();
    let mut total = 0u64;
    let mut failed = false;
    for t in threads {
        match t.join() {
            Ok(Ok(n)) => total += n,
            Ok(Err(e)) => {
                eprintln!("flood: {e}");
                failed = true;
            }
            Err(_) => failed = true,
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{agents} fake agents sent {:.1} MB in {secs:.2} s: {:.0} MB/s, every byte acknowledged", total as f64 / 1e6, total as f64 / 1e6 / secs);
    if failed {
        std::process::exit(1);
    }
}
