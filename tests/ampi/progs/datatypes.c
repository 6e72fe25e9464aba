/* Derived datatypes on the wire: contiguous, vector (a matrix column), indexed, struct with
 * padding (Get_address), resized; sender and receiver with different layouts of the same
 * type signature; Type_size / Type_get_extent; Get_elements; Pack / Unpack.
 * Every exchange goes around a ring (with one rank: to itself). */
#include <stddef.h>

#include "check.h"

enum { kRows = 6, kCols = 5 };

struct rec { char c; double d; int i[3]; short s; };   /* padding after c and s */
struct rec2 { int i[3]; short s; double d; char c; };  /* same fields, another layout */

static void exchange(void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                     int left, int right, MPI_Status* st) {
  MPI_Request r;
  MPI_Isend(sbuf, scount, stype, right, 1, MPI_COMM_WORLD, &r);
  MPI_Recv(rbuf, rcount, rtype, left, 1, MPI_COMM_WORLD, st);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static double mval(int r, int row, int col) { return r * 1000 + row * 10 + col; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "datatypes");
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  MPI_Status st;
  int c = -1;

  t.section = "contiguous";
  {
    MPI_Datatype five;
    CHECK_MPI(&t, MPI_Type_contiguous(5, MPI_INT, &five));
    CHECK_MPI(&t, MPI_Type_commit(&five));
    int s[10], r[12];
    for (int i = 0; i < 10; i++) s[i] = t.rank * 100 + i;
    for (int i = 0; i < 12; i++) r[i] = -1;
    exchange(s, 2, five, r, 12, MPI_INT, left, right, &st);
    for (int i = 0; i < 10; i++) CHECK_EQ(&t, r[i], left * 100 + i);
    CHECK_EQ(&t, r[10], -1);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK_EQ(&t, c, 10);
    int sz = 0;
    MPI_Aint lb = -1, ext = -1;
    MPI_Type_size(five, &sz);
    MPI_Type_get_extent(five, &lb, &ext);
    CHECK_EQ(&t, sz, 5 * (int)sizeof(int));
    CHECK_EQ(&t, lb, 0);
    CHECK_EQ(&t, ext, 5 * (long)sizeof(int));
    /* Get_count / Get_elements: 10 ints are 2 of `five`; 7 ints are not a whole number. */
    for (int i = 0; i < 12; i++) r[i] = -1;
    exchange(s, 10, MPI_INT, r, 2, five, left, right, &st);
    MPI_Get_count(&st, five, &c);
    CHECK_EQ(&t, c, 2);
    MPI_Get_elements(&st, five, &c);
    CHECK_EQ(&t, c, 10);
    exchange(s, 7, MPI_INT, r, 2, five, left, right, &st);
    MPI_Get_count(&st, five, &c);
    CHECK(&t, c == MPI_UNDEFINED, "7 ints received as `5 ints` type: Get_count %d, expected MPI_UNDEFINED", c);
    MPI_Get_elements(&st, five, &c);
    CHECK_EQ(&t, c, 7);
    CHECK_EQ(&t, r[6], left * 100 + 6);
    CHECK_MPI(&t, MPI_Type_free(&five));
    CHECK(&t, five == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");
  }

  t.section = "vector_column";
  {
    double m[kRows][kCols], col[kRows + 1];
    MPI_Datatype column;
    CHECK_MPI(&t, MPI_Type_vector(kRows, 1, kCols, MPI_DOUBLE, &column));
    MPI_Type_commit(&column);
    int sz = 0;
    MPI_Aint lb, ext;
    MPI_Type_size(column, &sz);
    MPI_Type_get_extent(column, &lb, &ext);
    CHECK_EQ(&t, sz, kRows * (int)sizeof(double));
    CHECK_EQ(&t, ext, ((kRows - 1) * kCols + 1) * (long)sizeof(double));
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kCols; j++) m[i][j] = mval(t.rank, i, j);
    for (int i = 0; i <= kRows; i++) col[i] = -1;
    /* Column 2 sent as a vector, received contiguous. */
    exchange(&m[0][2], 1, column, col, kRows, MPI_DOUBLE, left, right, &st);
    for (int i = 0; i < kRows; i++) CHECK(&t, col[i] == mval(left, i, 2), "column element %d: %g", i, col[i]);
    CHECK(&t, col[kRows] == -1, "wrote past the column");
    /* Contiguous sent, received into column 3 of a cleared matrix: nothing else changes. */
    for (int i = 0; i < kRows; i++) col[i] = t.rank + i * 0.5;
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kCols; j++) m[i][j] = -2;
    exchange(col, kRows, MPI_DOUBLE, &m[0][3], 1, column, left, right, &st);
    int bad = 0;
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kCols; j++) bad += m[i][j] != (j == 3 ? left + i * 0.5 : -2);
    CHECK(&t, bad == 0, "receive into a column: %d elements wrong", bad);
    MPI_Get_count(&st, column, &c);
    CHECK_EQ(&t, c, 1);
    MPI_Get_elements(&st, column, &c);
    CHECK_EQ(&t, c, kRows);

    /* Resized to one double: count 2 of it are columns 0 and 1 (interleaved). */
    t.section = "resized";
    MPI_Datatype colr;
    CHECK_MPI(&t, MPI_Type_create_resized(column, 0, sizeof(double), &colr));
    MPI_Type_commit(&colr);
    MPI_Type_get_extent(colr, &lb, &ext);
    CHECK_EQ(&t, lb, 0);
    CHECK_EQ(&t, ext, (long)sizeof(double));
    MPI_Type_size(colr, &sz);
    CHECK_EQ(&t, sz, kRows * (int)sizeof(double));
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kCols; j++) m[i][j] = mval(t.rank, i, j);
    double two[2 * kRows];
    exchange(&m[0][0], 2, colr, two, 2 * kRows, MPI_DOUBLE, left, right, &st);
    bad = 0;
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < kRows; i++) bad += two[k * kRows + i] != mval(left, i, k);
    CHECK(&t, bad == 0, "two resized columns: %d elements wrong", bad);
    /* Scatter of columns with the resized type: rank r gets column r % kCols from root 0. */
    double mycol[kRows];
    int per = 1;
    if (t.size <= kCols) {
      for (int i = 0; i < kRows; i++)
        for (int j = 0; j < kCols; j++) m[i][j] = mval(0, i, j);
      MPI_Scatter(&m[0][0], per, colr, mycol, kRows, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      for (int i = 0; i < kRows; i++) CHECK(&t, mycol[i] == mval(0, i, t.rank), "scattered column element %d", i);
    }
    MPI_Type_free(&colr);
    MPI_Type_free(&column);
  }

  t.section = "indexed";
  {
    int bl[3] = {2, 1, 3}, dp[3] = {0, 4, 7};
    MPI_Datatype idx;
    CHECK_MPI(&t, MPI_Type_indexed(3, bl, dp, MPI_INT, &idx));
    MPI_Type_commit(&idx);
    int sz;
    MPI_Aint lb, ext;
    MPI_Type_size(idx, &sz);
    MPI_Type_get_extent(idx, &lb, &ext);
    CHECK_EQ(&t, sz, 6 * (int)sizeof(int));
    CHECK_EQ(&t, ext, 10 * (long)sizeof(int));
    int s[10], r[10];
    for (int i = 0; i < 10; i++) s[i] = t.rank * 100 + i, r[i] = -1;
    exchange(s, 1, idx, r, 6, MPI_INT, left, right, &st);
    static const int picked[6] = {0, 1, 4, 7, 8, 9};
    for (int k = 0; k < 6; k++) CHECK_EQ(&t, r[k], left * 100 + picked[k]);
    /* And back into the same holes on the receiving side. */
    for (int i = 0; i < 10; i++) r[i] = -1;
    exchange(s, 6, MPI_INT, r, 1, idx, left, right, &st);
    for (int k = 0; k < 6; k++) CHECK_EQ(&t, r[picked[k]], left * 100 + k);
    CHECK_EQ(&t, r[2], -1);
    CHECK_EQ(&t, r[5], -1);
    MPI_Type_free(&idx);
  }

  t.section = "struct";
  {
    struct rec a[4], b[4];
    MPI_Aint base, disp[4];
    MPI_Get_address(&a[0], &base);
    MPI_Get_address(&a[0].c, &disp[0]);
    MPI_Get_address(&a[0].d, &disp[1]);
    MPI_Get_address(&a[0].i[0], &disp[2]);
    MPI_Get_address(&a[0].s, &disp[3]);
    for (int k = 0; k < 4; k++) disp[k] -= base;
    CHECK_EQ(&t, disp[1], offsetof(struct rec, d));
    int bl[4] = {1, 1, 3, 1};
    MPI_Datatype types[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Datatype st0, srec;
    CHECK_MPI(&t, MPI_Type_create_struct(4, bl, disp, types, &st0));
    /* Resized to sizeof(struct rec) so that an array of them steps by the C layout. */
    CHECK_MPI(&t, MPI_Type_create_resized(st0, 0, sizeof(struct rec), &srec));
    MPI_Type_commit(&srec);
    int sz;
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_size(srec, &sz);
    MPI_Type_get_extent(srec, &lb, &ext);
    MPI_Type_get_true_extent(srec, &tlb, &text);
    CHECK_EQ(&t, sz, 1 + sizeof(double) + 3 * sizeof(int) + sizeof(short));
    CHECK_EQ(&t, lb, 0);
    CHECK_EQ(&t, ext, sizeof(struct rec));
    CHECK_EQ(&t, tlb, 0);
    CHECK_EQ(&t, text, offsetof(struct rec, s) + sizeof(short));
    memset(a, 0x55, sizeof a);
    for (int k = 0; k < 4; k++) {
      a[k].c = (char)('a' + t.rank + k);
      a[k].d = t.rank + k * 0.25;
      a[k].i[0] = k, a[k].i[1] = t.rank, a[k].i[2] = -k;
      a[k].s = (short)(100 * k + t.rank);
    }
    memset(b, 0, sizeof b);
    exchange(a, 4, srec, b, 4, srec, left, right, &st);
    for (int k = 0; k < 4; k++) {
      CHECK(&t, b[k].c == (char)('a' + left + k) && b[k].d == left + k * 0.25 && b[k].i[0] == k &&
                    b[k].i[1] == left && b[k].i[2] == -k && b[k].s == (short)(100 * k + left),
            "struct %d differs", k);
    }
    MPI_Get_count(&st, srec, &c);
    CHECK_EQ(&t, c, 4);
    MPI_Get_elements(&st, srec, &c);
    CHECK_EQ(&t, c, 4 * 6);

    /* Same signature, another layout: received into struct rec2. */
    t.section = "struct_other_layout";
    MPI_Aint disp2[4] = {offsetof(struct rec2, c), offsetof(struct rec2, d), offsetof(struct rec2, i),
                         offsetof(struct rec2, s)};
    MPI_Datatype st2, srec2;
    MPI_Type_create_struct(4, bl, disp2, types, &st2);
    MPI_Type_create_resized(st2, 0, sizeof(struct rec2), &srec2);
    MPI_Type_commit(&srec2);
    struct rec2 b2[4];
    memset(b2, 0, sizeof b2);
    exchange(a, 4, srec, b2, 4, srec2, left, right, &st);
    for (int k = 0; k < 4; k++)
      CHECK(&t, b2[k].c == (char)('a' + left + k) && b2[k].d == left + k * 0.25 && b2[k].i[0] == k &&
                    b2[k].i[1] == left && b2[k].i[2] == -k && b2[k].s == (short)(100 * k + left),
            "struct (other layout) %d differs", k);
    /* And sent as plain basic types in signature order, received as the struct. */
    t.section = "struct_from_basic";
    struct { char c; double d; int i[3]; short s; } one;
    memset(b, 0, sizeof b);
    MPI_Datatype seq_t[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Aint seq_d[4];
    MPI_Aint ob;
    MPI_Get_address(&one, &ob);
    MPI_Get_address(&one.c, &seq_d[0]);
    MPI_Get_address(&one.d, &seq_d[1]);
    MPI_Get_address(one.i, &seq_d[2]);
    MPI_Get_address(&one.s, &seq_d[3]);
    /* Absolute addresses with MPI_BOTTOM. */
    MPI_Datatype abs_t;
    MPI_Type_create_struct(4, bl, seq_d, seq_t, &abs_t);
    MPI_Type_commit(&abs_t);
    one.c = 'Z', one.d = 2.5 + t.rank, one.i[0] = 1, one.i[1] = 2, one.i[2] = 3, one.s = (short)t.rank;
    exchange(MPI_BOTTOM, 1, abs_t, b, 1, srec, left, right, &st);
    CHECK(&t, b[0].c == 'Z' && b[0].d == 2.5 + left && b[0].i[2] == 3 && b[0].s == left, "struct sent from MPI_BOTTOM");
    MPI_Type_free(&abs_t);
    MPI_Type_free(&srec2);
    MPI_Type_free(&st2);
    MPI_Type_free(&srec);
    MPI_Type_free(&st0);
  }

  t.section = "pack_unpack";
  {
    double m[kRows][kCols];
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kCols; j++) m[i][j] = mval(t.rank, i, j);
    MPI_Datatype column;
    MPI_Type_vector(kRows, 1, kCols, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    int n = 3 + t.rank;
    double three[3] = {0.5, 1.5, 2.5};
    int s1 = 0, s2 = 0, s3 = 0;
    MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &s1);
    MPI_Pack_size(1, column, MPI_COMM_WORLD, &s2);
    MPI_Pack_size(3, MPI_DOUBLE, MPI_COMM_WORLD, &s3);
    CHECK(&t, s2 >= kRows * (int)sizeof(double), "Pack_size of a column: %d", s2);
    int cap = s1 + s2 + s3;
    char* pbuf = malloc(cap);
    int pos = 0;
    CHECK_MPI(&t, MPI_Pack(&n, 1, MPI_INT, pbuf, cap, &pos, MPI_COMM_WORLD));
    CHECK_MPI(&t, MPI_Pack(&m[0][4], 1, column, pbuf, cap, &pos, MPI_COMM_WORLD));
    CHECK_MPI(&t, MPI_Pack(three, 3, MPI_DOUBLE, pbuf, cap, &pos, MPI_COMM_WORLD));
    CHECK(&t, pos > 0 && pos <= cap, "packed %d bytes, Pack_size total %d", pos, cap);
    char* rbuf = malloc(cap);
    exchange(pbuf, pos, MPI_PACKED, rbuf, cap, MPI_PACKED, left, right, &st);
    int got = 0;
    MPI_Get_count(&st, MPI_PACKED, &got);
    int rn = -1, rpos = 0;
    double rcol[kRows], r3[3];
    CHECK_MPI(&t, MPI_Unpack(rbuf, got, &rpos, &rn, 1, MPI_INT, MPI_COMM_WORLD));
    CHECK_MPI(&t, MPI_Unpack(rbuf, got, &rpos, rcol, kRows, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK_MPI(&t, MPI_Unpack(rbuf, got, &rpos, r3, 3, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK_EQ(&t, rn, 3 + left);
    for (int i = 0; i < kRows; i++) CHECK(&t, rcol[i] == mval(left, i, 4), "unpacked column [%d]", i);
    CHECK(&t, r3[0] == 0.5 && r3[2] == 2.5, "unpacked doubles");
    CHECK_EQ(&t, rpos, got);
    /* A packed buffer received as typed data: MPI_PACKED matches any signature. */
    pos = 0;
    MPI_Pack(&m[0][1], 1, column, pbuf, cap, &pos, MPI_COMM_WORLD);
    double col[kRows];
    exchange(pbuf, pos, MPI_PACKED, col, kRows, MPI_DOUBLE, left, right, &st);
    for (int i = 0; i < kRows; i++) CHECK(&t, col[i] == mval(left, i, 1), "packed column received as doubles [%d]", i);
    free(pbuf);
    free(rbuf);
    MPI_Type_free(&column);
  }

  t.section = "type_dup_hvector";
  {
    MPI_Datatype hv, dup;
    /* Every other int of 8: hvector with a byte stride. */
    MPI_Type_create_hvector(4, 1, 2 * sizeof(int), MPI_INT, &hv);
    MPI_Type_dup(hv, &dup);
    MPI_Type_commit(&dup);
    int s[8], r[4];
    for (int i = 0; i < 8; i++) s[i] = t.rank * 10 + i;
    exchange(s, 1, dup, r, 4, MPI_INT, left, right, &st);
    for (int k = 0; k < 4; k++) CHECK_EQ(&t, r[k], left * 10 + 2 * k);
    MPI_Type_free(&dup);
    MPI_Type_free(&hv);
  }

  return tctx_finish(&t);
}
