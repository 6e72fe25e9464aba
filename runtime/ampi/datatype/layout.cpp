// Layouts: flattening runs and the bounds of predefined and resized types (type.h).
#include "datatype/type.h"

namespace ampi::dt {

// Merges a repeated block whose stride equals its length into one block.
void normalize(Run& r, std::ptrdiff_t unit) {
  if (r.reps > 1 && r.stride == static_cast<std::ptrdiff_t>(r.count) * unit) {
    r.count *= r.reps;
    r.reps = 1;
    r.stride = 0;
  }
}

// Appends `s` to `v`, merging it into the last run when it continues it (contiguously, or
// as one more repetition at the same stride). `unit` is the extent of one item.
void append(std::vector<Run>& v, Run s, std::ptrdiff_t unit) {
  normalize(s, unit);
  if (s.count == 0 || s.reps == 0) return;
  if (!v.empty()) {
    Run& b = v.back();
    if (b.basic == s.basic) {
      if (b.reps == 1 && s.reps == 1 && s.offset == b.offset + static_cast<std::ptrdiff_t>(b.count) * unit) {
        b.count += s.count;
        return;
      }
      if (b.count == s.count) {
        std::ptrdiff_t step = b.reps == 1 ? s.offset - b.offset : b.stride;
        if (s.offset == b.offset + static_cast<std::ptrdiff_t>(b.reps) * step && (s.reps == 1 || s.stride == step)) {
          b.stride = step;
          b.reps += s.reps;
          normalize(b, unit);
          return;
        }
      }
    }
  }
  v.push_back(s);
}

std::ptrdiff_t item_unit(MPI_Datatype basic) { return kBasics[basic].extent; }

// Appends `n` copies of the runs `src`, `ext` bytes apart, starting at `disp`.
void add_runs(std::vector<Run>& dst, const std::vector<Run>& src, std::ptrdiff_t disp, std::size_t n,
              std::ptrdiff_t ext, bool bytes) {
  auto unit = [bytes](const Run& r) { return bytes ? std::ptrdiff_t{1} : item_unit(r.basic); };
  if (src.size() == 1 && n > 1) {
    Run s = src[0];
    s.offset += disp;
    if (s.reps == 1) {
      s.reps = n;
      s.stride = ext;
      append(dst, s, unit(s));
      return;
    }
    if (s.stride * static_cast<std::ptrdiff_t>(s.reps) == ext) {
      s.reps *= n;
      append(dst, s, unit(s));
      return;
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    for (Run s : src) {
      s.offset += disp + static_cast<std::ptrdiff_t>(k) * ext;
      append(dst, s, unit(s));
    }
  }
}

// The flags that follow from the runs and bounds.
void finish_flags(Layout& l) {
  l.contiguous = l.size == 0 ||
                 (l.bytes.size() == 1 && l.bytes[0].reps == 1 && l.bytes[0].offset == l.lb &&
                  l.bytes[0].count == l.size && l.extent() == static_cast<std::ptrdiff_t>(l.size));
  l.uniform = l.items.empty() ? MPI_DATATYPE_NULL : l.items[0].basic;
  for (const Run& r : l.items)
    if (r.basic != l.uniform) l.uniform = MPI_DATATYPE_NULL;
}

// Builds a layout from components: `n` copies of a type at a displacement.

Layout basic_layout(MPI_Datatype t) {
  const Basic& b = kBasics[t];
  Layout l;
  l.size = b.size;
  l.elements = b.elements;
  l.align = b.align;
  if (t == MPI_UB) {
    l.ub_marked = l.ub_known = true;
  } else if (t == MPI_LB) {
    l.lb_marked = l.lb_known = true;
  } else if (t != MPI_DATATYPE_NULL) {
    l.lb_known = l.ub_known = true;
    l.ub = b.extent;
    l.items.push_back(Run{0, 1, 1, 0, t});
    append(l.bytes, Run{0, b.part1, 1, 0, MPI_BYTE}, 1);
    if (b.part2 != 0) append(l.bytes, Run{b.part2_at, b.part2, 1, 0, MPI_BYTE}, 1);
    l.true_ub = b.part2 != 0 ? b.part2_at + static_cast<std::ptrdiff_t>(b.part2) : static_cast<std::ptrdiff_t>(b.size);
  }
  finish_flags(l);
  return l;
}

Layout resized(Layout l, std::ptrdiff_t lb, std::ptrdiff_t extent) {
  l.lb = lb;
  l.ub = lb + extent;
  l.lb_marked = l.ub_marked = l.lb_known = l.ub_known = true;
  finish_flags(l);
  return l;
}


}  // namespace ampi::dt
