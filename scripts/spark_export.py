#!/usr/bin/env python3
"""Export many captures and demos with Spark, then query the result with Spark SQL.

usage: spark_export.py [--quakecap PATH] --out DIR [--master URL] [--json] LIST_OR_FILE...

Each argument is a capture/demo file, or a text file listing one input per line (`#` starts a
comment). Every input becomes one Spark task that runs `quakecap export INPUT --source NAME
--out DIR` on an executor (the binary and DIR must be reachable from every executor: a shared
filesystem, or local mode); NAME is the input's stem, with its folder in front when stems
collide (the rule `quakecap export` applies to one list). Then every table of DIR is read with
Hive partition discovery (column `source`) and the queries of scripts/export_queries.sql run
with Spark SQL; their rows are printed, or with --json as one JSON object on the last line.

Spark does the distribution (no cluster code here): `--master local[*]` (the default when run
with plain python3) runs on this machine, `spark-submit --master yarn|k8s://...
scripts/spark_export.py ...` on a cluster.
Exit status: 0, or 2 when an input could not be exported (the others are).
"""
import argparse
import json
import os
import re
import subprocess
import sys

from export_query_file import queries  # noqa: E402  (beside this script)

TABLES = ["flows", "messages", "usercmds", "player_states", "server_commands", "events", "samples"]


def clean(s):
    """Partition-safe name, as quakecap's partition::clean."""
    c = re.sub(r"[^A-Za-z0-9._-]", "_", s).lstrip(".")
    return c or "input"


def stem(path):
    name = os.path.basename(path)
    for suffix in (".gz", ".zst", ".zstd"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    i = name.rfind(".")
    return name[:i] if i > 0 else name


def source_names(paths):
    """One distinct name per input, as quakecap's partition::source_names."""
    stems = [clean(stem(p)) for p in paths]
    counts = {}
    for s in stems:
        counts[s] = counts.get(s, 0) + 1
    used, out = set(), []
    for p, s in zip(paths, stems):
        name = s
        if counts[s] > 1:
            folder = clean(os.path.basename(os.path.dirname(os.path.abspath(p))))
            if folder:
                name = f"{folder}_{s}"
        base, n = name, 2
        while name in used:
            name = f"{base}_{n}"
            n += 1
        used.add(name)
        out.append(name)
    return out


def read_inputs(args):
    files = []
    for a in args:
        if a.endswith(".txt") or a.endswith(".lst"):
            with open(a, encoding="utf-8") as f:
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if line:
                        files.append(line)
        else:
            files.append(a)
    return files


def export_task(quakecap, out):
    """The Spark task: one `quakecap export` run per input."""

    def run(item):
        path, name = item
        p = subprocess.run(
            [quakecap, "export", path, "--source", name, "--out", out],
            capture_output=True,
            text=True,
        )
        return (path, name, p.returncode, p.stdout.strip(), p.stderr.strip())

    return run


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quakecap", default="quakecap")
    ap.add_argument(
        "--master", default=None, help="Spark master (default: spark-submit's, else local[*])"
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName("quakecap-export")
    if a.master:
        # Without it: spark-submit's --master, and plain `python3` gets Spark's default,
        # local[*].
        b = b.master(a.master)
    spark = (
        b.config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    files = read_inputs(a.inputs)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    quakecap = os.path.abspath(a.quakecap) if os.path.sep in a.quakecap else a.quakecap
    items = list(zip(files, source_names(files)))
    done = (
        spark.sparkContext.parallelize(items, max(1, len(items)))
        .map(export_task(quakecap, out))
        .collect()
    )
    failed = 0
    for path, name, rc, stdout, stderr in done:
        if rc == 0:
            print(stdout, file=sys.stderr)
        else:
            failed += 1
            print(f"spark_export: {path}: quakecap exit {rc}: {stderr}", file=sys.stderr)

    for t in TABLES:
        d = os.path.join(out, t)
        if os.path.isdir(d):
            spark.read.option("basePath", d).parquet(d).createOrReplaceTempView(t)

    here = os.path.dirname(os.path.abspath(__file__))
    results = {}
    for name, sql in queries(os.path.join(here, "export_queries.sql")):
        results[name] = [list(r) for r in spark.sql(sql).collect()]
    spark.stop()
    if a.json:
        print(json.dumps(results))
    else:
        for name, rows in results.items():
            print(f"== {name}")
            for r in rows:
                print("  ".join(str(x) for x in r))
    sys.exit(2 if failed else 0)


if __name__ == "__main__":
    main()
