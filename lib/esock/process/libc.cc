#include "esock/process/libc.h"

#include <dlfcn.h>

namespace esock::sockets {

Libc libc;

void resolve_libc() {
  // RTLD_NEXT: the definition after ours in the lookup order, i.e. libc's whether esock
  // was preloaded or linked with -lesock. Assigning through a void* cast is the dlsym idiom.
  Libc l;
#define ESOCK_LIBC_RESOLVE(name, ret, params) \
  l.name = reinterpret_cast<ret(*) params>(::dlsym(RTLD_NEXT, #name));
  ESOCK_LIBC_FUNCTIONS(ESOCK_LIBC_RESOLVE)
#undef ESOCK_LIBC_RESOLVE
  libc = l;
}

namespace {
[[gnu::constructor(101)]] void resolve_at_load() {
  resolve_libc();
}
}  // namespace

}  // namespace esock::sockets
