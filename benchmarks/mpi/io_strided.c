/* io_strided: a strided collective write and read of a large interleaved array (MPI-IO),
 * against a plain write of the same bytes. Every rank owns every size-th block of the
 * array (blocks of -b bytes, -m MiB per rank); the file view makes its blocks one stream.
 *   write_all   MPI_File_write_all of the rank's blocks through the view, then MPI_File_sync
 *   read_all    MPI_File_read_all of them back (checked)
 *   plain       each rank pwrite()s its share as one contiguous range of a second file, then
 *               fsync: the same bytes with no interleaving (the disk's own speed)
 * Each is timed from a barrier to the last rank's end (-r repeats, the best is printed), in
 * MiB/s of the whole array. Plain MPI C: built on ucharm's AMPI and on the system MPI.
 *   io_strided [-m MiB per rank] [-b block bytes] [-r repeats] [-d directory] [-k]
 * -k keeps the files (default: removed). Output: one line per phase,
 *   "io_strided <phase> ranks=N bytes=B seconds=S MiB/s=R". */
#include <mpi.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double best_of(double a, double b) { return a < 0 || b < a ? b : a; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double mib = 16;
  long block = 4096;
  int repeats = 3, keep = 0;
  const char* dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-m") && i + 1 < argc) mib = atof(argv[++i]);
    else if (!strcmp(argv[i], "-b") && i + 1 < argc) block = atol(argv[++i]);
    else if (!strcmp(argv[i], "-r") && i + 1 < argc) repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-d") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "-k")) keep = 1;
    else {
      if (rank == 0) fprintf(stderr, "io_strided: unknown option %s\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (block <= 0 || block % 8 != 0 || repeats < 1) {
    if (rank == 0) fprintf(stderr, "io_strided: -b must be a positive multiple of 8, -r at least 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long nblocks = (long)(mib * 1048576.0) / block > 0 ? (long)(mib * 1048576.0) / block : 1;
  const long mine = nblocks * block; /* bytes per rank */
  const double total_mib = (double)mine * size / 1048576.0;
  char path[1024], plain[1024];
  snprintf(path, sizeof path, "%s/io_strided.%d.dat", dir, 0);
  snprintf(plain, sizeof plain, "%s/io_strided.%d.plain", dir, 0);

  char* buf = malloc((size_t)mine);
  char* back = malloc((size_t)mine);
  for (long i = 0; i < mine; i++) buf[i] = (char)((i / block) * size + rank + i % block);

  MPI_Datatype blk, tiled;
  MPI_Type_contiguous((int)block, MPI_BYTE, &blk);
  MPI_Type_create_resized(blk, 0, (MPI_Aint)block * size, &tiled);
  MPI_Type_commit(&tiled);

  double t_write = -1, t_read = -1, t_plain = -1;
  int bad = 0;
  for (int r = 0; r < repeats; r++) {
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
      if (rank == 0) fprintf(stderr, "io_strided: cannot open %s\n", path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, tiled, "native", MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_File_write_all(fh, buf, (int)mine, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    double t = MPI_Wtime() - t0, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t_write = best_of(t_write, tmax);

    memset(back, 0, (size_t)mine);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);  /* write_all moved the individual pointer */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_File_read_all(fh, back, (int)mine, MPI_BYTE, MPI_STATUS_IGNORE);
    t = MPI_Wtime() - t0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t_read = best_of(t_read, tmax);
    if (memcmp(back, buf, (size_t)mine) != 0) bad++, fprintf(stderr, "rank %d: read_all gave other bytes\n", rank);
    MPI_File_close(&fh);

    /* The same bytes, one contiguous range per rank, with plain POSIX calls. */
    if (rank == 0) {
      int fd = open(plain, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(plain, O_WRONLY);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    long done = 0;
    while (fd >= 0 && done < mine) {
      ssize_t n = pwrite(fd, buf + done, (size_t)(mine - done), (off_t)rank * mine + done);
      if (n <= 0) break;
      done += n;
    }
    if (fd >= 0) fsync(fd);
    t = MPI_Wtime() - t0;
    if (fd >= 0) close(fd);
    if (done != mine) bad++, fprintf(stderr, "rank %d: plain pwrite wrote %ld of %ld bytes\n", rank, done, mine);
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t_plain = best_of(t_plain, tmax);
  }
  int bad_all = 0;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    const char* names[3] = {"write_all", "read_all", "plain"};
    const double times[3] = {t_write, t_read, t_plain};
    for (int k = 0; k < 3; k++)
      printf("io_strided %s ranks=%d bytes=%ld seconds=%.6f MiB/s=%.1f\n", names[k], size, mine * size, times[k],
             times[k] > 0 ? total_mib / times[k] : 0.0);
    if (bad_all) printf("io_strided: FAILED: %d wrong reads or short writes\n", bad_all);
    if (!keep) {
      unlink(path);
      unlink(plain);
    }
  }
  MPI_Type_free(&tiled);
  MPI_Type_free(&blk);
  free(buf);
  free(back);
  MPI_Finalize();
  return bad_all ? 1 : 0;
}
