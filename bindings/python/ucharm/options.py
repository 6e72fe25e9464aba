"""charm4py's Options, and the Charm++ load-balancing flags ucharm has no counterpart of."""
import os
import sys


class Options:
    """charm4py's options (`from ucharm import Options`; also charm.options). ucharm reads
    none of them yet; setting them is harmless (profiling, local message optimisations and
    the like have no ucharm counterpart)."""
    PROFILING = False
    PICKLE_PROTOCOL = -1
    LOCAL_MSG_OPTIM = True
    LOCAL_MSG_BUF_SIZE = 50
    AUTO_FLUSH_WHEN = True
    QUIET = False
    remote_exec = False
    profiling = False
    pickle_protocol = -1
    local_msg_optim = True
    local_msg_buf_size = 50
    auto_flush_wait_queues = True
    quiet = False
    interactive = type("InteractiveOptions", (), {"verbose": 1, "broadcast_imports": True})


# Charm++'s load-balancing options that charm4py programs may pass and the core does not
# take (it takes +balancer, +LBPeriod, +LBEvery, +LBOff, +LBDebug, +trace): taken off the
# command line with a note instead of being refused as unknown runtime options.
_LB_FLAGS = {"+LBOn", "+LBCommOff", "+LBPrintSummary", "+LBTestPESpeed"}
_LB_WITH_VALUE = {"+LBObjOnly"}


def strip_lb_options(argv):
    out, dropped, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a in _LB_FLAGS:
            dropped.append(a)
        elif a in _LB_WITH_VALUE:
            dropped += argv[i:i + 2]
            i += 1
        else:
            out.append(a)
        i += 1
    if dropped and os.environ.get("PMIX_RANK", "0") in ("0", ""):
        sys.stderr.write(f"ucharm: ignoring {' '.join(dropped)} (no ucharm counterpart)\n")
    return out
