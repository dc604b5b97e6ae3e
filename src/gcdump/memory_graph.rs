//! The `Graphs.MemoryGraph` object: PerfView's `Graph` fields, then the
//! nodes' addresses.
//!
//! ```text
//! i64 totalSize  i32 rootIndex
//! i32 typeCount  (string name, i32 size, string module) * typeCount
//! i32 nodeCount  (u32 label into the blob) * nodeCount
//! i32 blobSize   blob: per node, at its label, compressed integers:
//!                typeIndex << 1 | hasSize, [size], childCount,
//!                (child - node) * childCount
//! [version >= 1 readers: a deferred region of ProjectN type ids]
//! i32 addressCount  (i64 address) * addressCount   (MemoryGraph)
//! [Byte tag, bool is64Bit]                          (tagged, newer files)
//! ```

use super::cursor::compressed_int;
use super::error::Error;
use super::graph::HeapGraph;
use super::ids::{NodeIndex, TypeIndex};
use super::serialization::{tag, Deserializer, TypeRef};

/// Reads the fields of a MemoryGraph (after its type) into `g`, up to and
/// including its EndObject tag.
pub(crate) fn read_memory_graph(de: &mut Deserializer<'_>, ty: &TypeRef, g: &mut HeapGraph) -> Result<(), Error> {
    let at = de.cur.pos();
    let total = de.cur.i64("the graph's 8-byte total size")?;
    g.total_size = u64::try_from(total).map_err(|_| Error::invalid(at, "a total size of 0 or more", total))?;
    let root_at = de.cur.pos();
    let root = de.cur.i32("the root node index")?;

    // Types: a name, a size and a module name each (12 bytes at least).
    let types = de.cur.count(12, "the type count")?;
    g.type_names.reserve_exact(types);
    g.type_modules.reserve_exact(types);
    g.type_sizes.reserve_exact(types);
    for _ in 0..types {
        let name = de.cur.string("a type name")?.unwrap_or_default();
        let size = de.cur.i32("a type size")?;
        let module = de.cur.string("a type's module name")?;
        g.type_names.push(name.into_boxed_str());
        g.type_sizes.push(size);
        g.type_modules.push(module.map(String::into_boxed_str));
    }

    // Nodes: the label of each node's data in the blob.
    let nodes = de.cur.count(4, "the node count")?;
    let labels_at = de.cur.pos();
    let labels = de.cur.bytes(nodes * 4, "the nodes' labels")?;
    let blob_len = de.cur.count(1, "the node blob's size")?;
    let blob_at = de.cur.pos();
    let blob = de.cur.bytes(blob_len, "the node blob")?;
    if root < 0 || root as usize >= nodes {
        return Err(Error::invalid(root_at, "a root node index below the node count", i64::from(root)));
    }
    g.root = NodeIndex(root as u32);
    decode_nodes(g, labels, labels_at, blob, blob_at, types)?;

    // Types known only by id and module (ProjectN): a region whose end is
    // a forward reference; nothing in it changes the graph.
    if ty.min_reader >= 1 {
        de.skip_region()?;
    }

    let count_at = de.cur.pos();
    let addresses = de.cur.count(8, "the address count")?;
    if addresses != 0 && addresses != nodes {
        return Err(Error::invalid(count_at, "an address count of 0 or the node count", addresses as i64));
    }
    g.addresses.reserve_exact(addresses);
    for _ in 0..addresses {
        g.addresses.push(de.cur.i64("a node address")? as u64);
    }
    if g.addresses.iter().all(|&a| a == 0) {
        g.addresses = Vec::new();
    }
    if de.try_tag(tag::BYTE) {
        g.is_64bit = de.cur.bool("the 64-bit flag")?;
    }
    de.end_object()
}

/// Decodes every node's type, size and children from the blob.
fn decode_nodes(g: &mut HeapGraph, labels: &[u8], labels_at: usize, blob: &[u8], blob_at: usize, types: usize) -> Result<(), Error> {
    let nodes = labels.len() / 4;
    g.node_types.reserve_exact(nodes);
    g.node_sizes.reserve_exact(nodes);
    g.child_start.reserve_exact(nodes + 1);
    g.child_start.push(0);
    // Distinct nodes' children are disjoint in the blob, one byte at least
    // each; only undefined nodes share their (childless) data. A file
    // whose nodes claim more children than that is refused, which bounds
    // memory and time by the blob's size.
    let budget = blob.len();
    // Likewise their data: a label that two defined nodes share would let
    // 4 bytes of the file stand for a whole object each time (a file of
    // such labels costs tens of times its size once loaded). Refused.
    let mut used = vec![0u64; blob.len().div_ceil(64)];
    for (i, l) in labels.chunks_exact(4).enumerate() {
        let label = u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize;
        let label_at = labels_at + 4 * i;
        if label >= blob.len() {
            return Err(Error::invalid(label_at, "a node label inside the node blob", label as i64));
        }
        let mut pos = label;
        let next = |what: &'static str, pos: &mut usize| {
            let at = blob_at + *pos;
            compressed_int(blob, pos).ok_or(Error::end(at, what))
        };
        let type_and_size = next("a node's type", &mut pos)?;
        let t = type_and_size >> 1;
        if t < 0 || t as usize >= types {
            return Err(Error::invalid(blob_at + label, "a node type index below the type count", i64::from(t)));
        }
        if t != 0 {
            let (word, bit) = (label / 64, 1u64 << (label % 64));
            if let Some(w) = used.get_mut(word) {
                if *w & bit != 0 {
                    return Err(Error::invalid(label_at, "a node label of its own (only undefined nodes share one)", label as i64));
                }
                *w |= bit;
            }
        }
        let size_at = blob_at + pos;
        let size = if type_and_size & 1 != 0 { next("a node's size", &mut pos)? } else { g.type_sizes[t as usize] };
        let size = u32::try_from(size).map_err(|_| Error::invalid(size_at, "a node size of 0 or more", i64::from(size)))?;
        let count_at = blob_at + pos;
        let count = next("a node's child count", &mut pos)?;
        let room = budget.saturating_sub(g.children.len());
        if count < 0 || count as usize > room {
            return Err(Error::invalid(count_at, "a child count that fits in the node blob", i64::from(count)));
        }
        g.children.reserve(count as usize);
        for _ in 0..count {
            let at = blob_at + pos;
            let delta = next("a child node", &mut pos)?;
            let child = delta.wrapping_add(i as i32);
            if child < 0 || child as usize >= nodes {
                return Err(Error::invalid(at, "a child node index below the node count", i64::from(child)));
            }
            g.children.push(NodeIndex(child as u32));
        }
        g.node_types.push(TypeIndex(t as u32));
        g.node_sizes.push(size);
        g.child_start.push(g.children.len() as u32);
    }
    Ok(())
}
