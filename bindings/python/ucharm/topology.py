"""Hosts and topology-aware spanning trees: charm.myHost(), charm.numHosts(),
charm.getHostPes(host) & co., charm.getTopoTreeEdges and charm.getTopoSubtrees.

Hosts are the core's physical nodes (converse.h): numbered 0.. in the order of their
first PE, each host's PEs in increasing order. A spanning tree over a list of PEs joins
the hosts first (one PE per host, the first listed, with the root standing for its own
host), as a tree of `bfactor` children per PE, and the PEs of each host under that
host's PE: a message down the tree crosses between hosts once per host.
"""
from . import _core

_hosts = None   # host -> its PEs
_pe_host = None  # PE -> (host, rank on the host)


def _load():
    global _hosts, _pe_host
    if _hosts is None:
        hosts = _core.host_map()
        pe_host = [None] * _core.num_pes()
        for h, pes in enumerate(hosts):
            for r, pe in enumerate(pes):
                pe_host[pe] = (h, r)
        _hosts, _pe_host = hosts, pe_host
    return _hosts


def num_hosts():
    return len(_load())


def _host(host, what):
    hosts = _load()
    if not isinstance(host, int) or not 0 <= host < len(hosts):
        raise ValueError(f"charm.{what}({host!r}): no such host (the job runs on {len(hosts)})")
    return hosts[host]


def host_pes(host):
    return list(_host(host, "getHostPes"))


def host_num_pes(host):
    return len(_host(host, "getHostNumPes"))


def host_first_pe(host):
    return _host(host, "getHostFirstPe")[0]


def host_last_pe(host):
    return _host(host, "getHostLastPe")[-1]


def _pe(pe, what):
    _load()
    if not isinstance(pe, int) or not 0 <= pe < len(_pe_host):
        raise ValueError(f"charm.{what}({pe!r}): no such PE (the job has {len(_pe_host)})")
    return _pe_host[pe]


def pe_host(pe):
    return _pe(pe, "getPeHost")[0]


def pe_host_rank(pe):
    return _pe(pe, "getPeHostRank")[1]


def _tree(root, pes, bfactor, what):
    """(parent, children) dicts of the spanning tree over `pes` (root first)."""
    if not isinstance(bfactor, int) or bfactor < 1:
        raise ValueError(f"charm.{what}: bfactor must be a positive int, not {bfactor!r}")
    if pes is None:
        pes = [root] + [p for p in range(_core.num_pes()) if p != root]
    else:
        pes = list(pes)
        if not pes or pes[0] != root:
            raise ValueError(f"charm.{what}: the root PE {root} must be the first of the PEs given")
        if len(set(pes)) != len(pes):
            raise ValueError(f"charm.{what}: the PEs given repeat one")
    groups = {}  # host -> its PEs in list order (the root's host first: dicts keep order)
    for p in pes:
        groups.setdefault(_pe(p, what)[0], []).append(p)
    parent, children = {root: None}, {p: [] for p in pes}

    def link(seq):  # a bfactor-ary tree over seq, seq[0] its root
        for i in range(1, len(seq)):
            par = seq[(i - 1) // bfactor]
            parent[seq[i]] = par
            children[par].append(seq[i])

    link([g[0] for g in groups.values()])  # between hosts
    for g in groups.values():              # inside each host
        link(g)
    return parent, children


def tree_edges(pe, root, pes, bfactor):
    parent, children = _tree(root, pes, bfactor, "getTopoTreeEdges")
    if pe not in children:
        raise ValueError(f"charm.getTopoTreeEdges: PE {pe} is not one of the PEs of the tree")
    return parent[pe], list(children[pe])


def subtrees(root, pes, bfactor):
    _, children = _tree(root, pes, bfactor, "getTopoSubtrees")
    out = []
    for c in children[root]:
        sub, stack = [], [c]
        while stack:
            p = stack.pop()
            sub.append(p)
            stack.extend(reversed(children[p]))
        out.append(sub)
    return out
