// What the image loader's tests share: the protection of a page, from /proc/self/maps.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

// The protection of the page at `address`, as /proc/self/maps says ("r-xp"), or "".
inline std::string page_perms(std::uintptr_t address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) == 3 && address >= lo && address < hi)
      return perms;
  }
  return "";
}
