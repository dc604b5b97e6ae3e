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
fn recognised_by_its_first_bytes() {
    let Some((bytes, _)) = test1() else { return };
    assert!(gcdump::is_gcdump(&bytes));
    assert!(gcdump::is_gcdump(&bytes[..gcdump::SNIFF_BYTES]));
    assert!(!gcdump::is_gcdump(&bytes[..gcdump::SNIFF_BYTES - 1]));
    // A NetTrace is FastSerialization too, but not a GCHeapDump.
    if let Some(trace) = corpus("eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace") {
        assert!(!gcdump::is_gcdump(&trace));
        assert!(gcdump::read(&trace).is_err());
    }
    assert!(!gcdump::is_gcdump(b"t 1 0 System.String\n"));
}

#[test]
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
        let refs: Vec<u64> = g
            .children(n)
            .iter()
            .filter(|&&c| g.node_kind(c) == NodeKind::Object)
            .map(|&c| g.node_address(c).unwrap())
            .collect();
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

/// A small deterministic generator (no dependency).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
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
