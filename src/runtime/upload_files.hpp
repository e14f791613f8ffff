// Upload files: where a listener writes a large request body while it
// arrives (EDRI_UPLOAD_FILES_PATH, docs/decisions/0012), and the rule that
// finds those a dead listener left. The listener names its files with
// upload_file_prefix(its pid); the supervisor, which knows no listener
// insides, removes them by the same rule when a listener dies and at start.
#pragma once

#include <cstddef>
#include <string>

namespace edri {

// The name prefix of the upload files of the listener with process id `pid`
// (each is this, then a counter never reused while it lives).
std::string upload_file_prefix(int pid);

// Removes the upload files in `dir` of the listener `pid` (it died), or
// with pid -1 those of every listener no longer alive (at start). How many.
std::size_t remove_upload_files_of(const std::string& dir, int pid);

}  // namespace edri
