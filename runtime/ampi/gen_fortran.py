#!/usr/bin/env python3
"""Generates the Fortran bindings from mpi_functions.def and mpi.h.in (as gen_mpi.py makes mpi.h).

Outputs:
  fortran_bindings.c  the Fortran entry points pmpi_x_ (and mpi_x_, weak aliases: the profiling
                      interface) for every function of the table: INTEGER handles (handles are
                      ints already), values by reference, hidden CHARACTER lengths, ierror last,
                      the sentinels (COMMON blocks the wrappers know by address), 1-based
                      indices, Fortran callbacks (trampolines). Compiled into
                      libucharm-ampi-fortran.a, which ampif90 links into the program itself,
                      so each rank's copy of the program has its own sentinels and wrappers.
  mpif.h              constants, sentinels and the functions' types (fixed and free form).
  mpi.f90             module mpi: the same constants, explicit interfaces for every routine
                      (choice buffers take any type: gfortran's NO_ARG_CHECK), MPI_SIZEOF.
  mpi_f08.f90         module mpi_f08: TYPE(MPI_Comm) & co., TYPE(MPI_Status), choice buffers
                      TYPE(*), DIMENSION(..), optional ierror; each routine calls the integer
                      layer above.

usage: gen_fortran.py DEF HEADER_IN OUT_DIR
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_mpi import parse, pub, write_if_changed  # noqa: E402

STATUS_SIZE = 8  # sizeof(MPI_Status) / sizeof(int): the C layout is the Fortran one

# Sentinels: a COMMON block each (its symbol is the block's name + '_'); (Fortran type, dims).
SENTINELS = {
    'MPI_BOTTOM': ('INTEGER', ''),
    'MPI_IN_PLACE': ('INTEGER', ''),
    'MPI_STATUS_IGNORE': ('INTEGER', '(MPI_STATUS_SIZE)'),
    'MPI_STATUSES_IGNORE': ('INTEGER', '(MPI_STATUS_SIZE,1)'),
    'MPI_ERRCODES_IGNORE': ('INTEGER', '(1)'),
    'MPI_ARGV_NULL': ('CHARACTER*1', '(1)'),
    'MPI_ARGVS_NULL': ('CHARACTER*1', '(1,1)'),
    'MPI_UNWEIGHTED': ('INTEGER', '(1)'),
    'MPI_WEIGHTS_EMPTY': ('INTEGER', '(1)'),
}

# Predefined callbacks a Fortran program names (EXTERNAL): (C-callable symbol's Fortran name, kind).
CALLBACKS = [
    ('MPI_NULL_COPY_FN', 'copy_old'), ('MPI_DUP_FN', 'copy_old'), ('MPI_NULL_DELETE_FN', 'del_old'),
    ('MPI_COMM_NULL_COPY_FN', 'copy'), ('MPI_COMM_DUP_FN', 'copy'), ('MPI_COMM_NULL_DELETE_FN', 'del'),
    ('MPI_TYPE_NULL_COPY_FN', 'copy'), ('MPI_TYPE_DUP_FN', 'copy'), ('MPI_TYPE_NULL_DELETE_FN', 'del'),
    ('MPI_WIN_NULL_COPY_FN', 'copy'), ('MPI_WIN_DUP_FN', 'copy'), ('MPI_WIN_NULL_DELETE_FN', 'del'),
    ('MPI_CONVERSION_FN_NULL', 'conv'),
]

# Output strings: the bound of each (the C side writes at most that many characters + NUL).
STR_OUT_MAX = {
    'name': 'MPI_MAX_PROCESSOR_NAME', 'version': 'MPI_MAX_LIBRARY_VERSION_STRING',
    'string': 'MPI_MAX_ERROR_STRING', 'comm_name': 'MPI_MAX_OBJECT_NAME',
    'type_name': 'MPI_MAX_OBJECT_NAME', 'win_name': 'MPI_MAX_OBJECT_NAME',
    'key': 'MPI_MAX_INFO_KEY', 'datarep': 'MPI_MAX_DATAREP_STRING', 'port_name': 'MPI_MAX_PORT_NAME',
}
LOGICAL_IN = {'commute', 'reorder', 'high', 'flag'}
LOGICAL_OUT = {'flag', 'commute', 'weighted'}
LOGICAL_ARRAYS = {'periods', 'remain_dims'}
# MPI-1 functions whose Fortran binding has default INTEGER where C has MPI_Aint.
FINT_AINT = {('Type_hvector', 'stride'), ('Type_hindexed', 'array_of_displacements'),
             ('Type_struct', 'array_of_displacements'), ('Address', 'address'),
             ('Type_extent', 'extent'), ('Type_lb', 'displacement'), ('Type_ub', 'displacement')}
HANDLE_TYPES = {'MPI_Comm', 'MPI_Group', 'MPI_Datatype', 'MPI_Op', 'MPI_Request', 'MPI_Errhandler',
                'MPI_Info', 'MPI_Win', 'MPI_File', 'MPI_Message', 'MPIX_Stream'}
F08_TYPE = {'MPI_Comm': 'MPI_Comm', 'MPI_Group': 'MPI_Group', 'MPI_Datatype': 'MPI_Datatype',
            'MPI_Op': 'MPI_Op', 'MPI_Request': 'MPI_Request', 'MPI_Errhandler': 'MPI_Errhandler',
            'MPI_Info': 'MPI_Info', 'MPI_Win': 'MPI_Win', 'MPI_File': 'MPI_File',
            'MPI_Message': 'MPI_Message'}
KIND = {'MPI_Aint': 'MPI_ADDRESS_KIND', 'MPI_Offset': 'MPI_OFFSET_KIND', 'MPI_Count': 'MPI_COUNT_KIND'}


def fortran_only_skip(name):
    """C-only functions: the handle and status conversions, and MPI-4.0's large-count forms
    (Fortran gets those in mpi_f08 as overloads of KIND=MPI_COUNT_KIND, not done here)."""
    # MPI_Info_get_string: its Fortran form (a blank-padded CHARACTER*(*) value) is not done.
    return name.endswith('_c2f') or name.endswith('_f2c') or name.endswith('_c') or name == 'Info_get_string'


class Param:
    def __init__(self, fn, text):
        text = text.strip()
        self.dims = re.findall(r'\[([^\]]*)\]', text)
        base = re.sub(r'\[[^\]]*\]', '', text).strip()
        self.name = re.findall(r'[A-Za-z_][A-Za-z_0-9]*', base)[-1]
        ctype = base[:base.rfind(self.name)].strip()
        self.const = ctype.startswith('const ')
        ctype = ctype.replace('const ', '').replace(' ', '')
        self.ptr = ctype.count('*')
        self.base = ctype.replace('*', '')
        self.array = bool(self.dims)
        self.fn = fn
        self.kind = self.classify()

    def classify(self):
        fn, n, b = self.fn, self.name, self.base
        if n == 'argc' or (n == 'argv' and fn in ('Init', 'Init_thread')):
            return 'null'
        if b == 'void' and self.ptr == 1:
            if n == 'attribute_val':
                return 'attr_set' if ('set' in fn.lower() or fn == 'Attr_put') else 'attr_get'
            if n == 'extra_state':
                return 'extra_state'
            if n == 'baseptr':
                return 'baseptr'
            if n == 'buffer_addr':
                return 'buffer_addr'
            return 'choice'
        if b == 'char':
            if n == 'argv':
                return 'argv'
            if n == 'array_of_commands':
                return 'commands'
            if n == 'array_of_argv':
                return 'argvs'
            if self.const:
                return 'str_in'
            if fn in ('Comm_spawn',) and n == 'command':
                return 'str_in'
            return 'str_out'
        if b == 'MPI_Status':
            if n == 'array_of_statuses':
                return 'statuses'
            if self.const:
                return 'status_in'
            if fn.startswith('Status_set'):
                return 'status_inout'
            return 'status_out'
        if b.endswith('_function') or b.endswith('_fn'):
            return 'fn:' + b
        if (fn, n) in FINT_AINT:
            return 'fint_aint_array' if self.array else ('fint_aint_out' if self.ptr else 'fint_aint_in')
        if b in KIND:
            if self.array:
                return 'aint_array'
            return 'aint_ptr' if self.ptr else 'aint_in'
        if b == 'int' or b in HANDLE_TYPES:
            if self.array:
                if n in ('sourceweights', 'destweights', 'weights'):
                    return 'weights'
                if n == 'array_of_errcodes':
                    return 'errcodes'
                if n == 'array_of_indices':
                    return 'indices'
                return 'int_array'
            if self.ptr:
                if n == 'indx':
                    return 'index_out'
                if n in LOGICAL_OUT:
                    return 'logical_out'
                return 'int_ptr'
            return 'int_in'
        raise SystemExit(f'gen_fortran.py: no Fortran mapping for {fn}({self.base} {"*" * self.ptr}{n})')


# ---------------------------------------------------------------------------- C wrappers

C_PROLOGUE = r'''// Generated by runtime/ampi/gen_fortran.py from mpi_functions.def: do not edit.
// The Fortran entry points (gfortran: lowercase names with one trailing underscore; CHARACTER
// lengths are size_t arguments after the others). Linked into the program itself (each rank's
// copy has its own sentinels below, which the program's COMMON blocks share).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <ISO_Fortran_binding.h>

typedef MPI_Fint F;
#define W __attribute__((visibility("default")))

// Reports an error the Fortran binding itself finds, through MPI_COMM_WORLD's error handler
// (libucharm-ampi, comm/c2f.cpp); returns the code when the handler returns.
int ucharm_ampi_fortran_error(int code, const char* fn, const char* message);

// The sentinels: the program's COMMON blocks of mpif.h / module mpi / mpi_f08 are these (weak:
// mpi_f08's BIND(C) variables define them where that module is used).
__attribute__((weak, aligned(16))) F mpi_fortran_bottom_[1];
__attribute__((weak, aligned(16))) F mpi_fortran_in_place_[1];
__attribute__((weak, aligned(16))) F mpi_fortran_status_ignore_[@STATUS_SIZE@];
__attribute__((weak, aligned(16))) F mpi_fortran_statuses_ignore_[@STATUS_SIZE@];
__attribute__((weak, aligned(16))) F mpi_fortran_errcodes_ignore_[1];
__attribute__((weak, aligned(16))) char mpi_fortran_argv_null_[4];
__attribute__((weak, aligned(16))) char mpi_fortran_argvs_null_[4];
__attribute__((weak, aligned(16))) F mpi_fortran_unweighted_[1];
__attribute__((weak, aligned(16))) F mpi_fortran_weights_empty_[1];

static inline void* f_buf(const void* p) {
  if (p == (const void*)mpi_fortran_bottom_) return MPI_BOTTOM;
  if (p == (const void*)mpi_fortran_in_place_) return MPI_IN_PLACE;
  return (void*)p;
}
static inline int* f_weights(const F* p) {
  if (p == mpi_fortran_unweighted_) return MPI_UNWEIGHTED;
  if (p == mpi_fortran_weights_empty_) return MPI_WEIGHTS_EMPTY;
  return (int*)p;
}
static inline int* f_errcodes(F* p) { return p == mpi_fortran_errcodes_ignore_ ? MPI_ERRCODES_IGNORE : p; }

// A Fortran string as a C string: trailing blanks dropped (MPI 3.1 §17.1.13). NULL: no memory.
static char* f_str_in(const char* s, size_t len) {
  while (len > 0 && s[len - 1] == ' ') --len;
  char* c = (char*)malloc(len + 1);
  if (!c) return NULL;
  memcpy(c, s, len);
  c[len] = 0;
  return c;
}
// Info keys and values lose leading blanks too (MPI 3.1 §9: "leading and trailing blanks").
static char* f_str_in_info(const char* s, size_t len) {
  while (len > 0 && *s == ' ') ++s, --len;
  return f_str_in(s, len);
}
// A C string into a Fortran one: blank padded (or cut at its length).
static void f_str_out(char* dst, size_t len, const char* src) {
  size_t n = strlen(src);
  if (n > len) n = len;
  memcpy(dst, src, n);
  memset(dst + n, ' ', len - n);
}
static int f_nomem(const char* fn) { return ucharm_ampi_fortran_error(MPI_ERR_NO_MEM, fn, "out of memory converting the arguments"); }

// Statuses: MPI_STATUS_SIZE integers with the C layout; copied (a Fortran array is only 4-byte aligned).
static MPI_Status* f_status(F* fs, MPI_Status* tmp) {
  if (fs == mpi_fortran_status_ignore_) return MPI_STATUS_IGNORE;
  memcpy(tmp, fs, sizeof *tmp);
  return tmp;
}
static void f_status_back(F* fs, const MPI_Status* cs) {
  if (cs != MPI_STATUS_IGNORE) memcpy(fs, cs, sizeof *cs);
}
// The C statuses for a Fortran array of them; 0, or -1 when out of memory.
static int f_statuses(F* fs, int n, MPI_Status** cs) {
  *cs = MPI_STATUSES_IGNORE;
  if (fs == mpi_fortran_statuses_ignore_ || fs == mpi_fortran_status_ignore_) return 0;
  if (((uintptr_t)fs % _Alignof(MPI_Status)) == 0) {
    *cs = (MPI_Status*)fs;
    return 0;
  }
  *cs = (MPI_Status*)malloc((n > 0 ? (size_t)n : 1) * sizeof(MPI_Status));
  if (!*cs) return -1;
  if (n > 0) memcpy(*cs, fs, (size_t)n * sizeof(MPI_Status));
  return 0;
}
static void f_statuses_back(F* fs, MPI_Status* cs, int n) {
  if (cs == MPI_STATUSES_IGNORE || cs == (MPI_Status*)fs) return;
  if (n > 0) memcpy(fs, cs, (size_t)n * sizeof *cs);
  free(cs);
}
static int f_logical(int x) { return x != 0; }  // gfortran's .TRUE. is 1

// Attribute values a Fortran program sets are integers; C reads them as a pointer to the
// integer (MPI 3.1 §17.2.7). So the value lives in a cell, listed in this copy of the program
// (reachable: no leak report), and the runtime stores the cell's address. The delete
// trampoline of a keyval created in Fortran frees its cells.
typedef struct f_cell {
  MPI_Aint value;
  struct f_cell* next;
} f_cell;
static f_cell* f_cells;
static void* f_cell_new(MPI_Aint v) {
  f_cell* c = (f_cell*)malloc(sizeof *c);
  if (!c) return NULL;
  c->value = v;
  c->next = f_cells;
  f_cells = c;
  return c;
}
static int f_cell_find(const void* p, MPI_Aint* v) {
  for (f_cell* c = f_cells; c; c = c->next)
    if (c == p) {
      *v = c->value;
      return 1;
    }
  return 0;
}
static void f_cell_drop(const void* p) {
  for (f_cell** c = &f_cells; *c; c = &(*c)->next)
    if (*c == p) {
      f_cell* gone = *c;
      *c = gone->next;
      free(gone);
      return;
    }
}
// An attribute's value as Fortran sees it: the predefined attributes of communicators and
// windows are pointers to their values in C; a value Fortran set is its cell's; a value C
// set (a pointer) is its address.
static MPI_Aint f_attr_value(int keyval, void* v) {
  MPI_Aint x;
  if (keyval > 0 && keyval <= UCHARM_MPI_LAST_PREDEFINED_KEYVAL) return *(int*)v;
  if (keyval == MPI_WIN_SIZE) return *(MPI_Aint*)v;
  if (keyval == MPI_WIN_DISP_UNIT || keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL) return *(int*)v;
  if (f_cell_find(v, &x)) return x;
  return (MPI_Aint)v;
}
static MPI_Aint f_attr_in(void* v) {
  MPI_Aint x;
  return f_cell_find(v, &x) ? x : (MPI_Aint)v;
}

// argv of MPI_COMM_SPAWN: CHARACTER*(*) ARGV(*), ended by a blank entry.
static char** f_argv(const char* a, size_t len) {
  if (a == mpi_fortran_argv_null_) return MPI_ARGV_NULL;
  size_t n = 0;
  while (1) {
    const char* e = a + n * len;
    size_t k = len;
    while (k > 0 && e[k - 1] == ' ') --k;
    if (k == 0) break;
    ++n;
  }
  char** v = (char**)calloc(n + 1, sizeof(char*));
  if (!v) return NULL;
  for (size_t i = 0; i < n; ++i) v[i] = f_str_in(a + i * len, len);
  return v;
}
static void f_argv_free(char** v) {
  if (!v || v == MPI_ARGV_NULL) return;
  for (char** p = v; *p; ++p) free(*p);
  free(v);
}

// ---- callbacks written in Fortran --------------------------------------------------------
// Attribute copy and delete functions: a record per keyval carries the Fortran procedures and
// extra state; the runtime calls the trampolines with the record as extra_state. The records
// stay listed (reachable) for the program's life: an attribute may outlive its keyval.
typedef void (*f_proc)(void);
typedef struct f_keyval {
  f_proc copy, del;
  MPI_Aint extra;
  int old_style;  // MPI_KEYVAL_CREATE: INTEGER values; else INTEGER(KIND=MPI_ADDRESS_KIND)
  struct f_keyval* next;
} f_keyval;
static f_keyval* f_keyvals;
typedef void (*f_copy_new)(F*, F*, MPI_Aint*, MPI_Aint*, MPI_Aint*, F*, F*);
typedef void (*f_copy_old)(F*, F*, F*, F*, F*, F*, F*);
typedef void (*f_del_new)(F*, F*, MPI_Aint*, MPI_Aint*, F*);
typedef void (*f_del_old)(F*, F*, F*, F*, F*);
static int f_copy_tramp(int old, int keyval, void* es, void* in, void* out, int* flag) {
  f_keyval* k = (f_keyval*)es;
  F fold = old, fkey = keyval, fflag = 0, ierr = MPI_SUCCESS;
  if (k->old_style) {
    F fes = (F)k->extra, fin = (F)f_attr_in(in), fout = 0;
    ((f_copy_old)k->copy)(&fold, &fkey, &fes, &fin, &fout, &fflag, &ierr);
    if (ierr == MPI_SUCCESS && fflag) *(void**)out = f_cell_new(fout);
  } else {
    MPI_Aint fes = k->extra, fin = f_attr_in(in), fout = 0;
    ((f_copy_new)k->copy)(&fold, &fkey, &fes, &fin, &fout, &fflag, &ierr);
    if (ierr == MPI_SUCCESS && fflag) *(void**)out = f_cell_new(fout);
  }
  *flag = fflag != 0;
  if (ierr == MPI_SUCCESS && fflag && !*(void**)out) return MPI_ERR_NO_MEM;
  return ierr;
}
static int f_del_tramp(int obj, int keyval, void* val, void* es) {
  f_keyval* k = (f_keyval*)es;
  F fobj = obj, fkey = keyval, ierr = MPI_SUCCESS;
  if (k->old_style) {
    F fval = (F)f_attr_in(val), fes = (F)k->extra;
    ((f_del_old)k->del)(&fobj, &fkey, &fval, &fes, &ierr);
  } else {
    MPI_Aint fval = f_attr_in(val), fes = k->extra;
    ((f_del_new)k->del)(&fobj, &fkey, &fval, &fes, &ierr);
  }
  if (ierr == MPI_SUCCESS) f_cell_drop(val);
  return ierr;
}
static f_keyval* f_keyval_new(f_proc copy, f_proc del, MPI_Aint extra, int old_style) {
  f_keyval* k = (f_keyval*)malloc(sizeof *k);
  if (!k) return NULL;
  k->copy = copy;
  k->del = del;
  k->extra = extra;
  k->old_style = old_style;
  k->next = f_keyvals;
  f_keyvals = k;
  return k;
}

// The predefined callbacks, callable from Fortran as the standard says they behave.
W void pmpi_null_copy_fn_(F* o, F* k, F* es, F* in, F* out, F* flag, F* ierr) { (void)o; (void)k; (void)es; (void)in; (void)out; *flag = 0; *ierr = MPI_SUCCESS; }
W void pmpi_dup_fn_(F* o, F* k, F* es, F* in, F* out, F* flag, F* ierr) { (void)o; (void)k; (void)es; *out = *in; *flag = 1; *ierr = MPI_SUCCESS; }
W void pmpi_null_delete_fn_(F* o, F* k, F* v, F* es, F* ierr) { (void)o; (void)k; (void)v; (void)es; *ierr = MPI_SUCCESS; }
#define F_NEW_CALLBACKS(x) \
  W void pmpi_##x##_null_copy_fn_(F* o, F* k, MPI_Aint* es, MPI_Aint* in, MPI_Aint* out, F* flag, F* ierr) { (void)o; (void)k; (void)es; (void)in; (void)out; *flag = 0; *ierr = MPI_SUCCESS; } \
  W void pmpi_##x##_dup_fn_(F* o, F* k, MPI_Aint* es, MPI_Aint* in, MPI_Aint* out, F* flag, F* ierr) { (void)o; (void)k; (void)es; *out = *in; *flag = 1; *ierr = MPI_SUCCESS; } \
  W void pmpi_##x##_null_delete_fn_(F* o, F* k, MPI_Aint* v, MPI_Aint* es, F* ierr) { (void)o; (void)k; (void)v; (void)es; *ierr = MPI_SUCCESS; } \
  W void mpi_##x##_null_copy_fn_(F* o, F* k, MPI_Aint* es, MPI_Aint* in, MPI_Aint* out, F* flag, F* ierr) __attribute__((weak, alias("pmpi_" #x "_null_copy_fn_"))); \
  W void mpi_##x##_dup_fn_(F* o, F* k, MPI_Aint* es, MPI_Aint* in, MPI_Aint* out, F* flag, F* ierr) __attribute__((weak, alias("pmpi_" #x "_dup_fn_"))); \
  W void mpi_##x##_null_delete_fn_(F* o, F* k, MPI_Aint* v, MPI_Aint* es, F* ierr) __attribute__((weak, alias("pmpi_" #x "_null_delete_fn_")));
F_NEW_CALLBACKS(comm)
F_NEW_CALLBACKS(type)
F_NEW_CALLBACKS(win)
W void mpi_null_copy_fn_(F* o, F* k, F* es, F* in, F* out, F* flag, F* ierr) __attribute__((weak, alias("pmpi_null_copy_fn_")));
W void mpi_dup_fn_(F* o, F* k, F* es, F* in, F* out, F* flag, F* ierr) __attribute__((weak, alias("pmpi_dup_fn_")));
W void mpi_null_delete_fn_(F* o, F* k, F* v, F* es, F* ierr) __attribute__((weak, alias("pmpi_null_delete_fn_")));
W void mpi_conversion_fn_null_(void) {}

// Generalized requests: the Fortran query, free and cancel functions and the program's
// extra-state variable itself (by reference, as MPICH and OpenMPI: a free function that
// changes it changes the program's variable).
typedef struct f_greq {
  f_proc query, free, cancel;
  MPI_Aint* extra;
} f_greq;
static int f_greq_query(void* es, MPI_Status* status) {
  f_greq* g = (f_greq*)es;
  F fs[@STATUS_SIZE@], ierr = MPI_SUCCESS;
  memcpy(fs, status, sizeof fs);
  ((void (*)(MPI_Aint*, F*, F*))g->query)(g->extra, fs, &ierr);
  memcpy(status, fs, sizeof fs);
  return ierr;
}
static int f_greq_free(void* es) {
  f_greq* g = (f_greq*)es;
  F ierr = MPI_SUCCESS;
  ((void (*)(MPI_Aint*, F*))g->free)(g->extra, &ierr);
  free(g);
  return ierr;
}
static int f_greq_cancel(void* es, int complete) {
  f_greq* g = (f_greq*)es;
  F ierr = MPI_SUCCESS, fcomplete = complete != 0;
  ((void (*)(MPI_Aint*, F*, F*))g->cancel)(g->extra, &fcomplete, &ierr);
  return ierr;
}

// mpi_f08's choice buffers arrive as descriptors (TYPE(*), DIMENSION(..)): the address of the
// data, which must be contiguous (MPI_SUBARRAYS_SUPPORTED is .FALSE.: a strided section would
// need a datatype built from the descriptor).
W void* ucharm_f08_buf(CFI_cdesc_t* d, const char* fn, F* ierr) {
  *ierr = MPI_SUCCESS;
  CFI_index_t expect = (CFI_index_t)d->elem_len;
  for (int i = 0; i < d->rank; ++i) {
    if (d->dim[i].extent == -1) break;  // the last extent of an assumed-size array
    if (d->dim[i].extent > 1 && d->dim[i].sm != expect) {
      *ierr = ucharm_ampi_fortran_error(MPI_ERR_BUFFER, fn,
          "the buffer is a non-contiguous array section (MPI_SUBARRAYS_SUPPORTED is .FALSE.): pass a contiguous array or describe the layout with a derived datatype");
      return NULL;
    }
    expect *= d->dim[i].extent;
  }
  return d->base_addr;
}

// MPI_F_SYNC_REG: its call is the whole point (the compiler must assume the variable changed).
W void pmpi_f_sync_reg_(void* buf) { (void)buf; }
W void mpi_f_sync_reg_(void* buf) __attribute__((weak, alias("pmpi_f_sync_reg_")));

// Charm++'s AMPI extensions, as its Fortran programs call them.
W void ampi_migrate_(F* info, F* ierr) { *ierr = AMPI_Migrate(*info); }
W void ampi_migrate_to_pe_(F* dest, F* ierr) { *ierr = AMPI_Migrate_to_pe(*dest); }
W void ampi_set_migratable_(F* m, F* ierr) { *ierr = AMPI_Set_migratable(*m != 0); }
W void ampi_load_start_measure_(F* ierr) { *ierr = AMPI_Load_start_measure(); }
W void ampi_load_stop_measure_(F* ierr) { *ierr = AMPI_Load_stop_measure(); }
W void ampi_load_reset_measure_(F* ierr) { *ierr = AMPI_Load_reset_measure(); }
W void ampi_load_set_value_(double* v, F* ierr) { *ierr = AMPI_Load_set_value(*v); }
W void ampi_yield_(F* ierr) { *ierr = AMPI_Yield(); }
W F ampi_my_pe_(void) { return AMPI_My_pe(); }
W F ampi_num_pes_(void) { return AMPI_Num_pes(); }
// AMPI_REGISTER_PUP(pupfn, data, idx, ierr): Charm++'s Fortran form; the routine is called as
// pupfn(p, data) with p the PUP::er (an INTEGER(KIND=8) handle for the fpup_* routines).
W void ampi_register_pup_(MPI_PupFn fn, void* data, F* idx, F* ierr) { int i = 0; *ierr = AMPI_Register_pup(fn, data, &i); *idx = i; }
W void ampi_get_pup_data_(F* idx, void* data, F* ierr) { *ierr = AMPI_Get_pup_data(*idx, data); }
W void ampi_print_(const char* s, F* ierr, size_t len) {
  char* c = f_str_in(s, len);
  *ierr = c ? AMPI_Print(c) : f_nomem("AMPI_PRINT");
  free(c);
}
W void ampi_register_about_to_migrate_(MPI_MigrateFn fn, F* ierr) { *ierr = AMPI_Register_about_to_migrate(fn); }
W void ampi_register_just_migrated_(MPI_MigrateFn fn, F* ierr) { *ierr = AMPI_Register_just_migrated(fn); }
// fpup: Charm++'s Fortran PUP routines. The pup routine's first argument is the PUP::er
// itself (Fortran passes it on by reference: its address is the pup_er).
W F fpup_issizing_(pup_er p) { return pup_isSizing(p) != 0; }
W F fpup_ispacking_(pup_er p) { return pup_isPacking(p) != 0; }
W F fpup_isunpacking_(pup_er p) { return pup_isUnpacking(p) != 0; }
W F fpup_isdeleting_(pup_er p) { return pup_isDeleting(p) != 0; }
W void fpup_int_(pup_er p, F* x) { pup_int(p, x); }
W void fpup_ints_(pup_er p, F* x, F* n) { pup_ints(p, x, *n); }
W void fpup_real_(pup_er p, float* x) { pup_float(p, x); }
W void fpup_reals_(pup_er p, float* x, F* n) { pup_floats(p, x, *n); }
W void fpup_double_(pup_er p, double* x) { pup_double(p, x); }
W void fpup_doubles_(pup_er p, double* x, F* n) { pup_doubles(p, x, *n); }
W void fpup_logical_(pup_er p, F* x) { pup_int(p, x); }
W void fpup_logicals_(pup_er p, F* x, F* n) { pup_ints(p, x, *n); }
W void fpup_char_(pup_er p, char* x, size_t len) { (void)len; pup_char(p, x); }
W void fpup_chars_(pup_er p, char* x, F* n, size_t len) { (void)len; pup_chars(p, x, *n); }
W void fpup_long_(pup_er p, long long* x) { pup_longlong(p, x); }
W void fpup_longs_(pup_er p, long long* x, F* n) { pup_longlongs(p, x, *n); }

// A program without a PROGRAM unit whose main routine is SUBROUTINE MPI_MAIN (Charm++'s AMPI
// convention for Fortran): this main (weak: a PROGRAM's main wins) runs it.
void _gfortran_set_args(int argc, char** argv);
extern void mpi_main_(void) __attribute__((weak));
__attribute__((weak)) int main(int argc, char** argv) {
  if (!mpi_main_) {
    fputs("main: the program has neither a PROGRAM unit nor a SUBROUTINE MPI_MAIN\n", stderr);
    return 1;
  }
  _gfortran_set_args(argc, argv);
  mpi_main_();
  return 0;
}

// ---- the functions of mpi_functions.def ---------------------------------------------------
'''


def fname(name):
    return pub(name).lower()


def gen_c(fns):
    out = [C_PROLOGUE.replace('@STATUS_SIZE@', str(STATUS_SIZE))]
    for ret, name, params in fns:
        if fortran_only_skip(name):
            continue
        ps = [Param(name, p) for p in params.split(',') if p.strip() not in ('void', '', '...')]
        out.extend(c_wrapper(ret, name, ps, '...' in params))
    return '\n'.join(out) + '\n'


def count_param(ps):
    for p in ps:
        if p.name in ('count', 'incount'):
            return f'*{p.name}'
    raise SystemExit('no count for statuses')


def c_wrapper(ret, name, ps, variadic):
    fn = pub(name).upper()
    lname = fname(name)
    decl, pre, args, post, hidden, cleanup = [], [], [], [], [], []
    if name == 'Pcontrol':
        return [f'W void p{lname}_(F* level) {{ PMPI_Pcontrol(*level); }}',
                f'W void {lname}_(F* level) __attribute__((weak, alias("p{lname}_")));']
    if ret in ('double', 'MPI_Aint'):
        cargs = ', '.join(f'{p.base}* {p.name}' for p in ps) or 'void'
        call = ', '.join(f'*{p.name}' for p in ps)
        return [f'W {ret} p{lname}_({cargs}) {{ return P{pub(name)}({call}); }}',
                f'W {ret} {lname}_({cargs}) __attribute__((weak, alias("p{lname}_")));']
    keyval_fns = None
    for p in ps:
        n, k = p.name, p.kind
        if k == 'null':
            args.append('NULL')
        elif k == 'choice':
            decl.append(f'const void* {n}')
            args.append(f'f_buf({n})')
        elif k == 'attr_set':
            t = 'F' if name == 'Attr_put' else 'MPI_Aint'
            decl.append(f'{t}* {n}')
            pre.append(f'void* c_{n} = f_cell_new((MPI_Aint)*{n});')
            pre.append(f'if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            args.append(f'c_{n}')
            post.append(f'if (*ierr != MPI_SUCCESS) f_cell_drop(c_{n});')
        elif k == 'attr_get':
            t = 'F' if name == 'Attr_get' else 'MPI_Aint'
            decl.append(f'{t}* {n}')
            pre.append(f'void* c_{n} = NULL;')
            args.append(f'&c_{n}')
            keyarg = [q.name for q in ps if 'keyval' in q.name][0]
            post.append(f'if (*ierr == MPI_SUCCESS && *flag) *{n} = ({t})f_attr_value(*{keyarg}, c_{n});')
        elif k == 'extra_state':
            t = 'F' if name == 'Keyval_create' else 'MPI_Aint'
            decl.append(f'{t}* {n}')
            args.append(f'(void*)(MPI_Aint)*{n}')  # replaced below for keyvals and grequests
        elif k == 'baseptr':
            decl.append(f'MPI_Aint* {n}')
            args.append(n)
        elif k == 'buffer_addr':
            decl.append(f'void* {n}')
            pre.append(f'(void){n};  // Fortran cannot use the address: MPI_BUFFER_DETACH returns none')
            pre.append('void* c_buffer_addr = NULL;')
            args.append('&c_buffer_addr')
        elif k == 'int_in':
            decl.append(f'F* {n}')
            args.append(f'f_logical(*{n})' if n in LOGICAL_IN else f'*{n}')
        elif k in ('int_ptr', 'logical_out', 'index_out'):
            decl.append(f'F* {n}')
            args.append(n)
            if k == 'logical_out':
                post.append(f'if (*ierr == MPI_SUCCESS) *{n} = f_logical(*{n});')
            if k == 'index_out':
                post.append(f'if (*ierr == MPI_SUCCESS && *{n} >= 0) *{n} += 1;')
        elif k in ('int_array',):
            decl.append(f'F* {n}' if not p.const else f'const F* {n}')
            args.append(f'(int (*)[3]){n}' if len(p.dims) == 2 else n)
        elif k == 'weights':
            decl.append(f'{"const " if p.const else ""}F* {n}')
            args.append(f'f_weights({n})')
        elif k == 'errcodes':
            decl.append(f'F* {n}')
            args.append(f'f_errcodes({n})')
        elif k == 'indices':
            decl.append(f'F* {n}')
            args.append(n)
            post.append(f'if (*ierr == MPI_SUCCESS && *outcount != MPI_UNDEFINED) for (int i = 0; i < *outcount; ++i) {n}[i] += 1;')
        elif k == 'aint_in':
            decl.append(f'{p.base}* {n}')
            args.append(f'*{n}')
        elif k in ('aint_ptr', 'aint_array'):
            decl.append(f'{"const " if p.const else ""}{p.base}* {n}')
            args.append(n)
        elif k == 'fint_aint_in':
            decl.append(f'F* {n}')
            args.append(f'(MPI_Aint)*{n}')
        elif k == 'fint_aint_out':
            decl.append(f'F* {n}')
            pre.append(f'MPI_Aint c_{n} = 0;')
            args.append(f'&c_{n}')
            post.append(f'if (*ierr == MPI_SUCCESS) {{ if (c_{n} != (F)c_{n}) *ierr = ucharm_ampi_fortran_error(MPI_ERR_ARG, "{fn}", '
                        f'"the value does not fit a default INTEGER: use the MPI-2 routine with INTEGER(KIND=MPI_ADDRESS_KIND)"); '
                        f'else *{n} = (F)c_{n}; }}')
        elif k == 'fint_aint_array':
            decl.append(f'const F* {n}')
            pre.append(f'MPI_Aint* c_{n} = (MPI_Aint*)malloc(((*count) > 0 ? (size_t)*count : 1) * sizeof(MPI_Aint));')
            pre.append(f'if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            pre.append(f'for (int i = 0; i < *count; ++i) c_{n}[i] = {n}[i];')
            args.append(f'c_{n}')
            cleanup.append(f'free(c_{n});')
        elif k in ('status_out', 'status_inout', 'status_in'):
            decl.append(f'F* {n}')
            # Copied in for outputs too: the fields a call leaves alone (MPI_ERROR of the
            # single-completion calls) keep the program's values.
            pre.append(f'MPI_Status c_{n}_buf; MPI_Status* c_{n} = f_status({n}, &c_{n}_buf);')
            args.append(f'c_{n}')
            if k != 'status_in':
                post.append(f'f_status_back({n}, c_{n});')
        elif k == 'statuses':
            decl.append(f'F* {n}')
            cnt = count_param(ps)
            pre.append(f'MPI_Status* c_{n};')
            pre.append(f'if (f_statuses({n}, {cnt}, &c_{n})) {{ *ierr = f_nomem("{fn}"); return; }}')
            args.append(f'c_{n}')
            cleanup.append(f'f_statuses_back({n}, c_{n}, {cnt});')
        elif k == 'str_in':
            decl.append(f'const char* {n}')
            hidden.append(f'size_t {n}_len')
            trim = 'f_str_in_info' if 'Info_' in name else 'f_str_in'
            pre.append(f'char* c_{n} = {trim}({n}, {n}_len);')
            pre.append(f'if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            args.append(f'c_{n}')
            cleanup.append(f'free(c_{n});')
        elif k == 'str_out':
            decl.append(f'char* {n}')
            hidden.append(f'size_t {n}_len')
            size = '(size_t)(*valuelen > 0 ? *valuelen : 0)' if name == 'Info_get' else STR_OUT_MAX[n]
            pre.append(f'char* c_{n} = (char*)calloc({size} + 1, 1);')
            pre.append(f'if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            args.append(f'c_{n}')
            # Info_get writes the value only when the key is there.
            found = ' && *flag' if name == 'Info_get' else ''
            post.append(f'if (*ierr == MPI_SUCCESS{found}) f_str_out({n}, {n}_len, c_{n});')
            cleanup.append(f'free(c_{n});')
        elif k == 'argv':
            decl.append(f'const char* {n}')
            hidden.append(f'size_t {n}_len')
            pre.append(f'char** c_{n} = f_argv({n}, {n}_len);')
            pre.append(f'if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            args.append(f'c_{n}')
            cleanup.append(f'f_argv_free(c_{n});')
        elif k == 'commands':
            decl.append(f'const char* {n}')
            hidden.append(f'size_t {n}_len')
            pre.append(f'char** c_{n} = (char**)calloc((size_t)(*count > 0 ? *count : 0) + 1, sizeof(char*));')
            pre.append(f'if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            pre.append(f'for (int i = 0; i < *count; ++i) c_{n}[i] = f_str_in({n} + (size_t)i * {n}_len, {n}_len);')
            args.append(f'c_{n}')
            cleanup.append(f'f_argv_free(c_{n});')
        elif k == 'argvs':
            # ARRAY_OF_ARGV(COUNT, *): command i's j-th argument is element (i, j).
            decl.append(f'const char* {n}')
            hidden.append(f'size_t {n}_len')
            pre.append(f'char*** c_{n} = MPI_ARGVS_NULL;')
            pre.append(f'if ({n} != mpi_fortran_argvs_null_) {{')
            pre.append(f'  c_{n} = (char***)calloc((size_t)(*count > 0 ? *count : 0) + 1, sizeof(char**));')
            pre.append(f'  if (!c_{n}) {{ *ierr = f_nomem("{fn}"); return; }}')
            pre.append(f'  for (int i = 0; i < *count; ++i) {{')
            pre.append(f'    size_t m = 0;')
            pre.append(f'    while (1) {{ const char* e = {n} + ((size_t)i + m * (size_t)*count) * {n}_len; size_t k = {n}_len;'
                       f' while (k > 0 && e[k - 1] == \' \') --k; if (k == 0) break; ++m; }}')
            pre.append(f'    c_{n}[i] = (char**)calloc(m + 1, sizeof(char*));')
            pre.append(f'    for (size_t j = 0; c_{n}[i] && j < m; ++j) c_{n}[i][j] = f_str_in({n} + ((size_t)i + j * (size_t)*count) * {n}_len, {n}_len);')
            pre.append(f'  }}')
            pre.append(f'}}')
            args.append(f'c_{n}')
            cleanup.append(f'if (c_{n} != MPI_ARGVS_NULL) {{ for (int i = 0; i < *count; ++i) f_argv_free(c_{n}[i]); free(c_{n}); }}')
        elif k.startswith('fn:'):
            ftype = k[3:]
            decl.append(f'f_proc {n}')
            if ftype in ('MPI_User_function', 'MPI_Comm_errhandler_function', 'MPI_Handler_function',
                         'MPI_Win_errhandler_function', 'MPI_File_errhandler_function'):
                # The Fortran forms take the same arguments by reference: callable as they are.
                args.append(f'({ftype}*){n}')
            elif 'copy' in ftype.lower() or 'delete' in ftype.lower():
                keyval_fns = keyval_fns or []
                keyval_fns.append(n)
                args.append('(void*)f_copy_tramp' if 'copy' in ftype.lower() else '(void*)f_del_tramp')
            elif ftype.startswith('MPI_Grequest'):
                args.append({'query': 'f_greq_query', 'free': 'f_greq_free', 'cancel': 'f_greq_cancel'}[
                    ftype.split('_')[2]])
            elif ftype.startswith('MPI_Datarep'):
                pre.append(f'if ({n} != (f_proc)mpi_conversion_fn_null_) {{'
                           f' *ierr = ucharm_ampi_fortran_error(MPI_ERR_UNSUPPORTED_OPERATION, "{fn}", '
                           f'"data conversion functions written in Fortran are not supported (pass MPI_CONVERSION_FN_NULL)"); return; }}')
                args.append('MPI_CONVERSION_FN_NULL' if 'conversion' in ftype else f'(MPI_Datarep_extent_function*){n}')
                if 'extent' in ftype:
                    pre.append(f'*ierr = ucharm_ampi_fortran_error(MPI_ERR_UNSUPPORTED_OPERATION, "{fn}", '
                               f'"data representations defined in Fortran are not supported"); return;')
            else:
                raise SystemExit(f'gen_fortran.py: no Fortran callback mapping for {ftype}')
        else:
            raise SystemExit(f'gen_fortran.py: unhandled kind {k}')
    # Keyval creation: one record holds both procedures and the extra state.
    if keyval_fns:
        es = [p.name for p in ps if p.kind == 'extra_state'][0]
        old = 1 if name == 'Keyval_create' else 0
        pre.append(f'f_keyval* rec = f_keyval_new({keyval_fns[0]}, {keyval_fns[1]}, (MPI_Aint)*{es}, {old});')
        pre.append(f'if (!rec) {{ *ierr = f_nomem("{fn}"); return; }}')
        args[[i for i, a in enumerate(args) if a.startswith('(void*)(MPI_Aint)*')][0]] = 'rec'
        args = [f'(MPI_{name.split("_")[0]}_copy_attr_function*)f_copy_tramp' if a == '(void*)f_copy_tramp' else a for a in args]
        args = [f'(MPI_{name.split("_")[0]}_delete_attr_function*)f_del_tramp' if a == '(void*)f_del_tramp' else a for a in args]
        if name == 'Keyval_create':
            args = [a.replace('MPI_Keyval_copy_attr_function', 'MPI_Copy_function')
                     .replace('MPI_Keyval_delete_attr_function', 'MPI_Delete_function') for a in args]
    if name == 'Grequest_start':
        pre.append('f_greq* rec = (f_greq*)malloc(sizeof *rec);')
        pre.append(f'if (!rec) {{ *ierr = f_nomem("{fn}"); return; }}')
        pre.append('rec->query = query_fn; rec->free = free_fn; rec->cancel = cancel_fn; rec->extra = extra_state;')
        args = ['rec' if a.startswith('(void*)(MPI_Aint)*') else a for a in args]
        post.append('if (*ierr != MPI_SUCCESS) free(rec);')
    decl.append('F* ierr')
    full = ', '.join(decl + hidden)
    body = [f'W void p{lname}_({full}) {{']
    body += ['  ' + s for s in pre]
    body.append(f'  *ierr = P{pub(name)}({", ".join(args)});')
    body += ['  ' + s for s in post + cleanup]
    body.append('}')
    body.append(f'W void {lname}_({full}) __attribute__((weak, alias("p{lname}_")));')
    if any(p.kind == 'baseptr' for p in ps):
        # module mpi's TYPE(C_PTR) form of the routine (MPI 3.1 §8.2): the same 8 bytes.
        body.append(f'W void {lname}_cptr_({full}) __attribute__((weak, alias("p{lname}_")));')
    return body


# ---------------------------------------------------------------------------- constants

def constants(header_in):
    """(name, value) of every integer constant mpi.h.in defines, in order (aliases resolved)."""
    vals = {}
    types = {}
    order = []
    for line in open(header_in):
        m = re.match(r'#define\s+((?:MPI|MPIX|AMPI)_[A-Z0-9_]+)\s+(.*?)\s*(/\*.*)?$', line)
        if not m:
            continue
        name, v = m.group(1), m.group(2)
        if '*' in v or '(' in name:
            continue
        m2 = re.fullmatch(r'\(\((?:MPI_|MPIX_)\w+\)\s*(-?\d+)\)|\((-?\d+)\)|(-?\d+)', v)
        if m2:
            val = int(next(g for g in m2.groups() if g is not None))
        elif v in vals:
            val = vals[v]
        else:
            continue
        vals[name] = val
        types[name] = m2.group(0).split(')')[0].lstrip('(') if m2 and v.startswith('((') else types.get(v)
        order.append(name)
    return [(n, vals[n], types[n]) for n in order]


EXTRA_CONSTANTS = [('MPI_STATUS_SIZE', STATUS_SIZE), ('MPI_SOURCE', 1), ('MPI_TAG', 2), ('MPI_ERROR', 3),
                   ('MPI_ADDRESS_KIND', 8), ('MPI_OFFSET_KIND', 8), ('MPI_COUNT_KIND', 8),
                   ('MPI_INTEGER_KIND', 4)]
EXTRA_CONSTANTS_T = [(n, v, None) for n, v in EXTRA_CONSTANTS]


# ---------------------------------------------------------------------------- mpif.h

def gen_mpif(consts, fns):
    L = ['! mpif.h: ucharm AMPI for Fortran. Generated by runtime/ampi/gen_fortran.py',
         '! from mpi.h.in and mpi_functions.def: do not edit. Valid in fixed and free form.']
    for n, v, _ in EXTRA_CONSTANTS_T + consts:
        L.append(f'      INTEGER {n}')
        L.append(f'      PARAMETER ({n}={v})')
    L.append('      LOGICAL MPI_SUBARRAYS_SUPPORTED')
    L.append('      PARAMETER (MPI_SUBARRAYS_SUPPORTED=.FALSE.)')
    L.append('      LOGICAL MPI_ASYNC_PROTECTS_NONBLOCKING')
    L.append('      PARAMETER (MPI_ASYNC_PROTECTS_NONBLOCKING=.FALSE.)')
    for n, (t, dims) in SENTINELS.items():
        L.append(f'      {t} {n}{dims}')
        L.append(f'      COMMON /{n.replace("MPI_", "MPI_FORTRAN_")}/ {n}')
    for n, _ in CALLBACKS:
        L.append(f'      EXTERNAL {n}')
    L.append('      DOUBLE PRECISION MPI_WTIME, MPI_WTICK')
    L.append('      DOUBLE PRECISION PMPI_WTIME, PMPI_WTICK')
    L.append('      EXTERNAL MPI_WTIME, MPI_WTICK, PMPI_WTIME, PMPI_WTICK')
    L.append('      INTEGER(KIND=MPI_ADDRESS_KIND) MPI_AINT_ADD, MPI_AINT_DIFF')
    L.append('      EXTERNAL MPI_AINT_ADD, MPI_AINT_DIFF')
    for line in L:
        assert len(line) <= 72 or line.startswith('!'), line
    return '\n'.join(L) + '\n'


# ---------------------------------------------------------------------------- module mpi

def f_decl(p, fname_):
    """The Fortran declaration of a dummy in module mpi's interface (None: no dummy)."""
    n, k = p.name, p.kind
    if k == 'null':
        return None
    if k in ('choice', 'buffer_addr'):
        return [f'!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}', f'type(*), dimension(*) :: {n}']
    if k in ('attr_set', 'attr_get', 'extra_state'):
        if fname_ in ('Attr_put', 'Attr_get', 'Keyval_create'):
            return [f'integer :: {n}']
        return [f'integer(kind=MPI_ADDRESS_KIND) :: {n}']
    if k == 'baseptr':
        return [f'integer(kind=MPI_ADDRESS_KIND) :: {n}']
    if k == 'int_in':
        return [f'{"logical" if n in LOGICAL_IN else "integer"}, intent(in) :: {n}']
    if k == 'logical_out':
        return [f'logical :: {n}']
    if k in ('int_ptr', 'index_out'):
        return [f'integer :: {n}']
    if k in ('int_array', 'weights', 'errcodes', 'indices'):
        if len(p.dims) == 2:
            return [f'integer :: {n}(3, *)']
        return [f'{"logical" if n in LOGICAL_ARRAYS else "integer"} :: {n}(*)']
    if k == 'aint_in':
        return [f'integer(kind={KIND[p.base]}), intent(in) :: {n}']
    if k == 'aint_ptr':
        return [f'integer(kind={KIND[p.base]}) :: {n}']
    if k == 'aint_array':
        return [f'integer(kind={KIND[p.base]}) :: {n}(*)']
    if k in ('fint_aint_in', 'fint_aint_out'):
        return [f'integer :: {n}']
    if k == 'fint_aint_array':
        return [f'integer :: {n}(*)']
    if k in ('status_in', 'status_out', 'status_inout'):
        return [f'integer :: {n}(MPI_STATUS_SIZE)']
    if k == 'statuses':
        return [f'integer :: {n}(MPI_STATUS_SIZE, *)']
    if k in ('str_in', 'str_out'):
        return [f'character(len=*) :: {n}']
    if k in ('argv', 'commands'):
        return [f'character(len=*) :: {n}(*)']
    if k == 'argvs':
        return [f'character(len=*) :: {n}(count, *)']
    if k.startswith('fn:'):
        return [f'external :: {n}']
    raise SystemExit(f'gen_fortran.py: no Fortran declaration for {k}')


