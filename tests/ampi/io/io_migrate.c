/* A file stays open while its ranks move: every rank opens one file with a strided view,
 * writes half of its blocks (write_all), moves with AMPI_Migrate_to_pe and AMPI_Migrate (run
 * with +balancer RotateLB), then writes the other half through its individual file pointer,
 * finds the shared pointer where it was, and reads everything back; the view, pointers, hints, atomicity
 * and error handler are what they were. Prints "io_migrate: ok (N ranks)" and the moves. */
#include <mpi.h>
#include <errno.h>
#include <unistd.h>

#include "../progs/check.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "io_migrate");
  char dir[256], path[512];
  if (t.rank == 0) {
    const char* tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ampi-io-migrate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/data", dir);
  const int n = t.size, blk = 4, nblocks = 16;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_buffer_size", "4096");
  MPI_File fh;
  CHECK_MPI(&t, MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, info, &fh));
  MPI_Info_free(&info);
  MPI_Datatype ft, rft;
  MPI_Type_vector(1, blk, blk * n, MPI_INT, &ft);
  MPI_Type_create_resized(ft, 0, (MPI_Aint)(blk * n * 4), &rft);
  MPI_Type_commit(&rft);
  MPI_Type_free(&ft);
  CHECK_MPI(&t, MPI_File_set_view(fh, (MPI_Offset)t.rank * blk * 4, MPI_INT, rft, "native", MPI_INFO_NULL));
  MPI_Type_free(&rft); /* the view keeps it */
  CHECK_MPI(&t, MPI_File_set_atomicity(fh, 1));
  int* mine = malloc(sizeof(int) * blk * nblocks);
  for (int i = 0; i < blk * nblocks; i++) mine[i] = (i / blk) * blk * n + t.rank * blk + i % blk;
  const int half = blk * nblocks / 2;
  CHECK_MPI(&t, MPI_File_write_all(fh, mine, half, MPI_INT, MPI_STATUS_IGNORE));
  CHECK_MPI(&t, MPI_File_seek_shared(fh, 1000, MPI_SEEK_SET));

  int moved = 0;
  const int npes = AMPI_Num_pes(), pe0 = AMPI_My_pe();
  AMPI_Migrate_to_pe((pe0 + 1) % npes);
  const int pe1 = AMPI_My_pe();
  moved += pe1 != pe0;
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "ampi_load_balance", "sync");
  AMPI_Migrate(hints);
  MPI_Info_free(&hints);
  moved += AMPI_My_pe() != pe1;

  /* Everything as it was. */
  MPI_Offset pos = -1, disp = -1;
  CHECK_MPI(&t, MPI_File_get_position(fh, &pos));
  CHECK_EQ(&t, pos, half);
  MPI_Datatype et, gft;
  char rep[MPI_MAX_DATAREP_STRING];
  CHECK_MPI(&t, MPI_File_get_view(fh, &disp, &et, &gft, rep));
  CHECK_EQ(&t, disp, t.rank * blk * 4);
  CHECK(&t, et == MPI_INT);
  MPI_Type_free(&gft);
  int flag = 0;
  CHECK_MPI(&t, MPI_File_get_atomicity(fh, &flag));
  CHECK_EQ(&t, flag, 1);
  MPI_Info used;
  char val[64];
  CHECK_MPI(&t, MPI_File_get_info(fh, &used));
  MPI_Info_get(used, "cb_buffer_size", 63, val, &flag);
  CHECK(&t, flag && !strcmp(val, "4096"));
  MPI_Info_free(&used);
  CHECK_MPI(&t, MPI_File_get_position_shared(fh, &pos));
  CHECK_EQ(&t, pos, 1000);

  CHECK_MPI(&t, MPI_File_write(fh, mine + half, half, MPI_INT, MPI_STATUS_IGNORE));
  CHECK_MPI(&t, MPI_File_write_all(fh, mine, 0, MPI_INT, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  int* back = calloc(blk * nblocks, sizeof(int));
  CHECK_MPI(&t, MPI_File_read_at_all(fh, 0, back, blk * nblocks, MPI_INT, MPI_STATUS_IGNORE));
  CHECK(&t, memcmp(back, mine, sizeof(int) * blk * nblocks) == 0, "the data written before and after the moves");
  free(back);
  free(mine);
  CHECK_MPI(&t, MPI_File_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (t.rank == 0 && rmdir(dir) != 0) {
    fprintf(stderr, "io_migrate: %s is not empty: %s\n", dir, strerror(errno));
    t.fails++;
  }
  int total = 0;
  MPI_Reduce(&moved, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (t.rank == 0) printf("moved: %d\n", total);
  return tctx_finish(&t);
}
