/* Large sends from the user's buffer whose data the receiving PE places straight into the
 * posted receive (matched when the message is announced, before its data comes: no copy out
 * of a Converse message). Rank 0 sends, blocking or by Isend + Wait (its buffer overwritten
 * as soon as the send completes), rank 1 receives and echoes, at sizes above the eager size,
 * into receives of the exact size, of more room, by ANY_SOURCE and ANY_TAG, persistent, and
 * Irecv + Wait; then receives the placement must leave to the usual path: too little room
 * (MPI_ERR_TRUNCATE), a strided datatype, and Isends from 8 buffers that are overwritten
 * before the receives are posted. Every count and every byte is checked. With the argument
 * "expect-placed" (2 ranks on 2 PEs) rank 1's PE must have placed some. */
#include "check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int kSizes[] = {33 * 1024, 64 * 1024 + 3, 100003, 1 << 20, (4 << 20) + 8};
enum { kN = sizeof kSizes / sizeof kSizes[0], kMax = (4 << 20) + 8 };

static unsigned char pattern(int k, int i) { return (unsigned char)(k * 131 + i * 7 + (i >> 9)); }
static void fill(unsigned char* b, int n, int k) {
  for (int i = 0; i < n; i++) b[i] = pattern(k, i);
}
static int first_bad(const unsigned char* b, int n, int k) {
  for (int i = 0; i < n; i++)
    if (b[i] != pattern(k, i)) return i;
  return -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_placed");
  int expect_placed = 0;
  for (int i = 1; i < argc; i++) expect_placed |= strcmp(argv[i], "expect-placed") == 0;
  unsigned char* out = malloc(kMax);
  unsigned char* in = malloc(kMax + 64);
  const int me = t.rank;
  int k = 0;
  if (me <= 1) {
    /* ways of receiving: 0 exact, 1 more room, 2 ANY_SOURCE, 3 ANY_TAG, 4 persistent, 5 Irecv;
     * the sender uses Isend + Wait in the second round of them */
    for (int way = 0; way < 12; way++) {
      for (int s = 0; s < kN; s++, k++) {
        const int n = kSizes[s];
        if (me == 0) {
          fill(out, n, k);
          if (way < 6) {
            CHECK_MPI(&t, MPI_Send(out, n, MPI_BYTE, 1, k, MPI_COMM_WORLD));
          } else {
            MPI_Request r;
            CHECK_MPI(&t, MPI_Isend(out, n, MPI_BYTE, 1, k, MPI_COMM_WORLD, &r));
            CHECK_MPI(&t, MPI_Wait(&r, MPI_STATUS_IGNORE));
            memset(out, 0xEE, (size_t)n);  /* the send is complete: the buffer is ours */
          }
          MPI_Status st;
          memset(in, 0, (size_t)n);
          CHECK_MPI(&t, MPI_Recv(in, n, MPI_BYTE, 1, k, MPI_COMM_WORLD, &st));
          const int bad = first_bad(in, n, k);
          CHECK(&t, bad < 0, "echo of message %d (%d bytes): byte %d differs", k, n, bad);
          continue;
        }
        MPI_Status st;
        memset(in, 0, (size_t)n + 64);
        const int how = way % 6;
        const int room = how == 1 ? n + 64 : n;
        if (how <= 3) {
          CHECK_MPI(&t, MPI_Recv(in, room, MPI_BYTE, how == 2 ? MPI_ANY_SOURCE : 0, how == 3 ? MPI_ANY_TAG : k,
                                 MPI_COMM_WORLD, &st));
        } else if (how == 4) {
          MPI_Request r;
          CHECK_MPI(&t, MPI_Recv_init(in, room, MPI_BYTE, 0, k, MPI_COMM_WORLD, &r));
          CHECK_MPI(&t, MPI_Start(&r));
          CHECK_MPI(&t, MPI_Wait(&r, &st));
          CHECK_MPI(&t, MPI_Request_free(&r));
        } else {
          MPI_Request r;
          CHECK_MPI(&t, MPI_Irecv(in, room, MPI_BYTE, 0, k, MPI_COMM_WORLD, &r));
          CHECK_MPI(&t, MPI_Wait(&r, &st));
        }
        int got = -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK_EQ(&t, got, n);
        CHECK_EQ(&t, st.MPI_SOURCE, 0);
        CHECK_EQ(&t, st.MPI_TAG, k);
        const int bad = first_bad(in, n, k);
        CHECK(&t, bad < 0, "message %d (%d bytes, way %d): byte %d differs", k, n, way, bad);
        CHECK(&t, how != 1 || in[n] == 0, "message %d: bytes past it were written", k);
        CHECK_MPI(&t, MPI_Send(in, n, MPI_BYTE, 0, k, MPI_COMM_WORLD));
      }
    }
    /* too little room: the usual path reports the truncation, with the first bytes in */
    const int n = 1 << 20;
    if (me == 0) {
      fill(out, n, k);
      CHECK_MPI(&t, MPI_Send(out, n, MPI_BYTE, 1, k, MPI_COMM_WORLD));
    } else {
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      MPI_Status st;
      const int rc = MPI_Recv(in, n / 2, MPI_BYTE, 0, k, MPI_COMM_WORLD, &st);
      int cls = -1;
      MPI_Error_class(rc, &cls);
      CHECK_EQ(&t, cls, MPI_ERR_TRUNCATE);
      CHECK(&t, first_bad(in, n / 2, k) < 0, "the truncated message's first half differs");
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
    k++;
    /* a strided receive: every other int of the receive buffer */
    const int ints = 64 * 1024;
    if (me == 0) {
      int* v = (int*)out;
      for (int i = 0; i < ints; i++) v[i] = i * 3 + 1;
      CHECK_MPI(&t, MPI_Send(v, ints, MPI_INT, 1, k, MPI_COMM_WORLD));
    } else {
      MPI_Datatype every_other;
      MPI_Type_vector(ints, 1, 2, MPI_INT, &every_other);
      MPI_Type_commit(&every_other);
      int* v = (int*)in;  /* 2 * ints ints fit: kMax >= 512 KiB */
      memset(v, 0, (size_t)ints * 2 * sizeof(int));
      MPI_Status st;
      CHECK_MPI(&t, MPI_Recv(v, 1, every_other, 0, k, MPI_COMM_WORLD, &st));
      for (int i = 0; i < ints; i++)
        if (v[2 * i] != i * 3 + 1 || v[2 * i + 1] != 0) {
          CHECK(&t, 0, "strided receive: int %d is %d (gap %d)", i, v[2 * i], v[2 * i + 1]);
          break;
        }
      MPI_Type_free(&every_other);
    }
  }
  /* Isends from 8 buffers, complete and overwritten before the receiver posts anything */
  enum { kBurst = 8, kBurstBytes = 100003 };
  if (me == 0) {
    MPI_Request r[kBurst];
    for (int b = 0; b < kBurst; b++) {
      fill(out + (size_t)b * kBurstBytes, kBurstBytes, k + b);
      CHECK_MPI(&t, MPI_Isend(out + (size_t)b * kBurstBytes, kBurstBytes, MPI_BYTE, 1, k + b, MPI_COMM_WORLD, &r[b]));
    }
    CHECK_MPI(&t, MPI_Waitall(kBurst, r, MPI_STATUSES_IGNORE));
    memset(out, 0xEE, (size_t)kBurst * kBurstBytes);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    for (int b = 0; b < kBurst; b++) {
      MPI_Status st;
      int got = -1;
      CHECK_MPI(&t, MPI_Recv(in, kBurstBytes, MPI_BYTE, 0, k + b, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, MPI_BYTE, &got);
      CHECK_EQ(&t, got, kBurstBytes);
      const int bad = first_bad(in, kBurstBytes, k + b);
      CHECK(&t, bad < 0, "burst message %d: byte %d differs", b, bad);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    long long (*placed)(void) = (long long (*)(void))dlsym(RTLD_DEFAULT, "AMPIX_Placed_count");
    CHECK(&t, placed != NULL, "the AMPIX_Placed_count test hook is missing");
    if (placed) {
      printf("p2p_placed: rank 1's PE placed %lld messages' data\n", placed());
      if (expect_placed) CHECK(&t, placed() > 0, "no message's data was placed");
    }
  }
  free(out);
  free(in);
  return tctx_finish(&t);
}
