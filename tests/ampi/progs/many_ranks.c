/* Many ranks (under ucharm: many per PE, e.g. +vp 64 on 2 PEs): a token passed around the
 * ring several times (blocking Send/Recv, Ssend, and a 300 KB message), an Allreduce,
 * Allgather, Alltoall and Gather, and Comm_split into many colors (and a split of a split) with an Allreduce and a ring in each.
 * Any number of ranks >= 1. */
#include "check.h"

enum { kLaps = 3, kBig = 300 * 1024 };

static void ring(struct tctx* t, MPI_Comm comm, const char* what) {
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  int right = (r + 1) % n, left = (r + n - 1) % n;
  /* A token: rank 0 starts, every rank adds its rank, kLaps times around. */
  int token = 0;
  for (int lap = 0; lap < kLaps; lap++) {
    if (r == 0) {
      MPI_Send(&token, 1, MPI_INT, right, lap, comm);
      MPI_Recv(&token, 1, MPI_INT, left, lap, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_INT, left, lap, comm, MPI_STATUS_IGNORE);
      token += r;
      if (lap % 2) MPI_Ssend(&token, 1, MPI_INT, right, lap, comm);
      else MPI_Send(&token, 1, MPI_INT, right, lap, comm);
    }
  }
  if (r == 0) CHECK(t, token == kLaps * (n * (n - 1) / 2), "%s: token %d after %d laps", what, token, kLaps);
  /* Everyone shifts a large buffer to the right at once (receives posted first). */
  unsigned char* out = malloc(kBig);
  unsigned char* in = malloc(kBig);
  for (int k = 0; k < kBig; k++) out[k] = pattern_byte(r, n, k);
  MPI_Request q;
  MPI_Irecv(in, kBig, MPI_BYTE, left, 77, comm, &q);
  MPI_Send(out, kBig, MPI_BYTE, right, 77, comm);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  int bad = 0;
  for (int k = 0; k < kBig; k++) bad += in[k] != pattern_byte(left, n, k);
  CHECK(t, bad == 0, "%s: large shift: %d bytes differ", what, bad);
  free(out);
  free(in);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "many_ranks");
  t.section = "world";
  ring(&t, MPI_COMM_WORLD, "world ring");
  long long mine = t.rank + 1, sum = 0;
  CHECK_MPI(&t, MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  CHECK_EQ(&t, sum, (long long)t.size * (t.size + 1) / 2);

  /* Collectives where every rank talks to every rank (or to one root): n receives posted
   * at once on one rank. */
  t.section = "all_to_all";
  int* all = malloc(sizeof(int) * t.size);
  int* outv = malloc(sizeof(int) * t.size);
  int me = t.rank * 3 + 1;
  CHECK_MPI(&t, MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
  int bad = 0;
  for (int q = 0; q < t.size; q++) bad += all[q] != q * 3 + 1;
  CHECK(&t, bad == 0, "Allgather: %d wrong", bad);
  for (int q = 0; q < t.size; q++) outv[q] = t.rank * 100000 + q;
  CHECK_MPI(&t, MPI_Alltoall(outv, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
  bad = 0;
  for (int q = 0; q < t.size; q++) bad += all[q] != q * 100000 + t.rank;
  CHECK(&t, bad == 0, "Alltoall: %d wrong", bad);
  CHECK_MPI(&t, MPI_Gather(&me, 1, MPI_INT, all, 1, MPI_INT, t.size - 1, MPI_COMM_WORLD));
  if (t.rank == t.size - 1) {
    bad = 0;
    for (int q = 0; q < t.size; q++) bad += all[q] != q * 3 + 1;
    CHECK(&t, bad == 0, "Gather: %d wrong", bad);
  }
  free(all);
  free(outv);

  /* Colors rank % 7, keys reversed; then each split halved again. */
  t.section = "split";
  MPI_Comm c7, half;
  CHECK_MPI(&t, MPI_Comm_split(MPI_COMM_WORLD, t.rank % 7, t.size - t.rank, &c7));
  int n7, r7, want_n = 0, want_r = 0;
  MPI_Comm_size(c7, &n7);
  MPI_Comm_rank(c7, &r7);
  for (int q = 0; q < t.size; q++)
    if (q % 7 == t.rank % 7) {
      want_n++;
      if (q > t.rank) want_r++;
    }
  CHECK(&t, n7 == want_n && r7 == want_r, "split by 7: rank %d of %d, expected %d of %d", r7, n7, want_r, want_n);
  int wr = t.rank, s7 = 0;
  CHECK_MPI(&t, MPI_Allreduce(&wr, &s7, 1, MPI_INT, MPI_SUM, c7));
  int want_s = 0;
  for (int q = t.rank % 7; q < t.size; q += 7) want_s += q;
  CHECK(&t, s7 == want_s, "split by 7: Allreduce %d, expected %d", s7, want_s);
  ring(&t, c7, "split ring");
  CHECK_MPI(&t, MPI_Comm_split(c7, r7 < n7 / 2, r7, &half));
  int nh, rh, sh = 0;
  MPI_Comm_size(half, &nh);
  MPI_Comm_rank(half, &rh);
  CHECK(&t, nh == (r7 < n7 / 2 ? n7 / 2 : n7 - n7 / 2), "half split: size %d of %d", nh, n7);
  CHECK_MPI(&t, MPI_Allreduce(&r7, &sh, 1, MPI_INT, MPI_SUM, half));
  int lo = r7 < n7 / 2 ? 0 : n7 / 2, hi = r7 < n7 / 2 ? n7 / 2 : n7, want_h = 0;
  for (int q = lo; q < hi; q++) want_h += q;
  CHECK(&t, sh == want_h, "half split: Allreduce %d, expected %d", sh, want_h);
  ring(&t, half, "half ring");
  MPI_Comm_free(&half);
  MPI_Comm_free(&c7);
  return tctx_finish(&t);
}
