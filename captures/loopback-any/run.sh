set -e
ip link set lo up
ip link set lo mtu 1280
cd /tmp/qc
rm -f any.pcap any.pcapng
tcpdump -i any -U -w any.pcap 2>tcpdump.log & T=$!
dumpcap -i any -w any.pcapng -q 2>dumpcap.log & S=$!
sleep 3
python3 send.py
sleep 1
kill -INT $T $S
wait $T $S || true
ls -la any.pcap any.pcapng
