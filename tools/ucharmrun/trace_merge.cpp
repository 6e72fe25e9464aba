// `+trace FILE`: each PE writes its own part (FILE with ".peN.json", see
// runtime/core/trace.cpp); when every rank has ended, the launcher joins the parts into
// FILE. A part is one event per line between a `{"traceEvents":[` line and a `]}` line, so
// joining is copying lines; a part cut short (a killed PE) loses only its unfinished line.
// After a failed job the parts stay, and FILE holds what they had.
#include <fmt/core.h>

#include <cstdio>
#include <fstream>

#include "ucharmrun.h"

namespace ucharmrun {

namespace {

// As runtime/core/trace.cpp's part_path: "t.json" -> "t.pe3.json", "t" -> "t.pe3.json".
std::string part_path(const std::string& file, int pe) {
  const std::string ext = ".json";
  std::string stem = file;
  if (stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0)
    stem.resize(stem.size() - ext.size());
  return stem + ".pe" + std::to_string(pe) + ext;
}

}  // namespace

std::optional<std::string> trace_file(const std::vector<std::string>& command) {
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i] == "+trace" && i + 1 < command.size()) return command[i + 1];
    if (command[i].rfind("+trace=", 0) == 0) return command[i].substr(7);
  }
  return std::nullopt;
}

std::string merge_trace(const std::string& file, int np, bool job_failed) {
  const std::string tmp = file + ".merging";
  std::ofstream out(tmp, std::ios::trunc);
  if (!out) return fmt::format("cannot write the trace {}: {}", file, errno_text(errno));
  out << "{\"traceEvents\":[\n";
  bool first = true;
  int found = 0;
  std::string missing, line;
  for (int pe = 0; pe < np; ++pe) {
    std::ifstream in(part_path(file, pe));
    if (!in) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(pe);
      continue;
    }
    ++found;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // no newline: cut short while being written
      size_t start = line.rfind("{\"traceEvents\":[", 0) == 0 ? 16 : 0;
      if (start < line.size() && line[start] == ',') ++start;
      if (start >= line.size() || line[start] != '{' || line.back() != '}') continue;
      if (!first) out << ',';
      first = false;
      out.write(line.data() + static_cast<std::streamoff>(start),
                static_cast<std::streamsize>(line.size() - start));
      out << '\n';
    }
  }
  out << "]}\n";
  out.close();
  if (found == 0) {
    std::remove(tmp.c_str());
    return fmt::format("trace {}: no PE wrote a part (did the program start?)", file);
  }
  if (!out || std::rename(tmp.c_str(), file.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fmt::format("cannot write the trace {}: {}", file, errno_text(errno));
  }
  std::string note;
  if (!missing.empty())
    note = fmt::format("trace {}: no part from PE {} (it did not start tracing)", file, missing);
  if (job_failed) {
    std::string parts = part_path(file, 0);
    parts.replace(parts.rfind(".pe0.json"), 9, ".peN.json");
    if (!note.empty()) note += "; ";
    note += fmt::format("the job failed: trace {} holds what the PEs wrote, and their parts "
                        "{} stay", file, parts);
  } else if (missing.empty()) {
    for (int pe = 0; pe < np; ++pe) std::remove(part_path(file, pe).c_str());
  }
  return note;
}

}  // namespace ucharmrun
