"""Reads a clrprof Parquet export with DuckDB and prints, as one JSON
object, the figures the export test compares with clrprof's own queries:
the Summary's allocated and final-heap bytes, the allocated and final-heap
histograms by type name, the lifetime table, each heap dump's objects and
bytes per type, and the answers of the README's recipes
(crates/export/sql/recipes.sql, run without their LIMIT).

Usage: python check.py EXPORT_DIR RECIPES_SQL
"""

import json
import os
import sys

import duckdb

TABLES = ["objects", "stacks", "functions", "modules", "types", "gcs", "gc_ranges", "handles",
          "finalizations", "comments", "heap_dumps", "dump_objects", "dump_references", "dump_roots"]


def rows(con, sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def main():
    folder, recipes = sys.argv[1], sys.argv[2]
    con = duckdb.connect()
    for t in TABLES:
        path = os.path.join(folder, t + ".parquet").replace("'", "''")
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{path}')")
    out = {}
    out["allocated_bytes"] = con.execute("SELECT coalesce(sum(size), 0) FROM objects").fetchone()[0]
    out["final_heap_bytes"] = con.execute(
        "SELECT coalesce(sum(size), 0) FROM objects WHERE fate = 'alive'").fetchone()[0]
    by_type = """
        SELECT t.name AS name, sum(o.size) AS bytes, count(*) AS count
        FROM objects o JOIN types t ON t.id = o.type_id {where}
        GROUP BY t.name ORDER BY t.name"""
    out["allocated_by_type"] = rows(con, by_type.format(where=""))
    out["final_by_type"] = rows(con, by_type.format(where="WHERE o.fate = 'alive'"))
    cols = {
        "gen0": "o.fate = 'gc' AND o.generation = 0",
        "gen1": "o.fate = 'gc' AND o.generation = 1",
        "gen2": "o.fate = 'gc' AND o.generation = 2",
        "loh": "o.fate = 'gc' AND o.generation >= 3",
        "erased": "o.fate = 'erased'",
        "alive_at_end": "o.fate = 'alive'",
        "untracked": "o.fate = 'untracked'",
    }
    select = ", ".join(
        f"count(*) FILTER (WHERE {c}) AS {k}_objects, "
        f"coalesce(sum(coalesce(o.size, 0)) FILTER (WHERE {c}), 0) AS {k}_bytes"
        for k, c in cols.items())
    out["lifetime"] = rows(con, f"""
        SELECT coalesce(t.name, '(no type)') AS name, count(*) AS allocated_objects,
               sum(coalesce(o.size, 0)) AS allocated_bytes, {select}
        FROM objects o LEFT JOIN types t ON t.id = o.type_id
        GROUP BY 1 ORDER BY 1""")
    out["dumps"] = rows(con, """
        SELECT dump, type_id, count(*) AS objects, sum(size) AS bytes
        FROM dump_objects GROUP BY dump, type_id ORDER BY dump, type_id""")
    out["dump_list"] = rows(con, "SELECT dump, objects, bytes FROM heap_dumps ORDER BY dump")
    text = open(recipes, encoding="utf-8").read()
    out["recipes"] = {}
    for part in text.split("-- name: ")[1:]:
        name, sql = part.split("\n", 1)
        sql = sql.replace("LIMIT 20", "")
        out["recipes"][name.strip()] = rows(con, sql)
    json.dump(out, sys.stdout, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