def gen_module_mpi(consts, fns):
    L = ['! module mpi: ucharm AMPI for Fortran. Generated by runtime/ampi/gen_fortran.py from',
         '! mpi.h.in and mpi_functions.def: do not edit.',
         'module mpi',
         '  implicit none',
         '  public']
    for n, v, _ in EXTRA_CONSTANTS_T + consts:
        L.append(f'  integer, parameter :: {n} = {v}')
    L.append('  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.')
    L.append('  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.')
    for n, (t, dims) in SENTINELS.items():
        t = 'character(len=1)' if t.startswith('CHARACTER') else t.lower()
        L.append(f'  {t} :: {n}{dims}')
        L.append(f'  common /{n.replace("MPI_", "MPI_FORTRAN_")}/ {n}')
    for n, _ in CALLBACKS:
        L.append(f'  external :: {n}')
    L += sizeof_interface()
    L.append('  interface')
    generics = []
    for ret, name, params in fns:
        if fortran_only_skip(name):
            continue
        ps = [Param(name, p) for p in params.split(',') if p.strip() not in ('void', '', '...')]
        (generics if any(p.kind == 'baseptr' for p in ps) else L).extend(
            '    ' + s for s in interface(ret, name, ps))
    L.append('  end interface')
    L += [s[2:] for s in generics]
    L.append('contains')
    L += sizeof_procedures(optional=False)
    L.append('end module mpi')
    return '\n'.join(L) + '\n'


