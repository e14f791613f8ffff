// A JSON answer as an API makes one, of about `bytes` bytes: an array of
// records with ids, names, e-mail addresses, sentences, numbers,
// timestamps and flags, drawn from a fixed seed. Compression is measured
// and tested on it (bench_micro, unit/content_coding_test.cpp): text of
// one repeated letter would flatter every coding.
#pragma once

#include <cstdio>
#include <random>
#include <string>

namespace edri::test {

inline std::string json_answer(std::size_t bytes) {
  static const char* const kWords[] = {"lorem",       "ipsum",      "dolor",         "sit",       "amet",
                                       "consectetur", "adipiscing", "elit",          "sed",       "do",
                                       "eiusmod",     "tempor",     "incididunt",    "ut",        "labore",
                                       "et",          "dolore",     "magna",         "aliqua",    "enim",
                                       "ad",          "minim",      "veniam",        "quis",      "nostrud",
                                       "ullamco",     "laboris",    "nisi",          "aliquip",   "ex",
                                       "ea",          "commodo",    "consequat",     "duis",      "aute",
                                       "irure",       "in",         "reprehenderit", "voluptate", "velit",
                                       "esse",        "cillum",     "fugiat",        "nulla",     "pariatur",
                                       "excepteur",   "sint",       "occaecat",      "cupidatat", "non",
                                       "proident",    "sunt",       "culpa",         "qui",       "officia",
                                       "deserunt",    "mollit",     "anim",          "id",        "est",
                                       "laborum",     "notes",      "order"};
  constexpr unsigned kWordCount = sizeof kWords / sizeof kWords[0];
  std::mt19937 rng(2024);
  auto draw = [&](unsigned below) { return static_cast<unsigned>(rng() % below); };
  std::string out = "[";
  char buf[512];
  for (unsigned id = 1; out.size() < bytes; ++id) {
    const unsigned user = draw(100000);
    std::string sentence;
    for (unsigned n = 4 + draw(12); n > 0; --n) sentence.append(kWords[draw(kWordCount)]).append(n > 1 ? " " : "");
    const int n = std::snprintf(buf, sizeof buf,
                                "{\"id\":%u,\"user\":\"user%u\",\"email\":\"user%u@example.com\",\"title\":\"%s\","
                                "\"score\":%u.%02u,\"active\":%s,\"created\":\"2024-%02u-%02uT%02u:%02u:%02uZ\"},",
                                id, user, user, sentence.c_str(), draw(100000), draw(100), draw(2) ? "true" : "false",
                                1 + draw(12), 1 + draw(28), draw(24), draw(60), draw(60));
    out.append(buf, static_cast<std::size_t>(n));
  }
  out.back() = ']';
  return out;
}

}  // namespace edri::test
