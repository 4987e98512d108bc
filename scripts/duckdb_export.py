#!/usr/bin/env python3
"""Run scripts/export_queries.sql with DuckDB over a `quakecap export` folder.

usage: duckdb_export.py OUT_DIR [--json]

Each table of OUT_DIR becomes a view (`read_parquet` with Hive partitioning, so every row has
its `source`); each query's rows are printed as a table, or with --json as one JSON object
{query name: [rows as lists]}.
"""
import json
import os
import sys

import duckdb

from export_query_file import queries  # noqa: E402  (beside this script)

TABLES = ["flows", "messages", "usercmds", "player_states", "server_commands", "events", "samples"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    con = duckdb.connect()
    for t in TABLES:
        glob = os.path.join(out, t, "*", "*.parquet").replace("'", "''")
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{glob}', hive_partitioning = true)"
        )
    here = os.path.dirname(os.path.abspath(__file__))
    results = {}
    for name, sql in queries(os.path.join(here, "export_queries.sql")):
        rows = con.execute(sql).fetchall()
        results[name] = [list(r) for r in rows]
    if "--json" in sys.argv:
        print(json.dumps(results))
        return
    for name, rows in results.items():
        print(f"== {name}")
        for r in rows:
            print("  ".join(str(x) for x in r))


if __name__ == "__main__":
    main()
