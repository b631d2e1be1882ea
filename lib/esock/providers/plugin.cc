// Provider plugins (docs/sockets.md, "Providers"): a provider other than ksock lives in
// libesock_<name>.so, loaded when the configuration names it, so programs that never use it
// (pass-through ones above all) do not load its dependencies (DPDK for dpdk).
#include <dlfcn.h>

#include <string>

#include "esock/process/config.h"
#include "esock/providers/provider.h"

namespace esock::sockets {

namespace {

// The directory of the object this code is in (libesock.so, or a program linking the
// static core), with a trailing slash.
std::string own_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&own_dir), &info) == 0 || info.dli_fname == nullptr)
    return {};
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash + 1);
}

}  // namespace

std::unique_ptr<Provider> load_provider_plugin(const std::string& name, std::string* why) {
  if (name.empty() || name.find('/') != std::string::npos) {
    *why = "not a provider name";
    return nullptr;
  }
  const std::string file = "libesock_" + name + ".so";
  // Installed: <libdir>/esock/ beside libesock.so (its own folder, as rsockets keeps its
  // preload library). From the build tree: next to libesock.so, then the build tree's copy
  // (for programs linking the static core). Last, the loader's search path.
  std::string tried;
  const std::string here = own_dir();
  // The build tree's folder only for code that runs from the build tree: an installed
  // library never looks into the folder it was built in.
  const std::string root = ESOCK_BUILD_ROOT "/";
  const std::string build =
      here.compare(0, root.size(), root) == 0 ? ESOCK_BUILD_PLUGIN_DIR "/" : here;
  for (const std::string& dir : {here + ESOCK_PLUGIN_SUBDIR "/", here, build, std::string()}) {
    const std::string path = dir + file;
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
      continue;
    }
    auto create =
        reinterpret_cast<decltype(&esock_provider_create)>(::dlsym(h, "esock_provider_create"));
    if (create == nullptr) {
      *why = path + " has no esock_provider_create";
      return nullptr;
    }
    std::unique_ptr<Provider> p(create(config(), why));  // the library stays loaded
    return p;
  }
  *why = tried;
  return nullptr;
}

}  // namespace esock::sockets
