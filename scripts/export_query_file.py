"""The `-- name:` blocks of scripts/export_queries.sql, read the same way by the DuckDB and
the Spark runners (so both run exactly the same SQL)."""


def queries(path):
    """(name, sql) of each `-- name:` block of the file."""
    out, name, lines = [], None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("-- name:"):
                if name:
                    out.append((name, "".join(lines).strip().rstrip(";")))
                name, lines = line.split(":", 1)[1].strip(), []
            elif name and not line.startswith("--"):
                lines.append(line)
    if name:
        out.append((name, "".join(lines).strip().rstrip(";")))
    return out
