#!/usr/bin/env python3
# Variants of an iptables-restore input, for timing iptables-nft-restore (see benchmarks.md).
"""Variants of an iptables-restore input (our --dry-run output) for timing iptables-nft-restore.
usage: shape.py VARIANT < input > output
  asis        unchanged
  nocomment   '-m comment --comment "..."' removed
  split=N     nat table as several COMMITs: static chains, then N services (SVC + its SEPs) per block,
              then KUBE-SERVICES (and any other chain) last
  zero        a '-Z' line (no chain) first in each table: turns off the per-chain cache list
"""
import re, sys
from collections import OrderedDict

def tables(text):
    out = OrderedDict(); cur = None
    for line in text.splitlines():
        if line.startswith('#') or not line.strip(): continue
        if line.startswith('*'): cur = line[1:]; out[cur] = (OrderedDict(), []); continue
        if line == 'COMMIT': continue
        decls, rules = out[cur]
        if line.startswith(':'): decls[line.split()[0][1:]] = line
        else: rules.append(line)
    return out

def by_chain(rules):
    d = OrderedDict()
    for r in rules: d.setdefault(r.split()[1], []).append(r)
    return d

def block(name, chains, decls, rules_of):
    lines = ['*' + name] + [decls[c] for c in chains if c in decls]
    for c in chains: lines += rules_of.get(c, [])
    return lines + ['COMMIT']

def split(t, n):
    out = []
    for name, (decls, rules) in t.items():
        if name != 'nat': out += block(name, list(decls), decls, by_chain(rules)); continue
        rules_of = by_chain(rules)
        svcs = [c for c in decls if c.startswith('KUBE-SVC-')]
        owned = set()
        groups = []
        for s in svcs:
            seps = [r.split('-j ')[-1].split()[0] for r in rules_of.get(s, []) if '-j KUBE-SEP-' in r]
            groups.append([s] + seps); owned.update([s] + seps)
        static = [c for c in decls if c not in owned and c not in ('KUBE-SERVICES', 'KUBE-NODEPORTS')]
        out += block('nat', static, decls, rules_of)
        for i in range(0, len(groups), n):
            out += block('nat', [c for g in groups[i:i + n] for c in g], decls, rules_of)
        last = [c for c in ('KUBE-NODEPORTS', 'KUBE-SERVICES') if c in decls]
        out += block('nat', last, decls, rules_of)
    return out

def main():
    v = sys.argv[1]; text = sys.stdin.read()
    if v == 'nocomment': text = re.sub(r' -m comment --comment ("[^"]*"|\S+)', '', text)
    t = tables(text)
    if v.startswith('split='): lines = split(t, int(v.split('=')[1]))
    else:
        lines = []
        for name, (decls, rules) in t.items():
            lines += ['*' + name] + list(decls.values()) + (['-Z'] if v == 'zero' else []) + rules + ['COMMIT']
    print('\n'.join(lines))

main()
