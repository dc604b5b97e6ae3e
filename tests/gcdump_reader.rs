//! The `.gcdump` reader against a real snapshot and PerfView's own reading
//! of it (`../shared/corpus/eventpipe/test1.gcdump` and
//! `test1_baseline.gcdump.xml`, see that folder's README): the same node,
//! type and byte totals, every type's name, every node's type, size,
//! address and children. Then the snapshot transcoded into a CLRProfiler
//! log and loaded as a model: one heap dump with the same objects, bytes
//! and references. Then the file cut short and with bytes flipped: errors
//! naming an offset, never a panic.

use clrprof::gcdump::{self, ErrorKind, HeapGraph, NodeIndex, NodeKind, TypeIndex};
use std::path::PathBuf;

mod common;
use common::Rng;

fn corpus(name: &str) -> Option<Vec<u8>> {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/eventpipe/")).join(name);
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("{}: {e} (required under CI=true)", path.display()),
        Err(e) => {
            eprintln!("skipped: {}: {e}", path.display());
            None
        }
    }
}

/// PerfView's answer, scanned from its XML.
struct Baseline {
    num_nodes: usize,
    num_types: usize,
    total_size: u64,
    root: u32,
    log: String,
    types: Vec<String>,
    nodes: Vec<XmlNode>,
}

struct XmlNode {
    type_index: u32,
    size: u32,
    address: u64,
    children: Vec<u32>,
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=\"");
    let start = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
    let len = tag[start..].find('"').unwrap();
    &tag[start..start + len]
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    let s = text.find(open).unwrap_or_else(|| panic!("no {open}")) + open.len();
    let e = text[s..].find(close).unwrap() + s;
    &text[s..e]
}

fn baseline(xml: &str) -> Baseline {
    let graph_tag = between(xml, "<MemoryGraph", ">");
    let mut types = Vec::new();
    for chunk in xml.split("<NodeType ").skip(1) {
        let tag = &chunk[..chunk.find("/>").unwrap()];
        let tag = format!(" {tag}");
        assert_eq!(attr(&tag, "Index").parse::<usize>().unwrap(), types.len());
        types.push(unescape(attr(&tag, "Name")));
    }
    let mut nodes = Vec::new();
    for chunk in xml.split("<Node ").skip(1) {
        let end = chunk.find('>').unwrap();
        let tag = format!(" {}", &chunk[..end]);
        assert_eq!(attr(&tag, "Index").parse::<usize>().unwrap(), nodes.len());
        // `<Node .../>` has no children.
        let body = if tag.ends_with('/') { "" } else { &chunk[end + 1..chunk.find("</Node>").unwrap()] };
        let children: Vec<u32> = body.split_whitespace().map(|c| c.parse().unwrap()).collect();
        assert_eq!(attr(&tag, "NumChildren").parse::<usize>().unwrap(), children.len());
        nodes.push(XmlNode {
            type_index: attr(&tag, "TypeIndex").parse().unwrap(),
            size: attr(&tag, "Size").parse().unwrap(),
            address: u64::from_str_radix(attr(&tag, "Address").trim_start_matches("0x"), 16).unwrap(),
            children,
        });
    }
    Baseline {
        num_nodes: attr(graph_tag, "NumNodes").parse().unwrap(),
        num_types: attr(graph_tag, "NumTypes").parse().unwrap(),
        total_size: attr(graph_tag, "TotalSize").parse().unwrap(),
        root: between(xml, "<RootIndex>", "</RootIndex>").trim().parse().unwrap(),
        log: unescape(between(xml, "<CollectionLog>", "</CollectionLog>")),
        types,
        nodes,
    }
}

