// Generalized requests (errhan/grequest.cpp), for the wait, test, free and cancel calls of
// pt2pt/completion.cpp: a request of kind ReqKind::Generalized is finished here, where the
// program's query, free and cancel functions are called.
#pragma once

#include "pt2pt/p2p.h"

namespace ampi {

// Wait/Test of a completed generalized request: the status from query_fn, then free_fn;
// the request is released and *h set to MPI_REQUEST_NULL. Returns the error of query_fn
// (or of free_fn).
int grequest_finish(P2p& p, MPI_Request* h, MPI_Status* st);
// MPI_Request_get_status of a completed generalized request: the status from query_fn (the
// request stays). Returns query_fn's error through MPI_COMM_WORLD's handler.
int grequest_status(P2p& p, MPI_Request h, MPI_Status* st);
// MPI_Request_free: free_fn now if complete, else when MPI_Grequest_complete is called.
int grequest_free(P2p& p, MPI_Request* h);
// MPI_Cancel: cancel_fn(extra_state, complete).
int grequest_cancel(P2p& p, MPI_Request h);
// Rank migration (pt2pt/migrate.cpp): packs or unpacks the record of generalized request q
// (the program's functions and extra_state as address bits: the program sits at the same
// addresses after the move); drop deletes it without calling anything (its P2p goes away).
void grequest_pup(PUP::er& p, Request& q);
void grequest_drop(Request& q);

}  // namespace ampi
