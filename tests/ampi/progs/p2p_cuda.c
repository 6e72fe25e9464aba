/* GPU buffers passed straight to MPI (CUDA runtime API only): Send/Recv, Isend/Irecv,
 * Sendrecv, a receive from MPI_ANY_SOURCE into device memory, sizes 8 B to 4 MiB, and Bcast
 * and Allreduce on device buffers. Prints "SKIP: no CUDA device" and exits 77 when
 * cudaGetDeviceCount fails or finds none. Rank r uses device r % count. */
#include <cuda_runtime.h>

#include "check.h"

#define CUDA_OK(t, call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) check_report((t), __FILE__, __LINE__, #call, "%s", cudaGetErrorString(e_)); \
  } while (0)

static void fill(unsigned char* h, size_t n, int a, int b) {
  for (size_t i = 0; i < n; i++) h[i] = pattern_byte(a, b, (long long)i);
}
static size_t differ(const unsigned char* h, size_t n, int a, int b) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += h[i] != pattern_byte(a, b, (long long)i);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_cuda");
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (t.rank == 0) printf("SKIP: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
  CUDA_OK(&t, cudaSetDevice(t.rank % ndev));
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  static const size_t sizes[] = {8, 1000, 65536 + 8, 1 << 20, 4 << 20};
  const size_t kMax = 4 << 20;
  unsigned char *dsend = NULL, *drecv = NULL;
  CUDA_OK(&t, cudaMalloc((void**)&dsend, kMax));
  CUDA_OK(&t, cudaMalloc((void**)&drecv, kMax));
  unsigned char* h = malloc(kMax);
  for (int si = 0; si < 5; si++) {
    size_t n = sizes[si];
    int cnt = (int)n;
    fill(h, n, t.rank, si);
    CUDA_OK(&t, cudaMemcpy(dsend, h, n, cudaMemcpyHostToDevice));

    t.section = "send_recv";
    CUDA_OK(&t, cudaMemset(drecv, 0, n));
    MPI_Request r;
    CHECK_MPI(&t, MPI_Irecv(drecv, cnt, MPI_BYTE, left, 1, MPI_COMM_WORLD, &r));
    CHECK_MPI(&t, MPI_Send(dsend, cnt, MPI_BYTE, right, 1, MPI_COMM_WORLD));
    MPI_Status st;
    CHECK_MPI(&t, MPI_Wait(&r, &st));
    CUDA_OK(&t, cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
    CHECK(&t, differ(h, n, left, si) == 0, "%zu bytes: device Send/Irecv data differ", n);

    t.section = "isend_recv";
    CUDA_OK(&t, cudaMemset(drecv, 0, n));
    CHECK_MPI(&t, MPI_Isend(dsend, cnt, MPI_BYTE, right, 2, MPI_COMM_WORLD, &r));
    CHECK_MPI(&t, MPI_Recv(drecv, cnt, MPI_BYTE, left, 2, MPI_COMM_WORLD, &st));
    CHECK_MPI(&t, MPI_Wait(&r, MPI_STATUS_IGNORE));
    int c = -1;
    MPI_Get_count(&st, MPI_BYTE, &c);
    CHECK_EQ(&t, c, cnt);
    CUDA_OK(&t, cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
    CHECK(&t, differ(h, n, left, si) == 0, "%zu bytes: device Isend/Recv data differ", n);

    t.section = "sendrecv";
    CUDA_OK(&t, cudaMemset(drecv, 0, n));
    CHECK_MPI(&t, MPI_Sendrecv(dsend, cnt, MPI_BYTE, left, 3, drecv, cnt, MPI_BYTE, right, 3, MPI_COMM_WORLD, &st));
    CUDA_OK(&t, cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
    CHECK(&t, differ(h, n, right, si) == 0, "%zu bytes: device Sendrecv data differ", n);

    t.section = "any_source";
    /* Host send buffer, device receive buffer, wildcard source. */
    fill(h, n, t.rank + 7, si);
    CUDA_OK(&t, cudaMemset(drecv, 0, n));
    CHECK_MPI(&t, MPI_Isend(h, cnt, MPI_BYTE, right, 4, MPI_COMM_WORLD, &r));
    CHECK_MPI(&t, MPI_Recv(drecv, cnt, MPI_BYTE, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st));
    CHECK_MPI(&t, MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_EQ(&t, st.MPI_SOURCE, left);
    CUDA_OK(&t, cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
    CHECK(&t, differ(h, n, left + 7, si) == 0, "%zu bytes: ANY_SOURCE into device memory: data differ", n);
  }

  t.section = "bcast";
  for (int si = 0; si < 5; si++) {
    size_t n = sizes[si];
    int root = si % t.size;
    if (t.rank == root) fill(h, n, root, 50 + si);
    else memset(h, 0, n);
    CUDA_OK(&t, cudaMemcpy(drecv, h, n, cudaMemcpyHostToDevice));
    CHECK_MPI(&t, MPI_Bcast(drecv, (int)n, MPI_BYTE, root, MPI_COMM_WORLD));
    CUDA_OK(&t, cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
    CHECK(&t, differ(h, n, root, 50 + si) == 0, "Bcast of %zu bytes from %d into device memory", n, root);
  }

  t.section = "allreduce";
  {
    enum { kN = 100000 };
    double* hd = malloc(kN * sizeof(double));
    for (int i = 0; i < kN; i++) hd[i] = t.rank * 0.5 + i;
    double *din = NULL, *dout = NULL;
    CUDA_OK(&t, cudaMalloc((void**)&din, kN * sizeof(double)));
    CUDA_OK(&t, cudaMalloc((void**)&dout, kN * sizeof(double)));
    CUDA_OK(&t, cudaMemcpy(din, hd, kN * sizeof(double), cudaMemcpyHostToDevice));
    CHECK_MPI(&t, MPI_Allreduce(din, dout, kN, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CUDA_OK(&t, cudaMemcpy(hd, dout, kN * sizeof(double), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < kN; i++) bad += hd[i] != t.size * (t.size - 1) * 0.25 + (double)t.size * i;
    CHECK(&t, bad == 0, "device Allreduce: %d doubles differ", bad);
    /* IN_PLACE on the device. */
    CHECK_MPI(&t, MPI_Allreduce(MPI_IN_PLACE, din, 8, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    CUDA_OK(&t, cudaMemcpy(hd, din, 8 * sizeof(double), cudaMemcpyDeviceToHost));
    CHECK(&t, hd[3] == (t.size - 1) * 0.5 + 3, "device IN_PLACE Allreduce MAX: %g", hd[3]);
    cudaFree(din);
    cudaFree(dout);
    free(hd);
  }
  cudaFree(dsend);
  cudaFree(drecv);
  free(h);
  return tctx_finish(&t);
}
