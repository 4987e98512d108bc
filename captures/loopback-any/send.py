import socket, time
# IPv4: receiver + sender; sizes chosen to need 0, 1, 3 fragments at MTU 1280
r4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r4.bind(("127.0.0.1", 27960))
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s4.bind(("127.0.0.1", 27961))
s4.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: allow fragmentation
r6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); r6.bind(("::1", 27960))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s6.bind(("::1", 27961))
s6.setsockopt(socket.IPPROTO_IPV6, 23, 0)  # IPV6_MTU_DISCOVER = DONT
def payload(n, tag):
    return bytes((tag + i) % 251 for i in range(n))
for i, n in enumerate([0, 1, 100, 1252, 1253, 2000, 3500]):
    s4.sendto(payload(n, i), ("127.0.0.1", 27960)); time.sleep(0.01)
for i, n in enumerate([10, 1232, 1233, 3000]):
    s6.sendto(payload(n, 100 + i), ("::1", 27960)); time.sleep(0.01)
time.sleep(0.2)