def sizeof_interface():
    return ['  interface MPI_SIZEOF',
            '    module procedure ' + ', '.join(f'ucharm_sizeof_{t}' for t, _ in SIZEOF_TYPES),
            '  end interface', '  private :: ' + ', '.join(f'ucharm_sizeof_{t}' for t, _ in SIZEOF_TYPES)]


def sizeof_procedures(optional):
    """MPI_SIZEOF(x, size, ierror): the bytes of one element of x, of any rank (assumed rank)."""
    L = []
    for t, decl in SIZEOF_TYPES:
        L.append(f'  subroutine ucharm_sizeof_{t}(x, size, ierror)')
        L.append(f'    {decl}, dimension(..), intent(in) :: x')
        L.append('    integer, intent(out) :: size')
        L.append(f'    integer, {"optional, " if optional else ""}intent(out) :: ierror')
        L.append('    size = storage_size(x) / 8')
        L.append('    ' + ('if (present(ierror)) ' if optional else '') + 'ierror = 0')
        L.append(f'  end subroutine ucharm_sizeof_{t}')
    return L


SIZEOF_TYPES = [('i1', 'integer(kind=1)'), ('i2', 'integer(kind=2)'), ('i4', 'integer(kind=4)'),
                ('i8', 'integer(kind=8)'), ('r4', 'real(kind=4)'), ('r8', 'real(kind=8)'),
                ('r16', 'real(kind=16)'), ('c4', 'complex(kind=4)'), ('c8', 'complex(kind=8)'),
                ('l4', 'logical(kind=4)'), ('ch', 'character(len=1)')]


