/* MPI-4.0 partitioned point-to-point (runtime/ampi/pt2pt/partitioned.cpp) between the pairs
 * of ranks (2k, 2k+1):
 *   - rounds of a send of 8 partitions to a receive of 4 (other partition counts, the same
 *     whole), the partitions made ready one at a time in reverse order, by Pready_range, by
 *     Pready_list (odd ones, then even ones) and one at a time with Test in between (not
 *     complete before the last); the receiver polls MPI_Parrived, or just waits;
 *   - two pairs of requests with the same tag, started and made ready in the other order on
 *     the sender: each matches the receive of its init order;
 *   - MPI_PROC_NULL; the errors (Pready of an inactive request or of a partition out of
 *     range or twice, wildcards in Precv_init, Parrived of a send request).
 * Arguments: `move` (each rank moves to the next PE between rounds, its requests inactive),
 * `gpu` (the buffers in CUDA device memory; exits 77, "SKIP", without a CUDA device). */
#include "check.h"

#include <ampi.h>
#ifdef PARTITIONED_CUDA
#include <cuda_runtime.h>
#endif

enum { kSendParts = 8, kRecvParts = 4, kPer = 4, kTotal = kSendParts * kPer, kRounds = 4, kTag = 5 };

static int word(int round, int i) { return round * 1000 + i; }

/* Buffers: host memory, or device memory with a host copy for filling and checking. */
struct bufs {
  int gpu;
  int* data;  /* what MPI sees */
  int host[kTotal];
};

static void put(struct bufs* b) {
#ifdef PARTITIONED_CUDA
  if (b->gpu) {
    cudaMemcpy(b->data, b->host, sizeof b->host, cudaMemcpyHostToDevice);
    return;
  }
#endif
  memcpy(b->data, b->host, sizeof b->host);
}
static void get(struct bufs* b) {
#ifdef PARTITIONED_CUDA
  if (b->gpu) {
    cudaMemcpy(b->host, b->data, sizeof b->host, cudaMemcpyDeviceToHost);
    return;
  }
#endif
  memcpy(b->host, b->data, sizeof b->host);
}
static void bufs_init(struct bufs* b, int gpu) {
  b->gpu = gpu;
#ifdef PARTITIONED_CUDA
  if (gpu) {
    cudaMalloc((void**)&b->data, sizeof b->host);
    return;
  }
#endif
  b->data = malloc(sizeof b->host);
}
static void bufs_free(struct bufs* b) {
#ifdef PARTITIONED_CUDA
  if (b->gpu) {
    cudaFree(b->data);
    return;
  }
#endif
  free(b->data);
}

static void maybe_move(int move) {
  if (move) AMPI_Migrate_to_pe((AMPI_My_pe() + 1) % AMPI_Num_pes());
}

