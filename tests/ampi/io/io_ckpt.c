/* An open file across a checkpoint and restart: io_ckpt DIR. Every rank opens DIR/data with
 * a strided view, atomic mode and a hint, writes the first half of its blocks, moves the
 * shared pointer, and checkpoints (AMPI_Migrate, ampi_checkpoint=to_file=DIR/ck). The first
 * run stops there with the file open ("stopped"); a run started with +restart DIR/ck and
 * IO_CKPT_CONTINUE set goes on: the file is open again with its view, pointers, hint and
 * atomicity; it writes the second half and reads everything back (the file's contents are
 * those on disk: the first run's writes). Prints "io_ckpt: ok (N ranks)". */
#include <mpi.h>

#include "../progs/check.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "io_ckpt");
  if (argc < 2) {
    if (t.rank == 0) fprintf(stderr, "usage: io_ckpt DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[1024], ck[1100];
  snprintf(path, sizeof path, "%s/data", argv[1]);
  snprintf(ck, sizeof ck, "to_file=%s/ck", argv[1]);
  const int n = t.size, blk = 4, nblocks = 8, half = blk * nblocks / 2;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_nodes", "1");
  MPI_File fh;
  CHECK_MPI(&t, MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, info, &fh));
  MPI_Info_free(&info);
  MPI_Datatype ft, rft;
  MPI_Type_vector(1, blk, blk * n, MPI_INT, &ft);
  MPI_Type_create_resized(ft, 0, (MPI_Aint)(blk * n * 4), &rft);
  MPI_Type_commit(&rft);
  MPI_Type_free(&ft);
  CHECK_MPI(&t, MPI_File_set_view(fh, (MPI_Offset)t.rank * blk * 4, MPI_INT, rft, "native", MPI_INFO_NULL));
  MPI_Type_free(&rft);
  CHECK_MPI(&t, MPI_File_set_atomicity(fh, 1));
  int mine[32];
  for (int i = 0; i < blk * nblocks; i++) mine[i] = (i / blk) * blk * n + t.rank * blk + i % blk;
  CHECK_MPI(&t, MPI_File_write_all(fh, mine, half, MPI_INT, MPI_STATUS_IGNORE));
  CHECK_MPI(&t, MPI_File_seek_shared(fh, 77, MPI_SEEK_SET));

  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "ampi_checkpoint", ck);
  MPI_Info_set(hints, "ampi_load_balance", "false");
  AMPI_Migrate(hints);
  MPI_Info_free(&hints);
  /* Here after writing the checkpoint, and here again in the restarted run. */
  if (!getenv("IO_CKPT_CONTINUE")) {
    if (t.rank == 0) printf("stopped with the file open\n");
    MPI_Finalize();
    return 0;
  }
  MPI_Offset pos = -1;
  CHECK_MPI(&t, MPI_File_get_position(fh, &pos));
  CHECK_EQ(&t, pos, half);
  CHECK_MPI(&t, MPI_File_get_position_shared(fh, &pos));
  CHECK_EQ(&t, pos, 77);
  int flag = 0;
  CHECK_MPI(&t, MPI_File_get_atomicity(fh, &flag));
  CHECK_EQ(&t, flag, 1);
  MPI_Info used;
  char val[64];
  CHECK_MPI(&t, MPI_File_get_info(fh, &used));
  MPI_Info_get(used, "cb_nodes", 63, val, &flag);
  CHECK(&t, flag && !strcmp(val, "1"));
  MPI_Info_free(&used);
  CHECK_MPI(&t, MPI_File_write_all(fh, mine + half, half, MPI_INT, MPI_STATUS_IGNORE));
  int back[32];
  memset(back, 0, sizeof back);
  CHECK_MPI(&t, MPI_File_read_at_all(fh, 0, back, blk * nblocks, MPI_INT, MPI_STATUS_IGNORE));
  for (int i = 0; i < blk * nblocks; i++) CHECK_EQ(&t, back[i], mine[i]);
  CHECK_MPI(&t, MPI_File_close(&fh));
  return tctx_finish(&t);
}
