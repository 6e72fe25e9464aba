#!/usr/bin/env python3
"""Generates mpi.h, pmpi_impl.h and pmpi_generated.cpp from mpi_functions.def.

mpi.h declares MPI_X and PMPI_X for every function (a name the list spells MPIX_Y, an
MPICH-style extension, is declared as MPIX_Y and PMPIX_Y and handled the same way). The
sources define PMPI_X, but pmpi_impl.h (included by internal.h) renames those definitions
to ampi_impl_X, and pmpi_generated.cpp defines the real PMPI_X: it enters the runtime's heap (heap.h: the
program's allocations go to its rank's slice, the runtime's never) and calls ampi_impl_X.
pmpi_generated.cpp also defines each MPI_X as a weak function that calls PMPI_X (so a
program or tool may define MPI_X itself and call PMPI_X; a GCC alias cannot be used: its
target must be in the same file), and gives every PMPI_X that no source file given on the
command line defines a body that stops the program with an error naming the function: a
missing function is never a silent success.

usage: gen_mpi.py DEF HEADER_IN OUT_HEADER OUT_IMPL_HEADER OUT_CPP SOURCE...
"""
import re
import sys


def parse(def_path, large_counts=False):
    """The table's functions as (return type, name, parameters). A line ending in "[_c]" also
    has MPI-4.0's large-count form Name_c (large_count_form): with large_counts, it follows
    its int form in the list (the C header and wrappers); the Fortran bindings leave them out."""
    fns = []
    for line in open(def_path):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        with_c = line.endswith('[_c]')
        if with_c:
            line = line[:-len('[_c]')].rstrip()
        m = re.match(r'^(.*?\S)\s*\b([A-Za-z_0-9]+)\((.*)\)$', line)
        if not m:
            sys.exit(f'{def_path}: cannot parse "{line}"')
        fns.append((m.group(1), m.group(2), m.group(3)))
        if with_c and large_counts:
            fns.append(large_count_form(*fns[-1]))
    return fns


# MPI-4.0's large-count forms (§2.5.8, the _c bindings): counts become MPI_Count and the
# displacements of the vector collectives, Alltoallw and the RMA disp_unit MPI_Aint; in the
# datatype and pack routines every count, length, displacement and extent is MPI_Count.
COUNT_NAMES = {'count', 'sendcount', 'recvcount', 'incount', 'outcount', 'outsize', 'insize', 'origin_count',
               'target_count', 'result_count', 'sendcounts', 'recvcounts', 'size', 'position', 'blocklength',
               'array_of_blocklengths', 'stride', 'extent', 'lb', 'true_lb', 'true_extent'}
DISPL_NAMES = {'displs', 'sdispls', 'rdispls', 'disp_unit'}
TYPE_NAMES = {'array_of_displacements', 'array_of_sizes', 'array_of_subsizes', 'array_of_starts',
              'array_of_gsizes'}
# Where every int and MPI_Aint count-like parameter is an MPI_Count.
DATATYPE_FAMILY = re.compile(r'^(Type_|Pack|Unpack|Get_count|Get_elements|Status_set_elements|File_get_type_extent)')


def large_count_form(ret, name, params):
    typed = DATATYPE_FAMILY.match(name) is not None
    out = []
    for p in params.split(','):
        p = p.strip()
        pname = param_names(p)
        pname = pname[0] if pname else ''
        m = re.match(r'^(const\s+)?(int|MPI_Aint)(\s*\*?\s*)([A-Za-z_0-9]+)(\[\])?$', p)
        if m and (pname in COUNT_NAMES or (typed and pname in TYPE_NAMES) or
                  (typed and pname == 'count') or (pname in DISPL_NAMES and m.group(2) == 'int')):
            new = 'MPI_Aint' if pname in DISPL_NAMES and not typed else 'MPI_Count'
            if not typed and m.group(2) == 'MPI_Aint':
                new = 'MPI_Aint'  # an address or byte displacement stays one
            if pname == 'size' and (name == 'Type_create_darray' or not (typed or name.startswith('Buffer_'))):
                new = m.group(2)  # a window's size (MPI_Aint) and the like
            p = f'{m.group(1) or ""}{new}{m.group(3)}{m.group(4)}{m.group(5) or ""}'
        out.append(p)
    return ret, name + '_c', ', '.join(out)


def pub(name):
    """The C name: MPI_<name>, or the name itself where the list spells an MPIX_ extension."""
    return name if name.startswith('MPIX_') else f'MPI_{name}'


def param_names(params):
    """The names of a C parameter list's parameters ("int ranges[][3]" -> "ranges")."""
    names = []
    for p in params.split(','):
        p = re.sub(r'\[[^\]]*\]', '', p).strip()
        if p in ('void', '...', ''):
            continue
        names.append(re.findall(r'[A-Za-z_][A-Za-z_0-9]*', p)[-1])
    return names


# Functions that answer on any thread of a rank themselves (no state of the PE's, or the
# calling thread's own answer): the others, called by a thread that is not the PE's, are
# run by the PE.
ANY_THREAD = {'Wtime', 'Wtick', 'Is_thread_main', 'Query_thread', 'Initialized', 'Finalized',
              'Get_version', 'Get_library_version', 'Get_processor_name', 'Aint_add', 'Aint_diff'}


