#!/usr/bin/env python3
"""scripts/conformance/dns.py — the conformance cluster's DNS: a small server answering from the API server.

The e2e reachability checks name Services (`<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc.cluster.local`), so pods need a
cluster DNS; this answers just that, from the API on every query (no cache: a test that changes a Service's type
sees the change at once):
  A     <svc>.<ns>.svc.<domain>            ClusterIP(s); a headless Service: its ready endpoints' addresses
  CNAME <svc>.<ns>.svc.<domain>            an ExternalName Service's externalName
  A     <hostname>.<svc>.<ns>.svc.<domain> an endpoint with that hostname
  A     a-b-c-d.<ns>.pod.<domain>          a.b.c.d
Anything else: NXDOMAIN (the cluster has no way out, so nothing is forwarded). Not a full DNS: the `[sig-network]
DNS` tests that want SRV or PTR records fail on it for every proxy alike.

usage: dns.py --listen IP --port 53 --kubeconfig-dir DIR (ca.crt admin.crt admin.key) --api https://IP:6443
Standard library only.
"""
import argparse
import ipaddress
import json
import socket
import socketserver
import ssl
import struct
import sys
import threading
import urllib.request

DOMAIN = "cluster.local"
TTL = 5


def api_get(ctx, base, path):
    """GET a JSON object from the API server; None when it is not there."""
    try:
        with urllib.request.urlopen(base + path, context=ctx, timeout=3) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def ready_endpoints(ctx, base, ns, svc):
    """(hostname, address) of the ready endpoints of a Service's EndpointSlices."""
    out = []
    sl = api_get(ctx, base, f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
                            f"?labelSelector=kubernetes.io%2Fservice-name%3D{svc}") or {}
    for s in sl.get("items") or []:
        if s.get("addressType") != "IPv4":
            continue
        for ep in s.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue
            for a in ep.get("addresses") or []:
                out.append((ep.get("hostname"), a))
    return out


def resolve(ctx, base, name):
    """('A', [ips]) / ('CNAME', target) / None for NXDOMAIN."""
    labels = name.rstrip(".").lower().split(".")
    dom = DOMAIN.split(".")
    if labels[-len(dom):] != dom:
        return None
    rest = labels[:-len(dom)]
    if len(rest) == 3 and rest[2] == "pod":
        try:
            return ("A", [str(ipaddress.IPv4Address(rest[0].replace("-", ".")))])
        except ValueError:
            return None
    if len(rest) not in (3, 4) or rest[-1] != "svc":
        return None
    host, svc, ns = (rest[0], rest[1], rest[2]) if len(rest) == 4 else (None, rest[0], rest[1])
    s = api_get(ctx, base, f"/api/v1/namespaces/{ns}/services/{svc}")
    if s is None:
        return None
    spec = s.get("spec") or {}
    if spec.get("type") == "ExternalName" and host is None:
        return ("CNAME", spec.get("externalName", ""))
    eps = ready_endpoints(ctx, base, ns, svc) if (host or spec.get("clusterIP") == "None") else []
    if host is not None:
        ips = [a for h, a in eps if h == host]
        return ("A", ips) if ips else None
    if spec.get("clusterIP") == "None":
        return ("A", [a for _, a in eps])
    return ("A", [ip for ip in (spec.get("clusterIPs") or [spec.get("clusterIP")]) if ip and ":" not in ip])


def qname(data, off):
    labels = []
    while True:
        n = data[off]
        off += 1
        if n == 0:
            return ".".join(labels), off
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(data[off:off + n].decode("ascii", "replace"))
        off += n


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode("ascii", "replace")
    return out + b"\0"


def answer(ctx, base, data):
    """The response to one DNS query message."""
    qid, flags, qd = struct.unpack("!HHH", data[:6])
    name, off = qname(data, 12)
    qtype, qclass = struct.unpack("!HH", data[off:off + 4])
    question = data[12:off + 4]
    rcode, rrs = 0, []
    try:
        res = resolve(ctx, base, name)
    except Exception as e:  # the API is down or slow: SERVFAIL, never a wrong answer
        print(f"dns: {name}: {e}", file=sys.stderr, flush=True)
        res, rcode = None, 2
    if res is None and rcode == 0:
        rcode = 3
    elif res and res[0] == "CNAME" and qtype in (1, 5, 28, 255):
        tgt = encode_name(res[1])
        rrs.append(b"\xc0\x0c" + struct.pack("!HHIH", 5, 1, TTL, len(tgt)) + tgt)
    elif res and res[0] == "A" and qtype in (1, 255):
        for ip in res[1]:
            rrs.append(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, TTL, 4) + socket.inet_aton(ip))
    rflags = 0x8000 | (flags & 0x0100) | 0x0400 | rcode   # QR, RD copied, AA
    return struct.pack("!HHHHHH", qid, rflags, 1, len(rrs), 0, 0) + question + b"".join(rrs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", required=True)
    p.add_argument("--port", type=int, default=53)
    p.add_argument("--pki", required=True, help="dir with ca.crt admin.crt admin.key")
    p.add_argument("--api", required=True)
    a = p.parse_args()
    ctx = ssl.create_default_context(cafile=f"{a.pki}/ca.crt")
    ctx.load_cert_chain(f"{a.pki}/admin.crt", f"{a.pki}/admin.key")

    class Udp(socketserver.BaseRequestHandler):
        def handle(self):
            data, sock = self.request
            try:
                sock.sendto(answer(ctx, a.api, data), self.client_address)
            except (ValueError, struct.error, IndexError):
                pass

    class Tcp(socketserver.StreamRequestHandler):
        def handle(self):
            try:
                (n,) = struct.unpack("!H", self.rfile.read(2))
                r = answer(ctx, a.api, self.rfile.read(n))
                self.wfile.write(struct.pack("!H", len(r)) + r)
            except (ValueError, struct.error, IndexError):
                pass

    socketserver.ThreadingUDPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    udp = socketserver.ThreadingUDPServer((a.listen, a.port), Udp)
    tcp = socketserver.ThreadingTCPServer((a.listen, a.port), Tcp)
    threading.Thread(target=tcp.serve_forever, daemon=True).start()
    print(f"dns: serving {DOMAIN} on {a.listen}:{a.port} from {a.api}", flush=True)
    udp.serve_forever()


if __name__ == "__main__":
    main()
