# Where the instructions go, by layer of the pipeline: sums the exclusive costs of
# `callgrind_annotate --inclusive=no --auto=no --threshold=100 FILE` by the source file the
# code comes from (library code inlined into ours counts for the function it sits in).
# Usage: callgrind_annotate ... | awk -v per=PACKETS -v unit=packet [-v dec=1] -f profile-layers.awk
function layer(path) {
    if (path ~ /src\/capture\//) return "capture reading (pcap/pcapng)"
    if (path ~ /src\/net\//) return "link / IP / UDP"
    if (path ~ /src\/(flow\/|pipeline\.rs|parallel\.rs|q3\/tracker\.rs|qw\/)/) return "flow table, routing"
    if (path ~ /src\/q3\/(netchan|conn)/) return "netchan (sequencing, fragments)"
    if (path ~ /src\/q3\/scramble/) return "descrambling"
    if (path ~ /src\/q3\/(oob)/) return "connectionless (connect, adaptive Huffman)"
    if (path ~ /src\/q3\/(bits|huffman)/) return "bit reader + Huffman"
    if (path ~ /src\/q3\/(svc|delta|state|fields)/) return "server messages (snapshots, deltas)"
    if (path ~ /src\/q3\/(clc|usercmd)/) return "client messages (usercmds)"
    if (path ~ /src\/q3\/demo/) return "demo file records"
    if (path ~ /src\/(sink|cli)\//) return "output (table)"
    if (path ~ /malloc|memmove|memset|memcpy|memchr|memcmp|strlen/) return "libc (malloc, memcpy)"
    if (path ~ /^\/rustc\//) return "Rust core/alloc, inlined in the above"
    return "other (startup, std)"
}
# quakecap::q3::svc::f -> src/q3/svc.rs (enough for layer()).
function module_path(fn,   m) {
    if (fn !~ /^(<)?quakecap::/) return "/rustc/"
    m = fn; sub(/^<?quakecap::/, "", m); sub(/::[^:]*$/, "", m)
    gsub(/::/, "/", m)
    return "src/" m ".rs"
}
/^ *[0-9,]+ \([ 0-9.]+%\)  / {
    n = $1; gsub(",", "", n)
    rest = $0; sub(/^ *[0-9,]+ \([ 0-9.]+%\)  /, "", rest)
    if (rest ~ /PROGRAM TOTALS/) { total = n; next }
    path = rest; sub(/:.*/, "", path)
    # Library code inlined into ours counts for the function it was inlined into.
    if (path ~ /^\/rustc\//) {
        fn = rest; sub(/^[^:]*:/, "", fn); sub(/ \[.*/, "", fn)
        path = module_path(fn)
    }
    if (rest ~ /AdaptiveTree|adaptive_/) path = "src/q3/oob"
    if (rest ~ /^\?\?\?:__rustc::|__rdl_(alloc|dealloc|realloc)/) path = "malloc"
    sum[layer(path)] += n
}
END {
    fmt = dec ? "%.1f" : "%.0f"
    n = split("capture reading (pcap/pcapng)|link / IP / UDP|flow table, routing|" \
        "connectionless (connect, adaptive Huffman)|netchan (sequencing, fragments)|" \
        "descrambling|demo file records|bit reader + Huffman|" \
        "server messages (snapshots, deltas)|client messages (usercmds)|" \
        "libc (malloc, memcpy)|Rust core/alloc, inlined in the above|output (table)|" \
        "other (startup, std)", order, "|")
    printf "| layer | instructions/%s | share |\n|---|---:|---:|\n", unit
    for (i = 1; i <= n; i++) {
        k = order[i]
        if (sum[k] > 0) printf "| %s | " fmt " | %.1f %% |\n", k, sum[k] / per, 100 * sum[k] / total
    }
    printf "| **total** | " fmt " | |\n", total / per
}
