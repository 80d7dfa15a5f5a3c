#include "compactor/summarizer.h"
namespace compactor {
std::unique_ptr<Summarizer> NewOfflineSummarizer(const OfflineSummarizerOptions&) {
  return nullptr;
}
}  // namespace compactor
