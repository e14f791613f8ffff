// A shared library without the edri entry point.
extern "C" __attribute__((visibility("default"))) int not_an_edri_plugin() { return 42; }
