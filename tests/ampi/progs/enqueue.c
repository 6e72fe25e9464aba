/* Stream-ordered point-to-point (MPICH's MPIX extensions, runtime/ampi/pt2pt/enqueue.cpp).
 *   enqueue host   argument checks that need no GPU (MPI_ERRORS_RETURN): a communicator without
 *                  a stream, bad info for MPIX_Stream_create, a stream object without a CUDA
 *                  stream, a bogus request to MPIX_Wait_enqueue; without a GPU, a cudaStream_t
 *                  stream is refused naming the reason.
 *   enqueue gpu    pairs of ranks (2k, 2k+1), each with a CUDA stream bound to a communicator:
 *                  device Send/Recv_enqueue, Isend/Irecv_enqueue + Waitall_enqueue, and pinned
 *                  host buffers filled by a copy on the stream; 100 rounds each, 25 enqueued at
 *                  a time, waited for with cudaStreamQuery + MPIX_Stream_progress; every
 *                  received value checked. Exits 77 ("SKIP") without a CUDA device.
 * Prints "enqueue: ok". Rank r uses device r % count. */
#include "check.h"

#ifdef ENQUEUE_CUDA /* a build with CUDA; without it only the host checks exist */
#include <cuda_runtime.h>

#define CUDA_OK(t, call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) check_report((t), __FILE__, __LINE__, #call, "%s", cudaGetErrorString(e_)); \
  } while (0)
#endif

#define ROUNDS 100
#define BATCH 25
#define N 4096 /* bytes per transfer */

static int err_class(int rc) {
  int c = rc;
  MPI_Error_class(rc, &c);
  return c;
}

static void host_checks(struct tctx* t, int have_gpu) {
  int rc;
  char buf[8] = {0};
  t->section = "no stream";
  rc = MPIX_Send_enqueue(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
  CHECK_EQ(t, err_class(rc), MPI_ERR_COMM);

  t->section = "bad info";
  MPI_Info info;
  MPIX_Stream s = MPIX_STREAM_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "hipStream_t");
  CHECK_EQ(t, err_class(MPIX_Stream_create(info, &s)), MPI_ERR_INFO_VALUE);
  MPI_Info_set(info, "type", "cudaStream_t");
  CHECK_EQ(t, err_class(MPIX_Stream_create(info, &s)), MPI_ERR_INFO_VALUE); /* no "value" */
  MPI_Info_set(info, "value", "not-hex");
  CHECK_EQ(t, err_class(MPIX_Stream_create(info, &s)), MPI_ERR_INFO_VALUE);
  if (!have_gpu) { /* a well-formed cudaStream_t where CUDA cannot work */
    void* fake = (void*)0x1234;
    CHECK_MPI(t, MPIX_Info_set_hex(info, "value", &fake, sizeof fake));
    CHECK_EQ(t, err_class(MPIX_Stream_create(info, &s)), MPI_ERR_OTHER);
  }
  MPI_Info_free(&info);

  t->section = "stream without CUDA stream";
  CHECK_MPI(t, MPIX_Stream_create(MPI_INFO_NULL, &s));
  MPI_Comm c;
  CHECK_MPI(t, MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &c));
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  CHECK_EQ(t, err_class(MPIX_Send_enqueue(buf, 8, MPI_BYTE, 0, 1, c)), MPI_ERR_COMM);
  CHECK_EQ(t, err_class(MPIX_Stream_free(&s)), MPI_ERR_OTHER); /* still bound to c */
  CHECK_MPI(t, MPI_Comm_free(&c));
  CHECK_MPI(t, MPIX_Stream_free(&s));
  CHECK_EQ(t, s, MPIX_STREAM_NULL);

  t->section = "bad request";
  MPI_Request r = 12345;
  CHECK_EQ(t, err_class(MPIX_Wait_enqueue(&r, MPI_STATUS_IGNORE)), MPI_ERR_REQUEST);
  t->section = NULL;
}

#ifdef ENQUEUE_CUDA
/* Waits for the stream without blocking this PE (which starts the enqueued operations). */
static void stream_wait(struct tctx* t, cudaStream_t cs, MPIX_Stream ms) {
  cudaError_t e;
  while ((e = cudaStreamQuery(cs)) == cudaErrorNotReady) MPIX_Stream_progress(ms);
  CUDA_OK(t, e);
}

static unsigned char value(int phase, int round) { return (unsigned char)(1 + (phase * 101 + round * 7) % 250); }

