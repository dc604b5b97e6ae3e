"""Reads a clrprof Parquet dataset (many logs, one Hive partition `log=NAME`
per log in each table's folder) with PySpark in local mode and prints the
JSON that tests/duckdb/dataset.py prints, computed by Spark SQL: per log,
its row of the `logs` table, the Summary's allocated and final-heap bytes
and object count, and the top types by allocated and by final-heap bytes.
Used by crates/export/tests/dataset.rs.

Usage: python dataset.py DATASET_DIR TOP
"""

import json
import sys

from pyspark.sql import SparkSession


def rows(spark, sql):
    return [r.asDict() for r in spark.sql(sql).collect()]


def main():
    folder, top = sys.argv[1], int(sys.argv[2])
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("clrprof dataset test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # The partition column `log` is always text.
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in ["logs", "objects", "types"]:
        spark.read.parquet(f"{folder}/{t}").createOrReplaceTempView(t)
    out = {
        "logs": rows(spark, "SELECT log, name, host, unix_millis(start_time) AS start_ms, start_time_source "
                            "FROM logs ORDER BY log"),
        "summary": rows(spark, "SELECT log, CAST(sum(size) AS BIGINT) AS allocated_bytes, "
                               "CAST(coalesce(sum(CASE WHEN fate = 'alive' THEN size END), 0) AS BIGINT) AS final_heap_bytes, "
                               "count(*) AS objects FROM objects GROUP BY log ORDER BY log"),
    }
    for key, where in [("top_allocated", "TRUE"), ("top_final", "o.fate = 'alive'")]:
        out[key] = rows(spark, f"""
            SELECT log, name, bytes, objects FROM (
                SELECT log, name, bytes, objects,
                       row_number() OVER (PARTITION BY log ORDER BY bytes DESC, name) AS k
                FROM (SELECT o.log, t.name, CAST(sum(o.size) AS BIGINT) AS bytes, count(*) AS objects
                      FROM objects o JOIN types t ON o.log = t.log AND o.type_id = t.id
                      WHERE {where}
                      GROUP BY o.log, t.name))
            WHERE k <= {top}
            ORDER BY log, bytes DESC, name""")
    spark.stop()
    print(json.dumps(out))


main()
