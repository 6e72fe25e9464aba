// Info objects (hints are kept and handed back, never acted on).
#include "comm/comms.h"
#include "checks.h"

#include <algorithm>
#include <cstring>

namespace ampi::cm {

// ---- info ---------------------------------------------------------------------------------
int check_key(const char* fn, const char* key) {
  if (!key) return null_arg(MPI_COMM_NULL, fn, "key");
  const std::size_t n = std::strlen(key);
  if (n == 0 || n > MPI_MAX_INFO_KEY)
    return error(MPI_COMM_NULL, MPI_ERR_INFO_KEY, fn, "key \"%.40s\" is empty or longer than %d characters", key,
                 MPI_MAX_INFO_KEY);
  return MPI_SUCCESS;
}
Info::iterator info_find(Info& info, const char* key) {
  return std::find_if(info.begin(), info.end(), [&](const auto& kv) { return kv.first == key; });
}
int bad_info(const char* fn, MPI_Info i) { return error(MPI_COMM_NULL, MPI_ERR_INFO, fn, "invalid info object %d", i); }

}  // namespace ampi::cm

using namespace ampi;
using namespace ampi::cm;

#pragma GCC visibility push(default)
extern "C" {

// ---- info objects ----------------------------------------------------------------------
int PMPI_Info_create(MPI_Info* info) {
  if (!info) return null_arg(MPI_COMM_NULL, "MPI_Info_create", "info");
  CommTable& t = my_comms();
  const std::size_t h = free_slot<std::unique_ptr<Info>>(t.infos, kFirstUserInfo,
                                                         [](const std::unique_ptr<Info>& i) { return !i; });
  t.infos[h] = std::make_unique<Info>();
  *info = static_cast<MPI_Info>(h);
  return MPI_SUCCESS;
}

int PMPI_Info_set(MPI_Info info, const char* key, const char* value) {
  const char* fn = "MPI_Info_set";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!value) return null_arg(MPI_COMM_NULL, fn, "value");
  const std::size_t n = std::strlen(value);
  if (n == 0 || n > MPI_MAX_INFO_VAL)
    return error(MPI_COMM_NULL, MPI_ERR_INFO_VALUE, fn, "the value of \"%s\" is empty or longer than %d characters",
                 key, MPI_MAX_INFO_VAL);
  auto it = info_find(*i, key);
  if (it != i->end())
    it->second = value;
  else
    i->emplace_back(key, value);
  return MPI_SUCCESS;
}

int PMPI_Info_get(MPI_Info info, const char* key, int valuelen, char* value, int* flag) {
  const char* fn = "MPI_Info_get";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!flag) return null_arg(MPI_COMM_NULL, fn, "flag");
  if (valuelen < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "valuelen is negative (%d)", valuelen);
  auto it = info_find(*i, key);
  *flag = it != i->end();
  if (!*flag) return MPI_SUCCESS;
  if (!value) return null_arg(MPI_COMM_NULL, fn, "value");
  // value has room for valuelen characters and the terminating NUL.
  const std::size_t n = std::min(it->second.size(), static_cast<std::size_t>(valuelen));
  std::memcpy(value, it->second.data(), n);
  value[n] = '\0';
  return MPI_SUCCESS;
}

// MPI-4.0: *buflen in is value's room (with the NUL), out the value's length + 1; a value
// longer than the room is cut (flag still 1), and with *buflen 0 value is not touched.
int PMPI_Info_get_string(MPI_Info info, const char* key, int* buflen, char* value, int* flag) {
  const char* fn = "MPI_Info_get_string";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!flag) return null_arg(MPI_COMM_NULL, fn, "flag");
  if (!buflen) return null_arg(MPI_COMM_NULL, fn, "buflen");
  if (*buflen < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "*buflen is negative (%d)", *buflen);
  auto it = info_find(*i, key);
  *flag = it != i->end();
  if (!*flag) return MPI_SUCCESS;
  const int room = *buflen;
  *buflen = static_cast<int>(it->second.size()) + 1;
  if (room == 0) return MPI_SUCCESS;
  if (!value) return null_arg(MPI_COMM_NULL, fn, "value");
  const std::size_t n = std::min(it->second.size(), static_cast<std::size_t>(room - 1));
  std::memcpy(value, it->second.data(), n);
  value[n] = '\0';
  return MPI_SUCCESS;
}

int PMPI_Info_delete(MPI_Info info, const char* key) {
  const char* fn = "MPI_Info_delete";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  auto it = info_find(*i, key);
  if (it == i->end()) return error(MPI_COMM_NULL, MPI_ERR_INFO_NOKEY, fn, "no key \"%s\"", key);
  i->erase(it);
  return MPI_SUCCESS;
}

int PMPI_Info_free(MPI_Info* info) {
  const char* fn = "MPI_Info_free";
  if (!info) return null_arg(MPI_COMM_NULL, fn, "info");
  if (!info_get(*info)) return bad_info(fn, *info);
  if (*info == MPI_INFO_ENV) return error(MPI_COMM_NULL, MPI_ERR_INFO, fn, "MPI_INFO_ENV cannot be freed");
  my_comms().infos[static_cast<std::size_t>(*info)].reset();
  *info = MPI_INFO_NULL;
  return MPI_SUCCESS;
}

int PMPI_Info_dup(MPI_Info info, MPI_Info* newinfo) {
  const char* fn = "MPI_Info_dup";
  if (!info_get(info)) return bad_info(fn, info);
  if (!newinfo) return null_arg(MPI_COMM_NULL, fn, "newinfo");
  if (int e = PMPI_Info_create(newinfo)) return e;
  *info_get(*newinfo) = *info_get(info);
  return MPI_SUCCESS;
}

int PMPI_Info_get_nkeys(MPI_Info info, int* nkeys) {
  Info* i = info_get(info);
  if (!i) return bad_info("MPI_Info_get_nkeys", info);
  if (!nkeys) return null_arg(MPI_COMM_NULL, "MPI_Info_get_nkeys", "nkeys");
  *nkeys = static_cast<int>(i->size());
  return MPI_SUCCESS;
}

int PMPI_Info_get_nthkey(MPI_Info info, int n, char* key) {
  const char* fn = "MPI_Info_get_nthkey";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (n < 0 || n >= static_cast<int>(i->size()))
    return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "n = %d is out of range (%zu keys)", n, i->size());
  if (!key) return null_arg(MPI_COMM_NULL, fn, "key");
  return copy_string((*i)[static_cast<std::size_t>(n)].first, key, MPI_MAX_INFO_KEY + 1, nullptr);
}

int PMPI_Info_get_valuelen(MPI_Info info, const char* key, int* valuelen, int* flag) {
  const char* fn = "MPI_Info_get_valuelen";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!valuelen || !flag) return null_arg(MPI_COMM_NULL, fn, "valuelen or flag");
  auto it = info_find(*i, key);
  *flag = it != i->end();
  if (*flag) *valuelen = static_cast<int>(it->second.size());
  return MPI_SUCCESS;
}


}  // extern "C"
#pragma GCC visibility pop
