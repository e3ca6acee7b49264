// BlockPool: the caching allocator behind each CUDA device, written against a small backend
// interface (raw memory, stream-ordered events) so its bookkeeping is plain C++ and is tested on
// machines without a GPU.
//
// Memory is asked from the device in segments (2 MiB for requests up to 1 MiB, 20 MiB up to
// 10 MiB, the request rounded to 2 MiB above) and cut into blocks. A freed block goes back to the
// pool of the stream it was allocated on, merged with free neighbours of its segment, and is handed
// out again to a request on that stream: work on one stream runs in order, so no wait is needed.
// A block also used on other streams (record_stream) is held back until events recorded on those
// streams at free time have passed. When the device is out of memory, cached segments are released
// and the request tried again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace tandem {

class PoolBackend {
 public:
  virtual ~PoolBackend() = default;
  virtual void* raw_alloc(size_t nbytes) = 0;  // nullptr when the device is out of memory
  virtual void raw_free(void* ptr) = 0;
  virtual void* record_event(void* stream) = 0;  // marks the work queued on `stream` so far
  virtual bool event_done(void* event) = 0;
  virtual void wait_event(void* event) = 0;  // returns once the work the event marks is done
  virtual void release_event(void* event) = 0;
};

struct PoolStats {
  int64_t allocated = 0;       // bytes in blocks handed out
  int64_t peak_allocated = 0;  // the most `allocated` has been since the last reset
  int64_t reserved = 0;        // bytes in segments taken from the device
  int64_t peak_reserved = 0;
  int64_t segments = 0;        // segments held
  int64_t allocations = 0;     // requests served
  int64_t device_allocations = 0;  // requests that took a new segment from the device
};

class BlockPool {
 public:
  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kMediumRequest = size_t{10} << 20;
  static constexpr size_t kMediumSegment = size_t{20} << 20;
  static constexpr size_t kSegmentRound = size_t{2} << 20;

  // `device` names the device in errors.
  BlockPool(PoolBackend& backend, std::string device);
  ~BlockPool();  // returns every cached segment; blocks still handed out are leaked, not freed
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of at least `nbytes` for work on `stream` (nullptr for 0 bytes). Out of memory, even
  // after releasing its cache, allocate throws tandem::Error with the facts and try_allocate
  // returns nullptr, so that the caller can free memory elsewhere and try again.
  void* allocate(size_t nbytes, void* stream);
  void* try_allocate(size_t nbytes, void* stream);
  void free(void* ptr);
  // `ptr`, from allocate(), is also used by work on `stream`: its reuse waits for that work.
  void record_stream(void* ptr, void* stream);
  // Returns every segment whose memory is all free to the device, once the work of other streams
  // on freed blocks has finished (it waits for that); the bytes it gave back.
  int64_t empty_cache();
  PoolStats stats() const;
  void reset_peak();
  size_t block_size(void* ptr) const;  // the rounded size behind an allocated pointer
  bool owns(const void* ptr) const;     // whether `ptr` is an allocated block of this pool

  static size_t round_size(size_t nbytes);
  static size_t segment_size(size_t rounded);

 private:
  struct Block {
    Block(void* stream, size_t size, char* ptr, bool small, Block* prev = nullptr, Block* next = nullptr)
        : stream(stream), size(size), ptr(ptr), small(small), prev(prev), next(next) {}
    void* stream;
    size_t size;
    char* ptr;
    bool small;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
    int pending_events = 0;
    std::vector<void*> other_streams;
  };
  struct ByStreamSize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, ByStreamSize>;

  Block* find_free(FreeSet& set, void* stream, size_t size);
  Block* new_segment(size_t size, void* stream, bool small);
  int64_t release_free_segments();  // the bytes given back
  void return_block(Block* block);
  void process_events();
  void wait_for_pending();  // every freed block other streams were using comes back once they are done
  FreeSet& set_of(const Block* block) { return block->small ? free_small_ : free_large_; }
  void* allocate_locked(size_t nbytes, void* stream, bool throw_if_out);

  PoolBackend& backend_;
  const std::string device_;
  mutable std::mutex mutex_;
  FreeSet free_small_, free_large_;
  std::unordered_map<void*, Block*> active_;
  std::deque<std::pair<void*, Block*>> pending_;  // (event, block) in recording order
  std::vector<Block*> lost_;  // blocks no event could order after all their streams: never reused
  PoolStats stats_;
};

}  // namespace tandem