def interface(ret, name, ps, cptr=None):
    fn = pub(name).upper()
    names = [p.name for p in ps if p.kind != 'null']
    if name == 'Pcontrol':
        return [f'subroutine {fn}(level)', '  integer, intent(in) :: level', f'end subroutine {fn}']
    if ret == 'double':
        return [f'double precision function {fn}()', f'end function {fn}']
    if ret == 'MPI_Aint':
        return [f'function {fn}({", ".join(names)})', '  import :: MPI_ADDRESS_KIND',
                f'  integer(kind=MPI_ADDRESS_KIND) :: {fn}',
                *[f'  integer(kind=MPI_ADDRESS_KIND), intent(in) :: {n}' for n in names], f'end function {fn}']
    if any(p.kind == 'baseptr' for p in ps) and cptr is None:
        # Generic: baseptr as INTEGER(KIND=MPI_ADDRESS_KIND) or TYPE(C_PTR) (MPI 3.1 §8.2).
        return ([f'interface {fn}'] + ['  ' + x for x in interface(ret, name, ps, cptr=False)] +
                ['  ' + x for x in interface(ret, name, ps, cptr=True)] + [f'end interface {fn}'])
    sub = fn + ('_CPTR' if cptr else '')
    L = [f'subroutine {sub}({", ".join(names + ["ierror"])})']
    if cptr:
        L.append('  use, intrinsic :: iso_c_binding, only: c_ptr')
    imports = {'MPI_ADDRESS_KIND', 'MPI_OFFSET_KIND', 'MPI_COUNT_KIND', 'MPI_STATUS_SIZE'}
    body = []
    for p in ps:
        d = [f'type(c_ptr) :: {p.name}'] if cptr and p.kind == 'baseptr' else f_decl(p, name)
        if d:
            body.extend('  ' + s for s in d)
    used = sorted(i for i in imports if any(i in s for s in body))
    if used:
        L.append('  import :: ' + ', '.join(used))
    L.extend(body)
    L.append('  integer :: ierror')
    L.append(f'end subroutine {sub}')
    return L