fn test1() -> Option<(Vec<u8>, Baseline)> {
    let bytes = corpus("test1.gcdump")?;
    let xml = corpus("test1_baseline.gcdump.xml")?;
    Some((bytes, baseline(&String::from_utf8(xml).unwrap())))
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn recognised_by_its_first_bytes() {
    let Some((bytes, _)) = test1() else { return };
    assert!(gcdump::is_gcdump(&bytes));
    assert!(gcdump::is_gcdump(&bytes[..gcdump::SNIFF_BYTES]));
    assert!(!gcdump::is_gcdump(&bytes[..gcdump::SNIFF_BYTES - 1]));
    // The type may be a private object (tag 5), which reads the same.
    let mut private = bytes.clone();
    private[24 + 1] = 5;
    assert!(gcdump::is_gcdump(&private));
    assert_eq!(gcdump::read(&private).unwrap().node_count(), 6482);
    // A NetTrace is FastSerialization too, but not a GCHeapDump.
    if let Some(trace) = corpus("eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace") {
        assert!(!gcdump::is_gcdump(&trace));
        assert!(gcdump::read(&trace).is_err());
    }
    assert!(!gcdump::is_gcdump(b"t 1 0 System.String\n"));
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn same_graph_as_perfview() {
    let Some((bytes, base)) = test1() else { return };
    let g = gcdump::read(&bytes).unwrap();
    assert_eq!(g.node_count(), base.num_nodes);
    assert_eq!(g.type_count(), base.num_types);
    assert_eq!(g.total_size(), base.total_size);
    assert_eq!(g.root(), NodeIndex(base.root));
    assert_eq!(base.nodes.len(), base.num_nodes);
    assert_eq!(base.types.len(), base.num_types);
    // The node sizes add up to the stated total.
    assert_eq!(g.nodes().map(|n| u64::from(g.node_size(n))).sum::<u64>(), g.total_size());

    for (k, name) in base.types.iter().enumerate() {
        assert_eq!(g.type_name(TypeIndex(k as u32)), name, "type {k}");
    }
    let mut bad = Vec::new();
    for (k, x) in base.nodes.iter().enumerate() {
        let n = NodeIndex(k as u32);
        let children: Vec<u32> = g.children(n).iter().map(|c| c.0).collect();
        let ours = (g.node_type(n).0, g.node_size(n), g.node_address(n).unwrap_or(0), &children);
        let theirs = (x.type_index, x.size, x.address, &x.children);
        if ours != theirs {
            bad.push(format!("node {k}: ours {ours:?}, PerfView {theirs:?}"));
        }
    }
    assert!(bad.is_empty(), "{} nodes differ, first: {:?}", bad.len(), &bad[..bad.len().min(5)]);
    assert_eq!(g.reference_count(), base.nodes.iter().map(|x| x.children.len()).sum::<usize>());

    // The XML has no type sizes: a node that does not state its size has
    // its type's, so the node sizes above check those; the JavaScript
    // writer gives some types a size none of their nodes has (type 879,
    // 312 bytes, nodes of 318 and 342), so nothing more can be said.
    assert_eq!(g.type_size(TypeIndex(879)), Some(312));

    // The collection log, line by line (XML turns \r\n into \n).
    let ours: Vec<&str> = g.collection_log().unwrap().lines().map(str::trim_end).collect();
    let theirs: Vec<&str> = base.log.lines().map(str::trim_end).collect();
    assert_eq!(ours, theirs);
    let info = g.info();
    assert_eq!(info.machine_name.as_deref(), Some("MBRAUDE141201"));
    assert_eq!(info.process_name.as_deref(), Some("Idle"));
    assert_eq!(info.total_process_working_set, 8192);
    // "The process being dumped is 32 Bit"; every object kept.
    assert_eq!(g.pointer_size(), 4);
    assert!(!g.sampling().is_sampled(), "{:?}", g.sampling());
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn object_and_pseudo_nodes() {
    let Some((bytes, base)) = test1() else { return };
    let g = gcdump::read(&bytes).unwrap();
    assert!(g.has_addresses());
    // The root "[JS Roots]" has address 0: the one pseudo-node.
    assert_eq!(g.node_kind(g.root()), NodeKind::Pseudo);
    let objects: Vec<&XmlNode> = base.nodes.iter().filter(|x| x.address != 0 && x.type_index != 0).collect();
    assert_eq!(g.object_count(), objects.len());
    assert_eq!(g.object_bytes(), objects.iter().map(|x| u64::from(x.size)).sum::<u64>());
    assert_eq!(g.object_count(), base.num_nodes - 1);
}

fn transcode(g: &HeapGraph) -> Vec<u8> {
    let mut log = Vec::new();
    gcdump::write_log(g, &mut log);
    log
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn transcoded_log_loads_as_one_heap_dump() {
    let Some((bytes, _)) = test1() else { return };
    let g = gcdump::read(&bytes).unwrap();
    let log = transcode(&g);
    assert!(log.starts_with(b"z clrprof: heap snapshot transcoded from a .gcdump"), "{}", String::from_utf8_lossy(&log[..200]));
    let first = log.split(|&b| b == b'\n').next().unwrap();
    let first = String::from_utf8_lossy(first);
    assert!(first.contains(&format!("{} objects, {} bytes", g.object_count(), g.object_bytes())), "{first}");

    let model = clrprof::model::load(&log, &Default::default()).unwrap();
    let dumps = model.heap_dumps();
    assert_eq!(dumps.dumps().len(), 1);
    assert_eq!(dumps.counted(), 1);
    let d = &dumps.dumps()[0];
    assert_eq!(dumps.object_count(d), g.object_count());
    assert_eq!(dumps.objects(d).map(|o| u64::from(o.size)).sum::<u64>(), g.object_bytes());
    // Object k of the dump is the k-th object node, with its address,
    // type (index + 1), size and references to objects.
    let object_nodes: Vec<NodeIndex> = g.nodes().filter(|&n| g.node_kind(n) == NodeKind::Object).collect();
    for (k, o) in dumps.objects(d).enumerate() {
        let n = object_nodes[k];
        assert_eq!(Some(o.address.0), g.node_address(n));
        assert_eq!(o.type_id.0 as u32, g.node_type(n).0 + 1);
        assert_eq!(o.size, g.node_size(n));
        let refs: Vec<u64> =
            g.children(n).iter().filter(|&&c| g.node_kind(c) == NodeKind::Object).map(|&c| g.node_address(c).unwrap()).collect();
        assert_eq!(dumps.references(d, k), refs, "object {k}");
    }
    // The root's two children are the roots (of kind other).
    let roots = dumps.roots(d);
    let expected: Vec<u64> = g.children(g.root()).iter().map(|&c| g.node_address(c).unwrap()).collect();
    assert_eq!(roots.iter().map(|r| r.address.0).collect::<Vec<_>>(), expected);
    assert!(roots.iter().all(|r| r.kind == 0));

    // The same figures through the dump queries.
    let list = clrprof::query::dumps::list(&model);
    assert_eq!(list.len(), 1);
    assert!(list[0].counted);
    assert_eq!(list[0].objects, g.object_count() as u64);
    assert_eq!(list[0].bytes, g.object_bytes());
    assert_eq!(list[0].roots, 2);
    // Objects and bytes per type name, as the dump's type table counts them.
    let by_type = clrprof::query::dumps::by_type(&model, clrprof::query::dumps::DumpIndex(0)).unwrap();
    let mut per_type = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    for &n in &object_nodes {
        let e = per_type.entry(g.type_name(g.node_type(n))).or_default();
        e.0 += 1;
        e.1 += u64::from(g.node_size(n));
    }
    let mut theirs = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    for t in &by_type.types {
        let e = theirs.entry(t.name.as_str()).or_default();
        e.0 += t.objects;
        e.1 += t.bytes;
    }
    assert_eq!(theirs, per_type);
    assert_eq!(per_type["(Type  JSGlobal)"], (2, 512));
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn truncation_is_an_error_naming_an_offset() {
    let Some((bytes, _)) = test1() else { return };
    let whole = gcdump::read(&bytes).unwrap();
    // Every cut in the header and the first types, then every 97 bytes,
    // then every cut in the tail.
    let cuts = (0..600).chain((600..bytes.len()).step_by(97)).chain(bytes.len().saturating_sub(600)..bytes.len());
    for cut in cuts {
        match gcdump::read(&bytes[..cut]) {
            Err(e) => {
                assert!(e.offset <= cut as u64 || matches!(e.kind, ErrorKind::Invalid { .. }), "cut {cut}: {e}");
                assert!(e.to_string().starts_with(&format!("byte {}: ", e.offset)));
            }
            // Only the trailer's last bytes may go missing: the forward
            // table is read only for skip regions.
            Ok(g) => {
                assert!(cut + 16 >= bytes.len(), "cut {cut} read");
                assert_eq!(g.node_count(), whole.node_count());
            }
        }
    }
}


#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn flipped_bytes_never_panic_and_memory_stays_bounded() {
    let Some((bytes, _)) = test1() else { return };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut errors = 0;
    for round in 0..400 {
        let mut b = bytes.clone();
        // Mostly the header, types and node table, where counts live.
        let span = if round % 2 == 0 { 4096 } else { b.len() };
        for _ in 0..1 + rng.next() % 4 {
            let i = (rng.next() % span as u64) as usize;
            b[i] = match rng.next() % 3 {
                0 => b[i] ^ (1 << (rng.next() % 8)),
                1 => 0xFF,
                _ => rng.next() as u8,
            };
        }
        match gcdump::read(&b) {
            Ok(g) => {
                // Bounded by the file: at most a few bytes per byte read.
                assert!(g.heap_bytes() <= 16 * b.len() + (1 << 16), "{} bytes held", g.heap_bytes());
                let mut log = Vec::new();
                gcdump::write_log(&g, &mut log);
            }
            Err(e) => {
                errors += 1;
                assert!(e.offset <= b.len() as u64, "{e}");
            }
        }
    }
    assert!(errors > 0);
}

#[test]
#[cfg_attr(no_eventpipe_corpus, ignore = "needs ../shared/corpus/eventpipe, missing when built (touch build.rs after installing)")]
fn counts_larger_than_the_file_are_refused_before_allocating() {
    let Some((bytes, _)) = test1() else { return };
    // The type count sits after the total size and the root index.
    let at = bytes.windows(4).position(|w| w == 1994i32.to_le_bytes()).unwrap();
    let mut b = bytes.clone();
    b[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
    let e = gcdump::read(&b).unwrap_err();
    assert_eq!(e.offset, at as u64 + 4);
    assert!(matches!(e.kind, ErrorKind::UnexpectedEnd { .. }), "{e}");
}

/// Writes `.gcdump` files the way PerfView's serializer lays them out, for
/// what `test1.gcdump` (a 2015 JavaScript heap) does not have: a .NET
/// heap's root groups, no addresses, sampling, 64-bit, the tagged fields
/// of newer versions (interop data in a skip region, the creation tool),
/// and the older version-7 layout.
mod synth {
    pub const SIGNATURE: &[u8] = b"\x14\x00\x00\x00!FastSerialization.1";

    pub struct Type {
        pub name: &'static str,
        pub size: i32,
        pub module: Option<&'static str>,
    }

    pub struct Node {
        pub ty: u32,
        pub size: i32,
        pub children: Vec<u32>,
        /// Never described: its label is the UNDEFINED definition's (0).
        pub undefined: bool,
        pub address: u64,
    }

    pub struct Dump {
        pub version: i32,
        pub types: Vec<Type>,
        pub nodes: Vec<Node>,
        pub root: i32,
        pub with_addresses: bool,
        pub is64: bool,
        pub multipliers: (f32, f32, Vec<f32>),
        pub tool: Option<&'static str>,
        /// A region of ProjectN types known by id (graph readers >= 1).
        pub deferred: bool,
    }

    #[derive(Default)]
    pub struct W {
        pub b: Vec<u8>,
        fwd: Vec<u32>,
    }

    impl W {
        fn i32(&mut self, v: i32) {
            self.b.extend_from_slice(&v.to_le_bytes());
        }
        fn i64(&mut self, v: i64) {
            self.b.extend_from_slice(&v.to_le_bytes());
        }
        fn f32(&mut self, v: f32) {
            self.b.extend_from_slice(&v.to_le_bytes());
        }
        fn string(&mut self, s: Option<&str>) {
            match s {
                None => self.i32(-1),
                Some(s) => {
                    let units: Vec<u16> = s.encode_utf16().collect();
                    self.i32(units.len() as i32);
                    for u in units {
                        let c = u32::from(u);
                        if c < 0x80 {
                            self.b.push(c as u8);
                        } else if c < 0x800 {
                            self.b.extend_from_slice(&[0xC0 | (c >> 6) as u8, 0x80 | (c & 0x3F) as u8]);
                        } else {
                            self.b.extend_from_slice(&[0xE0 | (c >> 12) as u8, 0x80 | ((c >> 6) & 0x3F) as u8, 0x80 | (c & 0x3F) as u8]);
                        }
                    }
                }
            }
        }
        /// BeginObject and a type defined in place.
        fn begin(&mut self, name: &str, version: i32, min_reader: i32) {
            self.b.extend_from_slice(&[4, 4, 1]);
            self.i32(version);
            self.i32(min_reader);
            self.string(Some(name));
            self.b.push(6);
        }
        fn end(&mut self) {
            self.b.push(6);
        }
        fn forward(&mut self) -> usize {
            self.fwd.push(u32::MAX);
            self.i32(self.fwd.len() as i32 - 1);
            self.fwd.len() - 1
        }
        fn define(&mut self, k: usize) {
            self.fwd[k] = self.b.len() as u32;
        }
    }

    fn compressed(v: i32, out: &mut Vec<u8>) {
        let fits = |bits: u32| (v << (32 - bits)) >> (32 - bits) == v;
        let n = (1..=4).find(|&k| fits(7 * k)).unwrap_or(5);
        for k in (1..n).rev() {
            out.push(((v >> (7 * k)) as u8) | 0x80);
        }
        out.push((v & 0x7F) as u8);
    }

    fn graph(w: &mut W, d: &Dump) {
        w.begin("Graphs.MemoryGraph", 1, i32::from(d.deferred));
        let total: i64 = d.nodes.iter().filter(|n| !n.undefined).map(|n| i64::from(n.size)).sum();
        w.i64(total);
        w.i32(d.root);
        w.i32(d.types.len() as i32);
        for t in &d.types {
            w.string(Some(t.name));
            w.i32(t.size);
            w.string(t.module);
        }
        // The blob starts with the UNDEFINED node's data.
        let mut blob = vec![0u8, 0];
        let mut labels = Vec::new();
        for (i, n) in d.nodes.iter().enumerate() {
            if n.undefined {
                labels.push(0u32);
                continue;
            }
            labels.push(blob.len() as u32);
            let t = n.ty as i32;
            if d.types.get(n.ty as usize).map(|t| t.size) == Some(n.size) {
                compressed(t << 1, &mut blob);
            } else {
                compressed(t << 1 | 1, &mut blob);
                compressed(n.size, &mut blob);
            }
            compressed(n.children.len() as i32, &mut blob);
            for &c in &n.children {
                compressed(c as i32 - i as i32, &mut blob);
            }
        }
        w.i32(labels.len() as i32);
        for l in labels {
            w.b.extend_from_slice(&l.to_le_bytes());
        }
        w.i32(blob.len() as i32);
        w.b.extend_from_slice(&blob);
        if d.deferred {
            let k = w.forward();
            w.i32(1);
            w.i32(77);
            w.begin("Graphs.Module", 0, 0);
            w.string(Some("app.dll"));
            w.i64(0x40_0000);
            w.i64(0x1000);
            w.i64(0);
            w.string(None);
            w.b.extend_from_slice(&[0; 16]);
            w.i32(1);
            w.end();
            w.string(Some(" (static var)"));
            w.b.push(6);
            w.define(k);
        }
        if d.with_addresses {
            w.i32(d.nodes.len() as i32);
            for n in &d.nodes {
                w.i64(n.address as i64);
            }
        } else {
            w.i32(0);
        }
        if d.version >= 9 {
            w.b.extend_from_slice(&[8, u8::from(d.is64)]);
        }
        w.end();
    }

    pub fn write(d: &Dump) -> Vec<u8> {
        let mut w = W::default();
        w.b.extend_from_slice(SIGNATURE);
        w.begin("GCHeapDump", d.version, if d.version >= 8 { 8 } else { 0 });
        graph(&mut w, d);
        if d.version >= 9 {
            w.b.push(u8::from(d.is64));
            w.f32(d.multipliers.0);
            w.f32(d.multipliers.1);
            w.b.push(1); // no JSHeapInfo
            w.begin("DotNetHeapInfo", 0, 0);
            w.i64(1 << 20);
            w.i32(1);
            w.begin("GCHeapDumpSegment", 1, 1);
            for k in 0..7 {
                w.i64(0x1000 * k);
            }
            w.end();
            w.end();
            w.string(Some("collected by a test\r\nsecond line \u{e9}\u{20ac}"));
            w.i64(638_000_000_000_000_000);
            w.string(Some("machine"));
            w.string(Some("app"));
            w.i32(4242);
            w.i64(1 << 30);
            w.i64(1 << 29);
            w.i32(d.multipliers.2.len() as i32);
            for &m in &d.multipliers.2 {
                w.f32(m);
            }
            // Interop data in a skip region, then the creation tool.
            w.b.push(12);
            let k = w.forward();
            w.begin("InteropInfo", 0, 0);
            for v in [0, 0, 0, 0, 0] {
                w.i32(v);
            }
            w.end();
            w.define(k);
            if let Some(tool) = d.tool {
                w.b.push(13);
                w.string(Some(tool));
            }
        } else {
            w.i64(1 << 20);
            w.i64(0);
            w.i64(0);
            w.b.push(1);
            w.string(Some("old log"));
            w.i64(0);
            w.string(Some("machine"));
            w.string(Some("app"));
            w.i32(7);
            w.i64(0);
            w.i64(0);
            w.i32(1);
            w.begin("GCHeapDumpSegment", 0, 0);
            for k in 0..6 {
                w.i64(0x1000 * k);
            }
            w.end();
            w.b.push(u8::from(d.is64));
        }
        w.end();
        // The end of the objects, the forward-reference table and the two
        // suffix labels.
        w.end();
        let table = w.b.len() as u32;
        w.i32(w.fwd.len() as i32);
        for l in w.fwd.clone() {
            w.b.extend_from_slice(&l.to_le_bytes());
        }
        let suffix = w.b.len() as u32;
        w.b.extend_from_slice(&table.to_le_bytes());
        w.b.extend_from_slice(&suffix.to_le_bytes());
        w.b
    }

    fn t(name: &'static str, size: i32, module: Option<&'static str>) -> Type {
        Type { name, size, module }
    }

    fn n(ty: u32, size: i32, children: &[u32], address: u64) -> Node {
        Node { ty, size, children: children.to_vec(), undefined: false, address }
    }

    /// A small .NET heap as dotnet-gcdump groups it.
    pub fn dotnet(version: i32, with_addresses: bool) -> Dump {
        let core = Some("System.Private.CoreLib.dll");
        Dump {
            version,
            types: vec![
                t("UNDEFINED", 0, None),
                t("[.NET Roots]", 0, None),
                t("[other roots]", 0, None),
                t("[strong Handles]", 0, None),
                t("[pinning Handles]", 0, None),
                t("[finalizer Handles]", 0, None),
                t("[local vars]", 0, None),
                t("[static vars]", 0, None),
                t("[static var Foo.bar]", 0, None),
                t("System.String", 30, core),
                t("System.Object[]", 40, core),
                t("Foo", 24, Some("app.dll")),
            ],
            nodes: vec![
                n(1, 0, &[1, 2, 3], 0),
                n(2, 0, &[4, 5, 6], 0),
                n(6, 0, &[7, 10], 0),
                n(7, 0, &[11], 0),
                n(3, 0, &[7], 0),
                n(4, 0, &[8], 0),
                n(5, 0, &[9], 0),
                n(10, 40, &[8, 9, 13], 0x7f00_0000_1000),
                n(9, 30, &[], 0x7f00_0000_1040),
                n(9, 1_000_000, &[], 0x7f00_0000_1080),
                n(11, 24, &[7, 2], 0x7f00_0010_0000),
                n(8, 0, &[12], 0),
                n(11, 24, &[12], 0x7f00_0010_0020),
                Node { ty: 0, size: 0, children: vec![], undefined: true, address: 0x7f00_dead_0000 },
            ],
            root: 0,
            with_addresses,
            is64: true,
            multipliers: (2.5, 1.5, (0..12).map(|k| if k == 9 { 4.0 } else { 1.0 }).collect()),
            tool: Some("dotnet-gcdump"),
            deferred: false,
        }
    }
}

/// Reads a synthetic snapshot, transcodes it and loads the log.
fn synthetic(d: &synth::Dump) -> (HeapGraph, clrprof::model::Model, Vec<u8>) {
    let bytes = synth::write(d);
    assert!(gcdump::is_gcdump(&bytes));
    let g = gcdump::read(&bytes).unwrap_or_else(|e| panic!("{e}"));
    let log = transcode(&g);
    // Seeds for the fuzz target, and their logs to look at.
    if let Ok(dir) = std::env::var("CLRPROF_GCDUMP_SEEDS") {
        let name = format!("{dir}/synth-v{}-{}", d.version, if g.has_addresses() { "addr" } else { "noaddr" });
        std::fs::write(format!("{name}.gcdump"), &bytes).unwrap();
        std::fs::write(format!("{name}.log"), &log).unwrap();
    }
    let model = clrprof::model::load(&log, &Default::default()).unwrap();
    (g, model, log)
}

#[test]
fn dotnet_root_groups_become_root_kinds() {
    for with_addresses in [true, false] {
        let d = synth::dotnet(10, with_addresses);
        let (g, model, log) = synthetic(&d);
        assert_eq!(g.node_count(), 14);
        assert_eq!(g.type_count(), 12);
        assert_eq!(g.pointer_size(), 8);
        assert_eq!(g.type_module(TypeIndex(10)), Some("System.Private.CoreLib.dll"));
        assert_eq!(g.type_size(TypeIndex(9)), Some(30));
        assert_eq!(g.node_size(NodeIndex(9)), 1_000_000);
        assert_eq!(g.node_kind(NodeIndex(13)), NodeKind::Undefined);
        assert_eq!(g.node_kind(NodeIndex(11)), NodeKind::Pseudo);
        assert_eq!(g.object_count(), 5);
        assert_eq!(g.object_bytes(), 40 + 30 + 1_000_000 + 24 + 24);
        assert_eq!(g.has_addresses(), with_addresses);
        let info = g.info();
        assert_eq!(info.creation_tool.as_deref(), Some("dotnet-gcdump"));
        assert_eq!(info.process_id, 4242);
        assert_eq!(g.collection_log(), Some("collected by a test\r\nsecond line \u{e9}\u{20ac}"));
        assert!(g.sampling().is_sampled());
        assert_eq!(g.sampling().count_multipliers_by_type[9], 4.0);

        let text = String::from_utf8_lossy(&log);
        let first = text.lines().next().unwrap();
        assert!(first.contains("written by dotnet-gcdump") && first.contains("of process app (pid 4242)"), "{first}");
        assert!(first.contains("5 objects, 1000118 bytes, 12 types, 6 roots, 0 unnamed roots"), "{first}");
        assert!(first.contains("counts and sizes are estimates"), "{first}");
        assert_eq!(first.contains("addresses synthesized"), !with_addresses, "{first}");

        let t = model.heap_dumps();
        assert_eq!(t.dumps().len(), 1);
        let dump = &t.dumps()[0];
        assert_eq!(t.object_count(dump), 5);
        let addr = |n: u32| t.objects(dump).nth([7, 8, 9, 10, 12].iter().position(|&k| k == n).unwrap()).unwrap().address.0;
        if with_addresses {
            assert_eq!(addr(7), 0x7f00_0000_1000);
        } else {
            // Increasing, 8-byte aligned, not overlapping.
            let a: Vec<u64> = t.objects(dump).map(|o| o.address.0).collect();
            let s: Vec<u64> = t.objects(dump).map(|o| u64::from(o.size)).collect();
            for k in 1..a.len() {
                assert!(a[k] % 8 == 0 && a[k] >= a[k - 1] + s[k - 1], "{a:x?}");
            }
        }
        // In the file's order, each under its innermost group.
        let roots: Vec<(u64, i32, i32)> = t.roots(dump).iter().map(|r| (r.address.0, r.kind, r.flags)).collect();
        assert_eq!(roots, vec![(addr(7), 3, 0), (addr(8), 3, 1), (addr(9), 2, 0), (addr(7), 1, 0), (addr(10), 1, 0), (addr(12), 0, 0)]);
        // The static the file names (`[static var Foo.bar]`, where `Foo` is
        // the held object's type) is named by its field.
        let named: Vec<Option<String>> =
            t.roots(dump).iter().map(|r| clrprof::query::dumps::RootRef::of(&model, r).static_field).collect();
        assert_eq!(named, [None, None, None, None, None, Some("bar".to_string())]);
        assert!(text.contains("\nd 0 0x"), "{text}");
        // References to the undefined node and to a pseudo-node are left out.
        assert_eq!(t.references(dump, 0), vec![addr(8), addr(9)]);
        assert_eq!(t.references(dump, 3), vec![addr(7)]);
        assert_eq!(t.references(dump, 4), vec![addr(12)]);
        let types: Vec<i32> = t.objects(dump).map(|o| o.type_id.0).collect();
        assert_eq!(types, vec![11, 10, 10, 12, 12]);
    }
}

#[test]
fn version_7_files_are_read() {
    let mut d = synth::dotnet(7, true);
    d.multipliers = (1.0, 1.0, Vec::new());
    let (g, model, _) = synthetic(&d);
    assert_eq!(g.info().version, 7);
    assert_eq!(g.collection_log(), Some("old log"));
    assert_eq!(g.pointer_size(), 8);
    assert!(!g.sampling().is_sampled());
    assert_eq!(model.heap_dumps().object_count(&model.heap_dumps().dumps()[0]), 5);
    // Version 8 is refused, as PerfView does.
    let mut b = synth::write(&synth::dotnet(10, true));
    b[SYNTH_VERSION_AT..SYNTH_VERSION_AT + 4].copy_from_slice(&8i32.to_le_bytes());
    let e = gcdump::read(&b).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Unsupported { version: 8, .. }), "{e}");
    assert_eq!(e.offset, synth::SIGNATURE.len() as u64);
}

#[test]
fn deferred_type_regions_are_skipped() {
    let mut d = synth::dotnet(10, true);
    d.deferred = true;
    let (g, model, _) = synthetic(&d);
    assert_eq!(g.node_count(), 14);
    assert_eq!(g.object_count(), 5);
    assert_eq!(model.heap_dumps().dumps().len(), 1);
}

#[test]
fn memory_is_proportional_to_the_graph() {
    // 200,000 objects in a chain under one root group, two references each.
    let mut d = synth::dotnet(10, true);
    let n = 200_000u32;
    let first = d.nodes.len() as u32;
    d.nodes.pop(); // the undefined node
    for k in 0..n {
        let me = first - 1 + k;
        let next = if k + 1 < n { me + 1 } else { 7 };
        d.nodes.push(synth::Node {
            ty: 11,
            size: 24,
            children: vec![next, 7],
            undefined: false,
            address: 0x10_0000_0000 + 32 * u64::from(k),
        });
    }
    d.nodes[4].children.push(first - 1);
    let bytes = synth::write(&d);
    let g = gcdump::read(&bytes).unwrap();
    assert_eq!(g.object_count(), 5 + n as usize);
    // (Node 7 references index 13, now the first of the chain.)
    assert_eq!(g.reference_count(), 19 + 1 + 2 * n as usize);
    // Per node: type, size, child start (4 bytes each), address (8),
    // children (4 each): 28 + 8 bytes; the file has 4 + 8 + ~7.
    let per_node = g.heap_bytes() as f64 / g.node_count() as f64;
    assert!(per_node < 40.0, "{per_node} bytes per node");
    assert!(g.heap_bytes() < 3 * bytes.len(), "{} bytes held for a {}-byte file", g.heap_bytes(), bytes.len());
    let log = transcode(&g);
    let model = clrprof::model::load(&log, &Default::default()).unwrap();
    let t = model.heap_dumps();
    assert_eq!(t.object_count(&t.dumps()[0]), g.object_count());
}

/// Where the GCHeapDump type's version sits: after the header and `04 04 01`.
const SYNTH_VERSION_AT: usize = 24 + 3;

#[test]
fn a_graph_without_roots_is_still_one_dump() {
    let mut d = synth::dotnet(10, true);
    d.nodes[0].children.clear();
    // A type name with a `<` left open (the log reader reads through line
    // ends inside `<...>`).
    d.types[11].name = "Foo<T";
    let (g, model, _) = synthetic(&d);
    let t = model.heap_dumps();
    assert_eq!(t.dumps().len(), 1);
    // No root names an object: what holds them is unnamed, not nothing.
    // The two Foos are the sources (one refers to the Object[], which
    // refers to the strings; the other to itself).
    let roots = t.roots(&t.dumps()[0]);
    assert_eq!(roots.len(), 2, "{roots:?}");
    assert!(roots.iter().all(|r| r.flags == clrprof::format::records::ROOT_UNNAMED && r.kind == 0), "{roots:?}");
    let r = clrprof::query::dumps::retained(&model, clrprof::query::dumps::DumpIndex(0), 0).unwrap();
    assert_eq!(r.unreachable_objects, 0);
    assert_eq!(t.object_count(&t.dumps()[0]), g.object_count());
    let by_type = clrprof::query::dumps::by_type(&model, clrprof::query::dumps::DumpIndex(0)).unwrap();
    let foo = by_type.types.iter().find(|r| r.name == "Foo<T").unwrap();
    assert_eq!((foo.objects, foo.bytes), (2, 48));
}

/// Objects that no root of the file reaches are held by unnamed roots: one
/// per group no other unreached object reaches, so that retained sizes
/// and paths cover them (PerfView's orphans), never "unreachable".
#[test]
fn objects_no_root_reaches_get_unnamed_roots() {
    let mut d = synth::dotnet(10, true);
    // The local vars no longer hold the Foo at 0x7f00_0010_0000 (which
    // refers to the Object[] and a pseudo-node), and the static var no
    // longer holds the Foo that refers to itself.
    d.nodes[2].children = vec![7];
    d.nodes[11].children.clear();
    let (_, model, log) = synthetic(&d);
    let first = String::from_utf8_lossy(&log).lines().next().unwrap_or("").to_string();
    assert!(first.contains("4 roots, 2 unnamed roots"), "{first}");
    let t = model.heap_dumps();
    let unnamed: Vec<u64> =
        t.roots(&t.dumps()[0]).iter().filter(|r| r.flags & clrprof::format::records::ROOT_UNNAMED != 0).map(|r| r.address.0).collect();
    assert_eq!(unnamed, vec![0x7f00_0010_0000, 0x7f00_0010_0020]);
    let index = clrprof::query::dumps::DumpIndex(0);
    let r = clrprof::query::dumps::retained(&model, index, 10).unwrap();
    assert_eq!((r.unreachable_objects, r.unreachable_bytes), (0, 0));
    // The Foo reached only through an unnamed root: its path says so.
    let p = clrprof::query::dumps::paths_to(&model, index, "Foo", 10).unwrap();
    assert_eq!(p.unreachable, 0);
    assert!(p.paths.iter().all(|path| path.root.name == "Unnamed"), "{:?}", p.paths);
}

#[test]
fn synthetic_cuts_and_bad_values_are_errors() {
    let bytes = synth::write(&synth::dotnet(10, false));
    for cut in 0..bytes.len() {
        // The skip region's end comes from the table at the end of the
        // file: every cut is an error, but for the file without its last
        // label, which names the table as some writers' files do.
        match gcdump::read(&bytes[..cut]) {
            Err(e) => assert!(e.offset <= bytes.len() as u64, "cut {cut}: {e}"),
            Ok(g) => {
                assert_eq!(cut, bytes.len() - 4);
                assert_eq!(g.node_count(), 14);
            }
        }
    }
    // A child index past the last node.
    let mut d = synth::dotnet(10, false);
    d.nodes[4].children = vec![99];
    let e = gcdump::read(&synth::write(&d)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Invalid { found: 99, .. }), "{e}");
    // A node type past the last type.
    let mut d = synth::dotnet(10, false);
    d.nodes[8].ty = 12;
    d.nodes[8].size = 8;
    let e = gcdump::read(&synth::write(&d)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Invalid { found: 12, .. }), "{e}");
    // A root index past the last node.
    let mut d = synth::dotnet(10, false);
    d.root = 14;
    let e = gcdump::read(&synth::write(&d)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Invalid { found: 14, .. }), "{e}");
}

