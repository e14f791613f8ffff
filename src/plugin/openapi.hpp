// The OpenAPI 3.1 document of the loaded plugins' HTTP routes, made from
// their declarations alone (docs/writing-a-plugin.md, "OpenAPI"): each
// route an operation named by its event, tagged by its domain; its path
// parameters typed as the route declares them; its query, header and
// cookie fields as parameters and its body fields as a JSON request body,
// each a JSON Schema of the field's rules (edri/fields.hpp); the answers
// it may get from the edge (422 and 400 as RFC 9457 problems) beside the
// handler's. Served by the listener at /openapi.json (EDRI_API_DOCS).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "plugin/plugin_set.hpp"

namespace edri::plugin {

// Where the listener serves it.
inline constexpr std::string_view kApiDocumentPath = "/openapi.json";

// The JSON Schema of one declared field (its name and source aside).
nlohmann::json schema_of(const FieldDecl& field);

// The whole document (info.version: the server's version).
nlohmann::json openapi_document(const PluginSet& plugins);

}  // namespace edri::plugin
