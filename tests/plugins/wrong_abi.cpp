// A plugin built for another plugin ABI: edri-server must refuse it.
#include <edri/plugin.hpp>

extern "C" __attribute__((visibility("default"))) const edri::PluginDescriptor* edri_plugin_descriptor() {
  static const edri::PluginDescriptor d{999u, EDRI_TOOLCHAIN, "wrong_abi", [](edri::Registry&) {}};
  return &d;
}
