#include "core/block_pool.h"

#include <algorithm>
#include <functional>

#include "core/error.h"

namespace tandem {

namespace {

std::string mib(int64_t bytes) { return detail::str_cat(static_cast<double>(bytes) / (1 << 20), " MiB"); }

}  // namespace

bool BlockPool::ByStreamSize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return std::less<void*>()(a->stream, b->stream);
  if (a->size != b->size) return a->size < b->size;
  return std::less<char*>()(a->ptr, b->ptr);
}

BlockPool::BlockPool(PoolBackend& backend, std::string device) : backend_(backend), device_(std::move(device)) {}

BlockPool::~BlockPool() {
  std::lock_guard lock(mutex_);
  for (auto& [event, block] : pending_) backend_.release_event(event);
  pending_.clear();
  for (Block* block : lost_) {  // with the pool gone, nothing can hand them out again
    block->pending_events = 0;
    return_block(block);
  }
  release_free_segments();
}

size_t BlockPool::round_size(size_t nbytes) {
  return nbytes < kMinBlock ? kMinBlock : (nbytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}

size_t BlockPool::segment_size(size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMediumRequest) return kMediumSegment;
  return (rounded + kSegmentRound - 1) / kSegmentRound * kSegmentRound;
}

BlockPool::Block* BlockPool::find_free(FreeSet& set, void* stream, size_t size) {
  Block key(stream, size, nullptr, false);
  auto it = set.lower_bound(&key);
  if (it == set.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  set.erase(it);
  return block;
}

BlockPool::Block* BlockPool::new_segment(size_t size, void* stream, bool small) {
  void* ptr = backend_.raw_alloc(size);
  if (!ptr) return nullptr;
  ++stats_.segments;
  ++stats_.device_allocations;
  stats_.reserved += static_cast<int64_t>(size);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  return new Block(stream, size, static_cast<char*>(ptr), small);
}

void* BlockPool::allocate(size_t nbytes, void* stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  return allocate_locked(nbytes, stream, true);
}

void* BlockPool::try_allocate(size_t nbytes, void* stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  return allocate_locked(nbytes, stream, false);
}

void* BlockPool::allocate_locked(size_t nbytes, void* stream, bool throw_if_out) {
  process_events();
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallRequest;
  FreeSet& set = small ? free_small_ : free_large_;
  Block* block = find_free(set, stream, size);
  if (!block) {
    const size_t segment = segment_size(size);
    block = new_segment(segment, stream, small);
    if (!block) {
      // Blocks other streams were still using come back once those streams are done with them,
      // and may serve the request; else the cache may be what fills the device: give it back
      // and try once more.
      wait_for_pending();
      block = find_free(set, stream, size);
      if (!block) {
        release_free_segments();
        block = new_segment(segment, stream, small);
      }
    }
    if (!block && !throw_if_out) return nullptr;
    TD_CHECK(block, device_, " is out of memory: tried to allocate ", mib(static_cast<int64_t>(nbytes)),
             " (a segment of ", mib(static_cast<int64_t>(segment)), "); tensors hold ", mib(stats_.allocated),
             " and the pool has reserved ", mib(stats_.reserved),
             " in all. Free tensors you no longer need, or use a smaller batch.");
  }
  const size_t rest = block->size - size;
  if (small ? rest >= kMinBlock : rest > kSmallRequest) {
    Block* tail = new Block(stream, rest, block->ptr + size, small, block, block->next);
    if (block->next) block->next->prev = tail;
    block->next = tail;
    block->size = size;
    set.insert(tail);
  }
  block->allocated = true;
  active_[block->ptr] = block;
  stats_.allocated += static_cast<int64_t>(block->size);
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.allocations;
  return block->ptr;
}

void BlockPool::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard lock(mutex_);
  auto it = active_.find(ptr);
  TD_CHECK(it != active_.end(), "memory pool of ", device_, ": free of a pointer it did not hand out");
  Block* block = it->second;
  active_.erase(it);
  block->allocated = false;
  stats_.allocated -= static_cast<int64_t>(block->size);
  if (block->other_streams.empty()) {
    return_block(block);
    return;
  }
  try {
    for (void* stream : block->other_streams) {
      pending_.emplace_back(backend_.record_event(stream), block);
      ++block->pending_events;
    }
  } catch (...) {
    // Without an event for every stream that used it, nothing can tell when the block is free
    // again: one more pending event that never completes keeps it out of the pool for good.
    ++block->pending_events;
    lost_.push_back(block);
    block->other_streams.clear();
    throw;
  }
  block->other_streams.clear();
}

void BlockPool::record_stream(void* ptr, void* stream) {
  if (!ptr) return;
  std::lock_guard lock(mutex_);
  auto it = active_.find(ptr);
  TD_CHECK(it != active_.end(), "record_stream on ", device_, ": the pointer is not an allocated block of this pool");
  Block* block = it->second;
  if (stream == block->stream) return;
  if (std::find(block->other_streams.begin(), block->other_streams.end(), stream) == block->other_streams.end()) {
    block->other_streams.push_back(stream);
  }
}

// Puts a free block back in its set, merged with the free neighbours of its segment.
void BlockPool::return_block(Block* block) {
  FreeSet& set = set_of(block);
  auto free_neighbour = [](const Block* b) { return b && !b->allocated && b->pending_events == 0; };
  if (free_neighbour(block->prev)) {
    Block* prev = block->prev;
    set.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    delete block;
    block = prev;
  }
  if (free_neighbour(block->next)) {
    Block* next = block->next;
    set.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }
  set.insert(block);
}

void BlockPool::process_events() {
  while (!pending_.empty()) {
    auto [event, block] = pending_.front();
    if (!backend_.event_done(event)) break;  // later events were recorded after it
    backend_.release_event(event);
    pending_.pop_front();
    if (--block->pending_events == 0) return_block(block);
  }
}

void BlockPool::wait_for_pending() {
  for (const auto& [event, block] : pending_) backend_.wait_event(event);
  process_events();
}

int64_t BlockPool::release_free_segments() {
  const int64_t before = stats_.reserved;
  for (FreeSet* set : {&free_small_, &free_large_}) {
    for (auto it = set->begin(); it != set->end();) {
      Block* block = *it;
      if (block->prev || block->next) {
        ++it;
        continue;
      }
      backend_.raw_free(block->ptr);
      --stats_.segments;
      stats_.reserved -= static_cast<int64_t>(block->size);
      delete block;
      it = set->erase(it);
    }
  }
  return before - stats_.reserved;
}

int64_t BlockPool::empty_cache() {
  std::lock_guard lock(mutex_);
  wait_for_pending();
  return release_free_segments();
}

PoolStats BlockPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void BlockPool::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

size_t BlockPool::block_size(void* ptr) const {
  std::lock_guard lock(mutex_);
  auto it = active_.find(ptr);
  TD_CHECK(it != active_.end(), "memory pool of ", device_, ": the pointer is not an allocated block");
  return it->second->size;
}

bool BlockPool::owns(const void* ptr) const {
  std::lock_guard lock(mutex_);
  return active_.count(const_cast<void*>(ptr)) > 0;
}

}  // namespace tandem
