#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs into fuzz/seeds/<target>/: the
memory bombs of the guide's "The memory rule" (scaled to fit -max_len),
and a few well-formed lines for the wire and control targets.

Usage: python3 fuzz/make_seeds.py  (from the repository root or fuzz/)
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def huge_objects(count):
    """`count` objects of 2 GB, 4 GB apart (the 2.5 KB log that took 2.6 GB)."""
    lines = ["t 1 0 System.Byte[]", "n 1 1 1 2147483000"]
    lines += ["! 1 0x%x 1" % (0x100000000000 + i * 0x100000000) for i in range(count)]
    return ("\n".join(lines) + "\n").encode()


def deep_prefix(depth, count, copy):
    """A stack of `depth` frames and `count` stacks taking a prefix of it:
    shared (flag 4) or copied from a reference of the other kind."""
    lines = ["f 1 Main (void) 0x1000 10", "n 1 0 " + " ".join(["1"] * depth)]
    flag = depth * 4 + 2 if copy else 4
    lines += ["n %d %d 1" % (i + 2, flag) for i in range(count)]
    return ("\n".join(lines) + "\n").encode()


def moves(objects, count):
    """`objects` objects, then `count` `u` records moving them all back and
    forth within one GC (relocations logged until the GC's end)."""
    lines = ["t 1 0 System.Object", "n 1 1 1 24"]
    lines += ["! 1 0x%x 1" % (0x10000 + 24 * i) for i in range(objects)]
    span = 24 * objects
    for i in range(count):
        a, b = (0x10000, 0x10000 + span) if i % 2 == 0 else (0x10000 + span, 0x10000)
        lines.append("u 0x%x 0x%x %d" % (a, b, span))
    lines.append("g 1 0 0")
    return ("\n".join(lines) + "\n").encode()


def gzip_newlines(n):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(b"\n" * n) + c.flush()


def zstd_rle(blocks):
    """A zstd frame of run-length blocks of 128 KB of newlines."""
    out = bytearray(struct.pack("<I", 0xFD2FB528)) + bytes([0x00, 7 << 3])
    for i in range(blocks):
        h = (131072 << 3) | (1 << 1) | (1 if i == blocks - 1 else 0)
        out += struct.pack("<I", h)[:3] + b"\n"
    return bytes(out)


for target in ("parse", "load"):
    put(target, "huge_objects_100.log", huge_objects(100))
    put(target, "deep_prefix_copied.log", deep_prefix(3000, 700, True))
    put(target, "deep_prefix_shared.log", deep_prefix(3000, 700, False))
    put(target, "moves_in_one_gc.log", moves(600, 150))
# The log targets take text; compressed bombs are read by `clrprof` (see
# crates/cli/tests/memory_rule.rs). Kept here as inputs for the wire
# target's data frames.
put("wire", "gzip_newlines", gzip_newlines(1 << 20))
put("wire", "zstd_rle", zstd_rle(64))
put("wire", "challenge", b"CLRPROF-COLLECT 1 " + b"ab" * 32 + b"\n")
put("wire", "hello_fields", b"role=resume\tnonce=" + b"cd" * 32 + b"\tpid=42\tprogram=app\truntime=8.0.4\tsession=s1\tspool=/tmp/x\tspool_from=10\tcatch_up=1\tcontent=log")
put("wire", "command", b"comment hello there")
put("wire", "frames", b"D\x00\x00\x00\x05hello" + b"C\x00\x00\x00\x06" + b"1 dump" + b"A\x00\x00\x00\x08" + bytes(8) + b"E\x00\x00\x00\x00")
put("control", "dump", b"dump\tlabel=after warm-up\toutput=/tmp/d.log\n")
put("control", "status_reply", b"ok\tpid=42\tlog=/tmp/a.log\tattached=1\tallocations=1\tcalls=0\tdumps=2\tversion=0.1.0\n")
put("control", "dump_reply", b"ok\tindex=1\tlog=/tmp/a.log\tobjects=10\troots=2\tbytes=100\tmillis=5\n")
# Found by fuzzing: an `ok` with a dump and a status (both write `log`).
put("control", "dump_and_status_reply", b"ok\tindex=1\tlog=/tmp/a.log\tobjects=1\troots=1\tbytes=1\tmillis=1\tpid=4\tattached=1\tallocations=1\tcalls=0\tdumps=1\tversion=1\n")
put("control", "many_fields", b"dump" + b"\ta=1" * 20000 + b"\n")
