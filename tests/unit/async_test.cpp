// edri::Async and edri::Pending without a manager: a flow driven by hand,
// completions called as the manager's loop would call them.
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <edri/async.hpp>
#include <edri/request.hpp>

#include "manager/owned_request.hpp"

namespace {

using Completion = edri::Pending<int>::Completion;

// An operation whose completion the test keeps, to call it later (or at
// once, inside the start, when `now` is set).
struct Operation {
  std::optional<Completion> done;
  std::optional<int> now;
  int starts = 0;
  edri::Pending<int> operator()() {
    return edri::Pending<int>([this](Completion c) {
      ++starts;
      if (now) return c(*now);
      done.emplace(std::move(c));
    });
  }
};

// A handler coroutine as the manager runs one: its flow, resumed by hand.
struct Driven {
  edri::Async<edri::Response>::Handle frame;
  std::shared_ptr<edri::detail::Flow> flow = std::make_shared<edri::detail::Flow>();
  bool finished_at_once;
  explicit Driven(edri::Async<edri::Response> a) : frame(a.release()) {
    frame.promise().flow = flow;
    flow->waiting = frame;
    finished_at_once = flow->resume();
  }
  ~Driven() { frame.destroy(); }
  std::string body() { return std::get<std::string>(frame.promise().take().body); }
};

edri::Async<edri::Response> add(Operation& op, int plus) {
  const int v = co_await op();
  co_return edri::Response::text(std::to_string(v + plus));
}

edri::Async<int> inner(Operation& op) {
  const int v = co_await op();
  if (v < 0) throw std::runtime_error("negative");
  co_return v * 2;
}

edri::Async<edri::Response> outer(Operation& op) {
  const int v = co_await inner(op);
  co_return edri::Response::text(std::to_string(v));
}

}  // namespace

TEST_CASE("Async: a handler waits on an operation and resumes with its value", "[async]") {
  Operation op;
  Driven d(add(op, 1));
  CHECK_FALSE(d.finished_at_once);
  REQUIRE(op.done);
  (*op.done)(41);
  CHECK(d.flow->finished);
  // A second completion of the same operation is dropped (the frame is
  // past the wait: resuming it would be undefined).
  (*op.done)(7);
  CHECK(op.starts == 1);
  CHECK(d.body() == "42");
}

TEST_CASE("Async: an operation that completes while it starts does not suspend", "[async]") {
  Operation op;
  op.now = 9;
  Driven d(add(op, 1));
  CHECK(d.finished_at_once);
  CHECK(d.body() == "10");
}

TEST_CASE("Async: a coroutine awaited inside a handler gives its value and its exceptions", "[async]") {
  Operation op;
  Driven d(outer(op));
  (*op.done)(21);
  CHECK(d.body() == "42");
  Operation bad;
  Driven e(outer(bad));
  (*bad.done)(-1);
  CHECK(e.flow->finished);
  CHECK_THROWS_WITH(e.frame.promise().take(), "negative");
}

TEST_CASE("Async: a cancelled wait throws Cancelled, and its late completion finds nothing", "[async]") {
  Operation op;
  Driven d(add(op, 1));
  bool settled = false;
  d.flow->on_finish = [&] { settled = true; };
  d.flow->cancel("the deadline passed");
  CHECK(settled);
  CHECK_THROWS_AS(d.frame.promise().take(), edri::Cancelled);
  (*op.done)(1);  // dropped: the frame is past the wait
  CHECK_THROWS_AS(d.frame.promise().take(), edri::Cancelled);
}

TEST_CASE("Async: a handler that catches Cancelled waits no more", "[async]") {
  Operation op;
  auto stubborn = [](Operation& o) -> edri::Async<edri::Response> {
    try {
      co_await o();
    } catch (const edri::Cancelled&) {
    }
    const int v = co_await o();  // throws at once: the request is over
    co_return edri::Response::text(std::to_string(v));
  };
  Driven d(stubborn(op));
  d.flow->cancel("gone");
  CHECK(d.flow->finished);
  CHECK(op.starts == 1);
  CHECK_THROWS_AS(d.frame.promise().take(), edri::Cancelled);
}

TEST_CASE("Async: an operation that throws while it starts throws at the co_await", "[async]") {
  auto failing = []() -> edri::Async<edri::Response> {
    co_await edri::Pending<int>([](Completion) { throw edri::Unavailable("queue full"); });
    co_return edri::Response::text("unreached");
  };
  Driven d(failing());
  CHECK(d.finished_at_once);
  CHECK_THROWS_AS(d.frame.promise().take(), edri::Unavailable);
}

TEST_CASE("OwnedRequest: a copy whose views outlive what they were taken from", "[async]") {
  auto text = std::make_unique<std::string>("/path?q=1 body value header");
  const std::string_view all(*text);
  edri::Request r;
  r.event = all.substr(0, 5);
  r.query = all.substr(6, 3);
  r.body = all.substr(10, 10);
  r.headers.push_back({all.substr(21, 6), all.substr(16, 4)});
  r.form.push_back({all.substr(0, 1), {}, {}, all.substr(10, 4)});
  const edri::manager::OwnedRequest owned(r);
  text->assign(text->size(), 'x');  // what the views pointed into is gone
  const edri::Request& c = owned.request();
  CHECK(c.event == "/path");
  CHECK(c.query == "q=1");
  CHECK(c.body == "body value");
  CHECK(*c.header("header") == "alue");
  CHECK(c.form[0].data == "body");
  CHECK(owned.bytes() >= 5 + 3 + 10 + 6 + 4 + 1 + 4);
}