/// Other snapshots, named by `CLRPROF_GCDUMP_FILES` (paths separated by
/// `:`), each read whole: node sizes adding up to the stated total, every
/// child and type index in range, and the transcoded log one heap dump
/// with the graph's objects and bytes. Run with
/// `CLRPROF_GCDUMP_FILES=a.gcdump:b.gcdump cargo test --test gcdump_reader -- --ignored`.
#[test]
#[ignore = "needs CLRPROF_GCDUMP_FILES"]
fn snapshots_named_in_the_environment() {
    let files = std::env::var("CLRPROF_GCDUMP_FILES").expect("CLRPROF_GCDUMP_FILES names the snapshots to read");
    for path in files.split(':').filter(|p| !p.is_empty()) {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(gcdump::is_gcdump(&bytes), "{path}");
        let start = std::time::Instant::now();
        let g = gcdump::read(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        let read_time = start.elapsed();
        assert_eq!(g.nodes().map(|n| u64::from(g.node_size(n))).sum::<u64>(), g.total_size(), "{path}");
        let start = std::time::Instant::now();
        let log = transcode(&g);
        let transcode_time = start.elapsed();
        let model = clrprof::model::load(&log, &Default::default()).unwrap_or_else(|e| panic!("{path}: {e}"));
        let list = clrprof::query::dumps::list(&model);
        assert_eq!(list.len(), 1, "{path}");
        assert_eq!((list[0].objects, list[0].bytes), (g.object_count() as u64, g.object_bytes()), "{path}");
        eprintln!(
            "{path}: {} nodes, {} types, {} objects, {} bytes, {} roots {:?}, {}-bit, version {}, sampled {}, {} bytes held, tool {:?}",
            g.node_count(),
            g.type_count(),
            g.object_count(),
            g.object_bytes(),
            list[0].roots,
            list[0].root_kinds,
            u32::from(g.pointer_size()) * 8,
            g.info().version,
            g.sampling().is_sampled(),
            g.heap_bytes(),
            g.info().creation_tool
        );
        eprintln!("  read in {read_time:?}, transcoded in {transcode_time:?} ({} bytes of log)", log.len());
    }
}

/// A leak held only by something the snapshots do not name: three
/// snapshots of one process where an `Object[]` that no root reaches holds
/// 100, 200 and 300 `Foo`s. The `Foo`s are held by unnamed roots, so
/// `leaks` counts them (a leak of `Foo`, held by the array, from an
/// unnamed root); taken for garbage, they would be no leak at all.
#[test]
fn a_leak_held_by_unnamed_roots_is_found() {
    let models: Vec<clrprof::model::Model> = [100u32, 200, 300]
        .iter()
        .map(|&k| {
            let mut d = synth::dotnet(10, true);
            let first = d.nodes.len() as u32 + 1;
            let children: Vec<u32> = (first..first + k).collect();
            d.nodes.push(synth::Node { ty: 10, size: 40 + 8 * k as i32, children, undefined: false, address: 0x7f00_0030_0000 });
            for i in 0..u64::from(k) {
                d.nodes.push(synth::Node { ty: 11, size: 24, children: vec![], undefined: false, address: 0x7f00_0040_0000 + 32 * i });
            }
            synthetic(&d).1
        })
        .collect();
    let index = clrprof::query::dumps::DumpIndex(0);
    let series: Vec<clrprof::query::dumps::SeriesDump> = models
        .iter()
        .enumerate()
        .map(|(k, model)| clrprof::query::dumps::SeriesDump { model, index, at_ms: 60_000.0 * k as f64 })
        .collect();
    let rule = clrprof::query::dumps::LeakRule { min_objects: 50, min_bytes: 1000, ..Default::default() };
    let report = clrprof::query::dumps::leaks(&series, rule);
    assert_eq!(report.verdict, clrprof::query::dumps::Verdict::Leak, "{report:?}");
    assert!(report.dumps.iter().all(|d| d.unreachable == 0), "{:?}", report.dumps);
    let foo = report.leaks.iter().find(|l| l.series.name == "Foo").unwrap_or_else(|| panic!("Foo leaks: {report:?}"));
    // The two Foos of the synthetic heap, and the array's.
    assert_eq!(foo.series.objects, vec![102, 202, 302]);
    let holder = foo.holder.as_ref().expect("what holds the Foos");
    assert_eq!(holder.container.name, "System.Object[]");
    assert!(holder.root.as_ref().is_some_and(|r| r.flags & clrprof::format::records::ROOT_UNNAMED != 0), "{holder:?}");
    // Retained sizes and paths count them too.
    let r = clrprof::query::dumps::retained(&models[2], index, 10).expect("retained");
    assert_eq!((r.unreachable_objects, r.unreachable_bytes), (0, 0));
    let p = clrprof::query::dumps::paths_to(&models[2], index, "Foo", 400).expect("paths");
    assert_eq!(p.unreachable, 0);
    let t = models[2].heap_dumps();
    let unnamed = t.roots(&t.dumps()[0]).iter().filter(|r| r.flags & clrprof::format::records::ROOT_UNNAMED != 0).count();
    assert!(unnamed >= 1, "the array is held by an unnamed root");
}