static void rounds(struct tctx* t, int partner, int sender, int move, int gpu) {
  t->section = sender ? "rounds (sender)" : "rounds (receiver)";
  struct bufs b;
  bufs_init(&b, gpu);
  MPI_Request q;
  if (sender) {
    CHECK_MPI(t, MPI_Psend_init(b.data, kSendParts, kPer, MPI_INT, partner, kTag, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
  } else {
    MPI_Datatype chunk; /* a receive partition is one element of a type of 2 x 4 ints, freed after the init */
    MPI_Type_contiguous(2 * kPer, MPI_INT, &chunk);
    MPI_Type_commit(&chunk);
    CHECK_MPI(t, MPI_Precv_init(b.data, kRecvParts, 1, chunk, partner, kTag, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
    MPI_Type_free(&chunk);
  }
  for (int round = 0; round < kRounds; ++round) {
    if (sender) {
      for (int i = 0; i < kTotal; ++i) b.host[i] = word(round, i);
      put(&b);
      CHECK_MPI(t, MPI_Start(&q));
      int flag = 1;
      switch (round) {
        case 0:
          for (int p = kSendParts - 1; p >= 0; --p) CHECK_MPI(t, MPI_Pready(p, q));
          break;
        case 1:
          CHECK_MPI(t, MPI_Pready_range(kSendParts / 2, kSendParts - 1, q));
          CHECK_MPI(t, MPI_Test(&q, &flag, MPI_STATUS_IGNORE));
          CHECK_EQ(t, flag, 0);
          CHECK_MPI(t, MPI_Pready_range(0, kSendParts / 2 - 1, q));
          break;
        case 2: {
          int odd[kSendParts / 2], even[kSendParts / 2];
          for (int i = 0; i < kSendParts / 2; ++i) odd[i] = 2 * i + 1, even[i] = 2 * i;
          CHECK_MPI(t, MPI_Pready_list(kSendParts / 2, odd, q));
          CHECK_MPI(t, MPI_Pready_list(kSendParts / 2, even, q));
          break;
        }
        default:
          for (int p = 0; p < kSendParts; ++p) {
            CHECK_MPI(t, MPI_Test(&q, &flag, MPI_STATUS_IGNORE));
            CHECK_EQ(t, flag, 0);
            CHECK_MPI(t, MPI_Pready(p, q));
          }
      }
      CHECK_MPI(t, MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else {
      for (int i = 0; i < kTotal; ++i) b.host[i] = -1;
      put(&b);
      CHECK_MPI(t, MPI_Start(&q));
      if (round % 2 == 0) {
        for (int p = kRecvParts - 1; p >= 0; --p) {
          int flag = 0;
          while (!flag) CHECK_MPI(t, MPI_Parrived(q, p, &flag));
        }
      }
      MPI_Status st;
      CHECK_MPI(t, MPI_Wait(&q, &st));
      CHECK_EQ(t, st.MPI_SOURCE, partner);
      CHECK_EQ(t, st.MPI_TAG, kTag);
      get(&b);
      for (int i = 0; i < kTotal; ++i) CHECK_EQ(t, b.host[i], word(round, i));
      int flag = 0; /* inactive again: arrived */
      CHECK_MPI(t, MPI_Parrived(q, 0, &flag));
      CHECK_EQ(t, flag, 1);
    }
    maybe_move(move);
  }
  CHECK_MPI(t, MPI_Request_free(&q));
  CHECK(t, q == MPI_REQUEST_NULL);
  bufs_free(&b);
}

/* Two pairs with one tag: matched by the order of the inits, not of the rounds. */
static void init_order(struct tctx* t, int partner, int sender) {
  t->section = "init order";
  int a[kPer], c[kPer];
  MPI_Request q[2];
  if (sender) {
    CHECK_MPI(t, MPI_Psend_init(a, 1, kPer, MPI_INT, partner, kTag, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_MPI(t, MPI_Psend_init(c, 2, kPer / 2, MPI_INT, partner, kTag, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    for (int i = 0; i < kPer; ++i) a[i] = 100 + i, c[i] = 200 + i;
    CHECK_MPI(t, MPI_Start(&q[1]));
    CHECK_MPI(t, MPI_Pready_range(0, 1, q[1]));
    CHECK_MPI(t, MPI_Start(&q[0]));
    CHECK_MPI(t, MPI_Pready(0, q[0]));
  } else {
    CHECK_MPI(t, MPI_Precv_init(a, 1, kPer, MPI_INT, partner, kTag, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_MPI(t, MPI_Precv_init(c, 1, kPer, MPI_INT, partner, kTag, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    CHECK_MPI(t, MPI_Startall(2, q));
  }
  CHECK_MPI(t, MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
  if (!sender)
    for (int i = 0; i < kPer; ++i) {
      CHECK_EQ(t, a[i], 100 + i);
      CHECK_EQ(t, c[i], 200 + i);
    }
  CHECK_MPI(t, MPI_Request_free(&q[0]));
  CHECK_MPI(t, MPI_Request_free(&q[1]));
}

static void edges(struct tctx* t, int partner, int sender) {
  t->section = "errors and MPI_PROC_NULL";
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int x[4] = {1, 2, 3, 4};
  MPI_Request q;
  CHECK_MPI(t, MPI_Psend_init(x, 2, 2, MPI_INT, MPI_PROC_NULL, 0, c, MPI_INFO_NULL, &q));
  CHECK(t, MPI_Pready(0, q) == MPI_ERR_REQUEST, "Pready of an inactive request did not fail");
  CHECK_MPI(t, MPI_Start(&q));
  CHECK(t, MPI_Pready(2, q) == MPI_ERR_ARG, "Pready of partition 2 of 2 did not fail");
  CHECK_MPI(t, MPI_Pready(1, q));
  CHECK(t, MPI_Pready(1, q) == MPI_ERR_ARG, "Pready twice did not fail");
  CHECK_MPI(t, MPI_Pready(0, q));
  CHECK_MPI(t, MPI_Wait(&q, MPI_STATUS_IGNORE));
  int flag = 0;
  CHECK(t, MPI_Parrived(q, 0, &flag) == MPI_ERR_REQUEST, "Parrived of a send request did not fail");
  CHECK_MPI(t, MPI_Request_free(&q));
  CHECK(t, MPI_Precv_init(x, 1, 4, MPI_INT, MPI_ANY_SOURCE, 0, c, MPI_INFO_NULL, &q) == MPI_ERR_RANK,
        "Precv_init from MPI_ANY_SOURCE did not fail");
  CHECK(t, MPI_Precv_init(x, 1, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, c, MPI_INFO_NULL, &q) == MPI_ERR_TAG,
        "Precv_init with MPI_ANY_TAG did not fail");
  CHECK(t, MPI_Psend_init(x, -1, 4, MPI_INT, MPI_PROC_NULL, 0, c, MPI_INFO_NULL, &q) == MPI_ERR_ARG,
        "Psend_init of -1 partitions did not fail");
  (void)partner;
  (void)sender;
  MPI_Comm_free(&c);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "partitioned");
  int move = 0, gpu = 0;
  for (int i = 1; i < argc; ++i) {
    move |= strcmp(argv[i], "move") == 0;
    gpu |= strcmp(argv[i], "gpu") == 0;
  }
  if (gpu) {
    int ndev = 0;
#ifdef PARTITIONED_CUDA
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
#endif
    if (ndev == 0) {
      if (t.rank == 0) printf("partitioned: SKIP (no CUDA device)\n");
      MPI_Finalize();
      return 77;
    }
#ifdef PARTITIONED_CUDA
    cudaSetDevice(t.rank % ndev);
#endif
  }
  const int partner = t.rank ^ 1, sender = t.rank % 2 == 0;
  if (partner < t.size) {
    rounds(&t, partner, sender, move, gpu);
    init_order(&t, partner, sender);
  }
  edges(&t, partner, sender);
  return tctx_finish(&t);
}