F08_SKIP = {'Address', 'Type_extent', 'Type_lb', 'Type_ub', 'Type_hvector', 'Type_hindexed', 'Type_struct',
            'Attr_put', 'Attr_get', 'Attr_delete', 'Keyval_create', 'Keyval_free', 'Errhandler_create',
            'Errhandler_set', 'Errhandler_get'}  # MPI-1 routines mpi_f08 leaves out (MPI 3.1 §17.1.5)


def f08_param(p, name):
    """(the f08 dummy's declarations, the C entry's dummy declarations, the actual argument,
    statements before the call, statements after it, hidden length actual or None)."""
    n, k = p.name, p.kind
    handle = p.base in F08_TYPE
    if k == 'null':
        return None
    if k == 'choice' or (k == 'buffer_addr'):
        if k == 'buffer_addr':
            return ([f'type(c_ptr) :: {n}'], [f'type(c_ptr) :: {n}'], n, [], [], None)
        return ([f'type(*), dimension(..), asynchronous :: {n}'], [f'type(c_ptr), value :: {n}'], f'b_{n}',
                [f'b_{n} = ucharm_f08_buf({n}, "{pub(name)}" // c_null_char, ierr_)',
                 'if (ierr_ /= 0) then', '  if (present(ierror)) ierror = ierr_', '  return', 'end if'], [], None)
    if k in ('attr_set', 'attr_get', 'extra_state'):
        return ([f'integer(kind=MPI_ADDRESS_KIND) :: {n}'], [f'integer(kind=MPI_ADDRESS_KIND) :: {n}'], n, [], [], None)
    if k == 'baseptr':
        return ([f'type(c_ptr) :: {n}'], [f'type(c_ptr) :: {n}'], n, [], [], None)
    if k == 'int_in':
        t = 'logical' if n in LOGICAL_IN else (f'type({F08_TYPE[p.base]})' if handle else 'integer')
        return ([f'{t}, intent(in) :: {n}'], [f'{t} :: {n}'], n, [], [], None)
    if k in ('int_ptr', 'logical_out', 'index_out'):
        t = 'logical' if k == 'logical_out' else (f'type({F08_TYPE[p.base]})' if handle else 'integer')
        return ([f'{t} :: {n}'], [f'{t} :: {n}'], n, [], [], None)
    if k in ('int_array', 'weights', 'errcodes', 'indices'):
        if len(p.dims) == 2:
            return ([f'integer :: {n}(3, *)'], [f'integer :: {n}(3, *)'], n, [], [], None)
        t = 'logical' if n in LOGICAL_ARRAYS else (f'type({F08_TYPE[p.base]})' if handle else 'integer')
        return ([f'{t} :: {n}(*)'], [f'{t} :: {n}(*)'], n, [], [], None)
    if k in ('aint_in', 'aint_ptr'):
        t = f'integer(kind={KIND[p.base]})'
        return ([t + (', intent(in)' if k == 'aint_in' else '') + f' :: {n}'], [f'{t} :: {n}'], n, [], [], None)
    if k == 'aint_array':
        t = f'integer(kind={KIND[p.base]})'
        return ([f'{t} :: {n}(*)'], [f'{t} :: {n}(*)'], n, [], [], None)
    if k in ('status_in', 'status_out', 'status_inout'):
        return ([f'type(MPI_Status) :: {n}'], [f'type(MPI_Status) :: {n}'], n, [], [], None)
    if k == 'statuses':
        return ([f'type(MPI_Status) :: {n}(*)'], [f'type(MPI_Status) :: {n}(*)'], n, [], [], None)
    if k in ('str_in', 'str_out'):
        return ([f'character(len=*) :: {n}'], [f'character(kind=c_char) :: {n}(*)'], n, [], [],
                f'len({n}, kind=c_size_t)')
    if k in ('argv', 'commands'):
        return ([f'character(len=*) :: {n}(*)'], [f'character(kind=c_char) :: {n}(*)'], n, [], [],
                f'len({n}, kind=c_size_t)')
    if k == 'argvs':
        return ([f'character(len=*) :: {n}(count, *)'], [f'character(kind=c_char) :: {n}(*)'], n, [], [],
                f'len({n}, kind=c_size_t)')
    if k.startswith('fn:'):
        return ([f'external :: {n}'], [f'type(c_funptr), value :: {n}'], f'c_funloc({n})', [], [], None)
    raise SystemExit(f'gen_fortran.py: no mpi_f08 mapping for {k}')


