// The per-PE scheduler queue: expedited messages first (FIFO among themselves), then
// by signed integer priority, smaller first, FIFO among equal priorities. Priority 0
// (the common case) lives in a ring buffer; others in a binary heap ordered by
// (priority, arrival). Storage grows on demand and is reused: no allocation per message
// once the queue has reached its working size.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ucharm::converse {

class Ring {
 public:
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  void push(void* p) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & (buf_.size() - 1)] = p;
  }
  void* pop() { return buf_[head_++ & (buf_.size() - 1)]; }
  void* front() const { return buf_[head_ & (buf_.size() - 1)]; }

 private:
  void grow() {
    std::vector<void*> bigger(buf_.empty() ? 64 : buf_.size() * 2);
    for (std::size_t i = 0, n = size(); i < n; ++i) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
    tail_ = size();
    head_ = 0;
    buf_.swap(bigger);
  }
  std::vector<void*> buf_;
  std::size_t head_ = 0, tail_ = 0;
};

class MsgQueue {
 public:
  void push(void* msg, int prio, bool expedited) {
    if (expedited) expedited_.push(msg);
    else if (prio == 0) fifo_.push(msg);
    else {
      heap_.push_back({prio, seq_++, msg});
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
  }
  // nullptr when empty.
  void* pop() {
    if (!expedited_.empty()) return expedited_.pop();
    bool heap_first = !heap_.empty() && (heap_.front().prio < 0 || fifo_.empty());
    if (heap_first) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      void* m = heap_.back().msg;
      heap_.pop_back();
      return m;
    }
    return fifo_.empty() ? nullptr : fifo_.pop();
  }
  // What pop() would return, left in the queue; nullptr when empty.
  void* peek() const {
    if (!expedited_.empty()) return expedited_.front();
    if (!heap_.empty() && (heap_.front().prio < 0 || fifo_.empty())) return heap_.front().msg;
    return fifo_.empty() ? nullptr : fifo_.front();
  }
  bool empty() const { return expedited_.empty() && fifo_.empty() && heap_.empty(); }
  std::size_t size() const { return expedited_.size() + fifo_.size() + heap_.size(); }

 private:
  struct Entry {
    int prio;
    std::uint64_t seq;
    void* msg;
  };
  // Heap comparator: "a runs after b".
  static bool later(const Entry& a, const Entry& b) {
    return a.prio != b.prio ? a.prio > b.prio : a.seq > b.seq;
  }
  Ring expedited_, fifo_;
  std::vector<Entry> heap_;
  std::uint64_t seq_ = 0;
};

}  // namespace ucharm::converse
