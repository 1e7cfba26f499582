// libFuzzer target for cleanup receipts read back by `kprof k8s cleanup --receipt`: bytes →
// CleanupReceipt::parse (the whole of load() after reading the file) and everything cleanup does
// with a receipt it accepted, short of running kubectl. A refusal is an InputError; anything else
// thrown, or a crash, is a bug. What kprof writes back must read back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "k8s/cleanup_receipt.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::optional<kprof::k8s::CleanupReceipt> receipt;
  try {
    receipt = kprof::k8s::CleanupReceipt::parse("", bytes);  // "": never saved
  } catch (const kprof::InputError&) {
    return 0;
  }
  for (const kprof::k8s::ReceiptObject& object : receipt->objects()) {
    (void)object.describe();
    (void)object.creating_run();
  }
  std::string written = receipt->json_text();
  // Written back, it reads back the same (a receipt kprof writes is one kprof accepts).
  if (kprof::k8s::CleanupReceipt::parse("", written).json_text() != written) std::abort();
  for (const kprof::k8s::ReceiptObject& object : receipt->leftovers()) {
    receipt->left(object.kind, object.namespace_name, object.name, "refused");
    receipt->deleted(object.kind, object.namespace_name, object.name);
  }
  receipt->finish("cleaned");
  if (!receipt->leftovers().empty()) std::abort();
  kprof::k8s::CleanupReceipt::parse("", receipt->json_text());
  return 0;
}
