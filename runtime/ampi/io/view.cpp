// File views (MPI 3.1 §13.3): set_view/get_view, the data representations, the flattened
// filetype and the mapping from the view's data to file byte ranges.
//
// The filetype is flattened once (the datatype layer's runs, merged into byte ranges in
// typemap order) and tiled from the displacement every extent; a range of the view's data
// bytes maps to file ranges by a binary search in the ranges' running sizes.
// Data representations: "native" and "internal" (the same bytes as memory) and "external32"
// (every basic element big-endian, datatype/external.cpp's conversion); external32 needs
// basic types whose external32 size equals their native size (all but MPI_LONG,
// MPI_UNSIGNED_LONG, long double and their pairs on this platform), so that the view's
// layout is the same in both: set_view refuses others with MPI_ERR_UNSUPPORTED_DATAREP.
#include "io/io.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace ampi::io {

namespace {

struct Collect {
  std::vector<Seg>* out;
  bool ordered = true;   // no displacement below an earlier one (overlaps are allowed)
  bool negative = false;
  bool overlap = false;  // a range starts before an earlier one ends
  std::int64_t last = 0, end = 0;
};
void collect(void* ctx, std::ptrdiff_t offset, std::size_t n, std::size_t reps, std::ptrdiff_t stride,
             MPI_Datatype basic) {
  auto* c = static_cast<Collect*>(ctx);
  const auto len = static_cast<std::int64_t>(n * type_size(basic));
  if (len == 0) return;
  for (std::size_t k = 0; k < reps; ++k) {
    const std::int64_t off = offset + static_cast<std::int64_t>(k) * stride;
    if (!c->out->empty() && off < c->last) c->ordered = false;
    if (off < 0) c->negative = true;
    if (!c->out->empty() && off < c->end) c->overlap = true;
    if (!c->out->empty() && c->out->back().off + c->out->back().len == off)
      c->out->back().len += len;
    else
      c->out->push_back(Seg{off, len});
    c->last = off;
    c->end = std::max(c->end, off + len);
  }
}

// Whether every basic type of t has the same size in external32 as in memory.
struct SameSize {
  bool ok = true;
  MPI_Datatype bad = MPI_DATATYPE_NULL;
};
void same_size(void* ctx, std::ptrdiff_t, std::size_t, std::size_t, std::ptrdiff_t, MPI_Datatype basic) {
  auto* s = static_cast<SameSize*>(ctx);
  if (!s->ok) return;
  MPI_Aint ext = 0;
  if (PMPI_Pack_external_size("external32", 1, basic, &ext) != MPI_SUCCESS ||
      static_cast<std::size_t>(ext) != type_size(basic)) {
    s->ok = false;
    s->bad = basic;
  }
}

bool external_layout_ok(MPI_Datatype t, MPI_Datatype* bad) {
  SameSize s;
  type_for_each_run(t, 1, same_size, &s);
  *bad = s.bad;
  return s.ok;
}

int parse_rep(const char* datarep, Rep* r) {
  if (!std::strcmp(datarep, "native")) *r = Rep::Native;
  else if (!std::strcmp(datarep, "internal")) *r = Rep::Internal;
  else if (!std::strcmp(datarep, "external32")) *r = Rep::External32;
  else return MPI_ERR_UNSUPPORTED_DATAREP;
  return MPI_SUCCESS;
}

const char* rep_name(Rep r) {
  switch (r) {
    case Rep::Native: return "native";
    case Rep::Internal: return "internal";
    case Rep::External32: return "external32";
  }
  return "native";
}

}  // namespace

void view_reset(File& f) {
  // The view's derived types are the file's own duplicates (set_view).
  if (f.etype >= UCHARM_MPI_PREDEFINED_TYPES) PMPI_Type_free(&f.etype);
  if (f.filetype >= UCHARM_MPI_PREDEFINED_TYPES) PMPI_Type_free(&f.filetype);
  f.disp = 0;
  f.etype = f.filetype = MPI_BYTE;
  f.rep = Rep::Native;
  f.flat_ok = false;
}

