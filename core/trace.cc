#include "core/trace.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <tuple>
#include <mutex>
#include <vector>

#include "core/device.h"
#include "core/error.h"

namespace tandem::trace {

namespace {

struct Event {
  std::string name;
  int row;
  double start_us, duration_us;
};

struct Trace {
  std::mutex mutex;
  std::string path;
  std::vector<Event> events;
  std::map<std::string, int> rows;  // name -> the trace's thread id
  Clock::time_point origin = Clock::now();
  std::atomic<bool> on{false};

  Trace() {
    if (const char* env = std::getenv("TANDEM_TRACE"); env && *env) {
      path = env;
      on = true;
    }
  }

  // Writes the file; says whether it could. Called with the mutex held.
  bool write() {
    std::ofstream out(path, std::ios::trunc);
    if (!out) return false;
    // Devices in their order (cpu:2 before cpu:10), then any other row, "comm" last.
    std::vector<std::pair<std::string, int>> ordered(rows.begin(), rows.end());
    auto key = [](const std::string& name) {
      try {
        Device d(name);
        return std::make_tuple(0, static_cast<int>(d.type()), d.index(), name);
      } catch (const Error&) {
        return std::make_tuple(name == "comm" ? 2 : 1, 0, 0, name);
      }
    };
    std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) { return key(a.first) < key(b.first); });
    out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    bool first = true;
    for (size_t rank = 0; rank < ordered.size(); ++rank) {
      const auto& [name, id] = ordered[rank];
      out << (first ? "" : ",\n") << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": " << id
          << ", \"args\": {\"name\": \"" << escaped(name) << "\"}}";
      out << ",\n{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": 1, \"tid\": " << id
          << ", \"args\": {\"sort_index\": " << rank << "}}";
      first = false;
    }
    for (const Event& e : events) {
      out << (first ? "" : ",\n") << "{\"ph\": \"X\", \"name\": \"" << escaped(e.name)
          << "\", \"pid\": 1, \"tid\": " << e.row << ", \"ts\": " << e.start_us << ", \"dur\": " << e.duration_us
          << "}";
      first = false;
    }
    out << "\n]}\n";
    out.flush();
    return static_cast<bool>(out);
  }

  static std::string escaped(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;  // control characters: dropped
      out += c;
    }
    return out;
  }
};

// Never destroyed (device threads may still record while the program exits); written at exit.
Trace& global() {
  static Trace* trace = [] {
    auto* t = new Trace();
    std::atexit([] {
      Trace& g = global();
      std::lock_guard lock(g.mutex);
      if (g.on) g.write();
    });
    return t;
  }();
  return *trace;
}

}  // namespace

bool enabled() { return global().on.load(std::memory_order_relaxed); }

void set_output(const std::string& path) {
  Trace& t = global();
  std::lock_guard lock(t.mutex);
  t.path = path;
  t.events.clear();
  t.on = !path.empty();
}

void flush() {
  Trace& t = global();
  std::lock_guard lock(t.mutex);
  if (!t.on) return;
  TD_CHECK(t.write(), "trace: cannot write ", t.path);
}

void record(const std::string& name, const std::string& row, Clock::time_point start, Clock::time_point end) {
  Trace& t = global();
  if (!t.on) return;
  std::lock_guard lock(t.mutex);
  auto [it, added] = t.rows.try_emplace(row, static_cast<int>(t.rows.size()) + 1);
  t.events.push_back({name, it->second, std::chrono::duration<double, std::micro>(start - t.origin).count(),
                      std::chrono::duration<double, std::micro>(end - start).count()});
}

Span::Span(const char* name, std::string row) : name_(name), row_(std::move(row)), on_(enabled()) {
  if (on_) start_ = Clock::now();
}

Span::~Span() {
  if (on_) record(name_, row_, start_, Clock::now());
}

}  // namespace tandem::trace
