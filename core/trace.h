// TANDEM_TRACE=FILE: a Chrome / Perfetto trace (JSON, open it in ui.perfetto.dev or
// chrome://tracing) of what happens on each device: one row per device and one for the
// communication between them. The parallel layer and the backward engine mark their work with
// spans; nothing is recorded unless tracing is on. The file is written at exit and by flush().
#pragma once

#include <chrono>
#include <string>

namespace tandem::trace {

bool enabled();
// Starts (or, with an empty path, stops) tracing into `path`, as TANDEM_TRACE does at start-up.
void set_output(const std::string& path);
// Writes everything recorded so far to the file (replacing it).
void flush();

using Clock = std::chrono::steady_clock;
void record(const std::string& name, const std::string& row, Clock::time_point start, Clock::time_point end);

// Records [construction, destruction) as `name` on `row` when tracing is on.
class Span {
 public:
  Span(const char* name, std::string row);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  std::string row_;
  Clock::time_point start_;
  bool on_;
};

}  // namespace tandem::trace