def f08_routine(ret, name, ps):
    """The module procedure and the interface of the C entry it calls."""
    fn = pub(name)
    c = f'ucharm_c_{name.lower()}'
    entry = f'p{pub(name).lower()}_'
    if name == 'Pcontrol':
        iface = [f'subroutine {c}(level) bind(C, name="{entry}")', '  integer :: level', f'end subroutine {c}']
        proc = [f'subroutine {fn}(level)', '  integer, intent(in) :: level', f'  call {c}(level)',
                f'end subroutine {fn}']
        return iface, proc
    if ret == 'double':
        iface = [f'function {c}() bind(C, name="{entry}")', '  import :: c_double',
                 f'  real(c_double) :: {c}', f'end function {c}']
        proc = [f'double precision function {fn}()', f'  {fn} = {c}()', f'end function {fn}']
        return iface, proc
    names = [p.name for p in ps if p.kind != 'null']
    if ret == 'MPI_Aint':
        iface = [f'function {c}({", ".join(names)}) bind(C, name="{entry}")', '  import :: MPI_ADDRESS_KIND',
                 f'  integer(kind=MPI_ADDRESS_KIND) :: {c}',
                 *[f'  integer(kind=MPI_ADDRESS_KIND) :: {n}' for n in names], f'end function {c}']
        proc = [f'function {fn}({", ".join(names)})', f'  integer(kind=MPI_ADDRESS_KIND) :: {fn}',
                *[f'  integer(kind=MPI_ADDRESS_KIND), intent(in) :: {n}' for n in names],
                f'  {fn} = {c}({", ".join(names)})', f'end function {fn}']
        return iface, proc
    fdecl, cdecl, actual, pre, post, hidden, locals_ = [], [], [], [], [], [], []
    for p in ps:
        r = f08_param(p, name)
        if not r:
            continue
        fd, cd, a, pr, po, h = r
        fdecl += fd
        cdecl += cd
        actual.append(a)
        pre += pr
        post += po
        if a.startswith('b_'):
            locals_.append(f'type(c_ptr) :: {a}')
        if h:
            hidden.append((p.name, h))
    cnames = names + ['ierror'] + [f'{n}_len' for n, _ in hidden]
    iface = [f'subroutine {c}({", ".join(cnames)}) bind(C, name="{entry}")', '  import']
    iface += ['  ' + d for d in cdecl]
    iface.append('  integer :: ierror')
    iface += [f'  integer(c_size_t), value :: {n}_len' for n, _ in hidden]
    iface.append(f'end subroutine {c}')
    proc = [f'subroutine {fn}({", ".join(names + ["ierror"])})']
    proc += ['  ' + d for d in fdecl]
    proc.append('  integer, optional, intent(out) :: ierror')
    proc.append('  integer :: ierr_')
    proc += ['  ' + d for d in locals_]
    proc.append('  ierr_ = 0')
    proc += ['  ' + d for d in pre]
    proc.append(f'  call {c}({", ".join(actual + ["ierr_"] + [h for _, h in hidden])})')
    proc += ['  ' + d for d in post]
    proc.append('  if (present(ierror)) ierror = ierr_')
    proc.append(f'end subroutine {fn}')
    return iface, proc


