# ---- CCS (Converse Client-Server): Python handlers of PE 0's server (converse.h) -------------
# charm.CcsRegisterHandler(name, fn) registers a trampoline with the handler's name as its
# user pointer; the trampoline calls fn(data: bytes) on the scheduler's thread (GIL held).
cdef extern from "<ucharm/converse.h>":
    ctypedef void (*CcsHandlerFn)(void* user, int len, const void* data) noexcept
    cdef struct CcsDelayedReply:
        uint64_t id
        int32_t pe
        int32_t dest
    void CcsRegisterHandlerFn(const char* name, CcsHandlerFn fn, void* user)
    int CcsEnabled()
    int CcsIsRemoteRequest()
    void CcsSendReply(int len, const void* data)
    void CcsNoReply()
    CcsDelayedReply CcsDelayReply()
    void CcsSendDelayedReply(CcsDelayedReply d, int len, const void* data)
    int CcsServerPort()
    const char* CcsServerAddress()

cdef dict _ccs_handlers = {}   # name -> the Python callable
cdef dict _ccs_names = {}      # name -> its bytes (alive while registered: the user pointer)

cdef void h_ccs(void* user, int length, const void* data) noexcept:
    name = (<bytes>user).decode()
    try:
        _ccs_handlers[name](PyBytes_FromStringAndSize(<const char*>data, length))
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal(f"in the CCS handler '{name}'")

def ccs_register(str name, handler):
    check_thread("charm.CcsRegisterHandler")
    b = name.encode()
    if not b or len(b) > 31:
        raise ValueError(f"charm.CcsRegisterHandler: a handler name has 1 to 31 bytes, not {len(b)} ('{name}')")
    if not callable(handler):
        raise TypeError(f"charm.CcsRegisterHandler('{name}', ...): the handler must be callable")
    _ccs_handlers[name] = handler
    _ccs_names[name] = b
    CcsRegisterHandlerFn(b, h_ccs, <void*>b)

cdef class CcsDelayedReplyToken:
    """charm.CcsDelayReply()'s token: hand it to charm.CcsSendDelayedReply once (on any PE;
    it pickles)."""
    cdef CcsDelayedReply d
    cdef bint used
    def __reduce__(self):
        return (_ccs_token, (self.d.id, self.d.pe, self.d.dest, self.used))
    def __repr__(self):
        return f"<CCS delayed reply {self.d.id} of PE {self.d.pe}>"

def _ccs_token(uint64_t id, int32_t pe, int32_t dest, bint used):
    cdef CcsDelayedReplyToken t = CcsDelayedReplyToken.__new__(CcsDelayedReplyToken)
    t.d.id, t.d.pe, t.d.dest, t.used = id, pe, dest, used
    return t

cdef inline bytes _reply_bytes(object data, str who):
    if isinstance(data, str):
        return data.encode()
    try:
        return bytes(data)
    except TypeError:
        raise TypeError(f"{who}: the reply must be bytes (or a bytes-like object, or str), not {type(data).__name__}")

def ccs_send_reply(data):
    check_thread("charm.CcsSendReply")
    b = _reply_bytes(data, "charm.CcsSendReply")
    if not CcsIsRemoteRequest():
        raise RuntimeError("charm.CcsSendReply: no CCS request waits for a reply here (call it inside a CCS handler, "
                           "once; after charm.CcsDelayReply use charm.CcsSendDelayedReply)")
    CcsSendReply(len(b), PyBytes_AS_STRING(b))

def ccs_no_reply():
    check_thread("charm.CcsNoReply")
    CcsNoReply()

def ccs_delay_reply():
    check_thread("charm.CcsDelayReply")
    if not CcsIsRemoteRequest():
        raise RuntimeError("charm.CcsDelayReply: no CCS request waits for a reply here (call it inside a CCS handler, once)")
    cdef CcsDelayedReplyToken t = CcsDelayedReplyToken.__new__(CcsDelayedReplyToken)
    t.d = CcsDelayReply()
    return t

def ccs_send_delayed_reply(CcsDelayedReplyToken token not None, data):
    check_thread("charm.CcsSendDelayedReply")
    b = _reply_bytes(data, "charm.CcsSendDelayedReply")
    if token.used:
        raise RuntimeError(f"charm.CcsSendDelayedReply: {token!r} was already answered")
    token.used = True
    CcsSendDelayedReply(token.d, len(b), PyBytes_AS_STRING(b))

def ccs_is_remote_request():
    return bool(CcsIsRemoteRequest())

def ccs_enabled():
    return bool(CcsEnabled())

def ccs_server():
    """(address, port) of PE 0's server, or None (another PE, or no server)."""
    if CcsServerPort() == 0:
        return None
    return (CcsServerAddress().decode(), CcsServerPort())
