// A plugin of this ABI version built by another toolchain: std::function
// and nlohmann::json may be laid out otherwise there, so edri-server must
// refuse it.
#include <edri/plugin.hpp>

extern "C" __attribute__((visibility("default"))) const edri::PluginDescriptor* edri_plugin_descriptor() {
  static const edri::PluginDescriptor d{edri::kPluginAbiVersion, "gcc 4; libstdc++ 4 cxx11-abi 0; nlohmann_json 2.0.0",
                                        "other_toolchain", [](edri::Registry&) {}};
  return &d;
}
