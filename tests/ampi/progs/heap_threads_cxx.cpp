// A task pool of std::threads inside each rank: the rank makes work items (vectors, strings,
// shared_ptrs), the workers consume and destroy them and hand back results they made, which
// the rank destroys, while the rank keeps allocating. Checks every value; under AMPI every
// item the rank makes lives in its slice and is freed by another thread, and the reverse.
#include <mpi.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Item {
  std::vector<long> values;
  std::string label;
  std::shared_ptr<const std::string> tag;
};

template <class T>
class Queue {
 public:
  void push(T v) {
    {
      std::lock_guard lock(m_);
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  T pop() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return !q_.empty(); });
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<T> q_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int kWorkers = 3, kItems = 20000;
  Queue<std::unique_ptr<Item>> work;
  Queue<std::unique_ptr<std::string>> results;
  auto tag = std::make_shared<const std::string>("rank " + std::to_string(rank));
  std::vector<std::thread> pool;
  for (int w = 0; w < kWorkers; ++w)
    pool.emplace_back([&] {
      for (;;) {
        std::unique_ptr<Item> it = work.pop();
        if (!it) break;
        long sum = std::accumulate(it->values.begin(), it->values.end(), 0L);
        auto r = std::make_unique<std::string>(it->label + ":" + std::to_string(sum) + ":" + *it->tag);
        it.reset();  // the rank's vector, string and shared_ptr count, freed here
        results.push(std::move(r));
      }
    });
  long bad = 0;
  std::vector<std::string> keep;  // the rank's own allocations meanwhile
  for (int i = 0; i < kItems; ++i) {
    auto it = std::make_unique<Item>();
    it->values.resize(1 + i % 300);
    std::iota(it->values.begin(), it->values.end(), 0L);
    it->label = "item " + std::to_string(i) + std::string(i % 90, '.');
    it->tag = tag;
    work.push(std::move(it));
    keep.emplace_back(40 + i % 200, 'x');
    if (keep.size() > 64) keep.erase(keep.begin());
  }
  for (int i = 0; i < kItems; ++i) {
    std::unique_ptr<std::string> r = results.pop();
    const std::string suffix = ":" + *tag;
    if (r->size() < suffix.size() || r->compare(r->size() - suffix.size(), suffix.size(), suffix) != 0) ++bad;
    const std::size_t colon = r->find(':');
    const long n = 1 + std::stol(r->substr(5, r->find('.') == std::string::npos ? colon : r->find('.'))) % 300;
    if (std::stol(r->substr(colon + 1)) != n * (n - 1) / 2) ++bad;
  }
  for (int w = 0; w < kWorkers; ++w) work.push(nullptr);
  for (std::thread& t : pool) t.join();
  long all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (all == 0)
      std::printf("heap_threads_cxx: ok (%d ranks)\n", size);
    else
      std::printf("heap_threads_cxx: %ld bad results\n", all);
  }
  MPI_Finalize();
  return all ? 1 : 0;
}