void view_flatten(File& f) {
  if (f.flat_ok) return;
  f.flat.clear();
  Collect c{&f.flat};
  type_for_each_run(f.filetype, 1, collect, &c);
  f.prefix.resize(f.flat.size());
  std::int64_t s = 0;
  for (std::size_t i = 0; i < f.flat.size(); ++i) {
    f.prefix[i] = s;
    s += f.flat[i].len;
  }
  f.ft_size = s;
  f.ft_extent = type_extent(f.filetype);
  f.e_size = static_cast<std::int64_t>(type_size(f.etype));
  if (f.e_size <= 0) f.e_size = 1;
  f.flat_ok = true;
}

void view_map(File& f, std::int64_t from, std::int64_t n, std::vector<Seg>& out) {
  view_flatten(f);
  if (n <= 0 || f.ft_size <= 0) return;
  auto push = [&out](std::int64_t off, std::int64_t len) {
    if (!out.empty() && out.back().off + out.back().len == off) out.back().len += len;
    else out.push_back(Seg{off, len});
  };
  // A filetype that is one range filling its extent tiles the file without gaps.
  if (f.flat.size() == 1 && f.flat[0].len == f.ft_extent) {
    push(f.disp + f.flat[0].off + from, n);
    return;
  }
  std::int64_t k = from / f.ft_size, r = from % f.ft_size;
  std::size_t i = static_cast<std::size_t>(std::upper_bound(f.prefix.begin(), f.prefix.end(), r) - f.prefix.begin()) - 1;
  while (n > 0) {
    const Seg& s = f.flat[i];
    const std::int64_t within = r - f.prefix[i];
    const std::int64_t take = std::min(s.len - within, n);
    push(f.disp + k * f.ft_extent + s.off + within, take);
    n -= take;
    r += take;
    if (++i == f.flat.size()) {
      i = 0;
      ++k;
      r = 0;
    }
  }
}

// The position (in etypes) of the first view data at or after file byte `b`.
std::int64_t view_position_of(File& f, std::int64_t b) {
  view_flatten(f);
  const std::int64_t rel = b - f.disp;
  if (rel <= 0 || f.ft_size <= 0) return 0;
  std::int64_t k = f.ft_extent > 0 ? rel / f.ft_extent : 0;
  std::int64_t rem = rel - k * f.ft_extent, data = 0;
  for (const Seg& s : f.flat) data += std::clamp<std::int64_t>(rem - s.off, 0, s.len);
  return (k * f.ft_size + data + f.e_size - 1) / f.e_size;
}

int rep_to_file(File& f, Rep rep, const void* buf, int count, MPI_Datatype t, std::vector<char>& out, const char* fn) {
  const std::size_t bytes = static_cast<std::size_t>(count) * type_size(t);
  out.resize(bytes);
  if (rep != Rep::External32) {
    if (bytes) type_pack(buf, count, t, out.data());
    return MPI_SUCCESS;
  }
  MPI_Datatype bad;
  if (!external_layout_ok(t, &bad))
    return file_error(&f, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                      "external32: %s has another size in external32 than in memory", type_name(bad).c_str());
  MPI_Aint pos = 0;
  if (bytes) return PMPI_Pack_external("external32", buf, count, t, out.data(), static_cast<MPI_Aint>(bytes), &pos);
  return MPI_SUCCESS;
}

int rep_from_file(File& f, Rep rep, const std::vector<char>& in, std::size_t bytes, void* buf, int count, MPI_Datatype t,
                  const char* fn) {
  const std::size_t tsize = type_size(t);
  if (bytes == 0 || tsize == 0) return MPI_SUCCESS;
  if (rep != Rep::External32) {
    // Whole basic elements only (a read that stopped at the end of the file mid-element).
    std::size_t whole = bytes;
    while (whole > 0 && type_basic_elements(t, whole) < 0) --whole;
    if (whole) type_unpack(in.data(), whole, buf, count, t);
    return MPI_SUCCESS;
  }
  MPI_Datatype bad;
  if (!external_layout_ok(t, &bad))
    return file_error(&f, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                      "external32: %s has another size in external32 than in memory", type_name(bad).c_str());
  const int n = static_cast<int>(bytes / tsize);
  MPI_Aint pos = 0;
  int rc = n ? PMPI_Unpack_external("external32", in.data(), static_cast<MPI_Aint>(bytes), &pos, buf, n, t) : 0;
  return rc;
}

}  // namespace ampi::io

