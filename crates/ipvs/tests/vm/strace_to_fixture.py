#!/usr/bin/env python3
"""strace_to_fixture.py - turn `strace -xx -e sendmsg,recvmsg` output of an
ipvsadm run (see capture.sh) into a fixture of whole netlink messages:
one line per message, `send <hex>` or `recv <hex>`, header included.
MSG_PEEK reads (libnl peeks before reading) are skipped.

    strace_to_fixture.py capture/new_dest.trace > fixtures/new_dest.nl
"""
import re
import struct
import sys

HDR = re.compile(r'\{nlmsg_len=(\d+), nlmsg_type=([^,]+), nlmsg_flags=([^,]+), '
                 r'nlmsg_seq=(\d+), nlmsg_pid=(-?\d+)\}')
TYPES = {'NLMSG_NOOP': 1, 'NLMSG_ERROR': 2, 'NLMSG_DONE': 3, 'NLMSG_OVERRUN': 4}
FLAGS = {'NLM_F_REQUEST': 0x1, 'NLM_F_MULTI': 0x2, 'NLM_F_ACK': 0x4, 'NLM_F_ECHO': 0x8,
         'NLM_F_DUMP_INTR': 0x10, 'NLM_F_ROOT': 0x100, 'NLM_F_MATCH': 0x200,
         'NLM_F_CAPPED': 0x100, 'NLM_F_ACK_TLVS': 0x200, 'NLM_F_DUMP': 0x300}
ERRNO = {'EPERM': 1, 'ENOENT': 2, 'ESRCH': 3, 'EBUSY': 16, 'EEXIST': 17, 'EINVAL': 22,
         'EOPNOTSUPP': 95}


def header(m):
    length = int(m.group(1))
    t = m.group(2).split()[0]
    mtype = TYPES[t] if t in TYPES else int(t, 0)
    flags = 0
    for f in m.group(3).split('|'):
        flags |= FLAGS[f] if f in FLAGS else int(f, 0)
    seq = int(m.group(4))
    pid = int(m.group(5)) & 0xffffffff
    return length, struct.pack('=IHHII', length, mtype, flags, seq, pid)


def unescape(s):
    return bytes(int(h, 16) for h in re.findall(r'\\x([0-9a-f]{2})', s))


def messages(line):
    """Yields the raw bytes of each netlink message printed in one strace line."""
    pos = 0
    while True:
        m = HDR.search(line, pos)
        if not m:
            return
        length, hdr = header(m)
        rest = line[m.end():]
        if rest.startswith(', "'):
            end = rest.index('"', 3)
            body = unescape(rest[3:end])
            pos = m.end() + end
        elif rest.startswith(', {error='):
            err = rest[len(', {error='):].split(',')[0]
            code = -ERRNO[err[1:]] if err.startswith('-') else int(err)
            inner = HDR.search(line, m.end())
            _, inner_hdr = header(inner)
            body = struct.pack('=i', code) + inner_hdr
            pos = inner.end()
            after = line[pos:]
            if after.startswith(', "'):  # not capped: the request's payload follows
                end = after.index('"', 3)
                body += unescape(after[3:end])
                pos += end
        elif rest.startswith(', 0]') or rest.startswith(', 0}'):
            body = b'\0' * 4
            pos = m.end()
        else:
            raise SystemExit(f'cannot parse after header: {rest[:60]!r}')
        msg = hdr + body
        if len(msg) != length:
            raise SystemExit(f'length mismatch: header says {length}, got {len(msg)}')
        yield msg


def main(path):
    for line in open(path):
        if 'MSG_PEEK' in line:
            continue
        call = re.search(r'\b(sendmsg|recvmsg)\(', line)
        if not call:
            continue
        direction = 'send' if call.group(1) == 'sendmsg' else 'recv'
        for msg in messages(line):
            print(direction, msg.hex())


if __name__ == '__main__':
    main(sys.argv[1])
