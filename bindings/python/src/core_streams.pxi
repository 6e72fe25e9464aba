# Part of ucharm/_core.pyx (included there): the stream-ordered channel transfers
# (CkChannel::send_enqueue / recv_enqueue) on a buffer-form end (Link). The transfer starts
# when the CUDA stream reaches it and later work on the stream waits for its completion;
# the host never waits. Each one still names a Request (completed as isend/irecv's are),
# which keeps the buffer alive until the transfer is done.

cdef extern from "<ucharm/charm.h>":
    struct CUstream_st:
        pass
    const char* CmiStreamOpsUnavailable()

cdef extern from "<ucharm/charm.h>" namespace "ck":
    cdef cppclass CkChannelEnqueue "ck::CkChannel":
        bint ready()
        void send_enqueue(const void* ptr, size_t size, CUstream_st* stream, const CkCallback& done)
        void recv_enqueue(void* ptr, size_t size, CUstream_st* stream, const CkCallback& done)


def stream_ops_unavailable():
    """None where stream-ordered transfers work in this process, else why not."""
    cdef const char* why = CmiStreamOpsUnavailable()
    return None if why == NULL else why.decode()


def link_ready(Link link):
    """The peer end's id has arrived: a stream-ordered send can take its tag."""
    return link.ch != NULL and (<CkChannelEnqueue*>link.ch).ready()


def link_enqueue(Link link, buf, stream, bint recv):
    """send_enqueue (recv false) or recv_enqueue of buf on `stream` (a CUDA stream object
    with .ptr, an int cudaStream_t, or None / 0: the legacy default stream)."""
    name = "recv_enqueue" if recv else "send_enqueue"
    what = "Channel." + name
    link.check(what)
    # The arguments first (a wrong one says so wherever it runs), then the process.
    cdef Request r = Request.__new__(Request)
    cdef uintptr_t ptr = 0, s = 0
    cdef size_t n = 0
    memory_of(r, buf, recv, name, 0 if stream is None else stream, &ptr, &n, &s)
    cdef const char* why = CmiStreamOpsUnavailable()
    if why != NULL:
        raise RuntimeError(f"{what}: stream-ordered transfers are not available in this process: {why.decode()}")
    cdef CkChannelEnqueue* ch = <CkChannelEnqueue*>link.ch
    if not recv and not ch.ready():
        raise RuntimeError(f"{what}: the peer's end has not opened yet (its id has not arrived)")
    cdef uint32_t fid = register_request(r, link, n)
    if recv:
        ch.recv_enqueue(<void*>ptr, n, <CUstream_st*>s, CkCallback.future(CkMyPe(), fid))
    else:
        ch.send_enqueue(<const void*>ptr, n, <CUstream_st*>s, CkCallback.future(CkMyPe(), fid))
    return r