using namespace ampi;
using namespace ampi::io;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char* datarep,
                       MPI_Info info) {
  const char* fn = "MPI_File_set_view";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (f->split_active) return file_error(f, MPI_ERR_OTHER, fn, "a split collective is still active on the file");
  if (!type_committed(etype)) return file_error(f, MPI_ERR_TYPE, fn, "etype %s is not a committed datatype", type_name(etype).c_str());
  if (!type_committed(filetype))
    return file_error(f, MPI_ERR_TYPE, fn, "filetype %s is not a committed datatype", type_name(filetype).c_str());
  if (!datarep) return file_error(f, MPI_ERR_ARG, fn, "datarep is NULL");
  Rep r;
  if (parse_rep(datarep, &r))
    return file_error(f, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                      "data representation \"%s\" is not known (native, internal and external32 are)", datarep);
  if (disp == MPI_DISPLACEMENT_CURRENT) {
    if (!(f->amode & MPI_MODE_SEQUENTIAL))
      return file_error(f, MPI_ERR_ARG, fn, "MPI_DISPLACEMENT_CURRENT needs a file opened MPI_MODE_SEQUENTIAL");
    MPI_Offset cur = 0;
    if ((rc = PMPI_File_get_position_shared(fh, &cur))) return rc;
    view_flatten(*f);
    std::vector<Seg> at;
    view_map(*f, cur * f->e_size, 1, at);
    disp = at.empty() ? f->disp : at.front().off;
  } else if (disp < 0) {
    return file_error(f, MPI_ERR_ARG, fn, "disp %lld is negative", disp);
  }
  const std::size_t esize = type_size(etype), fsize = type_size(filetype);
  // MPI 3.1 §13.3: the etype's and filetype's displacements are non-negative and
  // nondecreasing, and do not overlap unless the file is read-only. ROMIO's class for
  // these, MPI_ERR_IO, is what programs check.
  for (const MPI_Datatype t : {etype, filetype}) {
    std::vector<Seg> flat;
    Collect c{&flat};
    type_for_each_run(t, 1, collect, &c);
    if (c.negative || type_lb(t) < 0)
      return file_error(f, MPI_ERR_IO, fn, "the %s %s has a negative displacement", t == etype ? "etype" : "filetype",
                        type_name(t).c_str());
    if (!c.ordered)
      return file_error(f, MPI_ERR_IO, fn, "the %s %s has decreasing displacements", t == etype ? "etype" : "filetype",
                        type_name(t).c_str());
    if (c.overlap && !(f->amode & MPI_MODE_RDONLY))
      return file_error(f, MPI_ERR_IO, fn, "the %s %s has overlapping displacements (allowed on MPI_MODE_RDONLY files only)",
                        t == etype ? "etype" : "filetype", type_name(t).c_str());
  }
  if (esize == 0 || fsize % esize != 0)
    return file_error(f, MPI_ERR_TYPE, fn, "the filetype (%zu bytes) is not made of whole etypes (%zu bytes)", fsize, esize);
  if (r == Rep::External32) {
    MPI_Datatype bad;
    if (!external_layout_ok(etype, &bad) || !external_layout_ok(filetype, &bad))
      return file_error(f, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                        "external32 views need basic types of the same size in external32 and in memory; %s is not",
                        type_name(bad).c_str());
  }
  if (info != MPI_INFO_NULL && PMPI_File_set_info(fh, info)) return file_error(f, MPI_ERR_INFO, fn, "invalid info %d", info);
  // The file keeps duplicates of derived types: the program may free its handles, and
  // MPI_File_get_view hands out copies of these.
  view_reset(*f);
  if (etype >= UCHARM_MPI_PREDEFINED_TYPES && (rc = PMPI_Type_dup(etype, &etype))) return rc;
  if (filetype >= UCHARM_MPI_PREDEFINED_TYPES && (rc = PMPI_Type_dup(filetype, &filetype))) return rc;
  f->disp = disp;
  f->etype = etype;
  f->filetype = filetype;
  f->rep = r;
  f->pos = 0;
  view_flatten(*f);
  // The shared pointer goes back to 0 too (collective): rank 0 resets it after everyone's
  // earlier shared accesses.
  Comm& d = file_comm(*f);
  if ((rc = coll_barrier(d, coll_tag(d)))) return file_error(f, rc, fn, "the members could not agree");
  if (d.rank == 0 && f->shfp_fd >= 0) {
    const std::int64_t zero = 0;
    if (::pwrite(f->shfp_fd, &zero, sizeof zero, 0) < 0) {}
  }
  if ((rc = coll_barrier(d, coll_tag(d)))) return file_error(f, rc, fn, "the members could not agree");
  return MPI_SUCCESS;
}

