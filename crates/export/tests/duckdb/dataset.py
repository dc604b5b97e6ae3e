"""Reads a clrprof Parquet dataset (many logs, one Hive partition `log=NAME`
per log in each table's folder) with DuckDB and prints, as one JSON object,
per log: its row of the `logs` table (name, host, start time), the
Summary's allocated and final-heap bytes, and the top types by allocated
and by final-heap bytes. Used by crates/export/tests/dataset.rs.

Usage: python dataset.py DATASET_DIR TOP
"""

import json
import sys

import duckdb


def rows(con, sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def main():
    folder, top = sys.argv[1], int(sys.argv[2])
    con = duckdb.connect()
    for t in ["logs", "objects", "types"]:
        # The partition column `log` is always text (a name such as `01`
        # would otherwise be read as a number).
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{folder}/{t}/*/*.parquet', "
            "hive_partitioning = true, hive_types = {'log': VARCHAR})"
        )
    out = {
        "logs": rows(con, "SELECT log, name, host, epoch_ms(start_time) AS start_ms, start_time_source "
                          "FROM logs ORDER BY log"),
        "summary": rows(con, "SELECT log, sum(size)::BIGINT AS allocated_bytes, "
                             "coalesce(sum(size) FILTER (WHERE fate = 'alive'), 0)::BIGINT AS final_heap_bytes, "
                             "count(*) AS objects FROM objects GROUP BY log ORDER BY log"),
    }
    for key, where in [("top_allocated", "TRUE"), ("top_final", "o.fate = 'alive'")]:
        out[key] = rows(con, f"""
            WITH by_type AS (
                SELECT o.log, t.name, sum(o.size)::BIGINT AS bytes, count(*) AS objects
                FROM objects o JOIN types t ON o.log = t.log AND o.type_id = t.id
                WHERE {where}
                GROUP BY o.log, t.name)
            SELECT * FROM by_type
            QUALIFY row_number() OVER (PARTITION BY log ORDER BY bytes DESC, name) <= {top}
            ORDER BY log, bytes DESC, name""")
    print(json.dumps(out))


main()