def any_thread(name):
    return name in ANY_THREAD or name.endswith('_c2f') or name.endswith('_f2c')


def main():
    def_path, header_in, out_header, out_impl, out_cpp, *sources = sys.argv[1:]
    fns = parse(def_path, large_counts=True)
    defined = set()
    for s in sources:
        for m in re.finditer(r'^\s*(?:extern "C"\s+)?[A-Za-z_][\w\s\*]*\bP(MPIX?_[A-Za-z_0-9]+)\s*\(',
                             open(s).read(), re.M):
            c = m.group(1)
            defined.add(c if c.startswith('MPIX_') else c[len('MPI_'):])
    # Large-count forms no source defines: adapters to their int body (large.h), where that is defined.
    by_name = {n: (r, p) for r, n, p in fns}
    adapters = {}
    for ret, name, params in fns:
        base = name[:-2]
        if (name.endswith('_c') and name not in defined and base in defined and base in by_name
                and large_count_form(*by_name[base][:1], base, by_name[base][1])[2] == params):
            adapters[name] = large_count_adapter(base, by_name[base][1], params)
            defined.add(name)
    decls = []
    for ret, name, params in fns:
        decls.append(f'{ret} {pub(name)}({params});')
        decls.append(f'{ret} P{pub(name)}({params});')
    header = open(header_in).read().replace('@DECLARATIONS@', '\n'.join(decls))
    write_if_changed(out_header, header)

    # Variadic functions cannot be forwarded: they keep their own PMPI_X (and allocate nothing).
    guarded = [(r, n, p) for r, n, p in fns if n in defined and '...' not in p]
    impl = ['// Generated by runtime/ampi/gen_mpi.py from mpi_functions.def: do not edit.',
            '// The sources\' PMPI_X definitions become ampi_impl_X; pmpi_generated.cpp defines',
            '// PMPI_X around them (the runtime\'s heap while the call runs).',
            '#pragma once', '#include <mpi.h>', '']
    impl.append('extern "C" {')
    for ret, name, params in guarded:
        impl.append(f'{ret} ampi_impl_{name}({params});')
    impl.append('}')
    impl.append('#ifndef UCHARM_AMPI_NO_PMPI_RENAME')
    for ret, name, params in guarded:
        impl.append(f'#define P{pub(name)} ampi_impl_{name}')
    impl.append('#endif')
    write_if_changed(out_impl, '\n'.join(impl) + '\n')

    out = ['// Generated by runtime/ampi/gen_mpi.py from mpi_functions.def: do not edit.',
           '#define UCHARM_AMPI_NO_PMPI_RENAME 1  // this file defines the real PMPI_X',
           '#include <mpi.h>', '#include "internal.h"', '#include "heap.h"', '#include "large.h"',
           '#include "threads.h"', '#include "pmpi_impl.h"', '',
           '#pragma GCC diagnostic ignored "-Wunused-parameter"', '',
           'extern "C" {',
           '// The large-count forms MPI_X_c: their arguments to the body of MPI_X (large.h).']
    for ret, name, params in fns:
        if name in adapters:
            out.append(f'{ret} ampi_impl_{name}({params}) {{')
            out += adapters[name]
            out.append('}')
    out.append('')
    out.append('// The functions no source defines yet: each fails naming itself.')
    for ret, name, params in fns:
        if name in defined:
            continue
        out.append(f'__attribute__((visibility("default"))) {ret} P{pub(name)}({params}) {{')
        out.append(f'  ampi::not_implemented("{pub(name)}");')
        out.append('}')
    out.append('')
    out.append('// PMPI_X: the runtime\'s heap while the call runs, whatever the program\'s was. A call')
    out.append('// from another OS thread than the PE\'s is run by the PE (threads.h), except for the')
    out.append('// functions that answer on any thread.')
    for ret, name, params in guarded:
        args = ", ".join(param_names(params))
        if not any_thread(name):
            # Out of line (cold): the PE's path keeps its arguments in registers.
            out.append(f'[[gnu::noinline, gnu::cold]] static {ret} from_thread_{name}({params}) {{')
            out.append(f"  {ret} ampi_result_{{}};")
            out.append(f'  auto body = [&] {{ ampi_result_ = P{pub(name)}({args}); }};')
            if ret == 'int':
                out.append(f'  if (int e = ampi::threads::forward("{pub(name)}", body)) return e;')
            else:
                out.append(f'  ampi::threads::forward("{pub(name)}", body);')
            out.append('  return ampi_result_;')
            out.append('}')
        out.append(f'__attribute__((visibility("default"))) {ret} P{pub(name)}({params}) {{')
        if not any_thread(name):
            out.append(f'  if (!ampi::threads::on_pe_thread()) [[unlikely]] return from_thread_{name}({args});')
        out.append('  ampi::heap::RuntimeScope scope;')
        out.append(f'  return ampi_impl_{name}({", ".join(param_names(params))});')
        out.append('}')
    out.append('')
    out.append('// MPI_X is weak and calls PMPI_X: the MPI profiling interface.')
    for ret, name, params in fns:
        out.append(f'__attribute__((weak, visibility("default"))) {ret} {pub(name)}({params}) {{')
        out.append(f'  return P{pub(name)}({", ".join(param_names(params))});')
        out.append('}')
    out.append('}')
    write_if_changed(out_cpp, '\n'.join(out) + '\n')