int PMPI_File_get_view(MPI_File fh, MPI_Offset* disp, MPI_Datatype* etype, MPI_Datatype* filetype, char* datarep) {
  const char* fn = "MPI_File_get_view";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!disp || !etype || !filetype || !datarep) return file_error(f, MPI_ERR_ARG, fn, "an output argument is NULL");
  *disp = f->disp;
  // Derived types come back as new handles the program frees (MPI 3.1 §13.3).
  auto out = [](MPI_Datatype t, MPI_Datatype* o) {
    if (t < UCHARM_MPI_PREDEFINED_TYPES) *o = t;
    else PMPI_Type_dup(t, o);
  };
  out(f->etype, etype);
  out(f->filetype, filetype);
  std::strcpy(datarep, rep_name(f->rep));
  return MPI_SUCCESS;
}

int PMPI_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint* extent) {
  const char* fn = "MPI_File_get_type_extent";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!extent) return file_error(f, MPI_ERR_ARG, fn, "extent is NULL");
  if (!type_valid(datatype)) return file_error(f, MPI_ERR_TYPE, fn, "invalid datatype %d", datatype);
  // In external32 a basic type has its external size (MPI_LONG: 4); a derived type keeps its
  // memory extent (the views that external32 allows have the same layout in both).
  MPI_Aint ext = 0;
  if (f->rep == Rep::External32 && datatype < UCHARM_MPI_PREDEFINED_TYPES &&
      PMPI_Pack_external_size("external32", 1, datatype, &ext) == MPI_SUCCESS) {
    *extent = ext;
    return MPI_SUCCESS;
  }
  *extent = type_extent(datatype);
  return MPI_SUCCESS;
}

int PMPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset* disp) {
  const char* fn = "MPI_File_get_byte_offset";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!disp) return file_error(f, MPI_ERR_ARG, fn, "disp is NULL");
  if (offset < 0) return file_error(f, MPI_ERR_ARG, fn, "offset %lld is negative", offset);
  if (f->amode & MPI_MODE_SEQUENTIAL)
    return file_error(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "%s was opened MPI_MODE_SEQUENTIAL", f->path.c_str());
  view_flatten(*f);
  std::vector<Seg> at;
  view_map(*f, offset * f->e_size, 1, at);
  *disp = at.empty() ? f->disp : at.front().off;
  return MPI_SUCCESS;
}

int PMPI_Register_datarep(const char* datarep, MPI_Datarep_conversion_function*, MPI_Datarep_conversion_function*,
                          MPI_Datarep_extent_function*, void*) {
  const char* fn = "MPI_Register_datarep";
  if (!datarep) return file_error(nullptr, MPI_ERR_ARG, fn, "datarep is NULL");
  Rep r;
  if (!parse_rep(datarep, &r))
    return file_error(nullptr, MPI_ERR_DUP_DATAREP, fn, "data representation \"%s\" exists already", datarep);
  return file_error(nullptr, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                    "\"%s\": user-defined data representations are not supported (native, internal and external32 are)",
                    datarep);
}

}  // extern "C"
#pragma GCC visibility pop
