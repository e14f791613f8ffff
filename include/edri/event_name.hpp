// An event's name, declared once as a value that every declaration and
// call refers to, so that a misspelt name is a compile error rather than
// a start-up one (or a request for an event nobody declared):
//
//   constexpr edri::EventName kCreateNote{"notes.create"};
//   r.post("/notes", kCreateNote, create, note_input);
//   r.command(kCreateNote);
//   r.grpc_service("notes.v1.Notes", descriptor, {{"CreateNote", kCreateNote}});
//   ctx.publish(kNotesChanged, payload);
//
// It converts to std::string and std::string_view, so it goes wherever a
// name did; a plain string still does too, for names made at run time.
#pragma once

#include <string>
#include <string_view>

namespace edri {

class EventName {
 public:
  // consteval: only a name known when the plugin is compiled (a literal),
  // so the view never outlives what it views.
  consteval explicit EventName(std::string_view name) : name_(name) {}

  constexpr std::string_view name() const { return name_; }
  constexpr operator std::string_view() const { return name_; }
  operator std::string() const { return std::string(name_); }

  friend constexpr bool operator==(EventName a, EventName b) { return a.name_ == b.name_; }
  friend constexpr bool operator==(EventName a, std::string_view b) { return a.name_ == b; }

 private:
  std::string_view name_;  // a literal's
};

}  // namespace edri