PARAM = re.compile(r'^(const\s+)?([A-Za-z_0-9]+)(\s*\*?\s*)([A-Za-z_0-9]+)(\[\])?$')
# RMA and datatype constructors take their counts as ints (an RMA target's type travels as
# its layout; a constructor's count is not a buffer's): only the counts of a buffer of
# point-to-point, collectives, pack and MPI-IO become a made type (large::Big).
NO_BIG = re.compile(r'^(Type_(?!contiguous)|Put|Get$|Get_accumulate|Accumulate|R(put|get|accumulate|get_accumulate)$|Win_)')


def large_count_adapter(name, params, cparams):
    """The body of PMPI_<name>_c (a source's, renamed ampi_impl_<name>_c): its 64-bit
    arguments handed to the int body ampi_impl_<name> (large.h)."""
    ip = [p.strip() for p in params.split(',')]
    cp = [p.strip() for p in cparams.split(',')]
    names = [param_names(p)[0] for p in ip]
    fn = f'{pub(name)}_c'
    comm = next((n for p, n in zip(ip, names) if PARAM.match(p).group(2) == 'MPI_Comm'), 'MPI_COMM_WORLD')
    typed = DATATYPE_FAMILY.match(name) is not None
    pre, args, post = [], [], []
    side_send = True
    for i, (a, c) in enumerate(zip(ip, cp)):
        n = names[i]
        if n.startswith('send') or n == 'sdispls':
            side_send = True
        elif n.startswith('recv') or n == 'rdispls':
            side_send = False
        if a == c:
            args.append(n)
            continue
        ma, mc = PARAM.match(a), PARAM.match(c)
        itype = ma.group(2)
        if itype == 'MPI_Aint':  # as wide as MPI_Count
            args.append(f'reinterpret_cast<{ma.group(1) or ""}MPI_Aint*>({n})' if mc.group(5) or '*' in mc.group(3)
                        else f'static_cast<MPI_Aint>({n})')
            continue
        if mc.group(5):  # an array
            if typed:
                length = 'ndims' if 'ndims' in names else 'count'
                length = f'static_cast<int>({length})'
            else:
                length = f'ampi::large::peers({comm}, "{fn}", {"true" if side_send else "false"})'
            if 'root' in names and not typed:
                # Gatherv's and Scatterv's arrays: read at the root only (garbage elsewhere)
                pre.append(f'const bool r_{n} = ampi::large::is_root({comm}, root);')
                pre.append(f'ampi::large::Ints a_{n}(r_{n} ? {n} : nullptr, {length});')
            else:
                pre.append(f'ampi::large::Ints a_{n}({n}, {length});')
            pre.append(f'if (!a_{n}.ok()) return ampi::large::too_large_entry({comm}, "{fn}", "{n}", a_{n});')
            args.append(f'a_{n}.data()' if 'root' not in names or typed else f'r_{n} ? a_{n}.data() : nullptr')
        elif '*' in mc.group(3):  # an output (a pack position: in and out)
            pre.append(f'{itype} v_{n} = 0;')
            if n == 'position':
                pre.append(f'if ({n}) {{')
                pre.append(f'  if (!ampi::large::fits(*{n})) return ampi::large::too_large({comm}, "{fn}", "*{n}", *{n});')
                pre.append(f'  v_{n} = static_cast<{itype}>(*{n});')
                pre.append('}')
            args.append(f'{n} ? &v_{n} : nullptr')
            post.append(f'if (rc == MPI_SUCCESS && {n}) *{n} = v_{n};')
        else:
            nxt = next((j for j in range(i + 1, len(ip)) if PARAM.match(ip[j]).group(2) == 'MPI_Datatype'
                        and not PARAM.match(ip[j]).group(5) and '*' not in PARAM.match(ip[j]).group(3)), None)
            if n.endswith('count') and nxt is not None and not NO_BIG.match(name) and itype == 'int':
                t = names[nxt]
                pre.append(f'ampi::large::Big b_{n}({n}, {t});')
                args.append(f'b_{n}.count()')
                # the datatype argument is the made one
                names[nxt] = f'b_{n}.type()'
                ip[nxt] = cp[nxt] = '__replaced__'
            else:
                pre.append(f'if (!ampi::large::fits({n})) return ampi::large::too_large({comm}, "{fn}", "{n}", {n});')
                args.append(f'static_cast<{itype}>({n})')
    body = []
    body += ['  ' + x for x in pre]
    body.append(f'  const int rc = ampi_impl_{name}({", ".join(args)});')
    body += ['  ' + x for x in post]
    body.append('  return rc;')
    return body


def write_if_changed(path, text):
    try:
        if open(path).read() == text:
            return
    except FileNotFoundError:
        pass
    with open(path, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