def gen_module_f08(consts, fns):
    L = ['! module mpi_f08: ucharm AMPI for Fortran 2008 + TS 29113. Generated by',
         '! runtime/ampi/gen_fortran.py from mpi.h.in and mpi_functions.def: do not edit.',
         '! Each routine calls the Fortran entry point of the integer-handle layer (fortran_bindings.c).',
         'module mpi_f08',
         '  use, intrinsic :: iso_c_binding',
         '  implicit none',
         '  private :: c_ptr, c_funptr, c_int, c_char, c_size_t, c_double, c_null_char, c_funloc',
         '  public']
    for t in sorted(set(F08_TYPE.values())):
        L += [f'  type, bind(C) :: {t}', '    integer :: MPI_VAL', f'  end type {t}']
    L += ['  type, bind(C) :: MPI_Status',
          '    integer :: MPI_SOURCE, MPI_TAG, MPI_ERROR',
          '    integer, private :: ucharm_comm, ucharm_length, ucharm_cancelled, ucharm_bytes_lo, ucharm_bytes_hi',
          '  end type MPI_Status']
    skip = {'MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR'}
    for n, v, t in EXTRA_CONSTANTS_T + consts:
        if n in skip:
            continue
        if t in F08_TYPE:
            L.append(f'  type({F08_TYPE[t]}), parameter :: {n} = {F08_TYPE[t]}({v})')
        else:
            L.append(f'  integer, parameter :: {n} = {v}')
    L.append('  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.')
    L.append('  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.')
    for n, (t, dims) in SENTINELS.items():
        if n == 'MPI_STATUS_IGNORE':
            t, dims = 'type(MPI_Status)', ''
        elif n == 'MPI_STATUSES_IGNORE':
            t, dims = 'type(MPI_Status)', '(1)'
        else:
            t = 'character(len=1)' if t.startswith('CHARACTER') else t.lower()
        L.append(f'  {t} :: {n}{dims}')
        L.append(f'  common /{n.replace("MPI_", "MPI_FORTRAN_")}/ {n}')
    for n, _ in CALLBACKS:
        L.append(f'  external :: {n}')
    ops = []
    for t in sorted(set(F08_TYPE.values())):
        ops += [f'ucharm_eq_{t.lower()}', f'ucharm_ne_{t.lower()}']
    L += sizeof_interface()
    L.append('  interface operator(==)')
    L.append('    module procedure ' + ', '.join(o for o in ops if '_eq_' in o))
    L.append('  end interface')
    L.append('  interface operator(/=)')
    L.append('    module procedure ' + ', '.join(o for o in ops if '_ne_' in o))
    L.append('  end interface')
    ifaces, procs = [], []
    for ret, name, params in fns:
        if fortran_only_skip(name) or name in F08_SKIP:
            continue
        ps = [Param(name, p) for p in params.split(',') if p.strip() not in ('void', '', '...')]
        i, p = f08_routine(ret, name, ps)
        ifaces += i
        procs += p
    L.append('  private :: ' + ', '.join(o for o in ops))
    L.append('  interface')
    L.append('    function ucharm_f08_buf(buf, fn, ierror) bind(C, name="ucharm_f08_buf")')
    L.append('      import :: c_ptr, c_char, c_int')
    L.append('      type(*), dimension(..) :: buf')
    L.append('      character(kind=c_char) :: fn(*)')
    L.append('      integer(c_int) :: ierror')
    L.append('      type(c_ptr) :: ucharm_f08_buf')
    L.append('    end function ucharm_f08_buf')
    L += ['    ' + s for s in ifaces]
    L += ['    subroutine ucharm_c_ampi_migrate(hints, ierror) bind(C, name="ampi_migrate_")', '      import',
          '      type(MPI_Info) :: hints', '      integer :: ierror', '    end subroutine ucharm_c_ampi_migrate']
    L.append('  end interface')
    L.append('contains')
    for t in sorted(set(F08_TYPE.values())):
        for op, sym in (('eq', '=='), ('ne', '/=')):
            f = f'ucharm_{op}_{t.lower()}'
            L += [f'  elemental logical function {f}(a, b)', f'    type({t}), intent(in) :: a, b',
                  f'    {f} = a%MPI_VAL {sym} b%MPI_VAL', f'  end function {f}']
    L += ['  ' + s for s in procs]
    L += sizeof_procedures(optional=True)
    # Charm++'s AMPI extensions with the mpi_f08 handle types.
    L += ['  subroutine AMPI_Migrate(hints, ierror)', '    type(MPI_Info), intent(in) :: hints',
          '    integer, optional, intent(out) :: ierror', '    integer :: ierr_',
          '    call ucharm_c_ampi_migrate(hints, ierr_)', '    if (present(ierror)) ierror = ierr_',
          '  end subroutine AMPI_Migrate']
    L.append('end module mpi_f08')
    return '\n'.join(L) + '\n'


def wrap(text):
    """Free-form lines of at most 100 characters: long ones continue after a comma."""
    out = []
    for line in text.split('\n'):
        indent = len(line) - len(line.lstrip())
        while len(line) > 100 and not line.lstrip().startswith('!'):
            cut = line.rfind(', ', 0, 98)
            if cut <= indent:
                break
            out.append(line[:cut + 1] + ' &')
            line = ' ' * (indent + 4) + line[cut + 2:]
        out.append(line)
    return '\n'.join(out)


def main():
    def_path, header_in, out_dir = sys.argv[1:]
    fns = parse(def_path)
    consts = constants(header_in)
    write_if_changed(os.path.join(out_dir, 'fortran_bindings.c'), gen_c(fns))
    write_if_changed(os.path.join(out_dir, 'mpif.h'), gen_mpif(consts, fns))
    write_if_changed(os.path.join(out_dir, 'mpi.f90'), wrap(gen_module_mpi(consts, fns)))
    write_if_changed(os.path.join(out_dir, 'mpi_f08.f90'), wrap(gen_module_f08(consts, fns)))


if __name__ == '__main__':
    main()