static void gpu_checks(struct tctx* t, int ndev) {
  CUDA_OK(t, cudaSetDevice(t->rank % ndev));
  /* Allocations may wait for the device: all before the collective below, so that no rank
   * of this PE allocates while another's stream waits for the PE. */
  unsigned char *dsend, *drecv, *hsend, *hrecv, *slots;
  CUDA_OK(t, cudaMalloc((void**)&dsend, N));
  CUDA_OK(t, cudaMalloc((void**)&drecv, N));
  CUDA_OK(t, cudaMallocHost((void**)&hsend, N));
  CUDA_OK(t, cudaMallocHost((void**)&hrecv, N));
  CUDA_OK(t, cudaMallocHost((void**)&slots, (size_t)BATCH * N));
  cudaStream_t cs;
  CUDA_OK(t, cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "cudaStream_t");
  CHECK_MPI(t, MPIX_Info_set_hex(info, "value", &cs, sizeof cs));
  MPIX_Stream ms;
  CHECK_MPI(t, MPIX_Stream_create(info, &ms));
  MPI_Info_free(&info);
  MPI_Comm comm;
  CHECK_MPI(t, MPIX_Stream_comm_create(MPI_COMM_WORLD, ms, &comm));
  const int peer = t->rank ^ 1;
  const int first = (t->rank & 1) == 0;
  if (peer >= t->size) { /* an odd rank count: the last rank has no partner */
    CHECK_MPI(t, MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(t, MPI_Comm_free(&comm));
    CHECK_MPI(t, MPIX_Stream_free(&ms));
    return;
  }
  for (int phase = 0; phase < 3; phase++) {
    t->section = phase == 0 ? "Send/Recv_enqueue" : phase == 1 ? "Isend/Irecv_enqueue + Waitall" : "host buffers";
    for (int b = 0; b < ROUNDS / BATCH; b++) {
      memset(slots, 0, (size_t)BATCH * N);
      for (int k = 0; k < BATCH; k++) {
        const int round = b * BATCH + k;
        const unsigned char v = value(phase, round);
        if (first) {
          CUDA_OK(t, cudaMemsetAsync(dsend, v, N, cs));
          if (phase == 0) {
            CHECK_MPI(t, MPIX_Send_enqueue(dsend, N, MPI_BYTE, peer, round, comm));
            CHECK_MPI(t, MPIX_Recv_enqueue(drecv, N, MPI_BYTE, peer, round, comm, MPI_STATUS_IGNORE));
          } else if (phase == 1) {
            MPI_Request r[2];
            CHECK_MPI(t, MPIX_Irecv_enqueue(drecv, N, MPI_BYTE, peer, round, comm, &r[0]));
            CHECK_MPI(t, MPIX_Isend_enqueue(dsend, N, MPI_BYTE, peer, round, comm, &r[1]));
            CHECK_MPI(t, MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE));
            CHECK(t, r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "Waitall_enqueue left a request");
          } else { /* the data reaches a host buffer through the stream before it is sent */
            CUDA_OK(t, cudaMemcpyAsync(hsend, dsend, N, cudaMemcpyDeviceToHost, cs));
            CHECK_MPI(t, MPIX_Send_enqueue(hsend, N, MPI_BYTE, peer, round, comm));
            CHECK_MPI(t, MPIX_Recv_enqueue(drecv, N, MPI_BYTE, peer, round, comm, MPI_STATUS_IGNORE));
          }
          CUDA_OK(t, cudaMemcpyAsync(slots + (size_t)k * N, drecv, N, cudaMemcpyDeviceToHost, cs));
          CUDA_OK(t, cudaMemsetAsync(drecv, 0, N, cs)); /* a receive that did not land shows */
        } else {
          if (phase == 0) {
            CHECK_MPI(t, MPIX_Recv_enqueue(drecv, N, MPI_BYTE, peer, round, comm, MPI_STATUS_IGNORE));
            CUDA_OK(t, cudaMemcpyAsync(dsend, drecv, N, cudaMemcpyDeviceToDevice, cs));
            CHECK_MPI(t, MPIX_Send_enqueue(dsend, N, MPI_BYTE, peer, round, comm));
          } else if (phase == 1) {
            MPI_Request r;
            MPI_Status st;
            CHECK_MPI(t, MPIX_Irecv_enqueue(drecv, N, MPI_BYTE, peer, round, comm, &r));
            CHECK_MPI(t, MPIX_Wait_enqueue(&r, &st));
            CUDA_OK(t, cudaMemcpyAsync(dsend, drecv, N, cudaMemcpyDeviceToDevice, cs));
            CHECK_MPI(t, MPIX_Isend_enqueue(dsend, N, MPI_BYTE, peer, round, comm, &r));
            CHECK_MPI(t, MPIX_Wait_enqueue(&r, MPI_STATUS_IGNORE));
          } else {
            CHECK_MPI(t, MPIX_Recv_enqueue(hrecv, N, MPI_BYTE, peer, round, comm, MPI_STATUS_IGNORE));
            CUDA_OK(t, cudaMemcpyAsync(dsend, hrecv, N, cudaMemcpyHostToDevice, cs));
            CHECK_MPI(t, MPIX_Send_enqueue(dsend, N, MPI_BYTE, peer, round, comm));
          }
          CUDA_OK(t, cudaMemsetAsync(drecv, 0, N, cs));
        }
      }
      stream_wait(t, cs, ms);
      if (first)
        for (int k = 0; k < BATCH; k++) {
          const unsigned char v = value(phase, b * BATCH + k);
          int bad = 0;
          for (int i = 0; i < N; i++) bad += slots[(size_t)k * N + i] != v;
          CHECK(t, bad == 0, "round %d: %d of %d bytes differ from %d", b * BATCH + k, bad, N, v);
        }
    }
  }
  t->section = NULL;
  /* Freeing waits for the device: only once every rank's stream is past its operations. */
  CHECK_MPI(t, MPI_Barrier(MPI_COMM_WORLD));
  CHECK_MPI(t, MPI_Comm_free(&comm));
  CHECK_MPI(t, MPIX_Stream_free(&ms));
  cudaFree(dsend);
  cudaFree(drecv);
  cudaFreeHost(hsend);
  cudaFreeHost(hrecv);
  cudaFreeHost(slots);
  cudaStreamDestroy(cs);
}
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "enqueue");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int gpu_mode = argc > 1 && strcmp(argv[1], "gpu") == 0;
  int ndev = 0;
#ifdef ENQUEUE_CUDA
  if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
#endif
  if (gpu_mode && ndev == 0) {
    if (t.rank == 0) printf("SKIP: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
#ifdef ENQUEUE_CUDA
  if (gpu_mode) gpu_checks(&t, ndev);
#endif
  if (!gpu_mode) host_checks(&t, ndev > 0);
  return tctx_finish(&t);
}
