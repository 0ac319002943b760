/*
 * wordcount: one step of a word-count dataflow on p ranks (threads of this
 * process), with the C++ interface (redcoll/redcoll.hpp).
 *
 * Each rank takes a contiguous slice of a text and
 *   1. counts its words locally (a std::map: strings never travel);
 *   2. finds where its records (word, count) go in one output array of all
 *      ranks' records: ex_prefix_sum_total gives its offset and the total,
 *      in one collective;
 *   3. all-reduces a summary struct with a lambda (words, records, the
 *      longest word), declared commutative;
 *   4. all-reduces a histogram of its words by hash bucket, an array of
 *      integers with std::plus (the library's vector kernel).
 * Every rank checks what it got against a sequential count of the whole
 * text; the program exits non-zero if anything differs.
 *
 * Build:  part of the Meson build (examples/wordcount), or by hand:
 *   c++ -std=c++17 wordcount.cpp -lredcoll -pthread
 * Run:    ./wordcount [p]        (p = 7 by default)
 */
#include <redcoll/redcoll.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char *const text =
    "the network layer gives a dataflow engine prefix sums broadcast all gather "
    "all reduce and reduce of any value type predecessor exchange and barrier "
    "a word count counts the words of a text the words of each worker first "
    "then the counts of all workers so that every worker knows where its "
    "output goes and how many words there are in all the text";

constexpr size_t buckets = 16;

/* What a rank tells the others about its slice: trivially copyable, so it
 * travels as bytes; the operator below combines two of them. */
struct summary {
  uint64_t words;    // words in the slice
  uint64_t records;  // distinct words in the slice (records it writes)
  char longest[24];  // its longest word (the smaller one on a tie), NUL-terminated
};

summary combine(const summary &a, const summary &b) {
  summary s = a;
  s.words += b.words;
  s.records += b.records;
  size_t la = std::strlen(a.longest), lb = std::strlen(b.longest);
  if (lb > la || (lb == la && std::strcmp(b.longest, a.longest) < 0))
    std::memcpy(s.longest, b.longest, sizeof s.longest);
  return s;
}

std::vector<std::string> split_words(const char *s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

size_t bucket_of(const std::string &w) { return std::hash<std::string>{}(w) % buckets; }

}  // namespace

int main(int argc, char **argv) {
  int p = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::vector<std::string> all = split_words(text);
  std::atomic<int> wrong{0};

  // The sequential reference, known to every rank.
  std::map<std::string, uint64_t> global;
  uint64_t want_hist[buckets] = {};
  for (const std::string &w : all) {
    global[w]++;
    want_hist[bucket_of(w)]++;
  }

  try {
    redcoll::threads_run(p, [&](redcoll::comm_ref c) {
      size_t r = static_cast<size_t>(c.rank()), n = static_cast<size_t>(c.size());
      size_t begin = all.size() * r / n, end = all.size() * (r + 1) / n;

      // 1. Local counts.
      std::map<std::string, uint64_t> local;
      summary mine{end - begin, 0, ""};
      uint64_t hist[buckets] = {};
      for (size_t i = begin; i < end; i++) {
        const std::string &w = all[i];
        local[w]++;
        hist[bucket_of(w)]++;
        summary one{0, 0, ""};
        std::snprintf(one.longest, sizeof one.longest, "%s", w.c_str());
        mine = combine(mine, one);
      }
      mine.records = local.size();

      // 2. Output offsets: records [offset, offset + local.size()) of total.
      auto [offset, total] = c.ex_prefix_sum_total(uint64_t{local.size()});

      // 3. The summary of all slices.
      summary sum = c.all_reduce(mine, redcoll::commutative(combine));

      // 4. The global histogram of words by bucket.
      c.allreduce(hist, buckets);

      // Checks against the sequential count.
      bool ok = sum.words == all.size() && sum.records == total;
      std::vector<uint64_t> offsets = c.all_gather(offset);
      std::vector<uint64_t> sizes = c.all_gather(uint64_t{local.size()});
      for (size_t q = 0; q + 1 < n; q++) ok = ok && offsets[q] + sizes[q] == offsets[q + 1];
      ok = ok && offsets[n - 1] + sizes[n - 1] == total && offsets[0] == 0;
      for (size_t b = 0; b < buckets; b++) ok = ok && hist[b] == want_hist[b];
      summary ref{0, 0, ""};
      for (const auto &wc : global) {
        summary one{wc.second, 0, ""};
        std::snprintf(one.longest, sizeof one.longest, "%s", wc.first.c_str());
        ref = combine(ref, one);
      }
      ok = ok && std::strcmp(sum.longest, ref.longest) == 0;
      if (!ok) wrong++;

      c.barrier();
      if (r == 0)
        std::printf("p=%zu: %llu words, %llu records (%zu distinct words), longest \"%s\"\n", n,
                    static_cast<unsigned long long>(sum.words),
                    static_cast<unsigned long long>(total), global.size(), sum.longest);
      for (size_t q = 0; q < n; q++) {
        if (q == r)
          std::printf("  rank %zu: words [%zu, %zu), %zu records at offset %llu\n", r, begin,
                      end, local.size(), static_cast<unsigned long long>(offset));
        c.barrier();
      }
    });
  } catch (const std::exception &e) {
    std::fprintf(stderr, "wordcount: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", wrong == 0 ? "verified on every rank" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
