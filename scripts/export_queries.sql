-- Queries over a `quakecap export` folder, run as they are by DuckDB
-- (scripts/duckdb_export.py) and Spark SQL (scripts/spark_export.py) on views named after
-- the tables (`flows`, `samples`, `events`, ...), each with its `source` partition column.
-- Each query starts with a `-- name:` line; they must stay valid in both dialects.

-- name: players_by_median_ping
-- Ping as the capture saw it: a server message (s2c, accepted) to the first client message
-- that acknowledges it, in ms, per player (connections' player names), median over all files.
SELECT f.name AS player,
       count(*) AS pings,
       round(median(p.rtt_ms), 1) AS median_ping_ms
FROM (
    SELECT c.source, c.flow, (min(c.time) - s.time) * 1000 AS rtt_ms
    FROM samples s
    JOIN samples c ON c.source = s.source AND c.flow = s.flow AND c.ack = s.seq
    WHERE s.dir = 's2c' AND s.arrival = 'accepted' AND c.dir = 'c2s' AND c.time >= s.time
    GROUP BY c.source, c.flow, s.seq, s.time
) p
JOIN flows f ON f.source = p.source AND f.flow = p.flow
WHERE f.name IS NOT NULL
GROUP BY f.name
ORDER BY median_ping_ms, player;

-- name: frags_per_player
-- Kills of another player (no suicides, no team kills), per killer, across every file.
SELECT killer AS player,
       count(*) AS frags,
       count(DISTINCT source) AS files
FROM events
WHERE kind = 'kill' AND killer IS NOT NULL AND NOT suicide AND NOT coalesce(team_kill, false)
GROUP BY killer
ORDER BY frags DESC, player;
