// What a handler pays to read its request through typed fields and a
// model (edri/typed_field.hpp, edri/model.hpp) beside the by-name
// readers they replace: the notes app's create body and list query.
#include <benchmark/benchmark.h>

#include <edri/plugin.hpp>

#include <string>

namespace {

struct NoteInput {
  std::string title;
  std::string body;
};
const edri::Model<NoteInput> note_input{edri::member(&NoteInput::title, "title").length(1, 200),
                                        edri::member(&NoteInput::body, "body").length(0, 65536)};
const auto limit = edri::query<std::int64_t>("limit").range(1, 100).default_to(20);
const auto offset = edri::query<std::int64_t>("offset").range(0, 9'000'000'000'000'000).default_to(0);

const std::string kBody = R"({"title":"groceries","body":"milk, eggs, bread, coffee and a pound of butter"})";

edri::Request body_request() {
  edri::Request req;
  req.body = kBody;
  return req;
}

void BM_BodyByHand(benchmark::State& state) {
  const edri::Request req = body_request();
  for (auto _ : state) {
    const nlohmann::json in = req.json();
    NoteInput n{in.at("title").get<std::string>(), in.at("body").get<std::string>()};
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_BodyByHand);

void BM_BodyByModel(benchmark::State& state) {
  const edri::Request req = body_request();
  for (auto _ : state) {
    NoteInput n = req.get(note_input);
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_BodyByModel);

edri::Request query_request() {
  edri::Request req;
  req.query_params = {{"limit", "50"}, {"offset", "1200"}};
  return req;
}

void BM_QueryByName(benchmark::State& state) {
  const edri::Request req = query_request();
  for (auto _ : state) {
    benchmark::DoNotOptimize(req.int_query("limit") + req.int_query("offset"));
  }
}
BENCHMARK(BM_QueryByName);

void BM_QueryTyped(benchmark::State& state) {
  const edri::Request req = query_request();
  for (auto _ : state) {
    benchmark::DoNotOptimize(req.get(limit) + req.get(offset));
  }
}
BENCHMARK(BM_QueryTyped);

}  // namespace
